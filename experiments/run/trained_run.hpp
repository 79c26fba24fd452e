// A finished run loaded for inspection (`pelab predict`, `pelab probe run`): its config.toml resolved,
// the model rebuilt and its best usable checkpoint loaded, in eval mode.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "layers/transformer.hpp"

namespace pelab {

struct TrainedRun {
  std::string dir;
  RunSpec spec;
  std::unique_ptr<Transformer> model;
  std::string checkpoint;  // the directory loaded
};

// Throws Error (no config.toml, no usable checkpoint, a checkpoint that does not fit). Checkpoint warnings
// (unverified files) go to stderr.
TrainedRun load_trained_run(const std::string& run_dir);
// The same with evaluation-time settings (`pelab eval --set`: checked by check_eval_settings, applied by
// load_eval_config, experiments/eval/eval_named.hpp) and, when `step` is given, the checkpoint of that
// step instead of the newest usable one (Error listing the steps there are when there is none).
TrainedRun load_trained_run(const std::string& run_dir, const std::vector<std::string>& eval_sets,
                            std::optional<std::size_t> step);

}  // namespace pelab
