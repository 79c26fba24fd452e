// Effective rank and Toeplitz-ness (experiments/probe/spectrum.hpp); the decompositions themselves are in
// spectrum_linalg.cpp.
#include "experiments/probe/spectrum.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/tensor.hpp"  // Error

namespace pelab {

double entropy_effective_rank(const std::vector<double>& sigma) {
  double total = 0;
  for (double s : sigma) total += std::abs(s);
  if (total <= 0) return 0;
  double h = 0;
  for (double s : sigma) {
    const double p = std::abs(s) / total;
    if (p > 0) h -= p * std::log(p);
  }
  return std::exp(h);
}

std::size_t rank_above(const std::vector<double>& sigma, double rel) {
  double mx = 0;
  for (double s : sigma) mx = std::max(mx, std::abs(s));
  if (mx <= 0) return 0;
  return std::size_t(std::count_if(sigma.begin(), sigma.end(), [&](double s) { return std::abs(s) > rel * mx; }));
}

double toeplitz_deviation(const PositionMatrix& m, bool lower_only) {
  const std::size_t T = m.size();
  for (const auto& row : m)
    if (row.size() != T) throw Error("toeplitz_deviation: the matrix must be square");
  const auto counted = [&](std::size_t i, std::size_t j) { return !lower_only || j <= i; };
  // Mean of each diagonal d = i - j, over the counted entries: index d + T - 1.
  std::vector<double> sum(2 * T, 0.0), n(2 * T, 0.0);
  double norm2 = 0;
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j)
      if (counted(i, j)) {
        sum[i + T - 1 - j] += m[i][j];
        n[i + T - 1 - j] += 1;
        norm2 += m[i][j] * m[i][j];
      }
  if (norm2 <= 0) return 0;
  double off2 = 0;
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j)
      if (counted(i, j)) {
        const double r = m[i][j] - sum[i + T - 1 - j] / n[i + T - 1 - j];
        off2 += r * r;
      }
  return std::sqrt(off2 / norm2);
}

MatrixSpectrum analyze_matrix(const std::string& name, const std::string& what, const PositionMatrix& m,
                              bool lower_only) {
  for (const auto& row : m)
    if (row.size() != m.size()) throw Error("analyze_matrix: " + name + " must be square");
  MatrixSpectrum s;
  s.name = name;
  s.what = what;
  s.size = m.size();
  s.lower_only = lower_only;
  PositionMatrix a = m;
  if (lower_only)
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = i + 1; j < a[i].size(); ++j) a[i][j] = 0;
  s.sigma = singular_values(a);
  double mx = 0, asym = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a.size(); ++j) {
      mx = std::max(mx, std::abs(a[i][j]));
      asym = std::max(asym, std::abs(a[i][j] - a[j][i]));
    }
  s.symmetric = asym <= 1e-12 * mx;
  if (s.symmetric) s.eigenvalues = symmetric_eigenvalues(a);
  s.erank = entropy_effective_rank(s.sigma);
  s.rank_1pct = rank_above(s.sigma, 0.01);
  s.toeplitz = toeplitz_deviation(m, lower_only);
  return s;
}

}  // namespace pelab
