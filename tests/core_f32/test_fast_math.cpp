// The vectorizable exp and erf used in softmax and GELU, against libm over dense grids.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "core/ops/fast_math.hpp"

using namespace pelab;

TEST_CASE("exp_nonpos is within 1e-7 relative of exp on x <= 0 and exactly 0 below -86", "[fast_math]") {
  double worst = 0;
  for (double x = -87.0; x <= 0.0; x += 1e-4) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(double(xf)), got = detail::exp_nonpos(xf);
    if (xf < -86.0f) {
      CHECK(got == 0.0);
      continue;
    }
    worst = std::max(worst, std::abs(got - want) / want);
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 1e-7);
  CHECK(detail::exp_nonpos(0.0f) == 1.0f);
  CHECK(std::isnan(detail::exp_nonpos(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("erf_fast is within 1.2e-7 absolute of erf everywhere", "[fast_math]") {
  double worst = 0;
  for (double x = -8.0; x <= 8.0; x += 1e-5) {
    const float xf = static_cast<float>(x);
    worst = std::max(worst, std::abs(double(detail::erf_fast(xf)) - std::erf(double(xf))));
  }
  INFO("worst absolute error " << worst);
  CHECK(worst < 1.2e-7);
  CHECK(detail::erf_fast(0.0f) == 0.0f);
  CHECK(detail::erf_fast(100.0f) == Approx(1.0f));
  CHECK(detail::erf_fast(-100.0f) == Approx(-1.0f));
}
