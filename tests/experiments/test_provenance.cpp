// Provenance (experiments/run/provenance.hpp): `pelab --version` names the source version, build, CPU
// and kernels; eval.json carries the same record and reads back; files written before it still load.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "cli_helpers.hpp"
#include "experiments/eval/eval_result.hpp"
#include "core/blas.hpp"
#include "experiments/run/provenance.hpp"

using namespace pelab;

TEST_CASE("provenance names the version, build, cpu and kernels", "[provenance]") {
  const Provenance p = provenance(3);
  CHECK(!p.version.empty());
  CHECK(p.build.find("flags") != std::string::npos);
  CHECK(p.build.find(PELAB_TEST_BUILD_TYPE) == 0);  // the build type comes first
  CHECK(!p.cpu.empty());
  CHECK(p.blas.find("kernel") != std::string::npos);
  blas::set_gemm_path(blas::GemmPath::openblas);
  CHECK(provenance(1).gemm == "OpenBLAS");  // the path running, as a run switches to its own
  if (blas::gemm_path_available(blas::GemmPath::libxsmm)) {
    blas::set_gemm_path(blas::GemmPath::libxsmm);
    CHECK(provenance(1).gemm.rfind("libxsmm ", 0) == 0);
  }
  blas::set_gemm_path(blas::default_gemm_path());
  CHECK(!p.simd.empty());
  const auto j = to_json(p);
  CHECK(j["threads"] == 3);
  CHECK(j["version"] == p.version);
  CHECK(j["gemm"] == p.gemm);
}

TEST_CASE("eval.json keeps the provenance and reads files without it", "[provenance]") {
  EvalResult r;
  r.encoding = "rope", r.task = "copy", r.train_len = 8, r.status = "finished";
  const std::string dir = test::fresh_temp_dir("provenance");
  const std::string old_file = dir + "/old.json", new_file = dir + "/new.json";
  std::ofstream(old_file) << to_json(r).dump(2);
  CHECK(!to_json(r).contains("provenance"));
  CHECK(read_eval_result(old_file).provenance.is_null());
  r.provenance = to_json(provenance(2));
  std::ofstream(new_file) << to_json(r).dump(2);
  CHECK(read_eval_result(new_file).provenance == r.provenance);
  auto bad = to_json(r);
  bad["provenance"] = "yesterday";
  std::ofstream(new_file) << bad.dump(2);
  CHECK_THROWS_WITH(read_eval_result(new_file), Catch::Contains("provenance") && Catch::Contains("expected an object"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("pelab --version prints the provenance", "[provenance][cli]") {
  const std::string dir = test::fresh_temp_dir("provenance_cli"), log = dir + "/version.log";
  REQUIRE(test::run_cli("--version", log) == 0);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  const Provenance p = provenance(1);
  CHECK(test::has(text.str(), "pelab " + p.version));
  for (const char* line : {"\nbuild: ", "\ncpu: ", "\nblas: ", "\ngemm: ", "\nsimd: ", "\nMPI: "}) CHECK(test::has(text.str(), line));
  std::filesystem::remove_all(dir);
}
