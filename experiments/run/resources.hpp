// Memory estimates for a run, an evaluation and a probe, computed from the resolved config before
// anything is allocated or written, so that a model or a length that cannot fit is refused with the
// setting to change instead of ending in std::bad_alloc, a hang or swapping. From the model's own code:
// one step (forward, and backward when training) run shape-only (layers/dry_run.hpp, core/shape_only.hpp),
// the model built with parameters that have no memory, every op allocating what it allocates for real and
// skipping its kernel (milliseconds at any size; nothing a module or an encoding declares):
//   weights     N s, N = the built model's num_parameters()
//   gradients   N s                                                             training only
//   optimizer   k N s, k = OptimizerSpec::state_buffers (AdamW 2, SGD 1, or 0 without momentum)
//   activations the dry run's peak under the caching allocator's reuse rule (core/allocator.hpp), less
//               the weights and gradients: every buffer of the forward and backward, integer tables too
//   data        the mask (B, T) s, and the token, target and position ids (B, T) int32
// with s = sizeof(real). Tested against the caching allocator's peak (tests/experiments/test_resources.cpp):
// within 0.9-1.4x for every encoding, training, evaluation and probes, where activations dominate.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/config.hpp"

namespace pelab {

struct MemoryEstimate {
  std::size_t parameters = 0;  // count
  std::size_t weights = 0, gradients = 0, optimizer = 0, activations = 0, data = 0;  // bytes
  std::size_t untracked = 0;  // bytes outside the caching allocator: none since IndexArray is in it (kept for callers)
  std::size_t total() const { return weights + gradients + optimizer + activations + data; }
  // "1.2 GiB (weights 10 MiB, gradients 10 MiB, optimizer state 20 MiB, activations 1.1 GiB, data 2 MiB)"
  std::string breakdown() const;
};

// "512 B", "12.0 KiB", "3.4 MiB", "1.50 GiB", "2.0 TiB".
std::string format_bytes(double bytes);

// Bytes of one forward pass without a tape (evaluation, probes) of a model `m` over `batch` rows of
// `tokens` tokens: weights, activations one layer at a time, the ids; with `attention_maps`, every
// layer's (batch, heads, tokens, tokens) probabilities kept as well. `shared_positions`: all rows
// have the same ids (contiguous), so the encoding's pair tables are built once, not per row.
std::size_t forward_bytes(const ModelConfig& m, std::size_t batch, std::size_t tokens, bool attention_maps = false,
                          bool shared_positions = true);

// The cost model of one run.
class ResourceModel {
 public:
  explicit ResourceModel(const RunSpec& spec);
  std::size_t parameters() const { return n_params_; }
  // One training step at [train] batch_size and the longest training sequence.
  MemoryEstimate training() const;
  // One evaluation batch of `batch` rows at problem size n (not counting training state).
  MemoryEstimate evaluation(std::size_t n, std::size_t batch) const;
  // An evaluation that also keeps every layer's attention maps (ForwardOptions::attention_maps).
  MemoryEstimate probe(std::size_t n, std::size_t batch) const;
  // The largest batch <= `wanted` whose evaluation at n fits in `limit` bytes; 0 when not even one row fits.
  std::size_t eval_batch_that_fits(std::size_t n, std::size_t wanted, std::size_t limit) const;

 private:
  MemoryEstimate weights_only() const;
  MemoryEstimate forward_only(std::size_t n, std::size_t batch, bool attention_maps) const;  // no tape
  const RunSpec& spec_;
  std::size_t n_params_ = 0, optimizer_buffers_ = 0;
};

// The parameter count of a model with this config, without allocating it (layers/dry_run.hpp
// dry_parameter_count: the model built shape-only; checked against the built model in the tests).
std::size_t count_parameters(const ModelConfig& m);

// The memory a run may use: --memory-limit when given (0 = no limit), else /proc/meminfo MemAvailable.
struct MemoryLimit {
  std::size_t bytes = 0;  // 0: no limit
  std::string source;     // "--memory-limit 4096" or "MemAvailable in /proc/meminfo"
};
MemoryLimit memory_limit(std::optional<std::size_t> flag_mb);
std::optional<std::size_t> available_memory();  // MemAvailable, bytes; nullopt when unreadable

// Throws Error when `bytes` exceed the limit (nothing when limit.bytes is 0):
//   "<setting>: <what> needs about 3.2 GiB; the limit is 1.5 GiB (MemAvailable in /proc/meminfo;
//    --memory-limit MB sets it, 0 turns the check off)"
// `setting` names what to change, ideally with its place ("--lengths", "eval.lengths at x.toml:12").
void check_memory(const std::string& what, std::size_t bytes, const std::string& setting, const MemoryLimit& limit);

// What a run needs, checked against `limit` before anything is written: training (when `train`) and
// every eval length, reducing eval.batch_size per length to what fits (the returned plan says which).
// Throws Error naming the setting to change (with its file:line), the estimate and the limit when
// training, or evaluation at one row, does not fit.
struct EvalBatches {
  std::vector<std::pair<std::size_t, std::size_t>> reduced;  // (length, batch size that fits)
  std::size_t batch_for(std::size_t n, std::size_t configured) const;
};
EvalBatches check_memory(const RunSpec& spec, const MemoryLimit& limit, bool train);
// A note per reduced length ("eval length 4096: batch size 64 -> 3 to fit ..."), for the console.
std::vector<std::string> describe(const EvalBatches& b, const RunSpec& spec, const MemoryLimit& limit);

}  // namespace pelab
