// Looped depth's gradient (layers/transformer.cpp Transformer::run_blocks; Fan et al. 2025, arXiv
// 2409.15647) in double against central differences: a pre-LN residual block (LayerNorm, the fused
// Linear+GELU, Linear) whose one set of weights is applied N times, the group's input e added before
// every application after the first. The gradient of a shared weight is the sum over its applications,
// and e's gradient collects the injections as well as the first application.
#include <catch2/catch.hpp>

#include "core/ops/elementwise.hpp"
#include "core/ops/layer_norm.hpp"
#include "core/ops/matmul.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

// in: e (B, T, C), gamma, beta (C), w1 (F, C), b1 (F), w2 (C, F); N applications with injection.
Tensor looped_block(const std::vector<Tensor>& in, std::size_t n) {
  const Tensor &e = in[0], &gamma = in[1], &beta = in[2], &w1 = in[3], &b1 = in[4], &w2 = in[5];
  Tensor x = e;  // (B, T, C)
  for (std::size_t r = 0; r < n; ++r) {
    if (r > 0) x = add(x, e);
    x = add(x, linear(linear_gelu(layer_norm(x, gamma, beta), w1, b1), w2));
  }
  return x;
}

}  // namespace

TEST_CASE("looped depth: gradients of shared weights and the injected input match central differences",
          "[gradcheck][loop]") {
  Rng rng(17);
  const std::size_t B = 2, T = 3, C = 4, F = 6;
  for (std::size_t n : {std::size_t(1), std::size_t(3)}) {
    INFO(n << " applications");
    const std::vector<Tensor> in = {randn({B, T, C}, rng), randn({C}, rng, 0.5), randn({C}, rng, 0.5),
                                    randn({F, C}, rng, 0.4), randn({F}, rng, 0.2), randn({C, F}, rng, 0.4)};
    const GradcheckResult r = gradcheck([n](const std::vector<Tensor>& x) { return looped_block(x, n); }, in, 1e-7, 1e-5);
    CHECK(r.checked == B * T * C + 2 * C + 2 * F * C + F);
  }
}
