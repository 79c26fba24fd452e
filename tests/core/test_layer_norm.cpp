// layer_norm: values against a hand-computed row and a naive reference, gradients, edges, errors.
#include <cmath>

#include "core/ops/layer_norm.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

TEST_CASE("layer_norm on a hand-computed row", "[layer_norm]") {
  // mean 2.5, biased var 1.25; eps 0.75 makes var + eps = 2, rstd = 1/sqrt(2).
  Tensor x = Tensor::from({1, 4}, {1, 2, 3, 4});
  Tensor gamma = Tensor::from({4}, {1, 1, 2, 0.5});
  Tensor beta = Tensor::from({4}, {0, 1, 0, -1});
  Tensor y = layer_norm(x, gamma, beta, 0.75);
  REQUIRE(y.shape() == Shape{1, 4});
  const std::vector<double> want = {-1.0606601718, 0.6464466094, 0.7071067812, -0.4696699141};
  for (std::size_t j = 0; j < 4; ++j) CHECK(y.data()[j] == Approx(want[j]).epsilon(1e-9));
  Tensor y0 = layer_norm(x, gamma, Tensor(), 0.75);  // no bias
  for (std::size_t j = 0; j < 4; ++j) CHECK(y0.data()[j] == Approx(want[j] - beta.data()[j]).margin(1e-9));
}

TEST_CASE("layer_norm matches the naive reference", "[layer_norm]") {
  Rng rng(31);
  Tensor x = randn({2, 3, 5}, rng, 3.0, false);
  Tensor gamma = randn({5}, rng, 1.0, false), beta = randn({5}, rng, 1.0, false);
  const double eps = 1e-5;
  Tensor y = layer_norm(x, gamma, beta, eps);
  REQUIRE(y.shape() == x.shape());
  for (std::size_t r = 0; r < 6; ++r) {
    const real* xr = x.data() + r * 5;
    double mu = 0, var = 0;
    for (std::size_t j = 0; j < 5; ++j) mu += xr[j] / 5.0;
    for (std::size_t j = 0; j < 5; ++j) var += (xr[j] - mu) * (xr[j] - mu) / 5.0;
    for (std::size_t j = 0; j < 5; ++j) {
      const double want = (xr[j] - mu) / std::sqrt(var + eps) * gamma.data()[j] + beta.data()[j];
      CHECK(y.data()[r * 5 + j] == Approx(want).epsilon(1e-12));
    }
  }
}

TEST_CASE("layer_norm gradients for x gamma and beta together", "[layer_norm][grad]") {
  Rng rng(32);
  for (double eps : {1e-5, 10.0}) {
    INFO("eps " << eps);
    Tensor x = randn({2, 3, 5}, rng, 2.0), gamma = randn({5}, rng), beta = randn({5}, rng);
    auto r = gradcheck([eps](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2], eps); },
                       {x, gamma, beta});
    CHECK(r.checked == 30 + 5 + 5);
    gradcheck([eps](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], Tensor(), eps); }, {x, gamma});
  }
}

TEST_CASE("layer_norm gradients when only some inputs require grad", "[layer_norm][grad]") {
  Rng rng(33);
  Tensor x = randn({4, 6}, rng), gamma = randn({6}, rng, 1.0, false), beta = randn({6}, rng);
  gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); }, {x, gamma, beta});
  Tensor xc = randn({4, 6}, rng, 1.0, false), gc = randn({6}, rng);
  gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); }, {xc, gc, beta});
}

TEST_CASE("layer_norm with one channel returns beta", "[layer_norm][grad]") {
  Rng rng(34);
  Tensor x = randn({3, 1}, rng), gamma = randn({1}, rng), beta = randn({1}, rng);
  Tensor y = layer_norm(x, gamma, beta);
  REQUIRE(y.numel() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(y.data()[i] == Approx(beta.data()[0]).epsilon(1e-12));
  gradcheck([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); }, {x, gamma, beta});
}

TEST_CASE("layer_norm normalized rows have zero mean and unit variance", "[layer_norm]") {
  Rng rng(35);
  Tensor x = randn({8, 16}, rng, 5.0, false);
  Tensor y = layer_norm(x, Tensor::full({16}, 1), Tensor::zeros({16}), 0);
  for (std::size_t r = 0; r < 8; ++r) {
    double mu = 0, var = 0;
    for (std::size_t j = 0; j < 16; ++j) mu += y.data()[r * 16 + j] / 16.0;
    for (std::size_t j = 0; j < 16; ++j) var += std::pow(y.data()[r * 16 + j] - mu, 2) / 16.0;
    CHECK(mu == Approx(0).margin(1e-12));
    CHECK(var == Approx(1).epsilon(1e-12));
  }
}

TEST_CASE("layer_norm errors name the op and shapes", "[layer_norm][errors]") {
  Tensor x = Tensor::zeros({2, 5});
  CHECK_THROWS_WITH(layer_norm(x, Tensor::zeros({4}), Tensor()),
                    Catch::Contains("layer_norm") && Catch::Contains("gamma") && Catch::Contains("(4,)") &&
                        Catch::Contains("(2, 5)"));
  CHECK_THROWS_WITH(layer_norm(x, Tensor::zeros({5}), Tensor::zeros({5, 1})),
                    Catch::Contains("layer_norm") && Catch::Contains("beta"));
  CHECK_THROWS_WITH(layer_norm(x, Tensor::zeros({5}), Tensor(), -1), Catch::Contains("eps"));
  CHECK_THROWS_WITH(layer_norm(Tensor::scalar(1), Tensor::zeros({1}), Tensor()), Catch::Contains("layer_norm"));
  CHECK_THROWS_WITH(layer_norm(x, Tensor(), Tensor()), Catch::Contains("gamma"));
}
