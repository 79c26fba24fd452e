// The numbers behind the probes (experiments/probe/probe.hpp): entropy, per-position accuracy, Gram matrices and
// RoFormer's decay bound.
#include "experiments/probe/probe.hpp"

#include <cmath>
#include <complex>

namespace pelab {

std::vector<double> attention_entropy(const Array& probs) {
  if (probs.dimension() != 4 || probs.shape()[2] != probs.shape()[3])
    throw Error("attention_entropy: probabilities must be (B, H, T, T)");
  const std::size_t B = probs.shape()[0], H = probs.shape()[1], T = probs.shape()[2];
  std::vector<double> h(T, 0.0);
  const real* p = probs.data();
  for (std::size_t bh = 0; bh < B * H; ++bh)
    for (std::size_t t = 0; t < T; ++t) {
      const real* row = p + (bh * T + t) * T;
      double e = 0;
      for (std::size_t j = 0; j < T; ++j)
        if (row[j] > 0) e -= double(row[j]) * std::log(double(row[j]));
      h[t] += e;
    }
  for (auto& v : h) v /= double(B * H);
  return h;
}

PositionAccuracy position_accuracy(const Array& logits, const Batch& b) {
  const std::size_t B = b.batch(), T = b.length();
  if (logits.dimension() != 3 || logits.shape()[0] != B || logits.shape()[1] != T)
    throw Error("position_accuracy: logits must be (B, T, V) for a batch of " + std::to_string(B) + " rows of " +
                std::to_string(T));
  const std::size_t V = logits.shape()[2];
  const bool seq = !b.answer_begin.empty();
  PositionAccuracy out;
  std::vector<std::size_t> right;
  for (std::size_t i = 0; i < B; ++i)
    for (std::size_t t = 0; t < T; ++t) {
      if (b.mask(i, t) <= 0) continue;
      if (seq && t < b.answer_begin[i]) continue;
      const std::size_t j = seq ? t - b.answer_begin[i] : t;
      if (out.count.size() <= j) out.count.resize(j + 1, 0), right.resize(j + 1, 0);
      const real* row = logits.data() + (i * T + t) * V;
      std::size_t best = 0;
      for (std::size_t v = 1; v < V; ++v)
        if (row[v] > row[best]) best = v;
      ++out.count[j];
      right[j] += std::int64_t(best) == std::int64_t(b.targets(i, t));
    }
  out.acc.resize(out.count.size());
  for (std::size_t j = 0; j < out.acc.size(); ++j) out.acc[j] = out.count[j] ? double(right[j]) / double(out.count[j]) : 0;
  return out;
}

std::vector<std::vector<double>> gram_matrix(const Array& rows) {
  if (rows.dimension() != 2) throw Error("gram_matrix: rows must be (T, d)");
  const std::size_t T = rows.shape()[0], d = rows.shape()[1];
  std::vector<std::vector<double>> g(T, std::vector<double>(T, 0.0));
  const real* p = rows.data();
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j <= i; ++j) {
      double s = 0;
      for (std::size_t k = 0; k < d; ++k) s += double(p[i * d + k]) * double(p[j * d + k]);
      g[i][j] = g[j][i] = s;
    }
  return g;
}

std::vector<double> rope_decay_bound(std::size_t d, double base, std::size_t max_distance) {
  if (d < 2 || d % 2) throw Error("rope_decay_bound: the rotated dimension must be even and >= 2");
  const std::size_t half = d / 2;
  std::vector<double> out(max_distance + 1);
  for (std::size_t m = 0; m <= max_distance; ++m) {
    std::complex<double> s = 0;
    double total = 0;
    for (std::size_t j = 1; j <= half; ++j) {  // S_j = S_{j-1} + e^{i m theta_{j-1}}
      const double theta = std::pow(base, -2.0 * double(j - 1) / double(d));
      s += std::polar(1.0, double(m) * theta);
      total += std::abs(s);
    }
    out[m] = total / double(half);
  }
  return out;
}

}  // namespace pelab
