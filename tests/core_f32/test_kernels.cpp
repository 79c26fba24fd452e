// The cloned hot loops (core/ops/kernels.hpp) against plain double references, and their row / column
// splits against one whole call (bit for bit: the split over threads must not change results).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/ops/kernels.hpp"

using namespace pelab;

namespace {

std::vector<real> randv(std::size_t n, std::uint32_t seed, double scale = 1.0) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<real> v(n);
  for (auto& x : v) x = static_cast<real>(d(g));
  return v;
}

void check_close(const std::vector<real>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": " << got[i] << " vs " << want[i]);
    REQUIRE(std::abs(double(got[i]) - want[i]) <= tol * (1.0 + std::abs(want[i])));
  }
}

}  // namespace

TEST_CASE("kernels: bias + GELU and its derivative match erf in double", "[kernels]") {
  const std::size_t rows = 5, F = 37;  // F not a multiple of any vector width
  std::vector<real> y = randv(rows * F, 1, 2.5), bias = randv(F, 2), d(rows * F, real(-7));
  std::vector<double> wy(rows * F), wd(rows * F);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < F; ++j) {
      const double h = double(y[r * F + j]) + double(bias[j]);
      wy[r * F + j] = 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0)));
      wd[r * F + j] = 0.5 * (1.0 + std::erf(h / std::sqrt(2.0))) + h * std::exp(-0.5 * h * h) / std::sqrt(2.0 * M_PI);
    }
  kernels::bias_gelu_rows(y.data(), bias.data(), d.data(), 0, 2, F);
  kernels::bias_gelu_rows(y.data(), bias.data(), d.data(), 2, rows, F);
  check_close(y, wy, 2e-6);
  check_close(d, wd, 2e-6);
}

TEST_CASE("kernels: attention softmax rows (causal, offset, bias) and backward match references", "[kernels]") {
  for (std::size_t Tk : {1u, 7u, 16u, 17u, 33u, 64u, 70u}) {
    for (bool causal : {true, false}) {
      const std::size_t Tq = causal ? (Tk > 3 ? Tk - 3 : Tk) : Tk, off = Tk - Tq;
      INFO("Tk " << Tk << " causal " << causal);
      std::vector<real> S = randv(Tq * Tk, 3 + Tk, 3.0), bias = randv(Tq * Tk, 4 + Tk);
      // Garbage past the visible keys must not leak into the result.
      for (std::size_t i = 0; i < Tq; ++i)
        for (std::size_t j = causal ? i + off + 1 : Tk; j < Tk; ++j) S[i * Tk + j] = real(1e30);
      std::vector<double> wP(Tq * Tk, 0.0);
      for (std::size_t i = 0; i < Tq; ++i) {
        const std::size_t n = causal ? i + off + 1 : Tk;
        double mx = -1e300, s = 0;
        for (std::size_t j = 0; j < n; ++j) mx = std::max(mx, double(S[i * Tk + j]) + double(bias[i * Tk + j]));
        for (std::size_t j = 0; j < n; ++j) s += std::exp(double(S[i * Tk + j]) + double(bias[i * Tk + j]) - mx);
        for (std::size_t j = 0; j < n; ++j)
          wP[i * Tk + j] = std::exp(double(S[i * Tk + j]) + double(bias[i * Tk + j]) - mx) / s;
      }
      std::vector<real> P = S;
      kernels::attention_softmax_rows(P.data(), bias.data(), 0, Tq / 2, Tk, off, causal);
      kernels::attention_softmax_rows(P.data(), bias.data(), Tq / 2, Tq, Tk, off, causal);
      check_close(P, wP, 2e-6);
      for (std::size_t i = 0; i < Tq; ++i)
        for (std::size_t j = causal ? i + off + 1 : Tk; j < Tk; ++j) REQUIRE(P[i * Tk + j] == real(0));

      std::vector<real> dS = randv(Tq * Tk, 5 + Tk);
      std::vector<double> wdS(Tq * Tk, 0.0);
      for (std::size_t i = 0; i < Tq; ++i) {
        const std::size_t n = causal ? i + off + 1 : Tk;
        double dot = 0;
        for (std::size_t j = 0; j < n; ++j) dot += double(dS[i * Tk + j]) * double(P[i * Tk + j]);
        for (std::size_t j = 0; j < n; ++j) wdS[i * Tk + j] = double(P[i * Tk + j]) * (double(dS[i * Tk + j]) - dot);
      }
      kernels::attention_softmax_backward_rows(dS.data(), P.data(), 0, Tq, Tk, off, causal);
      check_close(dS, wdS, 1e-5);
    }
  }
}

TEST_CASE("kernels: attention softmax with a scale is bit for bit the softmax of the scaled logits", "[kernels]") {
  // The scale is blas::gemm_defer_alpha's factor: the pass gemm would have made (C *= alpha), now the
  // softmax's first; with a bias the two must not fuse into one rounding (s * scale + b).
  for (std::size_t Tk : {1u, 7u, 16u, 17u, 40u, 70u, 80u})
    for (bool causal : {true, false})
      for (bool with_bias : {true, false})
        for (std::size_t window : {0u, 5u}) {
          if (window && !causal) continue;
          const std::size_t Tq = Tk, off = 0;
          INFO("Tk " << Tk << " causal " << causal << " bias " << with_bias << " window " << window);
          const std::vector<real> S = randv(Tq * Tk, 11 + Tk, 3.0), bias = randv(Tq * Tk, 12 + Tk);
          const real* b = with_bias ? bias.data() : nullptr;
          for (const real scale : {real(0.35355339), real(0.125), real(-2)}) {
            std::vector<real> want = S, got = S;
            for (real& x : want) x *= scale;  // gemm's own pass
            kernels::attention_softmax_rows(want.data(), b, 0, Tq, Tk, off, causal, window);
            kernels::attention_softmax_rows(got.data(), b, 0, Tq / 2, Tk, off, causal, window, 0, scale);
            kernels::attention_softmax_rows(got.data(), b, Tq / 2, Tq, Tk, off, causal, window, 0, scale);
            CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(real)) == 0);
          }
        }
}

TEST_CASE("kernels: layer norm forward (plain and fused residual add) and backward match references", "[kernels]") {
  const std::size_t rows = 6, C = 45;
  const real eps = real(1e-5);
  std::vector<real> a = randv(rows * C, 6, 2.0), b = randv(rows * C, 7), gamma = randv(C, 8), beta = randv(C, 9);
  std::vector<real> x(rows * C);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = a[i] + b[i];
  std::vector<double> wy(rows * C), wm(rows), wr(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    double mu = 0, v = 0;
    for (std::size_t j = 0; j < C; ++j) mu += x[r * C + j];
    mu /= C;
    for (std::size_t j = 0; j < C; ++j) v += (x[r * C + j] - mu) * (x[r * C + j] - mu);
    wm[r] = mu;
    wr[r] = 1.0 / std::sqrt(v / C + eps);
    for (std::size_t j = 0; j < C; ++j) wy[r * C + j] = (x[r * C + j] - mu) * wr[r] * gamma[j] + beta[j];
  }
  std::vector<real> y(rows * C), mean(rows), rstd(rows);
  kernels::layer_norm_rows(x.data(), nullptr, nullptr, nullptr, gamma.data(), beta.data(), y.data(), mean.data(),
                           rstd.data(), 0, rows, C, eps);
  check_close(y, wy, 2e-6);
  check_close(mean, wm, 1e-6);
  check_close(rstd, wr, 1e-6);
  // Fused with the residual add: h = a + b written, then the same bits as normalizing h.
  std::vector<real> h(rows * C), y2(rows * C), mean2(rows), rstd2(rows);
  kernels::layer_norm_rows(nullptr, a.data(), b.data(), h.data(), gamma.data(), beta.data(), y2.data(), mean2.data(),
                           rstd2.data(), 0, rows, C, eps);
  REQUIRE(h == x);
  REQUIRE(y2 == y);

  // Backward: dx = rstd (g gamma - mean(g gamma) - xhat mean(g gamma xhat)); dgamma, dbeta row sums.
  const std::vector<real> g = randv(rows * C, 10);
  std::vector<double> wdx(rows * C), wdg(C, 0.0), wdb(C, 0.0);
  for (std::size_t r = 0; r < rows; ++r) {
    double s1 = 0, s2 = 0;
    for (std::size_t j = 0; j < C; ++j) {
      const double xh = (x[r * C + j] - double(mean[r])) * double(rstd[r]), dxh = double(g[r * C + j]) * gamma[j];
      s1 += dxh;
      s2 += dxh * xh;
      wdg[j] += g[r * C + j] * xh;
      wdb[j] += g[r * C + j];
    }
    s1 /= C;
    s2 /= C;
    for (std::size_t j = 0; j < C; ++j) {
      const double xh = (x[r * C + j] - double(mean[r])) * double(rstd[r]);
      wdx[r * C + j] = double(rstd[r]) * (double(g[r * C + j]) * gamma[j] - s1 - xh * s2);
    }
  }
  // The one-loop path (dx written, dgamma and dbeta by rows).
  std::vector<real> dx(rows * C, real(-3)), dg(C, 0), db(C, 0);
  kernels::layer_norm_backward_rows(x.data(), g.data(), gamma.data(), mean.data(), rstd.data(), dx.data(), false,
                                    dg.data(), db.data(), 0, rows, C);
  check_close(dx, wdx, 1e-5);
  check_close(dg, wdg, 1e-5);
  check_close(db, wdb, 1e-5);
  // The accumulate path adds the same dx onto what is there.
  std::vector<real> dx2(rows * C, real(1));
  kernels::layer_norm_backward_rows(x.data(), g.data(), gamma.data(), mean.data(), rstd.data(), dx2.data(), true,
                                    nullptr, nullptr, 0, rows, C);
  std::vector<double> wdx2(rows * C);
  for (std::size_t i = 0; i < wdx2.size(); ++i) wdx2[i] = wdx[i] + 1.0;
  check_close(dx2, wdx2, 1e-5);
  // Parameter gradients by columns, split in two: bit-identical to one call.
  std::vector<real> dgc(C, 0), dbc(C, 0), dgs(C, 0), dbs(C, 0);
  kernels::layer_norm_param_cols(x.data(), g.data(), mean.data(), rstd.data(), dgc.data(), dbc.data(), rows, C, 0, C);
  kernels::layer_norm_param_cols(x.data(), g.data(), mean.data(), rstd.data(), dgs.data(), dbs.data(), rows, C, 0, 13);
  kernels::layer_norm_param_cols(x.data(), g.data(), mean.data(), rstd.data(), dgs.data(), dbs.data(), rows, C, 13, C);
  check_close(dgc, wdg, 1e-5);
  check_close(dbc, wdb, 1e-5);
  REQUIRE(dgs == dgc);
  REQUIRE(dbs == dbc);
}

TEST_CASE("kernels: column sums and the fused multiply + column sum, whole and split", "[kernels]") {
  const std::size_t rows = 9, F = 29;
  const std::vector<real> g = randv(rows * F, 11), d = randv(rows * F, 12);
  std::vector<double> wgh(rows * F), wdb(F, 0.0), wcs(F, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t j = 0; j < F; ++j) {
      wgh[r * F + j] = double(g[r * F + j]) * d[r * F + j];
      wdb[j] += wgh[r * F + j];
      wcs[j] += g[r * F + j];
    }
  std::vector<real> gh(rows * F, real(5)), db(F, 0), gh2(rows * F, real(5)), db2(F, 0);
  kernels::mul_colsum(g.data(), d.data(), gh.data(), false, db.data(), rows, F, 0, F);
  check_close(gh, wgh, 1e-6);
  check_close(db, wdb, 1e-5);
  kernels::mul_colsum(g.data(), d.data(), gh2.data(), false, db2.data(), rows, F, 0, 10);
  kernels::mul_colsum(g.data(), d.data(), gh2.data(), false, db2.data(), rows, F, 10, F);
  REQUIRE(gh2 == gh);
  REQUIRE(db2 == db);
  // In place (linear_gelu's backward: gh overwrites d): the same bits, split or not, with and without db.
  std::vector<real> gd = d, db3(F, 0), gd2 = d;
  kernels::mul_colsum_inplace(g.data(), gd.data(), db3.data(), rows, F, 0, 10);
  kernels::mul_colsum_inplace(g.data(), gd.data(), db3.data(), rows, F, 10, F);
  kernels::mul_colsum_inplace(g.data(), gd2.data(), nullptr, rows, F, 0, F);
  CHECK(std::memcmp(gd.data(), gh.data(), gh.size() * sizeof(real)) == 0);
  CHECK(std::memcmp(gd2.data(), gh.data(), gh.size() * sizeof(real)) == 0);
  CHECK(std::memcmp(db3.data(), db.data(), db.size() * sizeof(real)) == 0);
  std::vector<real> cs(F, 0), cs2(F, 0);
  kernels::colsum(g.data(), cs.data(), rows, F, 0, F);
  check_close(cs, wcs, 1e-5);
  kernels::colsum(g.data(), cs2.data(), rows, F, 0, 3);
  kernels::colsum(g.data(), cs2.data(), rows, F, 3, F);
  REQUIRE(cs2 == cs);
  std::vector<real> sum(rows * F), acc(rows * F, real(2));
  kernels::add(g.data(), d.data(), sum.data(), sum.size());
  kernels::copy_or_add(g.data(), acc.data(), true, acc.size());
  for (std::size_t i = 0; i < sum.size(); ++i) {
    REQUIRE(sum[i] == g[i] + d[i]);
    REQUIRE(acc[i] == real(2) + g[i]);
  }
}
