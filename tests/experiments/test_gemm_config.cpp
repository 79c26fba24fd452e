// [train] gemm, the GEMM path a run records (core/blas.hpp): what it resolves to when not given (the
// process's default; openblas in a config pelab wrote before the key existed), that to_toml writes it,
// that every shipped config names it, and that a run switches to it or refuses a PELAB_GEMM that disagrees.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli_helpers.hpp"
#include "config_error.hpp"
#include "core/blas.hpp"
#include "experiments/config/config.hpp"
#include "test_paths.hpp"

using namespace pelab;
using Catch::Matchers::Contains;

namespace {

const char* kBase = "[task]\nname = \"copy\"\n[train]\nsteps = 10\n";

std::string resolved_gemm(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return parse_config(text, "g.toml", overrides).runs.at(0).config.train.gemm;
}

// PELAB_GEMM for a scope; the process's path back to its default after.
struct ScopedGemmEnv {
  test::ScopedEnv env;
  explicit ScopedGemmEnv(const char* v) : env("PELAB_GEMM", v) {}
  ~ScopedGemmEnv() { blas::set_gemm_path(blas::default_gemm_path()); }
};

}  // namespace

TEST_CASE("[train] gemm: not given is the process's default, and to_toml writes what it resolved to", "[config][gemm]") {
  const std::string def = blas::gemm_path_key(blas::default_gemm_path());
  CHECK(resolved_gemm(kBase) == def);
  CHECK(resolved_gemm(kBase, {"train.gemm=openblas"}) == "openblas");
  CHECK(resolved_gemm(std::string(kBase) + "gemm = \"openblas\"\n") == "openblas");
  const std::string text = to_toml(parse_config(kBase, "g.toml").runs.at(0).config);
  CHECK_THAT(text, Contains("gemm = \"" + def + "\""));
  CHECK(resolved_gemm(text) == def);  // a recorded config reads back as written
  if (blas::gemm_path_available(blas::GemmPath::libxsmm)) {
    CHECK(def == "libxsmm");
    CHECK(resolved_gemm(kBase, {"train.gemm=libxsmm"}) == "libxsmm");
  }
}

TEST_CASE("[train] gemm: a config.toml written before the key existed means openblas, a user's file the default",
          "[config][gemm]") {
  const std::string text = to_toml(parse_config(kBase, "g.toml", {"train.gemm=libxsmm"}).runs.at(0).config);
  const auto at = text.find("gemm = ");
  REQUIRE(at != std::string::npos);
  const std::string legacy = text.substr(0, at) + text.substr(text.find('\n', at) + 1);
  REQUIRE(legacy.rfind(kResolvedHeader, 0) == 0);
  CHECK(resolved_gemm(legacy) == "openblas");
  // The same settings without pelab's header line: a file someone wrote, which gets the default.
  CHECK(resolved_gemm(legacy.substr(std::string(kResolvedHeader).size())) ==
        blas::gemm_path_key(blas::default_gemm_path()));
}

TEST_CASE("[train] gemm: anything but libxsmm or openblas is an error with the line and the choices", "[config][gemm]") {
  const std::string e = test::config_error(std::string(kBase) + "gemm = \"mkl\"\n", "g.toml");
  CHECK_THAT(e, Contains("g.toml:5"));
  CHECK_THAT(e, Contains("gemm"));
  CHECK_THAT(e, Contains("libxsmm"));
  CHECK_THAT(e, Contains("openblas"));
}

TEST_CASE("every shipped config names its GEMM path: its results never depend on the build's default", "[config][gemm]") {
  namespace fs = std::filesystem;
  std::size_t n = 0;
  for (const char* sub : {"configs", "reproduce"})
    for (const auto& entry : fs::directory_iterator(fs::path(PELAB_SOURCE_DIR) / "experiments" / sub)) {
      if (entry.path().extension() != ".toml") continue;
      INFO(entry.path().string());
      const LoadedConfig c = load_config(entry.path().string());
      CHECK(c.config.locations.count("train.gemm") == 1);
      ++n;
    }
  CHECK(n >= 20);
}

TEST_CASE("use_gemm_path switches the process to the run's path and refuses a PELAB_GEMM that disagrees", "[config][gemm]") {
  ExperimentConfig cfg = parse_config(kBase, "g.toml", {"train.gemm=openblas"}).runs.at(0).config;
  {
    ScopedGemmEnv env("");
    use_gemm_path(cfg);
    CHECK(blas::gemm_path() == blas::GemmPath::openblas);
  }
  if (!blas::gemm_path_available(blas::GemmPath::libxsmm)) return;
  {
    ScopedGemmEnv env("libxsmm");
    try {
      use_gemm_path(cfg);
      FAIL("no error for PELAB_GEMM=libxsmm against train.gemm = openblas");
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK_THAT(m, Contains("PELAB_GEMM = 'libxsmm'"));
      CHECK_THAT(m, Contains("[train] gemm = \"openblas\""));
      CHECK_THAT(m, Contains("--set train.gemm=libxsmm"));
    }
    cfg.train.gemm = "libxsmm";
    use_gemm_path(cfg);
    CHECK(blas::gemm_path() == blas::GemmPath::libxsmm);
  }
}

TEST_CASE("[train] gemm: a sweep's base config, its sweep.toml and its cells agree, and the path can be swept",
          "[config][gemm]") {
  const LoadedConfig loaded = parse_config(std::string(kBase) + "[sweep]\n\"train.seed\" = [1, 2]\n", "s.toml");
  const std::string def = blas::gemm_path_key(blas::default_gemm_path());
  CHECK(loaded.config.train.gemm == def);
  for (const RunSpec& r : loaded.runs) CHECK(r.config.train.gemm == def);
  const std::string sweep_toml = to_toml(loaded.config);  // what pelab sweep writes as sweep.toml
  CHECK(parse_config(sweep_toml, "sweep.toml").config.train.gemm == def);
  if (!blas::gemm_path_available(blas::GemmPath::libxsmm)) return;
  const auto swept =
      parse_config(std::string(kBase) + "[sweep]\n\"train.gemm\" = [\"openblas\", \"libxsmm\"]\n", "s.toml").runs;
  REQUIRE(swept.size() == 2);
  CHECK(swept[0].config.train.gemm == "openblas");
  CHECK(swept[1].config.train.gemm == "libxsmm");
}
