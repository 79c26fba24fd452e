// A finished run loaded for inspection (`pelab predict`, `pelab probe run`): its config.toml resolved,
// the model rebuilt and its best usable checkpoint loaded, in eval mode.
#pragma once

#include <memory>
#include <string>

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

}  // namespace pelab
