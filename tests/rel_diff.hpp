// The largest |a - b| relative to the largest |b| (float errors scale with the values' magnitude); every
// entry of a must be finite. Shared by the tests that compare two computations of one result.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/tensor.hpp"

namespace pelab::test {

inline double rel_diff(const Array& a, const Array& b) {
  REQUIRE(a.shape() == b.shape());
  double worst = 0, mag = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(std::isfinite(a.data()[i]));
    worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])));
    mag = std::max(mag, std::abs(double(b.data()[i])));
  }
  return worst / std::max(mag, 1e-30);
}

}  // namespace pelab::test
