// alibi_slopes (layers/positional/alibi.hpp), the helper other encodings start from: Press et al.'s
// geometric slopes for a power of two, their interleaving otherwise.
#include <cmath>

#include <catch2/catch.hpp>

#include "layers/positional/alibi.hpp"

using namespace pelab;

TEST_CASE("alibi_slopes: 2^(-8h/H) for a power of two, interleaved with the next power's otherwise", "[alibi]") {
  const std::vector<double> eight = alibi_slopes(8);
  REQUIRE(eight.size() == 8);
  for (std::size_t h = 0; h < 8; ++h) CHECK(eight[h] == std::ldexp(1.0, -int(h + 1)));
  // H = 6: the 4-head slopes 2^-2, 2^-4, 2^-6, 2^-8, then the 8-head slopes 2^-1, 2^-3 (every other one).
  const std::vector<double> six = alibi_slopes(6);
  const double want[6] = {0.25, 1.0 / 16, 1.0 / 64, 1.0 / 256, 0.5, 0.125};
  REQUIRE(six.size() == 6);
  for (std::size_t h = 0; h < 6; ++h) CHECK(six[h] == want[h]);
  CHECK(alibi_slopes(1) == std::vector<double>{1.0 / 256});
}
