#include "experiments/run/trained_run.hpp"

#include <cstdio>
#include <filesystem>

#include "core/blas.hpp"
#include "core/parallel.hpp"
#include "training/checkpoint.hpp"

namespace pelab {

TrainedRun load_trained_run(const std::string& run_dir) {
  const std::string cfg = run_dir + "/config.toml";
  if (!std::filesystem::exists(cfg))
    throw Error(run_dir + " is not a run directory: it has no config.toml (give the directory `pelab train` wrote)");
  TrainedRun r;
  r.dir = run_dir;
  r.spec = load_config(cfg).runs.at(0);
  parallel::set_threads(r.spec.config.train.threads, "train.threads");
  r.model = std::make_unique<Transformer>(r.spec.model);
  const CheckpointChoice choice = choose_checkpoint(run_dir, false);
  for (const auto& note : checkpoint_notes(choice)) std::fprintf(stderr, "warning: %s\n", note.c_str());
  if (!choice.path) throw Error(no_usable_checkpoint(run_dir, choice) + "; nothing to inspect");
  load_checkpoint(*choice.path, *r.model, nullptr);
  r.checkpoint = *choice.path;
  r.model->set_training(false);
  return r;
}

}  // namespace pelab
