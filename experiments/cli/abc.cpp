// `pelab abc CONFIG`: attention bias calibration (Duan et al., arXiv 2310.11984, Section 5) in one command.
// Stage 1 trains the config as given (OUT/calibrate); the biases of its attention are extracted and
// extended (experiments/run/abc_calibration.hpp) into OUT/abc_bias.txt; stage 2 trains the same config again
// with encoding `abc` reading that file (OUT/retrain), and both are evaluated as every run is. A stage
// already finished is not trained again (a rerun resumes where it stopped). A subcommand rather than a
// recipe: the second stage depends on a file the first one's weights produce, which one sweep cannot express.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/cli/command.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/run/abc_calibration.hpp"
#include "experiments/run/run.hpp"
#include "training/fs.hpp"
#include "training/signals.hpp"

namespace pelab::cli {

namespace {

struct AbcArgs {
  std::string config_path, out_dir;
  std::vector<std::string> overrides, retrain_sets;
  AbcCalibration calibration;
  double require = 0.9;
  int threads = 0;
  bool quiet = false;
  std::string memory_mb;
};

std::string toml_string(const std::string& s) {
  std::string q = "\"";
  for (char ch : s) q += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  return q + "\"";
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string quote_args(const Invocation& line) {
  std::string s;
  for (int i = 0; i < line.argc; ++i) s += (i ? " " : "") + std::string(line.argv[i]);
  return s;
}

// The config of one stage: one run, no [sweep] grid (a grid's cells would each need their own calibration).
RunSpec stage_spec(const AbcArgs& a, const std::vector<std::string>& sets) {
  const LoadedConfig loaded = load_train_config(a.config_path, sets, a.threads);
  if (loaded.runs.size() != 1)
    throw Error(a.config_path + " defines a [sweep] grid of " + std::to_string(loaded.runs.size()) +
                " cells; `pelab abc` calibrates one run: remove the grid, or fix each swept key with --set");
  return loaded.runs[0];
}

void check_retrain_sets(const AbcArgs& a) {
  for (const std::string& kv : a.retrain_sets) {
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "encoding.name" || key == "encoding.abc.bias_file" || key == "output.dir")
      throw Error("--retrain-set " + kv + ": `pelab abc` sets " + key +
                  " of the second stage itself; --retrain-set may change any other key (train.steps, ...)");
  }
}

// The in-distribution score stage 1 must reach before its attention is worth calibrating (the paper's
// prerequisite: "the vanilla Transformer must be able to train to interpolate").
void check_interpolates(const std::string& run_dir, double require) {
  const EvalResult r = read_eval_result(run_dir + "/eval.json");
  const LengthResult* last = nullptr;
  for (const auto& l : r.results)
    if (l.in_distribution && l.ok && (!last || l.length > last->length)) last = &l;
  if (!last || require <= 0) return;
  const std::string metric = last->metric("exact_match") ? "exact_match" : "token_acc";
  const double v = last->metric(metric).value_or(0);
  if (v < require)
    throw Error("stage 1 (" + run_dir + ") reaches " + metric + " " + num(v) + " at length " +
                std::to_string(last->length) + ", below --require-interpolation " + num(require) +
                ": ABC calibrates the attention of a model that interpolates; train it longer (--set train.steps=...) "
                "and rerun, or pass --require-interpolation 0 to calibrate it anyway");
}

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// OUT/abc_bias.txt from stage 1's run. A file already there is replaced only if it is a bias file, and only
// by the same bias once stage 2 has started (its run reads the file: another bias would change it silently).
std::string write_bias(const std::string& out, const std::string& run_dir, const AbcArgs& a) {
  const std::string path = std::filesystem::absolute(out + "/abc_bias.txt").lexically_normal().string();
  set_phase("calibrating attention biases");
  const AbcCalibrated c = calibrate_run(run_dir, a.calibration);
  const std::string text = abc_bias_text(c.bias, c.notes);
  if (std::filesystem::exists(path)) {
    try {
      read_abc_bias(path);
    } catch (const Error& e) {
      throw Error(path + " exists and is not a bias file `pelab abc` wrote (" + e.what() +
                  "); move it away or choose another --out");
    }
    if (file_text(path) != text && std::filesystem::exists(out + "/retrain"))
      throw Error(path + " holds other biases than these settings give (--lambda, --layer, --samples, --masked "
                  "or the config changed), and " + out + "/retrain was trained with it: choose another --out, or "
                  "remove " + out + " to start over");
  }
  write_file_atomic(path, text);
  if (!a.quiet) {
    std::printf("attention biases of %s -> %s\n", run_dir.c_str(), path.c_str());
    for (std::size_t h = 0; h < c.bias.heads.size(); ++h) {
      const AbcHead& head = c.bias.heads[h];
      std::string kept;
      for (const auto& [d, v] : head.kept) kept += " " + std::to_string(d);
      std::printf("  head %zu: %s\n", h, head.kept.empty() ? "nothing kept (transparent: 0 everywhere)"
                                                               : ("keeps id differences" + kept).c_str());
    }
  }
  return path;
}

void print_comparison(const std::string& first, const std::string& second) {
  const EvalResult a = read_eval_result(first + "/eval.json"), b = read_eval_result(second + "/eval.json");
  std::printf("%-8s %-26s %-26s\n", "length", "stage 1 (calibrate)", "stage 2 (abc, retrain)");
  auto cell = [](const LengthResult& l) {
    if (!l.ok) return std::string("n/a");
    char buf[64];
    std::snprintf(buf, sizeof buf, "tok %.1f%% exact %.1f%%", 100 * l.metric("token_acc").value_or(NAN),
                  100 * l.metric("exact_match").value_or(NAN));
    return std::string(buf);
  };
  for (std::size_t i = 0; i < a.results.size() && i < b.results.size(); ++i)
    std::printf("%-8s %-26s %-26s\n",
                (std::to_string(a.results[i].length) + (a.results[i].in_distribution ? "*" : "")).c_str(),
                cell(a.results[i]).c_str(), cell(b.results[i]).c_str());
}

int cmd_abc(const AbcArgs& a, const Invocation& line) {
  const MemoryLimit limit = parse_memory_limit(a.memory_mb);
  check_retrain_sets(a);
  const RunSpec first = stage_spec(a, a.overrides);
  std::vector<std::string> second_sets = a.overrides;
  second_sets.insert(second_sets.end(), a.retrain_sets.begin(), a.retrain_sets.end());
  stage_spec(a, second_sets);  // a bad --retrain-set is refused before any training
  const std::string out = a.out_dir.empty() ? first.config.output_dir : a.out_dir;
  RunOptions ro;
  ro.dir_source = a.out_dir.empty() ? dir_source(first.config, a.out_dir) : "--out";
  ro.memory = limit;
  ro.console = !a.quiet;
  ro.resume_command = quote_args(line);  // a rerun resumes the stage that stopped
  install_stop_handlers();
  ro.run_dir = out + "/calibrate";
  if (const int rc = run_experiment(first, ro)) return rc;
  check_interpolates(ro.run_dir, a.require);
  const std::string bias = write_bias(out, ro.run_dir, a);
  second_sets.insert(second_sets.end() - std::ptrdiff_t(a.retrain_sets.size()),
                     {"encoding.name=\"abc\"", "encoding.abc.bias_file=" + toml_string(bias)});
  const RunSpec second = stage_spec(a, second_sets);
  ro.run_dir = out + "/retrain";
  if (const int rc = run_experiment(second, ro)) return rc;
  if (!a.quiet) print_comparison(out + "/calibrate", ro.run_dir);
  return kOk;
}

}  // namespace

void add_abc(CLI::App& app, Commands& commands) {
  auto a = std::make_shared<AbcArgs>();
  auto* c = app.add_subcommand("abc", "attention bias calibration (Duan et al. 2023): train the config, extract "
                                      "and extend its attention biases, retrain with them fixed (encoding abc)");
  add_config_options(*c, a->config_path, a->overrides);
  c->add_option("--out", a->out_dir, "directory of both stages and the bias file (default: output.dir of the config)");
  c->add_option("--retrain-set", a->retrain_sets, "override a key of the second stage only (repeatable)");
  c->add_option("--lambda", a->calibration.lambda, "keep a line whose mean exceeds mean + lambda std of the head's "
                "lines (default 0.87, the paper's self-attention value)")->check(CLI::Range(0.0, 100.0));
  c->add_option("--layer", a->calibration.layer, "the layer (1-based) whose attention is calibrated (default 0: "
                "the last, as the paper)")->check(CLI::Range(0, 4096));
  c->add_option("--samples", a->calibration.samples, "held-out examples of the training size averaged (default 256)")
      ->check(CLI::Range(1, 1000000));
  c->add_option("--masked", a->calibration.masked, "the bias of a line not kept, the paper's -inf (default -10000)")
      ->check(CLI::Range(-1e30, 0.0));
  c->add_option("--require-interpolation", a->require, "stage 1's exact match (token accuracy without it) at its "
                "largest training length must reach this to be calibrated (default 0.9; 0: no check)")
      ->check(CLI::Range(0.0, 1.0));
  c->add_option("--threads", a->threads, "threads of a training step (default: train.threads)")->check(CLI::Range(1, 256));
  c->add_flag("--quiet", a->quiet, "no console output");
  add_memory_limit(*c, a->memory_mb);
  commands.push_back({c, [a](const Invocation& line) { return cmd_abc(*a, line); }});
}

}  // namespace pelab::cli
