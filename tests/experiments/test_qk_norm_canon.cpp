// QK-norm ([attention] qk_norm) and Canon layers ([canon]) from the command line: bad settings refused at
// their config line saying what is allowed, `pelab list` shows them with their parameters, and a report
// of runs grouped by encoding names them beside it (issue 46).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_helpers.hpp"
#include "config_error.hpp"
#include "experiments/report/report.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace pelab;
using namespace pelab::test;
namespace fs = std::filesystem;

namespace {
std::string error_of(const std::string& text) { return config_error(text, "quick.toml", {}); }

std::string write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}
}  // namespace

TEST_CASE("qk_norm and canon: bad settings are refused at their line, saying what is allowed", "[config][errors][canon]") {
  CHECK_THAT(error_of("[model]\nn_layers = 2\n[attention]\nqk_norm = \"on,maybe\"\n"),
             StartsWith("quick.toml:4: [attention] attention.qk_norm \"on,maybe\": 'maybe' is not on or off"));
  CHECK_THAT(error_of("[model]\nn_layers = 4\n[attention]\nqk_norm = \"on,on,off\"\n"),
             StartsWith("quick.toml:4: [attention] attention.qk_norm \"on,on,off\" has 3 entries for 4 layers"));
  CHECK_THAT(error_of("[model]\nn_layers = 2\n[attention]\nqk_norm = \"on,\"\n"), StartsWith("quick.toml:4: "));
  CHECK_THAT(error_of("[canon]\npoints = \"AX\"\n"),
             StartsWith("quick.toml:2: [canon] canon.points \"AX\": 'X' is not a Canon point; expected a subset of \"ABCD\""));
  CHECK_THAT(error_of("[canon]\npoints = \"ACA\"\n"), StartsWith("quick.toml:2: [canon] canon.points \"ACA\": 'A' is repeated"));
  CHECK_THAT(error_of("[canon]\npoints = \"A\"\nkernel = 0\n"), StartsWith("quick.toml:3: ") && Contains("kernel"));
  CHECK_THAT(error_of("[canon]\npoints = \"A\"\nresidual = 1\n"), StartsWith("quick.toml:3: "));
  CHECK_THAT(error_of("[canon]\nkernel = 3\n"),
             StartsWith("quick.toml:2: [canon] key 'kernel' has no effect without Canon layers"));
  CHECK(error_of("[canon]\nkernel = 3\n[sweep]\n\"canon.points\" = [\"\", \"AC\"]\n") == "(no error)");
  CHECK(error_of("[model]\nn_layers = 4\n[attention]\nqk_norm = \"on,on,on,off\"\n[canon]\npoints = \"DCBA\"\n") ==
        "(no error)");
  // Canon is one-sided in a bidirectional model too: accepted, as documented (layers/canon.hpp).
  CHECK(error_of("[model]\ncausal = false\n[canon]\npoints = \"AC\"\n") == "(no error)");
}

TEST_CASE("pelab list shows QK-norm and the Canon keys with their defaults", "[cli][canon]") {
  const std::string dir = fresh_temp_dir("qk_canon_list"), log = dir + "/log.txt";
  REQUIRE(run_cli("list", log, 30) == 0);
  const std::string text = read_file(log);
  CHECK(has(text, "\n      qk_norm          string     default \"off\""));
  CHECK(has(text, "Canon layers, with every encoding ([canon]"));
  CHECK(has(text, "\n      points           string     default \"\""));
  CHECK(has(text, "\n      kernel           integer    default 4"));
  CHECK(has(text, "\n      residual         boolean    default true"));
  fs::remove_all(dir);
}

TEST_CASE("a report of runs grouped by encoding labels them by their QK-norm and Canon layers", "[cli][report][canon]") {
  const std::string dir = fresh_temp_dir("qk_canon_report"), log = dir + "/log.txt";
  const std::string base = tiny_config(4) + "[encoding]\nname = \"none\"\n";
  const std::string plain = write_text(dir + "/plain.toml", base);
  const std::string canon =
      write_text(dir + "/canon.toml", base + "[attention]\nqk_norm = \"on\"\n[canon]\npoints = \"AC\"\nkernel = 3\n");
  REQUIRE(run_cli("train " + plain + " --out " + dir + "/runs/plain --quiet", log, 120) == 0);
  REQUIRE(run_cli("train " + canon + " --out " + dir + "/runs/canon --quiet", log, 120) == 0);
  ReportOptions o;
  o.plots = false;
  const ReportResult r = write_report(dir + "/runs", o);
  INFO(r.table_markdown);
  CHECK(has(r.table_markdown, "| none + QK-norm on + Canon AC (kernel 3) |"));
  CHECK(has(r.table_markdown, "\n| none  "));  // the plain run's row, padded to the longer label
  // QK-norm's gains and Canon's weights are trained: neither can be switched at evaluation.
  CHECK(run_cli("eval " + dir + "/runs/plain --set attention.qk_norm=\\\"on\\\" --name x", log, 60) == 2);
  CHECK(has(read_file(log), "key 'attention.qk_norm' cannot change at evaluation"));
  CHECK(run_cli("eval " + dir + "/runs/canon --set canon.points=\\\"A\\\" --name y", log, 60) == 2);
  CHECK(has(read_file(log), "key 'canon.points' is not an evaluation setting"));
  fs::remove_all(dir);
}
