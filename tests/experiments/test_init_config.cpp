// [model] init: read, validated with file:line, written by to_toml, and used by a real run.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "config_error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/run/run.hpp"
#include "training/checkpoint.hpp"
#include "tiny_config.hpp"

using namespace pelab;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::string& text) { return test::config_error(text, "i.toml"); }

double sd_of(const Tensor& t) {
  double s = 0, s2 = 0;
  for (std::size_t i = 0; i < t.numel(); ++i) s += t.data()[i], s2 += double(t.data()[i]) * t.data()[i];
  const double n = double(t.numel()), m = s / n;
  return std::sqrt(s2 / n - m * m);
}

}  // namespace

TEST_CASE("config: [model] init picks the scheme, gpt2 by default", "[config][init]") {
  CHECK(parse_config("", "e.toml").config.model.init == InitScheme::gpt2);
  const LoadedConfig l = parse_config("[model]\ninit = \"scaled\"\nn_layers = 3\n", "i.toml");
  CHECK(l.config.model.init == InitScheme::scaled);
  CHECK(l.runs[0].model.init_options().scheme == InitScheme::scaled);
  CHECK(l.runs[0].model.init_options().n_layers == 3);
  const std::string toml = to_toml(l.runs[0].config);
  CHECK_THAT(toml, Contains("init = \"scaled\"\ninit_std = 0.02\nemb_init_std = 0.02\n"));
  CHECK(to_toml(parse_config(toml, "again.toml").runs[0].config) == toml);
  CHECK_THAT(error_of("[model]\n\ninit = \"xavier\"\n"),
             StartsWith("i.toml:3: [model] key 'init' has value \"xavier\"; expected one of: gpt2, scaled, pytorch"));
  const LoadedConfig s = parse_config("[sweep]\n\"model.init\" = [\"gpt2\", \"pytorch\"]\n", "s.toml");
  REQUIRE(s.runs.size() == 2);
  CHECK(s.runs[1].model.init == InitScheme::pytorch);
}

TEST_CASE("a run initializes with the configured scheme", "[config][init][e2e]") {
  const fs::path dir = fs::temp_directory_path() / ("pelab_init_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (const char* scheme : {"gpt2", "pytorch"}) {
    INFO(scheme);
    // One step at a tiny learning rate: the checkpoint still shows the initial spread.
    const RunSpec spec = parse_config(test::tiny_config(2), "i.toml",
                                      {std::string("model.init=") + scheme, "train.lr=1e-6", "train.min_lr=0"})
                             .runs.at(0);
    RunOptions ro;
    ro.run_dir = (dir / scheme).string();
    ro.console = false;
    REQUIRE(run_experiment(spec, ro) == kOk);
    const auto ck = latest_checkpoint(ro.run_dir);
    REQUIRE(ck.has_value());
    Transformer m(spec.model);
    load_weights(*ck + "/weights.safetensors", m);
    const double emb = sd_of(m.parameter("tok_emb.weight")), w = sd_of(m.parameter("blocks.0.mlp.fc.weight"));
    if (std::string(scheme) == "gpt2") {
      CHECK(emb == Approx(0.02).epsilon(0.15));
      CHECK(w == Approx(0.02).epsilon(0.15));
    } else {
      CHECK(emb == Approx(1.0).epsilon(0.15));                     // nn.Embedding: N(0, 1)
      CHECK(w == Approx(1 / std::sqrt(3.0 * 16)).epsilon(0.15));   // U(+-1/sqrt(16)): sd 1/sqrt(48)
    }
  }
  fs::remove_all(dir);
}
