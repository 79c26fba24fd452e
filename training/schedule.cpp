#include "training/schedule.hpp"

#include <algorithm>
#include <cmath>

#include "core/tensor.hpp"

namespace pelab {

namespace {
constexpr double kPi = 3.14159265358979323846;  // == Python's math.pi

enum class Kind { constant, cosine, linear };

Kind parse_kind(const std::string& k) {
  if (k == "constant") return Kind::constant;
  if (k == "cosine") return Kind::cosine;
  if (k == "linear") return Kind::linear;
  throw Error("unknown learning-rate schedule '" + k + "'; allowed: constant, cosine, linear");
}
}  // namespace

void validate(const ScheduleConfig& cfg) {
  parse_kind(cfg.kind);
  if (!std::isfinite(cfg.peak) || cfg.peak < 0)
    throw Error("schedule: peak learning rate " + std::to_string(cfg.peak) + " must be finite and >= 0");
  if (!std::isfinite(cfg.min_lr) || cfg.min_lr < 0)
    throw Error("schedule: min_lr " + std::to_string(cfg.min_lr) + " must be finite and >= 0");
}

double lr_at(const ScheduleConfig& cfg, std::size_t step) {
  const Kind kind = parse_kind(cfg.kind);
  if (step < cfg.warmup) return cfg.peak * double(step + 1) / double(cfg.warmup);
  if (kind == Kind::constant) return cfg.peak;
  // Signed arithmetic: total may be below warmup (then decay is immediate).
  const double span = std::max(1.0, double(cfg.total) - double(cfg.warmup));
  const double p = std::clamp((double(step) - double(cfg.warmup)) / span, 0.0, 1.0);
  if (kind == Kind::cosine) return cfg.min_lr + 0.5 * (cfg.peak - cfg.min_lr) * (1 + std::cos(kPi * p));
  return cfg.peak + (cfg.min_lr - cfg.peak) * p;
}

}  // namespace pelab
