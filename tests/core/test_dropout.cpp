// dropout: determinism under a seed, statistics, exact mask gradient, gradcheck with a fixed mask, eval.
#include <cmath>

#include "core/ops/dropout.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

TEST_CASE("dropout: same seed same mask and different seed different mask", "[dropout]") {
  Tensor x = Tensor::full({8, 16}, 1);
  Rng r1(42), r2(42), r3(43);
  Tensor a = dropout(x, 0.5, r1, true), b = dropout(x, 0.5, r2, true), c = dropout(x, 0.5, r3, true);
  REQUIRE(a.numel() == 128);
  CHECK(a.value() == b.value());
  CHECK_FALSE(a.value() == c.value());
  // The rng advances: a second call on the same generator draws a new mask.
  CHECK_FALSE(dropout(x, 0.5, r1, true).value() == a.value());
  // Every output is 0 or x / (1 - p).
  for (std::size_t i = 0; i < a.numel(); ++i) CHECK((a.data()[i] == 0 || a.data()[i] == 2));
}

TEST_CASE("dropout: fraction zeroed is p and the mean is preserved", "[dropout]") {
  Rng data(1);
  const std::size_t n = 200000;
  Tensor x = pelab::test::uniform({n}, data, 0.5, 1.5, false);  // mean 1, all nonzero
  for (double p : {0.1, 0.3, 0.7}) {
    INFO("p " << p);
    Rng rng(9);
    Tensor y = dropout(x, p, rng, true);
    REQUIRE(y.numel() == n);
    std::size_t zeros = 0;
    double sx = 0, sy = 0;
    for (std::size_t i = 0; i < n; ++i) {
      zeros += y.data()[i] == 0;
      sx += x.data()[i];
      sy += y.data()[i];
    }
    // Binomial sd of the fraction is sqrt(p(1-p)/n) < 0.0012: allow ~5 sd.
    CHECK(std::abs(double(zeros) / n - p) < 0.006);
    CHECK(std::abs(sy / n - sx / n) < 0.02);
  }
}

TEST_CASE("dropout: gradient equals mask times scale exactly", "[dropout][grad]") {
  Rng data(2);
  Tensor x = randn({4, 5, 6}, data);
  Rng rng(3);
  const real p = 0.25;
  Tensor y = dropout(x, p, rng, true);
  Array seed(y.shape());
  for (std::size_t i = 0; i < seed.size(); ++i) seed.data()[i] = real(i % 7) - 3;
  y.backward(seed);
  REQUIRE(x.grad().shape() == x.shape());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < x.numel(); ++i) {
    // y = x * m where m is 0 or 1 / (1 - p); recover m from the output (x is nonzero almost surely).
    const bool keep = y.data()[i] != 0;
    kept += keep;
    const real m = keep ? real(1) / (real(1) - p) : real(0);
    CHECK(y.data()[i] == x.data()[i] * m);
    CHECK(x.grad().data()[i] == seed.data()[i] * m);
  }
  CHECK(kept > 0);
  CHECK(kept < x.numel());
}

TEST_CASE("dropout: gradcheck with the mask fixed by reseeding", "[dropout][grad]") {
  Rng data(4);
  Tensor x = randn({3, 7}, data);
  Rng rng;
  gradcheck(
      [&rng](const std::vector<Tensor>& in) {
        rng.reseed(11);  // every evaluation draws the same mask
        return dropout(in[0], 0.4, rng, true);
      },
      {x});
}

TEST_CASE("dropout: eval and p zero return x itself", "[dropout]") {
  Rng data(5);
  Tensor x = randn({3, 4}, data);
  Tape::current().clear();
  Rng rng(6);
  const auto before = rng.state();
  Tensor e = dropout(x, 0.5, rng, false);
  CHECK(e.impl() == x.impl());
  Tensor z = dropout(x, 0, rng, true);
  CHECK(z.impl() == x.impl());
  CHECK(Tape::current().size() == 0);
  CHECK(rng.state() == before);  // no randomness consumed
  // Training on a tensor that needs no grad records nothing either.
  Tensor c = randn({3, 4}, data, 1.0, false);
  Tensor d = dropout(c, 0.5, rng, true);
  CHECK_FALSE(d.requires_grad());
  CHECK(Tape::current().size() == 0);
}

TEST_CASE("dropout: p outside the unit interval throws naming the op", "[dropout][errors]") {
  Tensor x = Tensor::zeros({2});
  Rng rng(1);
  CHECK_THROWS_WITH(dropout(x, 1, rng, true), Catch::Contains("dropout") && Catch::Contains("p = 1"));
  CHECK_THROWS_WITH(dropout(x, -0.1, rng, true), Catch::Contains("dropout"));
  CHECK_THROWS_WITH(dropout(x, 1.5, rng, false), Catch::Contains("dropout"));
  CHECK_THROWS_WITH(dropout(x, std::nan(""), rng, true), Catch::Contains("dropout"));
}
