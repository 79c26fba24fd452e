// The history encodings' settings from a config: out-of-range values and cross-checks against the
// model are reported with the line of the key involved.
#include <catch2/catch.hpp>

#include <string>

#include "config_error.hpp"
#include "experiments/config/config.hpp"

using namespace pelab;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

std::string error_of(const std::string& text) { return test::config_error(text, "history.toml"); }

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

TEST_CASE("sizes given as 0 are sized from the ids training uses and recorded in the resolved config",
          "[config][history]") {
  // The per-encoding auto-size rules (layers/positional/auto_size.hpp), through the config.
  // copy at train_len 7 trains on 16-token sequences (ids 0..15) and evaluates up to size 8 (18 tokens).
  const std::string base = "[model]\nd_model = 32\nn_heads = 2\n[task]\nname = \"copy\"\ntrain_len = 7\n"
                           "[eval]\nlengths = [4, 7, 8]\n";
  auto resolved = [&](const std::string& more, const std::string& enc) {
    const RunSpec spec = parse_config(base + more, "sizes.toml").runs.at(0);
    CHECK(spec.model.encoding_params == spec.config.encoding_params.at(enc));  // the model uses what is written
    // The written config reads back to itself: a run directory describes its run.
    CHECK(to_toml(parse_config(to_toml(spec.config), "config.toml").runs.at(0).config) == to_toml(spec.config));
    return spec.config.encoding_params.at(enc);
  };
  auto integer = [](std::int64_t v) { return Value(v); };
  CHECK(resolved("[encoding]\nname = \"binary\"\n", "binary").at("bits") == integer(4));  // ids < 16
  CHECK(resolved("[encoding]\nname = \"learned\"\n", "learned").at("max_len") == integer(16));
  auto mult = resolved("[encoding]\nname = \"multiplicative\"\n[encoding.multiplicative]\nkind = \"learned\"\n",
                       "multiplicative");
  CHECK(mult.at("max_len") == integer(16));
  auto concat = resolved("[encoding]\nname = \"concat\"\n[encoding.concat]\nkind = \"learned\"\n", "concat");
  CHECK(concat.at("max_len") == integer(16));
  CHECK(concat.at("d_pos") == integer(8));  // d_model / 4
  // No table, nothing to size; offset/randomized ids size from [train] max_position; given sizes stay.
  CHECK(resolved("[encoding]\nname = \"multiplicative\"\n", "multiplicative").at("max_len") == integer(0));
  CHECK(resolved("[encoding]\nname = \"learned\"\n[train]\npositions = \"randomized\"\nmax_position = 100\n", "learned")
            .at("max_len") == integer(100));
  CHECK(resolved("[encoding]\nname = \"binary\"\n[encoding.binary]\nbits = 9\n", "binary").at("bits") == integer(9));
  // A size the grid assigns stays as assigned ([cell.assignment] must match the settings).
  const auto cells = parse_config(base + "[encoding]\nname = \"binary\"\n[sweep]\n\"encoding.binary.bits\" = [0, 6]\n",
                                  "sizes.toml").runs;
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].config.encoding_params.at("binary").at("bits") == integer(0));
  CHECK(to_toml(parse_config(to_toml(cells[0].config), "cell.toml").runs.at(0).config) == to_toml(cells[0].config));
}
