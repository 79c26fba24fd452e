// The pelab command line: train, sweep, eval, report, list, show-task.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/blas.hpp"
#include "experiments/config.hpp"
#include "experiments/evaluate.hpp"
#include "experiments/report.hpp"
#include "experiments/run.hpp"
#include "experiments/sweep.hpp"
#include "layers/positional/encoding.hpp"
#include "training/checkpoint.hpp"
#include "training/fs.hpp"
#include "training/signals.hpp"

namespace fs = std::filesystem;
using namespace pelab;

namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("cannot locate the pelab executable (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string quote_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// "key=value" with the value parsed as a TOML literal (bare words are strings).
std::pair<std::string, Value> parse_assignment(const std::string& kv) {
  const auto eq = kv.find('=');
  if (eq == std::string::npos) throw Error("--assign expects key=value, got '" + kv + "'");
  const std::string key = kv.substr(0, eq), v = kv.substr(eq + 1);
  if (v == "true" || v == "false") return {key, Value(v == "true")};
  if (!v.empty() && v.front() == '"') return {key, Value(nlohmann::json::parse(v).get<std::string>())};
  try {
    std::size_t pos = 0;
    const long long i = std::stoll(v, &pos);
    if (pos == v.size()) return {key, Value(static_cast<std::int64_t>(i))};
    const double d = std::stod(v, &pos);
    if (pos == v.size()) return {key, Value(d)};
  } catch (const std::exception&) {
  }
  return {key, Value(v)};
}

void print_params(const std::vector<ParamSpec>& params) {
  for (const auto& p : params)
    std::printf("      %-16s %-10s default %-14s %s; %s\n", p.key.c_str(), type_name(p.type).c_str(),
                value_str(p.default_value).c_str(), p.allowed().c_str(), p.help.c_str());
}

int cmd_list() {
  std::printf("positional encodings ([encoding] name = ...; parameters in [encoding.NAME]):\n");
  for (const auto& n : EncodingRegistry::instance().names()) {
    const auto& s = EncodingRegistry::instance().get(n);
    std::printf("  %-12s %s\n", n.c_str(), s.summary.c_str());
    print_params(s.params);
  }
  std::printf("\ntasks ([task] name = ...; parameters in [task.NAME]):\n");
  for (const auto& n : TaskRegistry::instance().names()) {
    const auto& s = TaskRegistry::instance().get(n);
    std::printf("  %-12s %s\n", n.c_str(), s.summary.c_str());
    print_params(s.params);
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pelab: train small transformers and compare positional encodings in and beyond the training length"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");

  // train
  std::string config_path, out_dir, label;
  std::vector<std::string> overrides, assigns;
  bool resume = false, resume_or_start = false, quiet = false;
  int threads = 0;
  auto* train = app.add_subcommand("train", "train one model from a config file");
  train->add_option("config", config_path, "TOML config file")->required()->check(CLI::ExistingFile);
  train->add_option("--set", overrides, "override a key: section.key=value (repeatable)");
  train->add_option("--out", out_dir, "run directory (default: output.dir of the config)");
  auto* resume_flag = train->add_flag("--resume", resume, "continue from the latest usable checkpoint (error if none)");
  train->add_flag("--resume-or-start", resume_or_start, "like --resume, but a run directory without checkpoints "
                  "starts at step 0 (what pelab sweep runs for each cell)")->excludes(resume_flag);
  train->add_option("--threads", threads, "OpenBLAS threads (default: train.threads)")->check(CLI::Range(1, 256));
  train->add_flag("--quiet", quiet, "no console output");
  int cell = -1;
  train->add_option("--cell", cell, "train only cell K (0-based) of the config's [sweep] grid")->check(CLI::NonNegativeNumber);
  train->add_option("--label", label, "sweep cell label (set by pelab sweep)")->group("");
  train->add_option("--assign", assigns, "swept key=value of this cell (set by pelab sweep)")->group("");

  // sweep
  int jobs = 1;
  bool no_report = false;
  auto* sweep = app.add_subcommand("sweep", "run every cell of a config's [sweep] grid, then report");
  sweep->add_option("config", config_path, "TOML config file")->required()->check(CLI::ExistingFile);
  sweep->add_option("--set", overrides, "override a key: section.key=value (repeatable)");
  sweep->add_option("--out", out_dir, "sweep directory (default: output.dir of the config)");
  sweep->add_option("--jobs,-j", jobs, "cells run in parallel (one process each)")->check(CLI::Range(1, 256));
  sweep->add_flag("--no-report", no_report, "skip the report at the end");

  // eval
  std::string run_dir, lengths_csv, json_out;
  std::size_t samples = 0;
  auto* eval = app.add_subcommand("eval", "evaluate a trained run at chosen lengths");
  eval->add_option("run_dir", run_dir, "run directory (holds config.toml and checkpoints/)")->required()->check(CLI::ExistingDirectory);
  eval->add_option("--lengths", lengths_csv, "comma-separated lengths (default: the config's eval.lengths)");
  eval->add_option("--samples", samples, "held-out examples per length (default: eval.samples)");
  eval->add_option("--json", json_out, "also write the results to this JSON file");

  // report
  std::string sweep_dir, metric = "auto";
  bool no_plots = false;
  auto* report = app.add_subcommand("report", "tables (summary.md, summary.csv) and plots for a sweep directory");
  report->add_option("sweep_dir", sweep_dir, "sweep directory")->required()->check(CLI::ExistingDirectory);
  report->add_option("--metric", metric, "auto | token_acc | exact_match | loss")
      ->check(CLI::IsMember({"auto", "token_acc", "exact_match", "loss"}));
  report->add_flag("--no-plots", no_plots, "tables only");

  // list, show-task
  auto* list = app.add_subcommand("list", "encodings and tasks with their parameters");
  std::string task_name;
  std::size_t n_show = 3, show_len = 0;
  std::uint64_t show_seed = 0;
  auto* show = app.add_subcommand("show-task", "print a few samples of a task and its format");
  show->add_option("name", task_name, "task name (see pelab list)")->required();
  show->add_option("--set", overrides, "task parameter: key=value (repeatable)");
  show->add_option("-n", n_show, "samples")->check(CLI::Range(1, 100));
  show->add_option("--len", show_len, "problem size (default 8)");
  show->add_option("--seed", show_seed, "seed");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, or the error with a hint
    return rc == 0 ? kOk : kBadInput;
  }

  try {
    if (*list) return cmd_list();

    if (*show) {
      TaskCommon common;
      common.train_len = show_len ? show_len : 8;
      common.min_len = common.train_len;
      std::map<std::string, Value> given;
      for (const auto& kv : overrides) given.insert(parse_assignment(kv));
      auto task = make_task(task_name, common, given);
      const auto& spec = TaskRegistry::instance().get(task_name);
      std::printf("%s: %s\n\n%s\n\nvocabulary size %zu\n\n", spec.name.c_str(), spec.summary.c_str(),
                  spec.format.c_str(), task->vocab_size());
      Rng rng(show_seed);
      const Batch b = task->sample(rng, n_show, common.train_len, common.train_len);
      for (std::size_t i = 0; i < b.batch(); ++i) std::printf("%s\n", task->render(b, i).c_str());
      return kOk;
    }

    if (*report) {
      ReportOptions ro;
      ro.metric = metric;
      ro.plots = !no_plots;
      const ReportResult r = write_report(sweep_dir, ro);
      std::printf("%s\n", r.table_markdown.c_str());
      for (const auto& f : r.files_written) std::printf("wrote %s\n", f.c_str());
      for (const auto& w : r.warnings) std::printf("warning: %s\n", w.c_str());
      return kOk;
    }

    if (*eval) {
      ExperimentConfig cfg = load_config(run_dir + "/config.toml");
      if (!lengths_csv.empty()) {
        cfg.eval.lengths.clear();
        std::stringstream ss(lengths_csv);
        std::string item;
        while (std::getline(ss, item, ',')) {
          std::size_t pos = 0;
          long v = -1;
          try {
            v = std::stol(item, &pos);
          } catch (const std::exception&) {
          }
          if (v <= 0 || pos != item.size()) throw Error("--lengths: '" + item + "' is not a positive integer");
          cfg.eval.lengths.push_back(static_cast<std::size_t>(v));
        }
      }
      if (samples) cfg.eval.samples = samples;
      blas::set_num_threads(cfg.train.threads);
      auto task = task_for(cfg);
      Transformer model(model_config_for(cfg, *task));
      const CheckpointChoice choice = choose_checkpoint(run_dir, false);
      for (const auto& note : checkpoint_notes(choice)) std::fprintf(stderr, "warning: %s\n", note.c_str());
      if (!choice.path) throw Error(no_usable_checkpoint(run_dir, choice) + "; nothing to evaluate");
      load_checkpoint(*choice.path, model, nullptr);
      const auto results = evaluate_lengths(model, *task, cfg, eval_lengths(cfg, *task));
      std::printf("%s (checkpoint %s)\n%s", run_dir.c_str(), choice.path->c_str(),
                  format_results(results, task->is_language_model()).c_str());
      if (!json_out.empty()) {
        nlohmann::ordered_json j = nlohmann::ordered_json::array();
        for (const auto& r : results) j.push_back(to_json(r));
        write_file_atomic(json_out, j.dump(2) + "\n");
      }
      return kOk;
    }

    ExperimentConfig cfg = load_config(config_path, overrides);
    if (threads) cfg.train.threads = threads;

    if (*sweep) {
      SweepOptions so;
      so.out_dir = out_dir;
      so.jobs = jobs;
      so.report = !no_report;
      so.self_exe = self_exe();
      return run_sweep(cfg, so);
    }

    // train
    RunOptions ro;
    ro.run_dir = out_dir.empty() ? cfg.output_dir : out_dir;
    if (!cfg.sweep.empty()) {
      const auto cells = expand_sweep(cfg);
      if (cell < 0 || static_cast<std::size_t>(cell) >= cells.size()) {
        std::string msg = config_path + " defines a [sweep] grid of " + std::to_string(cells.size()) +
                          " cells: run them all with `pelab sweep " + config_path + "`, or one with --cell K:";
        for (std::size_t i = 0; i < cells.size(); ++i) msg += "\n  " + std::to_string(i) + ": " + cells[i].label;
        throw Error(msg);
      }
      const SweepCell& c = cells[static_cast<std::size_t>(cell)];
      cfg = c.config;
      if (out_dir.empty()) ro.run_dir = cfg.output_dir + "/" + c.dir_name;
      label = c.label;
      for (const auto& a : c.assignment) assigns.push_back(a.first + "=" + value_str(a.second));
    } else if (cell >= 0) {
      throw Error("--cell: " + config_path + " has no [sweep] grid");
    }
    ro.resume = resume || resume_or_start;
    ro.require_checkpoint = resume;
    ro.console = !quiet;
    ro.label = label;
    for (const auto& a : assigns) ro.assignment.push_back(parse_assignment(a));
    ro.resume_command = quote_args(argc, argv) + (ro.resume ? "" : " --resume");
    install_stop_handlers();
    return run_experiment(cfg, ro);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kError;
  }
}
