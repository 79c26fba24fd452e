// Learning-rate schedules: linear warmup from peak/warmup to peak, then constant, cosine or linear
// decay from peak to min_lr over the remaining steps (held at min_lr after `total`).
#pragma once

#include <cstddef>
#include <string>

namespace pelab {

struct ScheduleConfig {
  std::string kind = "cosine";  // "constant" | "cosine" | "linear"
  double peak = 1e-3;
  double min_lr = 0;             // the floor reached at `total` (unused by "constant")
  std::size_t warmup = 0;        // steps of linear warmup
  std::size_t total = 0;         // step at which decay ends
};

// Throws Error on an unknown kind (listing the allowed ones) or negative / non-finite rates.
void validate(const ScheduleConfig& cfg);

// The learning rate for 0-based step `step`:
//   step < warmup: peak * (step + 1) / warmup
//   otherwise, with p = (step - warmup) / max(1, total - warmup) clamped to [0, 1]:
//   constant: peak;  cosine: min + (peak - min) * (1 + cos(pi p)) / 2;  linear: peak + (min - peak) * p.
double lr_at(const ScheduleConfig& cfg, std::size_t step);

}  // namespace pelab
