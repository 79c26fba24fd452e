// GRAPE's encodings refuse bad settings at the config line that causes them (layers/positional/grape_m.cpp,
// grape_a.cpp).
#include <catch2/catch.hpp>
#include <string>

#include "config_error.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace pelab;

namespace {
std::string error_of(const std::string& text) { return test::config_error(text, "quick.toml", {}); }
}  // namespace

TEST_CASE("grape_m and grape_a: bad settings are refused at their line, saying what is allowed", "[config][errors]") {
  CHECK_THAT(error_of("[encoding]\nname = \"grape_m\"\n[encoding.grape_m]\nvariant = \"lie\"\n"),
             StartsWith("quick.toml:4: [encoding.grape_m] key 'variant' has value \"lie\"; expected one of: grape, comrope"));
  CHECK_THAT(error_of("[model]\nd_model = 30\nn_heads = 10\n[encoding]\nname = \"grape_m\"\n"),
             StartsWith("quick.toml:") && Contains("head_dim 3 must be even"));
  CHECK_THAT(error_of("[encoding]\nname = \"grape_a\"\n[encoding.grape_a]\nrate = \"linear\"\n"),
             StartsWith("quick.toml:4: [encoding.grape_a] key 'rate' has value \"linear\"; expected one of: constant, gated"));
  CHECK_THAT(error_of("[encoding]\nname = \"grape_a\"\n[encoding.grape_a]\nslope_scale = -1\n"),
             StartsWith("quick.toml:4: [encoding.grape_a] key 'slope_scale' has value -1; expected a number in [0, 100]"));
  CHECK_THAT(error_of("[encoding]\nname = \"grape_a\"\n[encoding.grape_a]\nlift = \"linear\"\n"),
             StartsWith("quick.toml:4: [encoding.grape_a] key 'lift' has value \"linear\"; expected one of: query_key, "
                        "query, key, constant"));
  CHECK_THAT(error_of("[encoding]\nname = \"grape_m\"\n[encoding.grape_m]\nlog_freq_scale = 0\n"),
             StartsWith("quick.toml:4: [encoding.grape_m] key 'log_freq_scale' has value 0; expected a number in "));
  CHECK_THAT(error_of("[model]\ncausal = false\n[encoding]\nname = \"grape_a\"\n"),
             StartsWith("quick.toml:2: [encoding.grape_a] encoding 'grape_a' needs causal attention (model.causal = true)"));
  CHECK(error_of("[encoding]\nname = \"grape_m\"\n[encoding.grape_m]\nvariant = \"comrope\"\nper_head = true\n") ==
        "(no error)");
}
