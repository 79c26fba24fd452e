// Training settings ([train] in a config file). Defaults documented here are the config defaults.
#pragma once

#include <cstdint>
#include <string>

namespace pelab {

struct TrainConfig {
  std::size_t steps = 1000;
  std::size_t batch_size = 32;
  std::string optimizer = "adamw";   // adamw | sgd
  double lr = 3e-3;                  // peak learning rate
  double min_lr = 0;                 // floor of the decay schedules
  std::string schedule = "cosine";   // constant | cosine (linear warmup + cosine) | linear (warmup + linear decay)
  std::size_t warmup = 0;            // warmup steps
  double weight_decay = 0.01;        // AdamW decoupled decay
  bool decay_norm_and_bias = false;  // by default LayerNorm gains and biases are not decayed
  bool decay_embeddings = true;      // token embeddings and learned position tables
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double momentum = 0.9;             // SGD
  double grad_clip = 1.0;            // global L2 norm; 0 = off
  std::uint64_t seed = 0;
  std::size_t log_every = 50;
  std::size_t eval_every = 0;        // 0 = only at the end
  std::size_t checkpoint_every = 0;  // 0 = only at the end
  std::size_t keep_checkpoints = 2;
  std::string early_stop_metric;     // "" | "token_acc" | "exact_match" | "loss" (in-distribution eval)
  double early_stop_target = 1.0;    // stop when metric >= target (loss: <= target)
  int threads = 1;                   // OpenBLAS threads
};

}  // namespace pelab
