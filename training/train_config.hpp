// Training settings ([train] in a config file). Defaults documented here are the config defaults.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
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
  // The budget policy (docs/usage.md, "Budget policies"): "first_fit" stops at the first evaluation where
  // early_stop_metric reaches early_stop_target (no metric: every run trains `steps`, as "fixed" does);
  // "fixed" trains `steps`; "competent" stops at the first evaluation where early_stop_metric, on the
  // in-distribution validation split, passes the competence gate and has plateaued (competent_stop), with
  // `steps` the cap.
  std::string budget = "first_fit";
  // competent: the gate is chance + gate x (1 - chance) on the metric at train_len (the chance level of
  // token_acc and exact_match; early_stop_target for a metric without one). One definition with the
  // pages' gate: pelab.reproduce.common.GATE_FRACTION (tests/experiments/test_budget.cpp checks they agree).
  double gate = 0.8;
  std::size_t plateau_evals = 3;     // competent: k, the evaluations a plateau spans
  double plateau_eps = 0.01;         // competent: the improvement (metric units) below which it is a plateau
  // Not a config key: the gate's threshold on early_stop_metric, resolved by the run from the task's chance
  // level (experiments/run/run.cpp) before training; unset, "competent" uses early_stop_target.
  std::optional<double> gate_threshold;
  int threads = 1;                   // threads of a training step (core/parallel.hpp)
  // The GEMM path, "libxsmm" or "openblas" (core/blas.hpp): it decides the rounding, so runs record it.
  // "" until the config loader resolves it (experiments/config/config_validate.cpp).
  std::string gemm;
};

}  // namespace pelab
