// Bad options of hope, fope and pope's phase bias: each a config error at the line of the key it names,
// with the value and what is allowed (pelab exits 2 on any ConfigError: test_cli_limits.cpp).
#include <catch2/catch.hpp>

#include "config_error.hpp"

using namespace pelab;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {
std::string error_of(const std::string& text) { return test::config_error(text, "freq.toml"); }
}  // namespace

TEST_CASE("hope and fope: a length that keeps no frequency points at length, with the value and the minimum",
          "[config][hope][fope]") {
  for (const char* name : {"hope", "fope"}) {
    INFO(name);
    const std::string enc = std::string("[encoding]\nname = \"") + name + "\"\n[encoding." + name + "]\n";
    CHECK_THAT(error_of(enc + "base = 100.0\nlength = 6\n"),
               StartsWith(std::string("freq.toml:5: [encoding.") + name + "] length 6 keeps no frequency") &&
                   Contains("expected length >= 7"));
    CHECK(error_of(enc + "length = 7\n") == "(no error)");
    CHECK_THAT(error_of(enc + "length = -3\n"), StartsWith("freq.toml:4: ") && Contains("length"));
  }
}

TEST_CASE("hope and fope: head sizes they cannot use are refused naming head_dim", "[config][hope][fope]") {
  // d_model 12, 4 heads: head_dim 3, odd
  CHECK_THAT(error_of("[model]\nd_model = 12\nn_heads = 4\n[encoding]\nname = \"hope\"\n"),
             StartsWith("freq.toml:5: [encoding.hope] head_dim 3 must be even"));
  // head_dim 2: no room for hs/4 Fourier pairs
  CHECK_THAT(error_of("[model]\nd_model = 8\nn_heads = 4\n[encoding]\nname = \"fope\"\n"),
             StartsWith("freq.toml:5: [encoding.fope] head_dim 2 must be even and at least 4"));
}

TEST_CASE("fope's sigma and seed and pope's phase_bias: out of range or unknown values", "[config][fope][pope]") {
  CHECK_THAT(error_of("[encoding]\nname = \"fope\"\n[encoding.fope]\nsigma = -0.1\n"),
             StartsWith("freq.toml:4: ") && Contains("sigma") && Contains("-0.1"));
  CHECK_THAT(error_of("[encoding]\nname = \"fope\"\n[encoding.fope]\nseed = 1.5\n"),
             StartsWith("freq.toml:4: ") && Contains("seed"));
  CHECK_THAT(error_of("[encoding]\nname = \"pope\"\n[encoding.pope]\nphase_bias = \"learned\"\n"),
             StartsWith("freq.toml:4: ") && Contains("phase_bias") && Contains("learned") && Contains("uniform"));
}
