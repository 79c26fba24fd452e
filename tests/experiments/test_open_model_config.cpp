// Config keys of issue 46's features: encoding variants ([encoding.rope.global]), [attention] chunk and
// temperature tuning. Bad values are refused at the key's file:line; a variant survives config.toml's
// round trip; a config without the new keys loads as before.
#include <catch2/catch.hpp>

#include "config_error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/report/report_detail.hpp"

using namespace pelab;

namespace {

std::string err(const std::string& text) { return test::config_error(text, "c.toml"); }
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// [model] on lines 1-4, `extra` from line 5 on, then a copy task.
std::string model(const std::string& extra) {
  return "[model]\nd_model = 16\nn_layers = 4\nn_heads = 2\n" + extra + "[task]\nname = \"copy\"\ntrain_len = 4\n";
}

}  // namespace

TEST_CASE("a chunk of 0 is refused at its line, a malformed one too, none and long chunks accepted",
          "[config][chunk][errors]") {
  std::string e = err(model("[attention]\nchunk = \"0\"\n"));
  INFO(e);
  CHECK(has(e, "c.toml:6"));
  CHECK(has(e, "attention.chunk \"0\": a chunk of 0 keys would leave a query no key"));
  CHECK(has(e, "none = no chunk"));
  e = err(model("[attention]\nchunk = \"4,0\"\n"));
  CHECK(has(e, "c.toml:6"));
  CHECK(has(e, "a chunk of 0 keys"));
  e = err(model("[attention]\nchunk = \"4,x\"\n"));
  CHECK(has(e, "c.toml:6"));
  CHECK(has(e, "'x' is not a positive integer or none"));
  e = err(model("[attention]\nchunk = \"4,none,4\"\n"));
  CHECK(has(e, "3 entries for 4 layers"));
  e = err(model("[attention]\nchunk = \"4,none,\"\n"));
  CHECK(has(e, "ends with ','"));
  e = err("[model]\nd_model = 16\nn_layers = 4\nn_heads = 2\ncausal = false\n[attention]\nchunk = \"4\"\n"
          "[task]\nname = \"copy\"\ntrain_len = 4\n");
  CHECK(has(e, "c.toml:7"));
  CHECK(has(e, "needs causal attention"));
  CHECK(err(model("[attention]\nchunk = \"4,none\"\n")) == "(no error)");
  CHECK(err(model("[attention]\nchunk = \"100000\"\n")) == "(no error)");  // longer than any sequence: full causal
  const LoadedConfig c = parse_config(model("[attention]\nchunk = \" 4 , none\"\n"), "c.toml");
  CHECK(layer_chunks(c.runs.at(0).model.attention.chunk, 4) == std::vector<std::size_t>{4, 0, 4, 0});
}

TEST_CASE("temperature tuning: a pattern of 0 and 1, F at least 1, refused at the key's line", "[config][tuning][errors]") {
  std::string e = err(model("[attention]\ntemperature_tuning = \"0,2\"\n"));
  INFO(e);
  CHECK(has(e, "c.toml:6"));
  CHECK(has(e, "'2' is not 0 or 1"));
  e = err(model("[attention]\ntemperature_tuning = \"1\"\ntuning_floor_scale = 0.5\n"));
  CHECK(has(e, "c.toml:7"));
  e = err(model("[attention]\ntemperature_tuning = \"0,0,1\"\n"));
  CHECK(has(e, "3 entries for 4 layers"));
  const LoadedConfig c = parse_config(
      model("[attention]\ntemperature_tuning = \"0,0,0,1\"\ntuning_floor_scale = 4\ntuning_attn_scale = 0.2\n"), "c.toml");
  const AttentionScalingSettings& a = c.runs.at(0).model.attention;
  CHECK(layer_tuning(a.temperature_tuning, 4) == std::vector<bool>{false, false, false, true});
  CHECK(a.tuning_floor_scale == 4);
  CHECK(a.tuning_attn_scale == 0.2);
  CHECK_FALSE(a.tuning_in_training);
}

TEST_CASE("an encoding variant: [encoding.rope.global] gives rope.global its own parameters, and round-trips",
          "[config][variant]") {
  const std::string text = model(
      "[encoding]\nname = \"rope\"\nlayers = \"rope,rope,rope,rope.global\"\n[encoding.rope]\nbase = 10000.0\n"
      "[encoding.rope.global]\nbase = 1000000.0\n");
  const LoadedConfig c = parse_config(text, "c.toml");
  const ModelConfig& m = c.runs.at(0).model;
  CHECK(m.encoding_params.at("base") == Value(10000.0));
  CHECK(m.layer_encoding_params.at("rope.global").at("base") == Value(1000000.0));
  CHECK(m.extra_encoding_names() == std::vector<std::string>{"rope.global"});
  const std::string toml = to_toml(c.config);
  INFO(toml);
  CHECK(has(toml, "[encoding.rope.global]\n"));
  const LoadedConfig back = parse_config(toml, "config.toml");
  CHECK(to_toml(back.config) == toml);
  CHECK(back.runs.at(0).model.layer_encoding_params.at("rope.global").at("base") == Value(1000000.0));
  // --set reaches a variant's parameter
  const LoadedConfig set = parse_config(text, "c.toml", {"encoding.rope.global.base=500000.0"});
  CHECK(set.runs.at(0).model.layer_encoding_params.at("rope.global").at("base") == Value(500000.0));
}

TEST_CASE("encoding variants: bad names and keys are refused at their lines", "[config][variant][errors]") {
  std::string e = err(model("[encoding]\nname = \"rope\"\nlayers = \"rope,rope.Global\"\n"));
  INFO(e);
  CHECK(has(e, "c.toml:7"));
  CHECK(has(e, "the variant of a-z, 0-9 and _"));
  e = err(model("[encoding]\nname = \"rope\"\nlayers = \"rope,ropee.global\"\n"));
  CHECK(has(e, "c.toml:7"));
  CHECK(has(e, "did you mean 'rope'"));
  e = err(model("[encoding]\nname = \"rope\"\nlayers = \"rope,rope.global\"\n[encoding.rope.global]\nbasis = 5.0\n"));
  CHECK(has(e, "c.toml:9"));
  CHECK(has(e, "unknown key 'basis'"));
  e = err(model("[encoding]\nname = \"rope\"\nlayers = \"rope,rope.global\"\n[encoding.rope.global]\nbase = -5.0\n"));
  CHECK(has(e, "c.toml:9"));
  e = err(model("[encoding]\nname = \"rope\"\n[encoding.rope.\"Global\"]\nbase = 5.0\n"));
  CHECK(has(e, "c.toml:"));
  CHECK(has(e, "the variant of a-z, 0-9 and _"));
  // A variant's subtable without the variant in the layout would do nothing: refused at its key's line.
  e = err(model("[encoding]\nname = \"rope\"\nlayers = \"rope,none\"\n[encoding.rope.global]\nbase = 5.0\n"));
  CHECK(has(e, "c.toml:9"));
  CHECK(has(e, "runs in no layer"));
  // A variant of an input-level encoding is refused in a layout as the encoding is.
  e = err(model("[encoding]\nname = \"rope\"\nlayers = \"rope,learned.x\"\n"));
  CHECK(has(e, "acts on the token embeddings"));
}

TEST_CASE("a config without the new keys loads with chunk none and tuning off", "[config][chunk][tuning]") {
  const LoadedConfig c = parse_config(model("[encoding]\nname = \"rope\"\nlayers = \"none,rope\"\n"), "c.toml");
  const AttentionScalingSettings& a = c.runs.at(0).model.attention;
  CHECK(a.chunk == "none");
  CHECK(a.temperature_tuning == "0");
  CHECK(layer_chunks(a.chunk, 4) == std::vector<std::size_t>(4, 0));
}

TEST_CASE("a sweep over the features labels its cells and report groups by them", "[config][variant][chunk]") {
  const LoadedConfig c = parse_config(
      model("[encoding]\nname = \"rope\"\nlayers = \"rope,rope.global\"\n"
            "[sweep]\n\"attention.chunk\" = [\"none\", \"4,none\"]\n\"encoding.rope.global.base\" = [100.0, 1000000.0]\n"),
      "c.toml");
  REQUIRE(c.runs.size() == 4);
  CHECK(c.runs[1].config.cell.label == "attention.chunk=none,encoding.rope.global.base=1000000.0");
  CHECK(c.runs[2].model.attention.chunk == "4,none");
  CHECK(c.runs[1].model.layer_encoding_params.at("rope.global").at("base") == Value(1000000.0));
  // The report's legend names: the last component, the whole key where two would read the same.
  CHECK(report_detail::short_key_names({"attention.chunk", "encoding.rope.global.base", "encoding.rope.base"}) ==
        std::vector<std::string>{"chunk", "encoding.rope.global.base", "encoding.rope.base"});
}

TEST_CASE("a config.toml recorded before the new keys existed loads to the same settings", "[config][chunk][tuning]") {
  const LoadedConfig now = parse_config(model("[encoding]\nname = \"t5\"\nlayers = \"t5,none\"\n"), "c.toml");
  const std::string recorded = to_toml(now.config);
  std::string old;  // the same text without the lines of [attention] chunk and temperature tuning
  std::size_t dropped = 0;
  for (std::size_t a = 0, b; a < recorded.size(); a = b + 1) {
    b = recorded.find('\n', a);
    const std::string line = recorded.substr(a, b - a);
    const bool is_new = line.rfind("chunk = ", 0) == 0 || line.rfind("temperature_tuning = ", 0) == 0 ||
                        line.rfind("tuning_", 0) == 0;
    dropped += is_new;
    if (!is_new) old += line + "\n";
  }
  REQUIRE(dropped == 5);
  const LoadedConfig back = parse_config(old, "config.toml");
  CHECK(to_toml(back.config) == recorded);
  CHECK(back.runs.at(0).model.attention.chunk == "none");
}
