// cumsum: values against running sums along every axis, both directions, gradients, errors.
#include "core/ops/cumsum.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

TEST_CASE("cumsum matches running sums along each axis, forward and reversed", "[cumsum]") {
  Rng rng(51);
  const Shape s{2, 3, 4};
  Tensor x = randn(s, rng, 1, false);
  for (int axis : {0, 1, 2, -1})
    for (bool reverse : {false, true}) {
      INFO("axis " << axis << " reverse " << reverse);
      Tensor y = cumsum(x, axis, reverse);
      REQUIRE(y.shape() == s);
      const std::size_t a = axis < 0 ? 2 : std::size_t(axis);
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j)
          for (std::size_t k = 0; k < 4; ++k) {
            const std::size_t idx[3] = {i, j, k};
            double want = 0;
            for (std::size_t t = 0; t < s[a]; ++t) {
              if (reverse ? t < idx[a] : t > idx[a]) continue;
              std::size_t at[3] = {i, j, k};
              at[a] = t;
              want += x.value()(at[0], at[1], at[2]);
            }
            CHECK(y.value()(i, j, k) == Approx(want).margin(1e-14));
          }
    }
}

TEST_CASE("cumsum: a reversed scan of ones counts the elements from each place to the end", "[cumsum]") {
  Tensor y = cumsum(Tensor::full({1, 5}, 1), 1, true);
  REQUIRE(y.numel() == 5);
  for (std::size_t t = 0; t < 5; ++t) CHECK(y.data()[t] == real(5 - t));
}

TEST_CASE("cumsum gradients along every axis and direction", "[cumsum][grad]") {
  Rng rng(52);
  for (const Shape& s : {Shape{7}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3}})
    for (int axis = 0; axis < int(s.size()); ++axis)
      for (bool reverse : {false, true}) {
        INFO(shape_str(s) << " axis " << axis << " reverse " << reverse);
        Tensor x = randn(s, rng);
        auto r = gradcheck([=](const std::vector<Tensor>& in) { return cumsum(in[0], axis, reverse); }, {x});
        CHECK(r.checked == x.numel());
      }
}

TEST_CASE("cumsum errors", "[cumsum][errors]") {
  CHECK_THROWS_WITH(cumsum(Tensor::zeros({2, 3}), 2), Catch::Contains("cumsum") && Catch::Contains("axis 2"));
  CHECK_THROWS_WITH(cumsum(Tensor(), 0), Catch::Contains("cumsum"));
  CHECK(cumsum(Tensor::zeros({0, 3}), 0).shape() == (Shape{0, 3}));
}
