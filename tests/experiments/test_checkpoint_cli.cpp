// Checkpoint integrity through the real CLI: which checkpoint eval and resume use, what they skipped and
// why, a corrupted file is an error naming it, and --resume without a usable checkpoint exits 2.
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "training/fs.hpp"
#include "cli_helpers.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using test::has;
using test::run_cli;

std::string temp_dir(const std::string& name) { return test::fresh_temp_dir("ckcli_" + name); }

void flip_last_byte(const std::string& path) {
  std::string s = read_file(path);
  REQUIRE(!s.empty());
  s.back() = static_cast<char>(s.back() ^ 0x10);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << s;
}

// 20 steps, checkpoints at 10 and 20.
const char* kTiny = R"(
[model]
d_model = 16
n_layers = 1
n_heads = 2
[task]
name = "copy"
train_len = 4
[train]
steps = 20
batch_size = 4
log_every = 10
checkpoint_every = 10
keep_checkpoints = 2
[eval]
lengths = [4]
samples = 8
)";

}  // namespace

TEST_CASE("cli: --resume without a usable checkpoint exits 2 and --resume-or-start starts fresh", "[cli][resume]") {
  const std::string dir = temp_dir("resume");
  const std::string cfg = dir + "/tiny.toml", run = dir + "/run", log = dir + "/log.txt";
  std::ofstream(cfg) << kTiny;
  CHECK(run_cli("train " + cfg + " --out " + run + " --resume", log) == 2);
  std::string out = read_file(log);
  INFO(out);
  CHECK(has(out, "no checkpoint in " + run + "/checkpoints"));
  CHECK(has(out, "--resume-or-start"));
  CHECK_FALSE(fs::exists(run + "/checkpoints"));

  CHECK(run_cli("train " + cfg + " --out " + run + " --resume --resume-or-start", log) == 2);  // exclusive

  REQUIRE(run_cli("train " + cfg + " --out " + run + " --resume-or-start", log) == 0);
  out = read_file(log);
  CHECK(has(out, "starting from step 0"));
  CHECK(fs::exists(run + "/eval.json"));

  // Every checkpoint emptied: --resume and --resume-or-start both refuse, naming each directory.
  fs::remove(run + "/eval.json");
  for (const char* s : {"step_000000010", "step_000000020"})
    for (const auto& e : fs::directory_iterator(run + "/checkpoints/" + s)) fs::remove(e.path());
  for (const char* flag : {"--resume", "--resume-or-start"}) {
    INFO(flag);
    CHECK(run_cli("train " + cfg + " --out " + run + " " + flag, log) == 2);
    out = read_file(log);
    INFO(out);
    CHECK(has(out, "no usable checkpoint"));
    CHECK(has(out, "step_000000010: incomplete"));
    CHECK(has(out, "step_000000020: incomplete"));
  }
  fs::remove_all(dir);
}

TEST_CASE("cli: eval and resume name the checkpoint they use and the newer ones they skipped", "[cli][resume]") {
  const std::string dir = temp_dir("skip");
  const std::string cfg = dir + "/tiny.toml", run = dir + "/run", log = dir + "/log.txt";
  std::ofstream(cfg) << kTiny;
  REQUIRE(run_cli("train " + cfg + " --out " + run, log) == 0);
  const std::string ck = run + "/checkpoints/";

  SECTION("a flipped byte in the newest weights: eval uses the previous checkpoint and says why") {
    flip_last_byte(ck + "step_000000020/weights.safetensors");
    REQUIRE(run_cli("eval " + run, log) == 0);
    const std::string out = read_file(log);
    INFO(out);
    CHECK(has(out, "warning: skipped checkpoint " + ck + "step_000000020"));
    CHECK(has(out, "checksum mismatch in " + ck + "step_000000020/weights.safetensors"));
    CHECK(has(out, "(checkpoint " + ck + "step_000000010)"));

    // The older one damaged too: nothing to evaluate, exit 2, both named.
    flip_last_byte(ck + "step_000000010/weights.safetensors");
    CHECK(run_cli("eval " + run, log) == 2);
    const std::string out2 = read_file(log);
    INFO(out2);
    CHECK(has(out2, "step_000000010: checkpoint: checksum mismatch in " + ck + "step_000000010/weights.safetensors"));
    CHECK(has(out2, "step_000000020"));
  }
  SECTION("state.json deleted from the newest: resume uses the previous checkpoint and says why") {
    fs::remove(run + "/eval.json");
    fs::remove(ck + "step_000000020/state.json");
    REQUIRE(run_cli("train " + cfg + " --out " + run + " --resume", log) == 0);
    const std::string out = read_file(log);
    INFO(out);
    CHECK(has(out, "warning: skipped checkpoint " + ck + "step_000000020"));
    CHECK(has(out, "incomplete: no state.json"));
    CHECK(has(out, "resumed from " + ck + "step_000000010 at step 10"));
    CHECK(fs::exists(run + "/eval.json"));
  }
  SECTION("a flipped byte in the newest optimizer state: eval is unaffected, resume falls back") {
    flip_last_byte(ck + "step_000000020/optimizer.safetensors");
    REQUIRE(run_cli("eval " + run, log) == 0);
    CHECK(has(read_file(log), "(checkpoint " + ck + "step_000000020)"));
    fs::remove(run + "/eval.json");
    REQUIRE(run_cli("train " + cfg + " --out " + run + " --resume", log) == 0);
    const std::string out = read_file(log);
    INFO(out);
    CHECK(has(out, "checksum mismatch in " + ck + "step_000000020/optimizer.safetensors"));
    CHECK(has(out, "resumed from " + ck + "step_000000010 at step 10"));
  }
  fs::remove_all(dir);
}
