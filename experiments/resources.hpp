// Memory estimates for a run, an evaluation and a probe, computed from the resolved config before
// anything is allocated or written, so that a model or a length that cannot fit is refused with the
// setting to change instead of ending in std::bad_alloc, a hang or swapping.
//
// The estimate (bytes, s = sizeof(real); B batch, T tokens, C d_model, H n_heads, L n_layers,
// F d_ff, V vocab, N parameters):
//   weights     N s (+ the encoding's own buffers, measured when it is built)
//   gradients   N s                                                    training only
//   optimizer   k N s, k = the optimizer's buffers per parameter (AdamW 2, SGD 1 or 0)
//   activations training: L (B T (16 C + 2 F) s + B H T^2 s) + E(T) + B T (4 C + 3 V) s
//                         + one layer's gradients B T (16 C + 2 F) s + one T^2 s scratch
//               evaluation (no tape: one layer at a time):
//                         B T (14 C + 2 F + 2 V) s + B H T^2 s + E(T)
//               probe: evaluation plus every layer's attention maps kept, L B H T^2 s
//   data        B T (12 + s): token, target and position ids, the mask
// B H T^2 s is one layer's attention probabilities (B, H, T, T): training keeps them for backward in
// every layer, so at long T they dominate. E(T) is what the positional encoding holds over all layers
// in pairs of positions (biases, distance tables, FIRE's MLP over them, their gradients when
// training): measured once by running the encoding's hooks alone for every layer at three short
// lengths under the caching allocator and fitting a T^2 term, times B when the rows' ids differ. Integer index tables
// (IndexArray) bypass the allocator and are not counted. Tested against the caching allocator's peak
// (tests/experiments/test_resources.cpp): within a factor of 2 either way.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config.hpp"

namespace pelab {

struct MemoryEstimate {
  std::size_t parameters = 0;  // count
  std::size_t weights = 0, gradients = 0, optimizer = 0, activations = 0, data = 0;  // bytes
  std::size_t total() const { return weights + gradients + optimizer + activations + data; }
  // "1.2 GiB (weights 10 MiB, gradients 10 MiB, optimizer state 20 MiB, activations 1.1 GiB, data 2 MiB)"
  std::string breakdown() const;
};

// "512 B", "12.0 KiB", "3.4 MiB", "1.50 GiB", "2.0 TiB".
std::string format_bytes(double bytes);

// The cost model of one run: parameter counts and the encoding's measured per-pair bytes, computed once.
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
  double activations_eval(std::size_t T, std::size_t B, bool shared_positions) const;
  const RunSpec& spec_;
  std::size_t n_params_ = 0, encoding_buffers_ = 0, optimizer_buffers_ = 0;
  double pair_train_ = 0, pair_eval_ = 0;  // the encoding's bytes per (query, key) pair, all layers, per row
};

// The parameter count of a model with this config, without building it (checked against Transformer
// in the tests); the encoding's own parameters are given.
std::size_t count_parameters(const ModelConfig& m, std::size_t encoding_parameters);

// The memory a run may use: --memory-limit when given (0 = no limit), else /proc/meminfo MemAvailable.
struct MemoryLimit {
  std::size_t bytes = 0;  // 0: no limit
  std::string source;     // "--memory-limit 4096" or "MemAvailable in /proc/meminfo"
};
MemoryLimit memory_limit(std::optional<std::size_t> flag_mb);
std::optional<std::size_t> available_memory();  // MemAvailable, bytes; nullopt when unreadable

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
