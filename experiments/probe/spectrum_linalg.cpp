// The only translation unit that includes xtensor-blas: SVD and symmetric eigenvalues through xt::linalg
// (LAPACK gesdd / syevd, from OpenBLAS). It must not include core/blas.hpp or <cblas.h>: xtensor-blas
// declares the BLAS functions itself (xflens/cxxblas), and the two sets of declarations clash.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xtensor.hpp>

#include "core/tensor.hpp"  // Error (no BLAS)
#include "experiments/probe/spectrum.hpp"

namespace pelab {

namespace {

xt::xtensor<double, 2> to_xtensor(const PositionMatrix& m, const char* what) {
  if (m.empty() || m[0].empty()) throw Error(std::string(what) + ": empty matrix");
  const std::size_t rows = m.size(), cols = m[0].size();
  xt::xtensor<double, 2> a({rows, cols});  // (rows, cols)
  for (std::size_t i = 0; i < rows; ++i) {
    if (m[i].size() != cols) throw Error(std::string(what) + ": ragged matrix (row " + std::to_string(i) + ")");
    for (std::size_t j = 0; j < cols; ++j) a(i, j) = m[i][j];
  }
  return a;
}

}  // namespace

std::vector<double> singular_values(const PositionMatrix& m) {
  const xt::xtensor<double, 2> a = to_xtensor(m, "singular_values");
  try {
    // compute_uv = false: gesdd with jobz 'N' gives the values only; the tuple's U and V^T stay empty.
    const auto usv = xt::linalg::svd(a, false, false);
    const auto& s = std::get<1>(usv);  // (min(rows, cols)), descending (LAPACK)
    std::vector<double> out(s.begin(), s.end());
    std::sort(out.begin(), out.end(), std::greater<double>());
    return out;
  } catch (const std::runtime_error& e) {
    throw Error(std::string("singular_values: ") + e.what());
  }
}

std::vector<double> symmetric_eigenvalues(const PositionMatrix& m) {
  const xt::xtensor<double, 2> a = to_xtensor(m, "symmetric_eigenvalues");
  if (a.shape()[0] != a.shape()[1]) throw Error("symmetric_eigenvalues: the matrix must be square");
  try {
    const auto w = xt::linalg::eigvalsh(a);  // (n), ascending (LAPACK)
    std::vector<double> out(w.begin(), w.end());
    std::sort(out.begin(), out.end(), std::greater<double>());
    return out;
  } catch (const std::runtime_error& e) {
    throw Error(std::string("symmetric_eigenvalues: ") + e.what());
  }
}

}  // namespace pelab
