// Reliability through the real CLI, part 3: outputs never replace what pelab did not create (FIFOs,
// device nodes, symbolic links made in a temporary directory), a sweep never reports an old cell's
// results for changed settings, a char_lm run never reinterprets a changed corpus, read-only commands end
// within a second of SIGINT/SIGTERM, train and sweep stopped before their first step write nothing, and
// the smaller input mistakes get a message.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "experiments/run/run.hpp"
#include "experiments/run/sweep.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"
#include "training/signals.hpp"
#include "cli_helpers.hpp"
#include "test_paths.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using test::has;
using test::run_cli;

std::string temp_dir(const std::string& name) { return test::fresh_temp_dir("rel_" + name); }

std::string write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

std::string read_or_empty(const std::string& path) {
  try {
    return read_file(path);
  } catch (const Error&) {
    return "";
  }
}


bool wait_until(const std::function<bool()>& cond, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

// Starts `pelab ARGS`, waits until its log has `ready` and a little more (the phase is under way), sends
// `sig`, and returns {exit code, seconds from the signal to the exit}.
std::pair<int, double> stop_time(const std::string& args, const std::string& log, const std::string& ready, int sig,
                                 double settle = 0.5) {
  const pid_t pid = test::start_cli(args, log);
  const bool started = wait_until([&] { return has(read_or_empty(log), ready); }, 120);
  INFO(read_or_empty(log));
  REQUIRE(started);
  std::this_thread::sleep_for(std::chrono::duration<double>(settle));
  const auto t0 = std::chrono::steady_clock::now();
  ::kill(pid, sig);
  const int rc = test::wait_for(pid, 30);
  return {rc, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// Seconds a read-only command may take to end after the signal: 1 s, plus process exit and scheduling on a
// loaded 2-core machine.
constexpr double kStopBound = 2.0;

}  // namespace

TEST_CASE("eval --json never replaces a FIFO or a device node or a symbolic link and - is standard output",
          "[cli][fs]") {
  const std::string dir = temp_dir("json"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(20));
  REQUIRE(run_cli("train " + cfg + " --out " + run, log) == 0);

  const std::string fifo = dir + "/fifo", link = dir + "/link.json", target = write_text(dir + "/target.json", "old\n");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  fs::create_symlink(target, link);
  struct Case {
    std::string path, what;
  };
  std::vector<Case> cases = {{fifo, "is a FIFO"}, {link, "is a symbolic link (to " + target + ")"}, {dir, "is a directory"}};
  const std::string node = dir + "/node";  // a character device like /dev/null, in the temporary directory
  if (::mknod(node.c_str(), S_IFCHR | 0644, makedev(1, 3)) == 0) cases.push_back({node, "is a device node"});
  for (const Case& c : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(run_cli("eval " + run + " --json " + c.path, log, 60) == 2);
    const std::string out = read_file(log);
    INFO(c.path << "\n" << out);
    CHECK(has(out, c.path + " " + c.what));
    CHECK(has(out, "(--json"));
    CHECK_FALSE(has(out, "evaluating length"));  // refused before the evaluation
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
  }
  struct stat st {};
  CHECK((::lstat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)));
  CHECK(fs::is_symlink(link));
  CHECK(read_file(target) == "old\n");
  if (fs::exists(node)) CHECK((::lstat(node.c_str(), &st) == 0 && S_ISCHR(st.st_mode)));
  CHECK_FALSE(fs::exists(fifo + ".tmp"));

  // A .tmp beside the path that is not a plain file is not written through either.
  const std::string out_json = dir + "/out.json";
  fs::create_symlink(target, out_json + ".tmp");
  CHECK(run_cli("eval " + run + " --json " + out_json, log, 60) == 2);
  CHECK(has(read_file(log), out_json + ".tmp is a symbolic link"));
  CHECK(read_file(target) == "old\n");
  fs::remove(out_json + ".tmp");

  // A regular file is replaced; "-" writes the JSON alone to standard output.
  write_text(out_json, "previous\n");
  REQUIRE(run_cli("eval " + run + " --json " + out_json, log, 60) == 0);
  CHECK(has(read_file(out_json), "\"token_acc\""));
  const std::string json_log = dir + "/stdout.json";
  REQUIRE(std::system((std::string(PELAB_BINARY) + " eval " + run + " --json - > " + json_log + " 2>/dev/null").c_str()) == 0);
  const std::string printed = read_file(json_log);
  INFO(printed);
  CHECK(printed.rfind("[", 0) == 0);
  CHECK(has(printed, "\"token_acc\""));

  // The rule is one function for every renamed output (training/fs.hpp).
  CHECK_THROWS_WITH(write_file_atomic(fifo, "x"), Catch::Contains("is a FIFO"));
  CHECK_THROWS_WITH(write_file_atomic(link, "x"), Catch::Contains("is a symbolic link"));
  CHECK(read_file(target) == "old\n");
  fs::remove_all(dir);
}

TEST_CASE("a sweep re-run with changed settings refuses the old cells, naming them and the keys",
          "[cli][sweep]") {
  const std::string dir = temp_dir("sweepcfg"), out = dir + "/out", log = dir + "/log.txt";
  const std::string grid = "[sweep]\n\"train.seed\" = [0, 1]\n";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(10) + grid);
  REQUIRE(run_cli("sweep " + cfg + " --out " + out + " --no-report", log) == 0);
  const std::string before = read_file(out + "/train.seed=0/eval.json");

  // d_model 16 -> 32: refused, nothing rewritten.
  CHECK(run_cli("sweep " + cfg + " --out " + out + " --no-report --set model.d_model=32", log) == 2);
  std::string text = read_file(log);
  INFO(text);
  CHECK(has(text, "train.seed=0:"));
  CHECK(has(text, "train.seed=1:"));
  CHECK(has(text, "model.d_model = 16 (recorded), 32 (now)"));
  CHECK(has(read_file(out + "/sweep.toml"), "d_model = 16"));
  CHECK(read_file(out + "/train.seed=0/eval.json") == before);

  // Keys that do not change results: another thread count, and a config written before a key existed
  // (that key at its default) are the same cells.
  std::string old = read_file(out + "/train.seed=0/config.toml");
  const auto at = old.find("eval_every = ");
  REQUIRE(at != std::string::npos);
  old.erase(at, old.find('\n', at) - at + 1);
  write_text(out + "/train.seed=0/config.toml", old);
  REQUIRE(run_cli("sweep " + cfg + " --out " + out + " --no-report --threads 2", log) == 0);
  text = read_file(log);
  CHECK(has(text, "2 cells (2 already finished), 0 to run"));

  // A sweep into a single run's directory and a run into a sweep directory mix layouts: refused.
  const std::string plain = write_text(dir + "/plain.toml", test::tiny_config(10));
  REQUIRE(run_cli("train " + plain + " --out " + dir + "/single", log) == 0);
  CHECK(run_cli("sweep " + cfg + " --out " + dir + "/single --no-report", log) == 2);
  CHECK(has(read_file(log), "holds a single run"));
  CHECK_FALSE(fs::exists(dir + "/single/sweep.toml"));
  CHECK(run_cli("train " + plain + " --out " + out, log) == 2);
  CHECK(has(read_file(log), "is a sweep directory"));
  CHECK_FALSE(fs::exists(out + "/config.toml"));
  fs::remove_all(dir);
}

TEST_CASE("an interrupted sweep counts the cells it finished", "[sweep]") {
  CHECK(sweep_tally(12, 85, 200, 2, true) == "sweep stopped after 12s: 85 of 200 cells done, 2 stopped or failed, "
                                             "113 not started");
  CHECK(sweep_tally(3, 4, 4, 0, false) == "sweep finished after 3s: 4 of 4 cells done");
}

TEST_CASE("a char_lm run refuses a changed corpus and names it and runs without a record load with a note",
          "[cli][char_lm]") {
  const std::string dir = temp_dir("corpus"), run = dir + "/run", log = dir + "/log.txt";
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog " + std::to_string(i % 10) + "\n";
  const std::string corpus = write_text(dir + "/corpus.txt", text);
  const std::string cfg = write_text(dir + "/cfg.toml",
      "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n[task]\nname = \"char_lm\"\ntrain_len = 16\n"
      "[task.char_lm]\npath = \"" + corpus + "\"\n[train]\nsteps = 10\nbatch_size = 4\nlog_every = 5\n"
      "[eval]\nlengths = [16]\nsamples = 4\n");
  REQUIRE(run_cli("train " + cfg + " --out " + run, log) == 0);
  REQUIRE(fs::exists(run + "/corpus.json"));
  CHECK(has(read_file(run + "/corpus.json"), "\"crc32c\""));
  REQUIRE(run_cli("predict " + run + " --prompt 'the ' --tokens 5", log) == 0);

  // The same distinct bytes in another text: every id would still be valid. Refused by predict and eval.
  std::string other = text;
  std::reverse(other.begin(), other.end());
  write_text(corpus, other);
  for (const std::string& cmd : {"predict " + run + " --prompt 'the ' --tokens 5", "eval " + run,
                                "probe run " + run + " --out " + dir + "/probe"}) {
    CHECK(run_cli(cmd, log) == 2);
    const std::string out = read_file(log);
    INFO(cmd << "\n" << out);
    CHECK(has(out, "the corpus (task.char_lm.path) changed since " + run + " was trained"));
    CHECK(has(out, corpus));
  }
  // Resuming is refused too: an unfinished copy of the run (its checkpoint, no eval.json).
  fs::copy(run, dir + "/run2", fs::copy_options::recursive);
  fs::remove(dir + "/run2/eval.json");
  CHECK(run_cli("train " + cfg + " --out " + dir + "/run2 --resume", log) == 2);
  CHECK(has(read_file(log), "the corpus (task.char_lm.path) changed since " + dir + "/run2 was trained"));
  // A different alphabet: the error names the corpus, not a weight shape.
  write_text(corpus, text + "XYZ\n");
  CHECK(run_cli("eval " + run, log) == 2);
  std::string out = read_file(log);
  INFO(out);
  CHECK(has(out, "the corpus (task.char_lm.path) changed"));
  CHECK(has(out, "distinct bytes"));
  CHECK_FALSE(has(out, "shape"));

  // A run written before corpus records: it loads with a one-line note.
  write_text(corpus, text);
  fs::remove(run + "/corpus.json");
  REQUIRE(run_cli("predict " + run + " --prompt 'the ' --tokens 5", log) == 0);
  out = read_file(log);
  CHECK(has(out, "note: " + run + " has no corpus record"));
  fs::remove_all(dir);
}

TEST_CASE("SIGINT/SIGTERM end predict, probe and eval within a second (130/143)", "[cli][signals]") {
  const std::string dir = temp_dir("stop"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(10) + "[encoding]\nname = \"rope\"\n");
  REQUIRE(run_cli("train " + cfg + " --out " + run, log) == 0);
  struct Case {
    std::string args, ready;
    int sig;
  };
  const std::vector<Case> cases = {
      // thousands of greedy decoding steps, each a forward of up to 4000 tokens
      {"predict " + run + " --len 2000 --count 50", "", SIGINT},
      {"probe run " + run + " --lengths 200,400 --samples 64 --out " + dir + "/probe", "", SIGINT},
      {"probe encoding rope --len 2048 --d-model 256 --heads 4 --out " + dir + "/enc", "", SIGINT},
      {"eval " + run + " --lengths 4,3000 --samples 64", "evaluating length 3000", SIGINT},
      {"eval " + run + " --lengths 4,3000 --samples 64", "evaluating length 3000", SIGTERM},
  };
  for (const Case& c : cases) {
    write_text(log, "");
    const auto [rc, secs] = stop_time(c.args, log, c.ready, c.sig, c.ready.empty() ? 1.5 : 0.5);
    const std::string out = read_or_empty(log);
    INFO(c.args << " (signal " << c.sig << "): exit " << rc << " after " << secs << " s\n" << out);
    CHECK(rc == 128 + c.sig);
    CHECK(secs < kStopBound);
    CHECK(has(out, "interrupted"));
  }
  CHECK_FALSE(fs::exists(dir + "/enc/similarity.csv.tmp"));
  fs::remove_all(dir);
}

TEST_CASE("bad predict values, unreadable config paths and empty configs get a message", "[cli][errors]") {
  const std::string dir = temp_dir("small"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(10));
  REQUIRE(run_cli("train " + cfg + " --out " + run, log) == 0);
  CHECK(run_cli("predict " + run + " --temperature nan", log, 10) == 2);
  CHECK(has(read_file(log), "'nan' is not a finite number"));
  CHECK(run_cli("predict " + run + " --seed -1", log, 10) == 2);
  CHECK(has(read_file(log), "'-1' is not a non-negative integer"));
  CHECK(run_cli("eval " + run + " --samples -1", log, 10) == 2);
  CHECK(has(read_file(log), "'-1' is not a non-negative integer"));

  // A FIFO would be read forever (so would /dev/zero); an oversized file is refused by its size.
  const std::string fifo = dir + "/fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(run_cli("train " + fifo + " --out " + dir + "/x", log, 10) == 2);
  CHECK(has(read_file(log), fifo + ": is not a regular file"));
  const std::string big = write_text(dir + "/big.toml", std::string(5 << 20, '#'));
  CHECK(run_cli("train " + big + " --out " + dir + "/x", log, 10) == 2);
  CHECK(has(read_file(log), "a config file may have at most"));
  CHECK_FALSE(fs::exists(dir + "/x"));

  // An empty config would train the defaults: a warning (here before the memory check refuses them).
  const std::string empty = write_text(dir + "/empty.toml", "# nothing\n\n[train]\n");
  CHECK(run_cli("train " + empty + " --out " + dir + "/nothing --memory-limit 1", log, 60) == 2);
  CHECK(has(read_file(log), "warning: " + empty + " sets no key: every setting is its default"));
  CHECK(run_cli("train " + empty + " --out " + dir + "/nothing --memory-limit 1 --set train.steps=2", log, 60) == 2);
  CHECK_FALSE(has(read_file(log), "sets no key"));  // --set sets a key

  // A checkpoint directory replaced by a file gets a warning like every other damaged checkpoint.
  const std::string ck = run + "/checkpoints/step_000000099";
  write_text(ck, "not a checkpoint\n");
  REQUIRE(run_cli("eval " + run, log, 60) == 0);
  CHECK(has(read_file(log), "warning: skipped checkpoint " + ck + " (newer than the one used): not a directory"));
  fs::remove_all(dir);
}

TEST_CASE("a stop during train's or sweep's startup ends before the first file is written", "[cli][signals]") {
  // A signal that arrives while the config loads or the memory is estimated sets the flag that
  // request_stop() sets; the commands must end at their next poll, before any directory or file exists.
  const std::string dir = temp_dir("startstop");
  const LoadedConfig run = parse_config(test::tiny_config(10), "run.toml");
  RunOptions ro;
  ro.run_dir = dir + "/run";
  ro.console = false;
  request_stop();
  CHECK_THROWS_WITH(run_experiment(run.runs.at(0), ro), Catch::Contains("interrupted while estimating memory"));
  CHECK_FALSE(fs::exists(ro.run_dir));

  const LoadedConfig grid = parse_config(test::tiny_config(10) + "[sweep]\n\"train.seed\" = [0, 1]\n", "grid.toml");
  SweepOptions so;
  so.out_dir = dir + "/sweep";
  so.report = false;
  request_stop();
  CHECK_THROWS_WITH(run_sweep(grid, so), Catch::Contains("interrupted while checking the cells' memory"));
  CHECK_FALSE(fs::exists(so.out_dir));
  restore_default_stop_handlers();
  clear_stop();
  fs::remove_all(dir);
}

TEST_CASE("SIGINT/SIGTERM while train builds a large model: exit 130/143 within a second, no config.toml",
          "[cli][signals]") {
  const std::string dir = temp_dir("buildstop"), run = dir + "/run", log = dir + "/log.txt";
  // About 100M parameters: drawing them takes seconds (2.5 s on a 2-core VM).
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(100000));
  const std::string big = " --set model.d_model=1024 --set model.n_layers=8";
  for (int sig : {SIGINT, SIGTERM}) {
    fs::remove_all(run);
    write_text(log, "");
    const pid_t pid = test::start_cli("train " + cfg + " --out " + run + big, log);
    REQUIRE(wait_until([&] { return fs::exists(run + "/.lock"); }, 60));  // past the memory estimate
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto t0 = std::chrono::steady_clock::now();
    ::kill(pid, sig);
    const int rc = test::wait_for(pid, 30);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string text = read_or_empty(log);
    INFO("signal " << sig << ": exit " << rc << " after " << secs << " s\n" << text);
    CHECK(rc == 128 + sig);
    CHECK(secs < kStopBound);
    CHECK(has(text, "interrupted while building the model"));
    CHECK_FALSE(fs::exists(run + "/config.toml"));
    CHECK_FALSE(fs::exists(run + "/checkpoints"));
  }
  fs::remove_all(dir);
}

TEST_CASE("SIGINT/SIGTERM while a sweep prepares its cells: exit 130/143 within a second, only whole files",
          "[cli][signals]") {
  const std::string dir = temp_dir("sweepstop"), log = dir + "/log.txt";
  // 400 cells: their cell.toml files (each written and synced whole) take longer than the signal's delay.
  std::string seeds;
  for (int i = 0; i < 400; ++i) seeds += (i ? ", " : "") + std::to_string(i);
  const std::string cfg =
      write_text(dir + "/grid.toml", test::tiny_config(10) + "[sweep]\n\"train.seed\" = [" + seeds + "]\n");
  for (int sig : {SIGINT, SIGTERM}) {
    const std::string out = dir + "/sweep" + std::to_string(sig);
    write_text(log, "");
    const pid_t pid = test::start_cli("sweep " + cfg + " --out " + out + " --no-report", log);
    REQUIRE(wait_until([&] { return fs::exists(out + "/sweep.toml"); }, 60));
    const auto t0 = std::chrono::steady_clock::now();
    ::kill(pid, sig);
    const int rc = test::wait_for(pid, 30);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string text = read_or_empty(log);
    INFO("signal " << sig << ": exit " << rc << " after " << secs << " s\n" << text);
    CHECK(rc == 128 + sig);
    CHECK(secs < kStopBound);
    CHECK(has(text, "interrupted while preparing the cells"));
    std::size_t tmp = 0, cells = 0;
    for (const auto& e : fs::recursive_directory_iterator(out)) {
      tmp += e.path().extension() == ".tmp";
      cells += e.path().filename() == "cell.toml";
    }
    CHECK(tmp == 0);
    CHECK(cells < 400);  // it stopped part way
    CHECK_FALSE(fs::exists(out + "/train.seed=0/checkpoints"));  // no cell started
  }
  fs::remove_all(dir);
}

TEST_CASE("binary with bits = 0: config.toml records the bits used, and a run that recorded 0 evaluates the same",
          "[cli][config]") {
  const std::string dir = temp_dir("autosize"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(20) + "[encoding]\nname = \"binary\"\n");
  // copy at size 7 trains on ids 0..15 (4 bits); size 8 needs id 17, beyond the training ids: n/a.
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --set task.train_len=7 --set 'eval.lengths=[4,7,8]'", log) == 0);
  const std::string toml = read_file(run + "/config.toml");
  REQUIRE(has(toml, "[encoding.binary]\nbits = 4\n"));
  const auto first = nlohmann::json::parse(read_file(run + "/eval.json")).at("results");
  REQUIRE(first.size() == 3);
  CHECK(first.at(2).at("status") == "n/a");
  CHECK(has(first.at(2).dump(), "set encoding.binary.bits"));

  // What older versions wrote: bits = 0. It loads to the same 4 bits and evaluates to the same numbers.
  std::string old = toml;
  old.replace(old.find("bits = 4"), 8, "bits = 0");
  write_text(run + "/config.toml", old);
  REQUIRE(run_cli("eval " + run + " --json " + dir + "/again.json", log) == 0);
  const auto again = nlohmann::json::parse(read_file(dir + "/again.json"));  // the results alone
  REQUIRE(again.size() == first.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    INFO("length " << first.at(i).at("length"));
    CHECK(again.at(i).at("status") == first.at(i).at("status"));
    for (const char* k : {"loss", "token_acc", "exact_match"})
      CHECK(again.at(i).value(k, -1.0) == first.at(i).value(k, -1.0));
  }
  fs::remove_all(dir);
}
