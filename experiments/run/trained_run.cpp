#include "experiments/run/trained_run.hpp"

#include <cstdio>
#include <filesystem>

#include "core/blas.hpp"
#include "core/parallel.hpp"
#include "experiments/eval/eval_named.hpp"
#include "training/checkpoint.hpp"

namespace pelab {

namespace {

// The directory of checkpoint `step` of run_dir; Error listing the steps there are when it has none.
std::string checkpoint_of_step(const std::string& run_dir, std::size_t step) {
  std::string steps;
  for (const auto& [k, path] : list_checkpoints(run_dir)) {
    if (k == step) return path;
    steps += (steps.empty() ? "" : ", ") + std::to_string(k);
  }
  throw Error("step " + std::to_string(step) + ": " + run_dir + " has no checkpoint of that step (" +
              (steps.empty() ? "it has none" : "it has steps " + steps) + ")");
}

}  // namespace

TrainedRun load_trained_run(const std::string& run_dir) { return load_trained_run(run_dir, {}, std::nullopt); }

TrainedRun load_trained_run(const std::string& run_dir, const std::vector<std::string>& eval_sets,
                            std::optional<std::size_t> step) {
  const std::string cfg = run_dir + "/config.toml";
  if (!std::filesystem::exists(cfg))
    throw Error(run_dir + " is not a run directory: it has no config.toml (give the directory `pelab train` wrote)");
  TrainedRun r;
  r.dir = run_dir;
  r.spec = load_config(cfg).runs.at(0);
  if (!eval_sets.empty()) {
    check_eval_settings(eval_sets, r.spec.config);
    r.spec = load_eval_config(run_dir, eval_sets);
  }
  parallel::set_threads(r.spec.config.train.threads, "train.threads");
  r.model = std::make_unique<Transformer>(r.spec.model);
  if (step) {
    r.checkpoint = checkpoint_of_step(run_dir, *step);
  } else {
    const CheckpointChoice choice = choose_checkpoint(run_dir, false);
    for (const auto& note : checkpoint_notes(choice)) std::fprintf(stderr, "warning: %s\n", note.c_str());
    if (!choice.path) throw Error(no_usable_checkpoint(run_dir, choice) + "; nothing to inspect");
    r.checkpoint = *choice.path;
  }
  load_checkpoint(r.checkpoint, *r.model, nullptr);
  r.model->set_training(false);
  return r;
}

}  // namespace pelab
