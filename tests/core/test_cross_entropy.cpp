// cross_entropy: loss against the naive formula, masking semantics, gradients, errors.
#include <cmath>
#include <limits>

#include "core/ops/cross_entropy.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

// sum_t w_t * (log sum exp(x_t) - x_t[target_t]) / sum_t w_t, in double, skipping w = 0.
double naive_ce(const Tensor& logits, const IndexArray& t, const std::vector<double>& w) {
  const std::size_t V = logits.shape().back(), rows = t.size();
  double num = 0, den = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    if (w[r] == 0) continue;
    double s = 0;
    for (std::size_t j = 0; j < V; ++j) s += std::exp(double(logits.data()[r * V + j]));
    num += w[r] * (std::log(s) - double(logits.data()[r * V + t.data()[r]]));
    den += w[r];
  }
  return num / den;
}

}  // namespace

TEST_CASE("cross_entropy loss matches the naive formula without a mask", "[cross_entropy]") {
  Rng rng(21);
  Tensor logits = randn({2, 3, 5}, rng, 2.0, false);
  IndexArray t = {{0, 4, 2}, {1, 3, 3}};
  Tensor loss = cross_entropy(logits, t);
  REQUIRE(loss.shape() == Shape{});
  CHECK(loss.item() == Approx(naive_ce(logits, t, std::vector<double>(6, 1.0))).epsilon(1e-12));
  // Hand value: uniform logits over V classes give log V.
  Tensor flat = Tensor::zeros({3, 4});
  CHECK(cross_entropy(flat, IndexArray{0, 1, 3}).item() == Approx(std::log(4.0)).epsilon(1e-12));
}

TEST_CASE("cross_entropy on a single row with 0-d targets", "[cross_entropy][grad]") {
  Tensor logits = Tensor::from({3}, {1, 2, 3}, true);
  IndexArray t = IndexArray(2);
  REQUIRE(t.shape() == Shape{});
  Tensor loss = cross_entropy(logits, t);
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  CHECK(loss.item() == Approx(lse - 3.0).epsilon(1e-12));
  gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t); }, {logits});
}

TEST_CASE("cross_entropy mask zeroes tokens exactly and ignores their padded targets", "[cross_entropy][grad]") {
  Rng rng(22);
  Tensor logits = randn({2, 3, 5}, rng, 2.0);
  IndexArray t = {{0, -1, 2}, {1, 3, -1}};  // -1 padding under weight 0
  Array mask = {{1, 0, 1}, {1, 1, 0}};
  Tensor loss = cross_entropy(logits, t, &mask);
  CHECK(loss.item() == Approx(naive_ce(logits, t, {1, 0, 1, 1, 1, 0})).epsilon(1e-12));
  loss.backward();
  const Array& g = logits.grad();
  REQUIRE(g.size() == 30);
  for (std::size_t j = 0; j < 5; ++j) {
    CHECK(g.data()[1 * 5 + j] == 0);  // token (0, 1)
    CHECK(g.data()[5 * 5 + j] == 0);  // token (1, 2)
  }
  // Counted rows: (p - onehot) / 4, so each row's gradient sums to zero and the target entry is negative.
  double s = 0;
  for (std::size_t j = 0; j < 5; ++j) s += g.data()[j];
  CHECK(s == Approx(0).margin(1e-14));
  CHECK(g.data()[0] < 0);
  gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t, &mask); }, {logits});
}

TEST_CASE("cross_entropy masked tokens are not read even when their logits are NaN", "[cross_entropy]") {
  Tensor logits = Tensor::from({2, 2}, {std::numeric_limits<real>::quiet_NaN(), 0, 1, 1}, true);
  IndexArray t = {-1, 0};
  Array mask = {0, 1};
  Tensor loss = cross_entropy(logits, t, &mask);
  CHECK(loss.item() == Approx(std::log(2.0)).epsilon(1e-12));
  loss.backward();
  REQUIRE(logits.grad().size() == 4);
  CHECK(logits.grad().data()[0] == 0);
  CHECK(logits.grad().data()[1] == 0);
  CHECK(logits.grad().data()[2] == Approx(-0.5));
  CHECK(logits.grad().data()[3] == Approx(0.5));
}

TEST_CASE("cross_entropy all-zero mask gives zero loss and zero gradient", "[cross_entropy][grad]") {
  Rng rng(23);
  Tensor logits = randn({2, 3, 5}, rng);
  IndexArray t = xt::full_like(IndexArray::from_shape({2, 3}), -1);
  Array mask = xt::zeros<real>({2, 3});
  Tensor loss = cross_entropy(logits, t, &mask);
  CHECK(loss.item() == 0);
  loss.backward();
  REQUIRE(logits.has_grad());
  REQUIRE(logits.grad().size() == 30);
  for (std::size_t i = 0; i < 30; ++i) CHECK(logits.grad().data()[i] == 0);
}

TEST_CASE("cross_entropy with non-binary weights is a weighted mean", "[cross_entropy][grad]") {
  Rng rng(24);
  Tensor logits = randn({2, 3, 5}, rng, 1.5);
  IndexArray t = {{4, 0, 1}, {2, 2, 3}};
  Array mask = {{0.5, 2.0, 0.0}, {1.0, 3.0, 0.25}};
  Tensor loss = cross_entropy(logits, t, &mask);
  CHECK(loss.item() == Approx(naive_ce(logits, t, {0.5, 2.0, 0.0, 1.0, 3.0, 0.25})).epsilon(1e-12));
  // Scaling every weight leaves the mean unchanged.
  Array mask2 = mask * real(7);
  CHECK(cross_entropy(logits, t, &mask2).item() == Approx(loss.item()).epsilon(1e-12));
  gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t, &mask); }, {logits});
}

TEST_CASE("cross_entropy gradients without a mask", "[cross_entropy][grad]") {
  Rng rng(25);
  Tensor logits = randn({2, 3, 5}, rng, 2.0);
  IndexArray t = {{0, 4, 2}, {1, 3, 3}};
  gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t); }, {logits});
  Tensor l2 = randn({4, 7}, rng, 2.0);
  IndexArray t2 = {6, 0, 3, 3};
  gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], t2); }, {l2});
}

TEST_CASE("cross_entropy errors name the op and the offending values", "[cross_entropy][errors]") {
  Tensor logits = Tensor::zeros({2, 3, 5});
  IndexArray t = xt::zeros<std::int32_t>({2, 3});
  CHECK_THROWS_WITH(cross_entropy(logits, IndexArray(xt::zeros<std::int32_t>({3, 2}))),
                    Catch::Contains("cross_entropy") && Catch::Contains("(3, 2)") && Catch::Contains("(2, 3, 5)"));
  CHECK_THROWS_WITH(cross_entropy(logits, IndexArray(xt::zeros<std::int32_t>({2, 3, 5}))),
                    Catch::Contains("cross_entropy"));
  Array bad_mask = xt::ones<real>({6});
  CHECK_THROWS_WITH(cross_entropy(logits, t, &bad_mask),
                    Catch::Contains("cross_entropy") && Catch::Contains("mask") && Catch::Contains("(6,)"));
  IndexArray oob = t;
  oob(1, 2) = 5;
  CHECK_THROWS_WITH(cross_entropy(logits, oob), Catch::Contains("cross_entropy") && Catch::Contains("target id 5") &&
                                                    Catch::Contains("flat position 5") && Catch::Contains("[0, 5)"));
  IndexArray neg = t;
  neg(0, 1) = -1;  // counted token (no mask): -1 is an error
  CHECK_THROWS_WITH(cross_entropy(logits, neg), Catch::Contains("target id -1") && Catch::Contains("flat position 1"));
  Array m = xt::ones<real>({2, 3});
  m(0, 1) = 0;  // ... but fine under weight 0
  CHECK_NOTHROW(cross_entropy(logits, neg, &m));
  m(0, 2) = -1;
  CHECK_THROWS_WITH(cross_entropy(logits, t, &m), Catch::Contains("cross_entropy") && Catch::Contains("negative"));
  CHECK_THROWS_WITH(cross_entropy(Tensor::scalar(0), IndexArray(0)), Catch::Contains("cross_entropy"));
}
