#include "experiments/run/estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/tape.hpp"
#include "layers/transformer.hpp"

namespace pelab {

double forward_flops(const ModelConfig& m, std::size_t batch, std::size_t tokens) {
  const double B = double(batch), T = double(tokens), C = double(m.d_model), V = double(m.vocab);
  const double F = double(m.d_ff ? m.d_ff : 4 * m.d_model);
  // Keys per query: (T + 1) / 2 on average under a causal mask, T without (a window caps neither here).
  const double keys = m.causal ? (T + 1) / 2 : T;
  const double per_layer = 2 * B * T * (4 * C * C + 2 * C * F) + 2 * 2 * B * T * keys * C;
  return double(m.n_layers) * per_layer + 2 * B * T * C * V;
}

double decoding_flops(const ModelConfig& m, std::size_t prefix, std::size_t steps) {
  // sum over k < steps of forward_flops(1, prefix + k): closed forms of sum T and sum T^2.
  const double a = double(prefix), n = double(steps);
  const double sum_t = n * a + n * (n - 1) / 2;
  const double sum_t2 = n * a * a + a * n * (n - 1) + (n - 1) * n * (2 * n - 1) / 6;
  // forward_flops(1, T) = lin T + quad T^2: attention's scores and values are the T^2 part.
  const double quad = double(m.n_layers) * double(m.d_model) * (m.causal ? 2.0 : 4.0);
  const double lin = forward_flops(m, 1, 1) - quad;
  return lin * sum_t + quad * sum_t2;
}

double measure_forward_rate(Transformer& model, std::size_t tokens) {
  const ModelConfig& m = model.config();
  std::size_t T = std::max<std::size_t>(1, std::min<std::size_t>(tokens, 512));
  // A table with fewer rows (learned, at a length beyond training) is timed at the training length.
  if (model.encoding().unsupported(std::int64_t(T))) T = std::max<std::size_t>(1, std::min(T, m.train_seq_len));
  IndexArray t(Shape{1, T}), p(Shape{1, T});
  for (std::size_t i = 0; i < T; ++i) t.data()[i] = 0, p.data()[i] = std::int32_t(i);
  NoGrad ng;
  const bool was_training = model.training();
  model.set_training(false);  // dropout would need the run's RNG (and draw from it)
  model.forward(t, p);  // warm: first-touch allocation, JIT kernels
  const auto t0 = std::chrono::steady_clock::now();
  double secs = 0;
  std::size_t runs = 0;
  while (secs < 0.05 && runs < 1000) {
    model.forward(t, p);
    ++runs;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  model.set_training(was_training);
  return double(runs) * forward_flops(m, 1, T) / std::max(secs, 1e-9);
}

bool worth_measuring(double flops) { return flops >= progress_threshold() * 1e7; }

double progress_threshold() {
  const char* env = std::getenv("PELAB_PROGRESS_AFTER");
  if (!env || !*env) return 10;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  if (*end || !(v >= 0) || !std::isfinite(v))
    throw Error(std::string("the environment variable PELAB_PROGRESS_AFTER = '") + env +
                "' is not a number of seconds >= 0 (the estimate a job needs to print progress; default 10)");
  return v;
}

std::string format_duration(double s) {
  char buf[32];
  if (s < 90) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 5400) std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
  else if (s < 172800) std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  else std::snprintf(buf, sizeof buf, "%.1f days", s / 86400);
  return buf;
}

JobProgress::JobProgress(const std::string& what, double flops, double rate)
    : flops_(flops), estimate_(rate > 0 ? flops / rate : 0), shown_(rate > 0 && estimate_ >= progress_threshold()),
      start_(std::chrono::steady_clock::now()), last_(start_) {
  if (!shown_) return;
  std::fprintf(stderr, "estimate: %s takes about %s (%.3g GFLOP at %.3g GFLOP/s measured on this model); "
                       "Ctrl-C stops it\n", what.c_str(), format_duration(estimate_).c_str(), flops / 1e9, rate / 1e9);
  std::fflush(stderr);
}

void JobProgress::add(double flops, const std::string& phase) {
  done_ += flops;
  if (!shown_) return;
  const auto now = std::chrono::steady_clock::now();
  // Every 5 s; more often under a lower threshold (tests), so a short job shows its lines.
  if (std::chrono::duration<double>(now - last_).count() < std::clamp(progress_threshold(), 0.2, 5.0)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double frac = std::clamp(done_ / std::max(flops_, 1.0), 0.0, 1.0);
  const double left = frac > 0 ? elapsed * (1 - frac) / frac : estimate_ - elapsed;
  std::fprintf(stderr, "%s: %.0f%% after %s, about %s left\n", phase.c_str(), 100 * frac,
               format_duration(elapsed).c_str(), format_duration(std::max(left, 0.0)).c_str());
  std::fflush(stderr);
}

}  // namespace pelab
