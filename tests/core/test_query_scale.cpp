// scale_queries: values against the formula, gradients (q and the per-head scales), errors.
#include <memory>
#include <vector>

#include "core/ops/query_scale.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

TEST_CASE("scale_queries multiplies row t of head h by head[h] * rows[t]", "[query_scale]") {
  Rng rng(11);
  const std::size_t B = 2, H = 3, T = 4, hs = 5;
  Tensor q = randn({B, H, T, hs}, rng, 1, false);
  Tensor head = randn({H}, rng, 1, false);
  auto rows = std::make_shared<std::vector<real>>(std::vector<real>{0.5, 1.0, 1.25, 2.0});
  for (int mode = 0; mode < 3; ++mode) {  // both, head only, rows only
    const Tensor hd = mode == 2 ? Tensor() : head;
    const auto rw = mode == 1 ? nullptr : rows;
    Tensor y = scale_queries(q, hd, rw);
    REQUIRE(y.shape() == q.shape());
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t t = 0; t < T; ++t)
          for (std::size_t i = 0; i < hs; ++i) {
            const double c = (hd.defined() ? double(head.value()(h)) : 1.0) * (rw ? double((*rows)[t]) : 1.0);
            CHECK(y.value()(b, h, t, i) == Approx(double(q.value()(b, h, t, i)) * c).margin(1e-14));
          }
  }
}

TEST_CASE("scale_queries gradients: q and learned per-head scales", "[query_scale][grad]") {
  Rng rng(12);
  Tensor q = randn({2, 3, 4, 5}, rng), head = randn({3}, rng);
  auto rows = std::make_shared<std::vector<real>>(std::vector<real>{0.5, 1.0, 1.25, 2.0});
  gradcheck([&](const std::vector<Tensor>& in) { return scale_queries(in[0], in[1], rows); }, {q, head});
  gradcheck([&](const std::vector<Tensor>& in) { return scale_queries(in[0], in[1], nullptr); }, {q, head});
  gradcheck([&](const std::vector<Tensor>& in) { return scale_queries(in[0], Tensor(), rows); }, {q});
}

TEST_CASE("scale_queries errors name the op", "[query_scale][errors]") {
  auto rows = std::make_shared<std::vector<real>>(std::vector<real>{1, 2});
  CHECK_THROWS_WITH(scale_queries(Tensor::zeros({1, 2, 3, 4}), Tensor(), rows),
                    Catch::Contains("scale_queries") && Catch::Contains("T = 3"));
  CHECK_THROWS_WITH(scale_queries(Tensor::zeros({1, 2, 3, 4}), Tensor::zeros({3}), nullptr),
                    Catch::Contains("scale_queries") && Catch::Contains("head"));
  CHECK_THROWS_WITH(scale_queries(Tensor::zeros({2, 3, 4}), Tensor(), nullptr), Catch::Contains("(B, H, T, hs)"));
}
