// Training settings ([train] in a config file). Defaults documented here are the config defaults.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/params/value.hpp"
#include "training/positions.hpp"

namespace pelab {

struct TrainConfig {
  std::size_t steps = 1000;
  std::size_t batch_size = 32;
  std::string optimizer = "adamw";   // a registered optimizer (training/optimizer_registry.hpp)
  // [train.<name>] subtables: each optimizer's own parameters (adamw: beta1, beta2, eps; sgd: momentum)
  // as given, per optimizer name; the trainer resolves the chosen one's against its spec.
  std::map<std::string, std::map<std::string, Value>> optimizer_params;
  double lr = 3e-3;                  // peak learning rate
  double min_lr = 0;                 // floor of the decay schedules
  std::string schedule = "cosine";   // constant | cosine (linear warmup + cosine) | linear (warmup + linear decay)
  std::size_t warmup = 0;            // warmup steps
  double weight_decay = 0.01;        // AdamW: decoupled decay; SGD: L2 term added to the gradient
  bool decay_norm_and_bias = false;  // by default LayerNorm gains and biases are not decayed
  bool decay_embeddings = true;      // token embeddings and learned position tables
  double grad_clip = 1.0;            // global L2 norm; 0 = off
  std::uint64_t seed = 0;
  PositionMode positions = PositionMode::contiguous;  // position ids of training batches (training/positions.hpp)
  std::size_t max_position = 0;      // offset/randomized ids are < max_position; the config loader resolves 0
  std::size_t log_every = 50;
  std::size_t eval_every = 0;        // 0 = only at the end
  std::size_t checkpoint_every = 0;  // 0 = only at the end
  std::size_t keep_checkpoints = 2;
  std::string early_stop_metric;     // "" (off) or a metric of training/metrics_table.hpp (in-distribution eval)
  double early_stop_target = 1.0;    // stop once the metric reaches it (accuracies >= target, loss <= target)
  int threads = 1;                   // threads of a training step (core/parallel.hpp)
  // The GEMM path, "libxsmm" or "openblas" (core/blas.hpp): it decides the rounding, so runs record it.
  // "" until the config loader resolves it (experiments/config/config_validate.cpp).
  std::string gemm;
};

}  // namespace pelab
