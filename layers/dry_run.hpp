// The memory of one forward (and, training, backward) pass of a model, from the model's own code run
// shape-only (core/shape_only.hpp): the model is built inside the scope (its parameters are blocks with
// no memory behind them, never initialized) and runs on ids made for the purpose, every op allocating what
// it allocates in a real run and skipping its kernel. Nothing is declared by a module or an encoding:
// what the code allocates is the estimate (issue #40). Milliseconds at any size: d_model 65 536, T = 100 000.
//
// Data-dependent shapes are the ids' business: the ids are real in a dry run, so an encoding that
// chooses a (1, H, T, T) or a (B, H, T, T) bias from them, or sizes a table by their range, does so here
// too; the one shape read from a table's values (the relative buckets in use) is said in
// layers/positional/pairwise.hpp. Nothing of a live model is touched (no cache, no RNG stream).
#pragma once

#include <cstddef>

#include "core/shape_only.hpp"

namespace pelab {

struct ModelConfig;

struct DryRunShape {
  std::size_t batch = 1, tokens = 0;
  bool training = false;         // forward, cross-entropy and backward, as a training step
  bool shared_positions = true;  // every row the ids 0..T-1; false: row b gets b + 0..T-1
  bool attention_maps = false;   // a probe: every layer's (B, H, T, T) probabilities kept
};

struct DryRunResult {
  memory::TraceSummary summary;  // peak_system_bytes: what a cold caching allocator would hold at the peak
  std::size_t parameters = 0;    // the model's parameter count (num_parameters of the model built)
};

// Runs on the calling thread, at its thread count (parallel::threads: the attention's scratch is per
// worker). The thread's tape must hold nothing (a training dry run consumes it).
DryRunResult dry_run(const ModelConfig& m, const DryRunShape& s);

// num_parameters() of the model `m` builds, from a model built shape-only (nothing allocated).
std::size_t dry_parameter_count(const ModelConfig& m);

}  // namespace pelab
