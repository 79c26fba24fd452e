// The history encodings' settings from a config: out-of-range values and cross-checks against the
// model are reported with the line of the key involved.
#include <catch2/catch.hpp>

#include <string>

#include "experiments/config/config.hpp"

using namespace pelab;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "history.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("history encodings: bad settings name the file, the line and what is allowed", "[config][history]") {
  CHECK(error_of("[encoding]\nname = \"concat\"\n[encoding.concat]\nd_pos = 16\n") == "(no error)");
  CHECK_THAT(error_of("[model]\nd_model = 32\ntie_embeddings = true\n[encoding]\nname = \"concat\"\n"),
             StartsWith("history.toml:3: [encoding.concat]") && Contains("model.tie_embeddings = false"));
  CHECK_THAT(error_of("[model]\nd_model = 32\n[encoding]\nname = \"concat\"\n[encoding.concat]\nd_pos = 32\n"),
             StartsWith("history.toml:6: [encoding.concat] d_pos 32 leaves no token components"));
  CHECK_THAT(error_of("[encoding]\nname = \"concat\"\n[encoding.concat]\nkind = \"table\"\n"),
             StartsWith("history.toml:4:") && Contains("sinusoidal, learned"));
  CHECK_THAT(error_of("[model]\nd_model = 16\nn_heads = 2\n[encoding]\nname = \"binary\"\n[encoding.binary]\nbits = 20\n"),
             StartsWith("history.toml:7: [encoding.binary] bits 20 exceed d_model 16"));
  CHECK_THAT(error_of("[encoding]\nname = \"binary\"\n[encoding.binary]\nbits = 31\n"),
             StartsWith("history.toml:4:") && Contains("[0, 30]"));
  CHECK_THAT(error_of("[encoding]\nname = \"integer\"\n[encoding.integer]\nscale = 0\n"),
             StartsWith("history.toml:4:") && Contains("scale"));
  CHECK_THAT(error_of("[encoding]\nname = \"normalized\"\n[encoding.normalized]\npattern = \"ramp\"\n"),
             StartsWith("history.toml:4:") && Contains("alternating, constant"));
  CHECK_THAT(error_of("[encoding]\nname = \"multiplicative\"\n[encoding.multiplicative]\nkind = \"cosine\"\n"),
             StartsWith("history.toml:4:") && Contains("sinusoidal, learned"));
  CHECK_THAT(error_of("[encoding]\nname = \"recurrent\"\n[encoding.recurrent]\ncell = \"rnn\"\n"),
             StartsWith("history.toml:4:") && Contains("gru, lstm"));
}
