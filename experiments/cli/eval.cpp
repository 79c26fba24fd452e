// `pelab eval RUN_DIR`: a trained run evaluated at chosen lengths (and evaluation-time settings).
#include <chrono>
#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/parallel.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/cli/cli_args.hpp"
#include "experiments/eval/eval_named.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/eval/evaluate_grid.hpp"
#include "experiments/run/estimate.hpp"
#include "experiments/run/run.hpp"
#include "experiments/run/trained_run.hpp"
#include "training/checkpoint.hpp"
#include "training/fs.hpp"
#include "training/signals.hpp"

namespace pelab::cli {

namespace {

struct EvalArgs {
  std::string run_dir, lengths_csv, range_csv, json_out;
  std::size_t samples = 0;
  std::vector<std::string> overrides;  // --set
  std::string name;
  std::string memory_mb;
};

// A --set of what a flag sets would silently win over the flag (it is applied after): refused, as two
// flags are. --lengths and --length-range each replace both forms of the lengths.
void check_flag_conflicts(const EvalArgs& a) {
  for (const std::string& kv : a.overrides) {
    const std::string key = kv.substr(0, kv.find('='));
    std::string flag;
    if ((key == "eval.lengths" || key == "eval.length_range") && (!a.lengths_csv.empty() || !a.range_csv.empty()))
      flag = a.lengths_csv.empty() ? "--length-range " + a.range_csv : "--lengths " + a.lengths_csv;
    if (key == "eval.samples" && a.samples) flag = "--samples " + std::to_string(a.samples);
    if (!flag.empty())
      throw Error("--set " + kv + " and " + flag + " both set the evaluation " +
                  (key == "eval.samples" ? "samples" : "lengths") + "; give one of them");
  }
}

// The run's own config.toml, with any --lengths / --length-range / --samples applied as overrides (same
// checks), then --set. Either flag replaces both forms the run may have recorded.
std::vector<std::string> eval_sets(const EvalArgs& a) {
  std::vector<std::string> sets;
  if (!a.lengths_csv.empty()) {
    std::string items;
    for (std::size_t v : parse_positive_list("--lengths", a.lengths_csv, LONG_MAX, "a positive integer"))
      items += (items.empty() ? "" : ", ") + std::to_string(v);
    sets.insert(sets.end(), {"eval.lengths=[" + items + "]", "eval.length_range=[]"});
  }
  if (!a.range_csv.empty()) {
    const auto r = parse_positive_list("--length-range", a.range_csv, 10000000, "a positive integer");
    if (r.size() < 2 || r.size() > 3)
      throw Error("--length-range " + a.range_csv + ": expected FROM,TO or FROM,TO,STEP, e.g. 1,500");
    std::string items;
    for (std::size_t v : r) items += (items.empty() ? "" : ", ") + std::to_string(v);
    sets.insert(sets.end(), {"eval.length_range=[" + items + "]", "eval.lengths=[]"});
  }
  if (a.samples) sets.push_back("eval.samples=" + std::to_string(a.samples));
  check_flag_conflicts(a);
  if (!a.name.empty()) check_eval_name(a.name);
  check_eval_settings(a.overrides, load_config(a.run_dir + "/config.toml").runs.at(0).config);
  sets.insert(sets.end(), a.overrides.begin(), a.overrides.end());
  return sets;
}

// --lengths and --length-range reach the config as a --set: errors name the flag the user typed.
[[noreturn]] void rethrow_as_flag(const Error& e, const EvalArgs& a) {
  const std::string m = e.what();
  if (!a.lengths_csv.empty() && m.rfind("--set eval.lengths=", 0) == 0)
    throw Error("--lengths " + a.lengths_csv + m.substr(m.find(':')));
  if (!a.range_csv.empty() && m.rfind("--set eval.length_range=", 0) == 0)
    throw Error("--length-range " + a.range_csv + m.substr(m.find(':')));
  throw;
}

EvalBatches checked_batches(const RunSpec& spec, const MemoryLimit& limit, const EvalArgs& a) {
  try {
    return check_memory(spec, limit, false);
  } catch (const Error& e) {
    rethrow_as_flag(e, a);
  }
}

// Loads the run's newest usable checkpoint into `model` (warning about those passed over); returns its path.
std::string load_newest_checkpoint(const std::string& run_dir, Transformer& model, const Task& task) {
  const CheckpointChoice choice = choose_checkpoint(run_dir, false);
  for (const auto& note : checkpoint_notes(choice)) std::fprintf(stderr, "warning: %s\n", note.c_str());
  if (!choice.path) throw Error(no_usable_checkpoint(run_dir, choice) + "; nothing to evaluate");
  load_run_checkpoint(run_dir, *choice.path, model, task);  // refuses a changed corpus
  return *choice.path;
}

// --json FILE (the per-length results, then the operand-grid cells, which carry len_a and len_b) and
// --name NAME.
void write_results(const EvalArgs& a, const RunSpec& spec, const std::vector<LengthResult>& results,
                   const std::vector<LengthResult>& grid, double eval_seconds) {
  if (!a.json_out.empty()) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& r : results) j.push_back(to_json(r));
    for (const auto& r : grid) j.push_back(to_json(r));
    try {
      if (a.json_out == "-") std::printf("%s\n", j.dump(2).c_str());  // the table went to stderr
      else write_file_atomic(a.json_out, j.dump(2) + "\n");
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (--json)");
    }
  }
  if (!a.name.empty()) {
    const std::string path = write_named_eval(a.run_dir, a.name, a.overrides, spec, results, grid, eval_seconds);
    std::printf("wrote %s\n", path.c_str());
  }
}

// "estimate: ..." on stderr when the evaluation may take over progress_threshold() (its lengths then
// print their own progress).
void print_eval_estimate(Transformer& model, const RunSpec& spec) {
  set_phase("estimating the time");
  const EvalConfig& e = spec.config.eval;
  double flops = 0;
  std::size_t longest = 0;
  for (std::size_t n : e.lengths) {
    flops += forward_flops(spec.model, e.samples, spec.task->sequence_length(n));
    longest = std::max(longest, spec.task->sequence_length(n));
  }
  const JobProgress estimate("evaluating " + std::to_string(e.lengths.size()) + " length(s) of " +
                                 std::to_string(e.samples) + " examples",
                             flops, worth_measuring(flops) ? measure_forward_rate(model, longest) : 0);
  (void)estimate;  // the constructor prints the line
}

int cmd_eval(const EvalArgs& a) {
  install_stop_handlers();
  arm_stop_deadline(kStopDeadline);  // read-only until the results are written whole
  const MemoryLimit limit = parse_memory_limit(a.memory_mb);
  if (!a.json_out.empty() && a.json_out != "-") {  // before the evaluation, not after it
    const std::string why = replace_refusal(a.json_out);
    if (!why.empty()) throw Error(why + " (--json; -: standard output)");
  }
  const std::vector<std::string> sets = eval_sets(a);
  set_phase("loading the config");
  RunSpec spec;
  try {
    spec = load_eval_config(a.run_dir, sets);
  } catch (const Error& e) {
    rethrow_as_flag(e, a);
  }
  set_phase("estimating memory");
  const EvalBatches batches = checked_batches(spec, limit, a);
  for (const auto& note : describe(batches, spec, limit))  // stdout stays the JSON's with --json -
    std::fprintf(a.json_out == "-" ? stderr : stdout, "note: %s\n", note.c_str());
  use_gemm_path(spec.config);
  parallel::set_threads(spec.config.train.threads, "train.threads");
  set_phase("building the model");
  Transformer model(spec.model);
  const std::string checkpoint = load_newest_checkpoint(a.run_dir, model, *spec.task);
  print_eval_estimate(model, spec);
  EvalOptions eo;
  eo.batches = &batches;
  eo.progress = a.json_out != "-";  // stdout is the JSON's
  eo.stoppable = true;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<LengthResult> results, grid;
  try {
    results = evaluate_lengths(model, spec, eo);
    grid = evaluate_grid(model, spec, eo);  // [eval] operand_grid, as the run's final evaluation (empty when none)
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "%s; nothing written\n", e.what());
    return kInterrupted;
  }
  const double eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(a.json_out == "-" ? stderr : stdout, "%s (checkpoint %s)\n%s", a.run_dir.c_str(), checkpoint.c_str(),
               format_results(results, spec.task->is_language_model()).c_str());
  if (!grid.empty()) std::fprintf(a.json_out == "-" ? stderr : stdout, "%s", format_grid(grid).c_str());
  write_results(a, spec, results, grid, eval_seconds);
  return kOk;
}

}  // namespace

void add_eval(CLI::App& app, Commands& commands) {
  auto a = std::make_shared<EvalArgs>();
  auto* c = app.add_subcommand("eval", "evaluate a trained run at chosen lengths");
  c->add_option("run_dir", a->run_dir, "run directory (holds config.toml and checkpoints/)")->required()->check(CLI::ExistingDirectory);
  auto* lengths =
      c->add_option("--lengths", a->lengths_csv, "comma-separated lengths (default: the config's eval.lengths)")
          ->check(CLI::Validator(check_nonempty_text, "LIST"));
  c->add_option("--length-range", a->range_csv, "FROM,TO[,STEP]: every length FROM..TO (inclusive), as [eval] "
                "length_range (e.g. 1,500: Deletang et al. 2023)")
      ->excludes(lengths)
      ->check(CLI::Validator(check_nonempty_text, "LIST"));
  c->add_option("--samples", a->samples, "held-out examples per length (default: eval.samples)")
      ->check(CLI::Validator(check_unsigned_text, "UINT"));
  c->add_option("--json", a->json_out, "also write the results to this JSON file (a new or regular file; "
                "-: standard output, the table then goes to standard error)");
  c->add_option("--set", a->overrides, "evaluation-time setting: eval.*, encoding.<its encoding>.* (e.g. "
                "encoding.rope.scaling=yarn), attention.* or loop.* (repeatable)");
  c->add_option("--name", a->name, "keep this evaluation as RUN_DIR/eval-NAME.json (pelab report shows it)");
  add_memory_limit(*c, a->memory_mb);
  commands.push_back({c, [a](const Invocation&) { return cmd_eval(*a); }});
}

}  // namespace pelab::cli
