// softmax / log_softmax: values against naive double references, stability, gradients.
#include <cmath>
#include <limits>

#include "core/ops/softmax.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

// Naive softmax of every last-axis row, in double, without max subtraction (inputs are moderate).
std::vector<double> naive_softmax(const Tensor& x) {
  const std::size_t C = x.shape().back(), rows = x.numel() / C;
  std::vector<double> y(x.numel());
  for (std::size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::size_t j = 0; j < C; ++j) s += std::exp(double(x.data()[r * C + j]));
    for (std::size_t j = 0; j < C; ++j) y[r * C + j] = std::exp(double(x.data()[r * C + j])) / s;
  }
  return y;
}

}  // namespace

TEST_CASE("softmax matches the naive formula and rows sum to one", "[softmax]") {
  Rng rng(11);
  Tensor x = randn({2, 3, 5}, rng, 3.0, false);
  Tensor y = softmax(x);
  REQUIRE(y.shape() == x.shape());
  const auto want = naive_softmax(x);
  REQUIRE(want.size() == y.numel());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(y.data()[i] == Approx(want[i]).epsilon(1e-12));
  for (std::size_t r = 0; r < 6; ++r) {
    double s = 0;
    for (std::size_t j = 0; j < 5; ++j) s += y.data()[r * 5 + j];
    CHECK(s == Approx(1.0).epsilon(1e-14));
  }
}

TEST_CASE("softmax and log_softmax do not overflow on huge logits", "[softmax]") {
  Tensor big = Tensor::from({2, 3}, {1000, 1001, 1002, -1000, -1001, -1002});
  Tensor small = Tensor::from({2, 3}, {0, 1, 2, 0, -1, -2});
  Tensor yb = softmax(big), ys = softmax(small);
  Tensor lb = log_softmax(big), ls = log_softmax(small);
  REQUIRE(yb.numel() == 6);
  REQUIRE(lb.numel() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(std::isfinite(yb.data()[i]));
    CHECK(std::isfinite(lb.data()[i]));
    CHECK(yb.data()[i] == Approx(ys.data()[i]).epsilon(1e-12));
    CHECK(lb.data()[i] == Approx(ls.data()[i]).epsilon(1e-12));
  }
  // Hand value: softmax(0, 1, 2)[2] = e^2 / (1 + e + e^2).
  CHECK(yb.data()[2] == Approx(0.66524095589).epsilon(1e-9));
}

TEST_CASE("log_softmax equals log of softmax", "[softmax]") {
  Rng rng(12);
  Tensor x = randn({4, 7}, rng, 2.0, false);
  Tensor a = log_softmax(x), b = softmax(x);
  const auto want = naive_softmax(x);
  REQUIRE(a.numel() == b.numel());
  REQUIRE(a.numel() == want.size());
  for (std::size_t i = 0; i < a.numel(); ++i) {
    CHECK(a.data()[i] == Approx(std::log(b.data()[i])).epsilon(1e-12));
    CHECK(a.data()[i] == Approx(std::log(want[i])).epsilon(1e-12));
  }
}

TEST_CASE("softmax gives -inf entries zero probability", "[softmax]") {
  const real ninf = -std::numeric_limits<real>::infinity();
  Tensor x = Tensor::from({1, 3}, {ninf, 0, 0});
  Tensor y = softmax(x), l = log_softmax(x);
  REQUIRE(y.numel() == 3);
  CHECK(y.data()[0] == 0);
  CHECK(y.data()[1] == Approx(0.5));
  CHECK(y.data()[2] == Approx(0.5));
  CHECK(std::isinf(l.data()[0]));
  CHECK(l.data()[1] == Approx(std::log(0.5)));
}

TEST_CASE("softmax and log_softmax gradients", "[softmax][grad]") {
  Rng rng(13);
  for (const Shape& s : {Shape{2, 3, 5}, Shape{5}, Shape{4, 1}, Shape{3, 2}}) {
    INFO("shape " << shape_str(s));
    Tensor x = randn(s, rng, 2.0);
    gradcheck([](const std::vector<Tensor>& in) { return softmax(in[0]); }, {x});
    gradcheck([](const std::vector<Tensor>& in) { return log_softmax(in[0]); }, {x});
  }
}

TEST_CASE("softmax composed with itself accumulates through the saved output", "[softmax][grad]") {
  Rng rng(14);
  Tensor x = randn({3, 4}, rng);
  gradcheck([](const std::vector<Tensor>& in) { return log_softmax(softmax(in[0])); }, {x});
}

TEST_CASE("softmax errors name the op", "[softmax][errors]") {
  CHECK_THROWS_WITH(softmax(Tensor::scalar(1)), Catch::Contains("softmax") && Catch::Contains("0-d"));
  CHECK_THROWS_WITH(log_softmax(Tensor::scalar(1)), Catch::Contains("log_softmax"));
  CHECK_THROWS_WITH(softmax(Tensor()), Catch::Contains("softmax"));
}
