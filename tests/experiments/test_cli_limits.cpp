// Reliability through the real CLI: memory estimates refuse what cannot fit before anything
// is written; long evaluations run in batches that fit, show progress and stop cleanly on SIGTERM;
// filesystem mistakes name the flag or key; a sweep's cells never outlive it; clear CLI messages; a
// --set that a sweep cell would override is an error, one that has no effect a warning.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "experiments/config/config.hpp"
#include "experiments/run/resources.hpp"
#include "sanitized.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"
#include "cli_helpers.hpp"
#include "test_paths.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using test::has;
using test::run_cli;

std::string temp_dir(const std::string& name) { return test::fresh_temp_dir("limits_" + name); }


bool wait_until(const std::function<bool()>& cond, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

std::string read_or_empty(const std::string& path) {
  try {
    return read_file(path);
  } catch (const Error&) {
    return "";
  }
}

// A process that no longer runs: gone, or a zombie nobody has reaped yet.
bool gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string stat = read_or_empty("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

// The pid a run's lock file names (written by the process holding it), or 0.
pid_t lock_holder(const std::string& run_dir) {
  const std::string s = read_or_empty(run_dir + "/.lock");
  try {
    return s.empty() ? 0 : static_cast<pid_t>(std::stol(s));
  } catch (const std::exception&) {
    return 0;
  }
}

std::string write_config(const std::string& dir, const std::string& text, const std::string& name = "cfg.toml") {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("an eval length that cannot fit is refused before training, naming the setting", "[cli][memory]") {
  const std::string dir = temp_dir("longeval"), run = dir + "/run", log = dir + "/log.txt";
  // d_model 512: ten million tokens then need hundreds of GB, more than any machine this runs on has
  // available (at d_model 16 they need 23 GB, which a quiet 24 GB machine may report available).
  std::string wide = test::tiny_config(20);
  wide.replace(wide.find("d_model = 16"), 12, "d_model = 512");
  const std::string cfg = write_config(dir, wide);
  CHECK(run_cli("train " + cfg + " --out " + run + " --set 'eval.lengths=[4,10000000]'", log, 60) == 2);
  const std::string out = read_file(log);
  INFO(out);
  CHECK(has(out, "--set eval.lengths=[4,10000000]"));
  CHECK(has(out, "evaluating length 10000000"));
  CHECK(has(out, "needs about"));
  CHECK(has(out, "MemAvailable"));
  CHECK_FALSE(fs::exists(run));
  // The same from the file: its line.
  std::ofstream(cfg) << wide << "[output]\ndir = \"" << run << "\"\n";
  std::string text = read_file(cfg);
  text.replace(text.find("lengths = [2, 4, 8]"), 19, "lengths = [2, 10000000]");
  std::ofstream(cfg, std::ios::trunc) << text;
  CHECK(run_cli("train " + cfg, log, 60) == 2);
  CHECK(has(read_file(log), "cfg.toml:13: evaluating length 10000000"));
  CHECK_FALSE(fs::exists(run));
  fs::remove_all(dir);
}

TEST_CASE("probe encoding refuses what cannot fit at once, naming the flags, and writes nothing", "[cli][memory]") {
  const std::string dir = temp_dir("probemem"), log = dir + "/log.txt";
  // FIRE's bias and hidden layer at 4096 positions and 256 heads: tens of GiB (it used to run out of memory).
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(run_cli("probe encoding fire --len 4096 --d-model 4096 --heads 256 --out " + dir + "/p --memory-limit 16000",
                log, 60) == 2);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string out = read_file(log);
  INFO(out);
  CHECK(secs < 1.0);
  CHECK(has(out, "error: --len / --d-model / --heads: probing encoding 'fire' at 4096 positions (d_model 4096, "
                 "256 heads) needs about"));
  CHECK(has(out, "--memory-limit 16000"));
  CHECK_FALSE(fs::exists(dir + "/p"));
  CHECK(run_cli("probe encoding fire --len 64 --set hidden=4096 --out " + dir + "/p --memory-limit 1", log, 60) == 2);
  CHECK(has(read_file(log), "--len / --d-model / --heads / --set: probing encoding 'fire'"));
  CHECK(run_cli("probe encoding fire --len 64 --out " + dir + "/q --memory-limit 64", log, 60) == 0);
  fs::remove_all(dir);
}

TEST_CASE("a model that cannot fit is refused before anything is written and bad_alloc is a clear error",
          "[cli][memory]") {
  const std::string dir = temp_dir("bigmodel"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_config(dir, test::tiny_config(20));
  const std::string big = " --set model.d_model=65536 --set model.n_heads=1";
  CHECK(run_cli("train " + cfg + " --out " + run + big, log, 60) == 2);
  std::string out = read_file(log);
  INFO(out);
  CHECK(has(out, "--set model.d_model=65536: training needs about"));
  CHECK(has(out, "parameters"));
  CHECK(has(out, "GiB"));
  CHECK_FALSE(fs::exists(run));
  // A limit below what a small run needs refuses it too, and names the flag and what dominates.
  CHECK(run_cli("train " + cfg + " --out " + run + " --set task.train_len=100 --memory-limit 1", log, 60) == 2);
  out = read_file(log);
  CHECK(has(out, "--memory-limit 1"));
  CHECK(has(out, "--set task.train_len=100: training needs about"));
  CHECK(has(out, "one training batch"));
  CHECK_FALSE(fs::exists(run));
  // With the check off and the address space capped, the allocation fails: a clear error, exit 2.
  // (Never without the cap: a 16 GiB weight may be granted and written. Not under AddressSanitizer,
  // whose shadow memory cannot be mapped under a 3 GB cap.)
  if (test::kAddressSanitizer) {
    fs::remove_all(dir);
    return;
  }
  const std::string capped = "ulimit -v 3000000; " + std::string(PELAB_BINARY) + " train " + cfg + " --out " + run +
                             big + " --memory-limit 0 > " + log + " 2>&1";
  const int rc = std::system(("bash -c '" + capped + "'").c_str());
  out = read_file(log);
  INFO(out);
  CHECK(WEXITSTATUS(rc) == 2);
  CHECK(has(out, "error: out of memory while building the model"));
  CHECK_FALSE(fs::exists(run + "/config.toml"));
  fs::remove_all(dir);
}

TEST_CASE("evaluation at a long length runs in smaller batches that fit, with the same results",
          "[cli][memory][eval]") {
  const std::string dir = temp_dir("evalbatch"), log = dir + "/log.txt";
  std::string text = test::tiny_config(20);
  text.replace(text.find("lengths = [2, 4, 8]\nsamples = 16"), 32, "lengths = [4, 200]\nsamples = 24\nbatch_size = 24");
  const std::string cfg = write_config(dir, text);
  // A limit that holds training and an eval batch of 8 at length 200, not one of 24.
  const RunSpec spec = load_config(cfg).runs.at(0);
  const ResourceModel rm(spec);
  const std::size_t limit_mb = rm.evaluation(200, 8).total() / (1024 * 1024) + 1;
  REQUIRE(rm.evaluation(200, 24).total() > limit_mb * 1024 * 1024);
  REQUIRE(rm.training().total() < limit_mb * 1024 * 1024);
  REQUIRE(run_cli("train " + cfg + " --out " + dir + "/a --memory-limit 0", log) == 0);
  REQUIRE(run_cli("train " + cfg + " --out " + dir + "/b --memory-limit " + std::to_string(limit_mb), log) == 0);
  const std::string out = read_file(log);
  INFO(out);
  const std::string note = "eval length 200: batch size 24 -> ";
  REQUIRE(has(out, note));
  const std::size_t rows = std::stoul(out.substr(out.find(note) + note.size()));
  CHECK(rows >= 1);
  CHECK(rows < 24);
  // Every forward pass at 200 took at most `rows` examples: 24 in ceil(24 / rows) passes of one size.
  const std::size_t passes = (24 + rows - 1) / rows, per_pass = (24 + passes - 1) / passes;
  CHECK(has(out, "24 examples, " + std::to_string(passes) + " forward passes of up to " + std::to_string(per_pass) + "\n"));
  CHECK(has(out, "24 examples, 1 forward passes of up to 24\n"));  // length 4: the configured batch
  CHECK_FALSE(has(out, "eval length 4: batch size"));
  const auto a = nlohmann::json::parse(read_file(dir + "/a/eval.json")).at("results");
  const auto b = nlohmann::json::parse(read_file(dir + "/b/eval.json")).at("results");
  REQUIRE(a.size() == 2);
  REQUIRE(b.size() == 2);
  CHECK(a == b);  // the same held-out examples, the same numbers
  // pelab eval checks the same way, naming --lengths (against a stated limit: ten million tokens of this
  // model need 23 GB, which a quiet 24 GB machine may report available).
  CHECK(run_cli("eval " + dir + "/a --lengths 4,10000000 --memory-limit 1000", log) == 2);
  CHECK(has(read_file(log), "error: --lengths 4,10000000: evaluating length 10000000"));
  fs::remove_all(dir);
}

TEST_CASE("SIGTERM during evaluation exits 143 keeping the checkpoint and a re-run completes it",
          "[cli][signals][eval]") {
  const std::string dir = temp_dir("evalstop"), run = dir + "/run", log = dir + "/log.txt";
  std::string text = test::tiny_config(20);
  text.replace(text.find("lengths = [2, 4, 8]\nsamples = 16"), 32, "lengths = [4, 1500]\nsamples = 120\nbatch_size = 4");
  const std::string cfg = write_config(dir, text);
  const pid_t pid = test::start_cli("train " + cfg + " --out " + run, log);
  REQUIRE(wait_until([&] { return has(read_or_empty(log), "evaluating length 1500"); }, 60));
  ::kill(pid, SIGTERM);
  const int rc = test::wait_for(pid, 30);
  std::string out = read_file(log);
  INFO(out);
  CHECK(rc == 143);  // 128 + SIGTERM
  CHECK(has(out, "interrupted during evaluation"));
  CHECK(has(out, "--resume"));
  CHECK(fs::exists(run + "/checkpoints/step_000000020/state.json"));
  CHECK_FALSE(fs::exists(run + "/eval.json"));
  // pelab eval stops the same way.
  const std::string log2 = dir + "/log2.txt";
  const pid_t pid2 = test::start_cli("eval " + run, log2);
  REQUIRE(wait_until([&] { return has(read_or_empty(log2), "evaluating length 1500"); }, 60));
  ::kill(pid2, SIGINT);
  CHECK(test::wait_for(pid2, 30) == 130);
  const std::string out2 = read_file(log2);  // at a poll between layers, or at the 0.5 s stop deadline
  CHECK((has(out2, "interrupted during evaluation at length 1500") ||
         has(out2, "interrupted while evaluating length 1500: ended at the stop deadline")));
  // The resumed run finishes and writes eval.json.
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --resume", log) == 0);
  out = read_file(log);
  CHECK(has(out, "resumed from " + run + "/checkpoints/step_000000020 at step 20"));
  CHECK(fs::exists(run + "/eval.json"));
  fs::remove_all(dir);
}

TEST_CASE("output directory mistakes name the flag or key, exit 2 and write nothing", "[cli][fs]") {
  const std::string dir = temp_dir("outdir"), log = dir + "/log.txt";
  const std::string cfg = write_config(dir, test::tiny_config(20));
  const std::string file = dir + "/a_file";
  std::ofstream(file) << "keep me\n";
  struct Case {
    std::string out, reason;
  };
  for (const Case& c : {Case{"/proc/pelab_no_such_dir", "No such file or directory"},
                        Case{file + "/sub", "Not a directory"}, Case{file, "not a directory"}}) {
    for (const char* cmd : {"train", "sweep"}) {
      std::ofstream(cfg, std::ios::trunc) << test::tiny_config(20)
                                          << (std::string(cmd) == "sweep" ? "[sweep]\n\"train.seed\" = [0, 1]\n" : "");
      CHECK(run_cli(std::string(cmd) + " " + cfg + " --out " + c.out, log) == 2);
      const std::string out = read_file(log);
      INFO(cmd << " --out " << c.out << "\n" << out);
      CHECK(has(out, "error: cannot create the "));
      CHECK(has(out, c.out));
      CHECK(has(out, "(--out)"));
      CHECK(has(out, c.reason));
      CHECK_FALSE(has(out, "filesystem error"));
    }
  }
  // output.dir in the file: the key and its line.
  std::ofstream(cfg, std::ios::trunc) << test::tiny_config(20) << "[output]\ndir = \"" << file << "\"\n";
  CHECK(run_cli("train " + cfg, log) == 2);
  const std::string out = read_file(log);
  INFO(out);
  CHECK(has(out, "(output.dir at " + cfg + ":16)"));
  CHECK(read_file(file) == "keep me\n");
  CHECK(fs::is_regular_file(file));
  // --json of pelab eval.
  REQUIRE(run_cli("train " + cfg + " --out " + dir + "/run", log) == 0);
  CHECK(run_cli("eval " + dir + "/run --json " + file + "/x.json", log) == 2);
  CHECK(has(read_file(log), "(--json)"));
  fs::remove_all(dir);
}

TEST_CASE("killing a sweep's parent stops its cells within a second and a re-run resumes them",
          "[cli][sweep][signals]") {
  const std::string dir = temp_dir("orphans"), out = dir + "/out", log = dir + "/log.txt";
  const std::string cfg = write_config(
      dir, "[model]\nd_model = 32\nn_layers = 2\nn_heads = 2\n[task]\nname = \"copy\"\ntrain_len = 12\n"
           "[train]\nsteps = 4000\nbatch_size = 32\nlog_every = 100\ncheckpoint_every = 100\n"
           "[eval]\nlengths = [12]\nsamples = 16\n[sweep]\n\"train.seed\" = [0, 1]\n");
  const std::vector<std::string> cells = {out + "/train.seed=0", out + "/train.seed=1"};

  for (int sig : {SIGKILL, SIGTERM}) {
    INFO("signal " << sig);
    fs::remove_all(out);
    const pid_t parent = test::start_cli("sweep " + cfg + " --out " + out + " --jobs 2 --no-report", log);
    REQUIRE(wait_until(
        [&] {
          for (const auto& c : cells)
            if (!fs::exists(c + "/checkpoints") || lock_holder(c) == 0) return false;
          return true;
        },
        60));
    std::vector<pid_t> children;
    for (const auto& c : cells) children.push_back(lock_holder(c));
    for (pid_t c : children) {
      REQUIRE(c != parent);
      REQUIRE_FALSE(gone(c));
    }
    ::kill(parent, sig);
    const int rc = test::wait_for(parent, 30);
    CHECK(rc == 128 + sig);
    // Without PR_SET_PDEATHSIG / forwarding they would train on for minutes; 10 s allows for a loaded machine.
    CHECK(wait_until([&] { return gone(children[0]) && gone(children[1]); }, 10.0));
    // An immediate re-run is not refused by their locks: both cells resume from their checkpoints
    // (then it is stopped too, and waits for its cells).
    const std::string log2 = dir + "/log2.txt";
    const pid_t again = test::start_cli("sweep " + cfg + " --out " + out + " --jobs 2 --no-report", log2);
    const bool resumed = wait_until(
        [&] {
          for (const auto& c : cells)
            if (!has(read_or_empty(c + "/stdout.log"), "resumed from " + c + "/checkpoints/step_")) return false;
          return true;
        },
        60);
    ::kill(again, SIGTERM);
    CHECK(test::wait_for(again, 60) == 128 + SIGTERM);
    INFO(read_or_empty(log2) << read_or_empty(cells[0] + "/stdout.log") << read_or_empty(cells[1] + "/stdout.log"));
    CHECK(resumed);
    CHECK_FALSE(has(read_or_empty(log2), "already running"));
  }
  fs::remove_all(dir);
}

TEST_CASE("unknown commands and bad --cell values say what is wrong", "[cli][errors]") {
  const std::string dir = temp_dir("cellmsg"), log = dir + "/log.txt";
  const std::string cfg = write_config(dir, test::tiny_config(20) + "[sweep]\n\"train.seed\" = [0, 1, 2]\n");
  CHECK(run_cli("frobnicate " + cfg, log) == 2);
  std::string out = read_file(log);
  CHECK(has(out, "unknown command 'frobnicate'"));
  CHECK(has(out, "train, sweep, eval, report, list, show-task"));

  CHECK(run_cli("train " + cfg + " --cell -1", log) == 2);
  out = read_file(log);
  INFO(out);
  CHECK(has(out, "--cell -1"));
  CHECK(has(out, "0..2"));
  CHECK(out.size() < 600);
  CHECK_FALSE(has(out, "1797693134862315"));

  CHECK(run_cli("train " + cfg + " --cell 999", log) == 2);
  out = read_file(log);
  INFO(out);
  CHECK(has(out, "--cell 999 is out of range"));
  CHECK(has(out, "3 cells"));
  CHECK(has(out, "\n  2: train.seed=2"));
  CHECK(run_cli("train " + cfg + " --cell x", log) == 2);
  CHECK(has(read_file(log), "--cell x"));
  fs::remove_all(dir);
}

TEST_CASE("a --set that a sweep cell overrides is an error naming both values and a no-effect --set warns",
          "[cli][config]") {
  const std::string dir = temp_dir("setcell"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg =
      write_config(dir, test::tiny_config(20) + "[sweep]\n\"encoding.name\" = [\"rope\", \"none\"]\n");
  for (const char* cmd : {"train", "sweep"}) {
    const std::string extra = std::string(cmd) == "train" ? " --cell 0" : "";
    CHECK(run_cli(std::string(cmd) + " " + cfg + " --out " + run + extra + " --set encoding.name=alibi", log) == 2);
    const std::string out = read_file(log);
    INFO(out);
    CHECK(has(out, "--set encoding.name=alibi"));
    CHECK(has(out, "cfg.toml:16"));  // the [sweep] line
    CHECK(has(out, "\"rope\""));
    CHECK(has(out, "\"alibi\""));
    CHECK(has(out, "sweep.encoding.name"));  // how to narrow the grid instead
    CHECK_FALSE(fs::exists(run));
  }
  // The way the message suggests: narrow the grid; the cell then trains alibi.
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --cell 0 --set 'sweep.encoding.name=[\"alibi\"]'", log) == 0);
  CHECK(has(read_file(run + "/config.toml"), "name = \"alibi\""));

  // --set of a parameter of an encoding the run does not use: a warning, once, naming the one it uses.
  const std::string plain = write_config(dir, test::tiny_config(20), "plain.toml");
  REQUIRE(run_cli("train " + plain + " --out " + dir + "/w --set encoding.name=alibi --set encoding.rope.base=5", log) == 0);
  std::string out = read_file(log);
  INFO(out);
  CHECK(has(out, "warning: --set encoding.rope.base=5 has no effect: the run uses encoding \"alibi\""));
  REQUIRE(run_cli("train " + plain + " --out " + dir + "/r --set encoding.name=rope --set encoding.rope.base=5", log) == 0);
  CHECK_FALSE(has(read_file(log), "has no effect"));
  // In a sweep, a parameter used by some cell is not warned about.
  REQUIRE(run_cli("sweep " + cfg + " --out " + dir + "/s --set encoding.rope.base=5 --no-report", log) == 0);
  CHECK_FALSE(has(read_file(log), "has no effect"));
  fs::remove_all(dir);
}
