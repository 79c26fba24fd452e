// split_heads / merge_heads: index math against naive loops, round trip, gradients.
#include "core/ops/heads.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

TEST_CASE("split_heads picks chunk and head dims as documented", "[heads]") {
  Rng rng(1);
  const std::size_t B = 2, T = 3, H = 2, hs = 3, C = H * hs;
  Tensor x = randn({B, T, 3 * C}, rng, 1, false);
  for (std::size_t c = 0; c < 3; ++c) {
    Tensor y = split_heads(x, H, 3, c);
    REQUIRE(y.shape() == Shape{B, H, T, hs});
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t t = 0; t < T; ++t)
          for (std::size_t i = 0; i < hs; ++i)
            CHECK(y.value()(b, h, t, i) == x.value()(b, t, c * C + h * hs + i));
  }
  Tensor z = randn({B, T, C}, rng, 1, false);
  Tensor back = merge_heads(split_heads(z, H));
  REQUIRE(back.shape() == z.shape());
  CHECK(back.value() == z.value());
}

TEST_CASE("split_heads and merge_heads gradients", "[heads][grad]") {
  Rng rng(2);
  Tensor x = randn({2, 3, 12}, rng);
  for (std::size_t c = 0; c < 3; ++c)
    gradcheck([c](const std::vector<Tensor>& in) { return split_heads(in[0], 2, 3, c); }, {x});
  Tensor y = randn({2, 2, 3, 4}, rng);
  gradcheck([](const std::vector<Tensor>& in) { return merge_heads(in[0]); }, {y});
}

TEST_CASE("split_heads errors", "[heads][errors]") {
  CHECK_THROWS_WITH(split_heads(Tensor::zeros({2, 3, 10}), 4, 3, 0), Catch::Contains("split_heads"));
  CHECK_THROWS_WITH(split_heads(Tensor::zeros({2, 3}), 1), Catch::Contains("(2, 3)"));
  CHECK_THROWS_AS(merge_heads(Tensor::zeros({2, 3, 4})), Error);
}
