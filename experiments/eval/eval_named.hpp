// `pelab eval RUN_DIR --set KEY=VALUE ... --name NAME`: re-evaluating a trained run under other
// evaluation-time settings (RoPE length extension, attention scaling, eval lengths) without retraining,
// each evaluation kept in its own file RUN_DIR/eval-NAME.json that `pelab report` shows beside the
// training's eval.json.
#pragma once

#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "experiments/eval/eval_result.hpp"

namespace pelab {

// Refuses (Error naming the key) any --set that is not an evaluation-time setting of this run: allowed
// are eval.*, encoding.<the run's encoding>.*, and attention.* where no parameters change (learned
// temperatures are trained: scaling cannot switch to or from "learned", nor their initial temperature
// change). `trained` is the run's own config.
void check_eval_settings(const std::vector<std::string>& sets, const ExperimentConfig& trained);

// RUN_DIR/config.toml with `sets` applied. A sweep cell's [cell.assignment] records the trained values
// of the swept keys, which an evaluation may change (a swept attention.scaling): the keys set are left
// out of it (else the config check would refuse the difference).
RunSpec load_eval_config(const std::string& run_dir, const std::vector<std::string>& sets);

// A name usable in a file name: [A-Za-z0-9_.-]+, not starting with '.'; Error otherwise.
void check_eval_name(const std::string& name);

// Writes RUN_DIR/eval-NAME.json (atomically): the run's identity from its eval.json (from the config
// when the run has none yet) with these results and operand-grid cells (nothing of the training's own
// evaluation), NAME and the settings. Returns the path.
std::string write_named_eval(const std::string& run_dir, const std::string& name, const std::vector<std::string>& sets,
                             const RunSpec& spec, const std::vector<LengthResult>& results,
                             const std::vector<LengthResult>& grid, double eval_seconds);

// RUN_DIR/eval-NAME.json
// The run's identity in an eval file, from its config: cell index, label, swept values, encoding, task,
// kind, training length, seed.
void identify_run(EvalResult& er, const RunSpec& spec);
std::string named_eval_path(const std::string& run_dir, const std::string& name);
// The NAME of a file name "eval-NAME.json", or "" when it is not one.
std::string named_eval_of(const std::string& file_name);

}  // namespace pelab
