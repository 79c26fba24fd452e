// interp_gather: values from the definition (inside, at integers, clamped, nan), gradients to z and
// p against central differences (p away from integers, where the slope jumps), CoPE's shapes, errors.
#include <cmath>
#include <limits>

#include "core/ops/interp_gather.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;
using pelab::test::uniform;

TEST_CASE("interp_gather: values inside, at integers, clamped outside, nan", "[interp_gather]") {
  Tensor z = Tensor::from({1, 4}, {10, 20, 40, 80});
  const real nan = std::numeric_limits<real>::quiet_NaN();
  Tensor p = Tensor::from({1, 9}, {0, 0.5, 1, 1.25, 2.75, 3, -0.5, 7, nan});
  Tensor y = interp_gather(z, p);
  REQUIRE(y.shape() == (Shape{1, 9}));
  const std::vector<real> want = {10, 15, 20, 25, 70, 80, 10, 80};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(y.data()[i] == Approx(want[i]).margin(1e-14));
  CHECK(std::isnan(y.data()[8]));
  // one point: every p gives it
  CHECK(interp_gather(Tensor::from({1}, {3}), Tensor::from({3}, {-1, 0, 2})).data()[2] == 3);
}

TEST_CASE("interp_gather: gradients of z and p at the edges and where p is clamped", "[interp_gather][grad]") {
  Tensor z = Tensor::from({1, 4}, {10, 20, 40, 80}, true);
  Tensor p = Tensor::from({1, 6}, {0, 1, 1.25, 3, -0.5, 7}, true);
  interp_gather(z, p).backward(xt::ones<real>({1, 6}));
  REQUIRE(p.grad().size() == 6);
  CHECK(p.grad()(0, 0) == 10);  // p = 0: inside, the slope to the right
  CHECK(p.grad()(0, 1) == 20);  // an integer: the right-hand slope z[2] - z[1]
  CHECK(p.grad()(0, 2) == 20);
  CHECK(p.grad()(0, 3) == 0);   // p = P - 1: i0 = i1
  CHECK(p.grad()(0, 4) == 0);   // clamped
  CHECK(p.grad()(0, 5) == 0);
  REQUIRE(z.grad().size() == 4);
  // z[0]: p = 0 (1), p = -0.5 (1); z[1]: p = 1 (1), 1.25 (0.75); z[2]: 1.25 (0.25); z[3]: p = 3, 7
  CHECK(z.grad()(0, 0) == 2);
  CHECK(z.grad()(0, 1) == real(1.75));
  CHECK(z.grad()(0, 2) == real(0.25));
  CHECK(z.grad()(0, 3) == 2);
  Tensor pn = Tensor::from({1}, {std::numeric_limits<real>::quiet_NaN()}, true);
  Tensor zn = Tensor::from({2}, {1, 2}, true);
  interp_gather(zn, pn).backward(xt::ones<real>({1}));
  CHECK(std::isnan(pn.grad()(0)));
  CHECK(zn.grad()(0) == 0);
  CHECK(zn.grad()(1) == 0);
}

TEST_CASE("interp_gather gradients: CoPE's shapes z (B, H, Tq, P), p (B, H, Tq, Tk), and p out of range",
          "[interp_gather][grad]") {
  Rng rng(61);
  for (auto [lo, hi] : {std::pair<double, double>{0.0, 4.0}, {-2.0, 7.0}}) {
    INFO("p in [" << lo << ", " << hi << "]");
    Tensor z = randn({2, 3, 4, 5}, rng), p = uniform({2, 3, 4, 6}, rng, lo, hi);
    for (std::size_t i = 0; i < p.numel(); ++i) {  // away from integers: the slope jumps there
      real& v = p.impl()->value.data()[i];
      if (std::abs(v - std::round(v)) < real(0.01)) v += real(0.05);
    }
    auto r = gradcheck([](const std::vector<Tensor>& in) { return interp_gather(in[0], in[1]); }, {z, p});
    CHECK(r.checked == z.numel() + p.numel());
  }
  Tensor z1 = randn({6, 3}, rng), p1 = uniform({6, 2}, rng, 0.1, 1.9);  // plain 2-D
  gradcheck([](const std::vector<Tensor>& in) { return interp_gather(in[0], in[1]); }, {z1, p1});
}

TEST_CASE("interp_gather errors", "[interp_gather][errors]") {
  CHECK_THROWS_WITH(interp_gather(Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 4, 4})),
                    Catch::Contains("interp_gather") && Catch::Contains("(2, 3, 4)") && Catch::Contains("(2, 4, 4)"));
  CHECK_THROWS_WITH(interp_gather(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 4})), Catch::Contains("leading dims"));
  CHECK_THROWS_WITH(interp_gather(Tensor::zeros({2, 0}), Tensor::zeros({2, 3})), Catch::Contains("no points"));
  CHECK_THROWS_WITH(interp_gather(Tensor(), Tensor::zeros({2, 3})), Catch::Contains("interp_gather"));
  CHECK(interp_gather(Tensor::zeros({2, 3}), Tensor::zeros({2, 0})).shape() == (Shape{2, 0}));
}
