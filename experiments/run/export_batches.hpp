// pelab's training batch stream written to a file, so that the PyTorch twin (python/pelab/torch_ref.py,
// load_batches) trains on exactly the batches pelab trains on (issue #44, item 1: is a failure the recipe's or
// the engine's?). `pelab batches CONFIG --steps N --out FILE` (experiments/cli/batches.cpp).
//
// The stream is the trainer's (training/trainer.cpp, train_step): Task::sample(data_rng(seed), batch_size,
// min_len, train_len), then the position ids of [train] positions from position_rng(seed); one batch per
// optimizer step. (Under data parallel training each rank takes its rows of these global batches.)
//
// The file (safetensors, core/safetensors.hpp), S steps of B rows, T the longest batch:
//   tokens, targets, positions  I32 (S, B, T)  right-padded with 0 past a batch's own length
//   mask                        F32 (S, B, T)  0 in the padding
//   digit_index                 I32 (S, B, T)  only when the task supplies one (Abacus)
//   lengths                     I32 (S)        each batch's T
//   metadata: format "pelab-batches-1", steps, batch_size, seed, blank_answer ("true"/"false"), vocab and
//             train_seq_len (the model's), config (to_toml: pelab.torch_ref.model_cfg builds the twin from it)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "training/batch.hpp"

namespace pelab {

// The first `steps` batches of the run's training stream, as its trainer draws them.
std::vector<Batch> training_batches(const RunSpec& spec, std::size_t steps);

// Writes training_batches(spec, steps) to `path` (atomically). Throws Error on a failure to write.
void export_batches(const RunSpec& spec, std::size_t steps, const std::string& path);

}  // namespace pelab
