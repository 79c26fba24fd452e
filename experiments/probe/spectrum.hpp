// The numbers of `pelab probe spectrum` (experiments/probe/spectrum_probe.cpp): the spectrum, effective rank and
// distance-only structure (Toeplitz-ness) of a (T, T) position-position matrix.
//
// Only standard headers here: experiments/probe/spectrum_linalg.cpp, which calls LAPACK through xt::linalg
// (xtensor-blas), includes this file, and xtensor-blas's bundled BLAS declarations clash with <cblas.h>
// (core/blas.hpp) in one translation unit.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pelab {

using PositionMatrix = std::vector<std::vector<double>>;  // (T, T), row i = query position, column j = key

// Singular values of an (m, n) matrix, in descending order (LAPACK gesdd through xt::linalg::svd). Throws Error
// on an empty or ragged matrix.
std::vector<double> singular_values(const PositionMatrix& m);

// Eigenvalues of a real symmetric (n, n) matrix, in descending order (LAPACK syevd through xt::linalg::eigvalsh;
// only the lower triangle is read). Throws Error when m is not square.
std::vector<double> symmetric_eigenvalues(const PositionMatrix& m);

// Roy & Vetterli (2007), "The effective rank: a measure of effective dimensionality", EUSIPCO: with
// p_k = sigma_k / sum(sigma), erank = exp(-sum_k p_k log p_k) (0 log 0 = 0). Between 1 and the number of
// nonzero sigma; 0 for an all-zero spectrum.
double entropy_effective_rank(const std::vector<double>& sigma);

// How many sigma_k exceed rel * max(sigma) (0 for an all-zero spectrum).
std::size_t rank_above(const std::vector<double>& sigma, double rel);

// How far m is from depending on i - j only: ||M - P(M)||_F / ||M||_F, where P(M) replaces every diagonal
// (the entries with one i - j) by its mean, the nearest Toeplitz matrix in the Frobenius norm. 0 for a
// Toeplitz matrix, at most 1; 0 for an all-zero matrix. lower_only: only the entries j <= i count (a causal
// attention map, whose upper triangle is not defined).
double toeplitz_deviation(const PositionMatrix& m, bool lower_only = false);

// Everything the probe reports about one matrix.
struct MatrixSpectrum {
  std::string name;        // e.g. "gram", "bias_head2", "qk_head0"
  std::string what;        // one line: which matrix
  std::size_t size = 0;    // T
  bool lower_only = false; // only j <= i defined (causal attention)
  bool symmetric = false;  // exactly symmetric: eigenvalues reported too
  std::vector<double> sigma;        // singular values, descending
  std::vector<double> eigenvalues;  // descending; empty unless symmetric
  double erank = 0;                 // entropy_effective_rank(sigma)
  std::size_t rank_1pct = 0;        // rank_above(sigma, 0.01)
  double toeplitz = 0;              // toeplitz_deviation(m, lower_only)
};
// Singular values always; eigenvalues when m is symmetric (to ~1e-12 relative: a Gram matrix computed in
// double is symmetric by construction). lower_only zeroes the upper triangle before decomposing.
MatrixSpectrum analyze_matrix(const std::string& name, const std::string& what, const PositionMatrix& m,
                              bool lower_only = false);

}  // namespace pelab
