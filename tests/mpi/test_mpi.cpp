// End to end under mpirun -np 2: a sweep split over two ranks gives the single-process sweep's
// eval.json cell for cell; data-parallel training matches single-process training of the same global
// batch within float tolerance and is bit-identical between two runs; a sweep whose rank is killed
// mid-cell finishes the grid when re-run, the killed cell resumed from its checkpoint.
// Exits 77 (ctest: skipped) when pelab was built without MPI or mpirun is missing.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "experiments/tiny_config.hpp"
#include "training/distributed.hpp"
#include "training/fs.hpp"

using namespace pelab;
namespace fs = std::filesystem;
using nlohmann::json;

extern char** environ;

namespace {

std::string temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("pelab_mpi_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

const std::string kMpirun = std::string(PELAB_MPIEXEC) + " -np 2 --oversubscribe ";

int sh(const std::string& cmd, const std::string& log) {
  const int rc = std::system((cmd + " > " + log + " 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
int run_pelab(const std::string& args, const std::string& log) { return sh(std::string(PELAB_BINARY) + " " + args, log); }
int pelab_np2(const std::string& args, const std::string& log) {
  return sh(kMpirun + PELAB_BINARY + " " + args, log);
}

// eval.json without its wall-clock fields (the only ones that may differ between identical runs).
json eval_without_times(const std::string& path) {
  json j = json::parse(read_file(path));
  j.erase("train_seconds");
  j.erase("eval_seconds");
  return j;
}

std::vector<json> train_records(const std::string& run_dir) {
  std::vector<json> out;
  std::ifstream in(run_dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line);
    if (j.at("split") == "train") out.push_back(j);
  }
  return out;
}

const std::vector<std::string> kCells = {"encoding.name=rope__train.seed=0", "encoding.name=rope__train.seed=1",
                                         "encoding.name=none__train.seed=0", "encoding.name=none__train.seed=1"};

std::string sweep_config(int steps, const std::string& extra_train = "") {
  std::string c = test::tiny_config(steps);
  c.insert(c.find("[eval]"), extra_train);
  return c + "[sweep]\n\"encoding.name\" = [\"rope\", \"none\"]\n\"train.seed\" = [0, 1]\n";
}

// The process ids of mpirun's children (the ranks on this machine) with their rank.
std::map<int, pid_t> ranks_of(pid_t mpirun) {
  std::map<int, pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != mpirun) continue;
    std::ifstream env(e.path() / "environ");
    std::string var;
    while (std::getline(env, var, '\0'))
      if (var.rfind("OMPI_COMM_WORLD_RANK=", 0) == 0) out[std::stoi(var.substr(21))] = std::stoi(name);
  }
  return out;
}

// The cell directory whose lock a process holds (the cell it is training), or "".
std::string locked_cell(pid_t pid) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const fs::path target = fs::read_symlink(e.path(), ec);
    if (!ec && target.filename() == ".lock") return target.parent_path().string();
  }
  return "";
}

bool has_checkpoint(const std::string& cell_dir) {
  std::error_code ec;
  if (!fs::is_directory(cell_dir + "/checkpoints", ec)) return false;
  for (const auto& e : fs::directory_iterator(cell_dir + "/checkpoints", ec))
    if (e.path().filename().string().rfind("step_", 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("a sweep over 2 MPI ranks gives the single-process sweep's eval.json, cell for cell",
          "[sweep_matches_single_process]") {
  const std::string dir = temp_dir("sweep");
  const std::string cfg = dir + "/tiny.toml";
  std::ofstream(cfg) << sweep_config(60);
  // One step thread per cell, as every MPI rank runs its cells (the local default is cores / jobs).
  REQUIRE(run_pelab("sweep " + cfg + " --out " + dir + "/one --no-report --threads 1", dir + "/one.log") == 0);
  const int rc = pelab_np2("sweep " + cfg + " --out " + dir + "/two", dir + "/two.log");
  const std::string log = read_file(dir + "/two.log");
  INFO(log);
  REQUIRE(rc == 0);
  CHECK(log.find("4 to run on 2 MPI ranks") != std::string::npos);
  CHECK(log.find("rank 0 ") != std::string::npos);  // both ranks trained cells
  CHECK(log.find("rank 1 ") != std::string::npos);
  for (const auto& c : kCells) {
    INFO(c);
    REQUIRE(fs::exists(dir + "/one/" + c + "/eval.json"));
    REQUIRE(fs::exists(dir + "/two/" + c + "/eval.json"));
    CHECK(eval_without_times(dir + "/two/" + c + "/eval.json") == eval_without_times(dir + "/one/" + c + "/eval.json"));
    CHECK(read_file(dir + "/two/" + c + "/config.toml") == read_file(dir + "/one/" + c + "/config.toml"));
  }
  CHECK(fs::exists(dir + "/two/summary.md"));  // rank 0 wrote the report
  fs::remove_all(dir);
}

TEST_CASE("20 data-parallel steps on 2 ranks match one process within tolerance, two runs are bit-identical",
          "[data_parallel_matches_single_process]") {
  const std::string dir = temp_dir("dp");
  const std::string cfg = dir + "/tiny.toml";
  // Random per-row position ids (drawn for the global batch, then split) and variable-length rows
  // (min_len 1..4: the ranks count different numbers of targets, so the gradients must be weighted).
  std::string c = test::tiny_config(20);
  c.replace(c.find("log_every = 10"), 14, "log_every = 1\npositions = \"randomized\"\nmax_position = 32");
  std::ofstream(cfg) << c << "[encoding]\nname = \"rope\"\n";
  REQUIRE(run_pelab("train " + cfg + " --out " + dir + "/one --quiet", dir + "/one.log") == 0);
  for (const char* run : {"a", "b"}) {
    const int rc = pelab_np2("train " + cfg + " --out " + dir + "/" + run + " --quiet", dir + "/" + run + ".log");
    INFO(read_file(dir + "/" + run + ".log"));
    REQUIRE(rc == 0);
  }
  const auto one = train_records(dir + "/one"), a = train_records(dir + "/a"), b = train_records(dir + "/b");
  REQUIRE(one.size() == 20);
  REQUIRE(a.size() == 20);
  REQUIRE(b.size() == 20);
  for (std::size_t i = 0; i < one.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(a[i].at("step") == one[i].at("step"));
    for (const char* k : {"loss", "grad_norm"}) {  // summation order only
      const double x = one[i].at(k), y = a[i].at(k);
      CHECK(std::abs(x - y) <= 1e-5 * std::abs(x));
    }
    CHECK(a[i].at("token_acc") == one[i].at("token_acc"));  // argmax counts, summed over the ranks exactly
    for (const char* k : {"loss", "grad_norm", "token_acc"}) CHECK(a[i].at(k) == b[i].at(k));  // bit-identical
  }
  // The weights after the last step: equal between the two np=2 runs, close to the single process.
  const std::string w = "/checkpoints/step_000000020/weights.safetensors";
  REQUIRE(fs::exists(dir + "/a" + w));
  CHECK(read_file(dir + "/a" + w) == read_file(dir + "/b" + w));
  CHECK(eval_without_times(dir + "/a/eval.json") == eval_without_times(dir + "/b/eval.json"));
  // Only rank 0 wrote: one set of files, the train log says how the work was split.
  CHECK(read_file(dir + "/a/train.log").find("data parallel: 2 ranks x 4 rows") != std::string::npos);

  // Interrupted at step 10 and resumed on 2 ranks: the same weights as the uninterrupted run.
  const std::string every10 = " --set train.checkpoint_every=10 --quiet";
  REQUIRE(pelab_np2("train " + cfg + " --out " + dir + "/c" + every10, dir + "/c.log") == 0);
  fs::remove_all(dir + "/c/checkpoints/step_000000020");
  fs::remove(dir + "/c/eval.json");
  REQUIRE(pelab_np2("train " + cfg + " --out " + dir + "/c --resume" + every10, dir + "/c2.log") == 0);
  CHECK(read_file(dir + "/c/train.log").find("resumed from " + dir + "/c/checkpoints/step_000000010") != std::string::npos);
  CHECK(read_file(dir + "/c" + w) == read_file(dir + "/a" + w));

  // A global batch that does not split over the ranks: exit 2, a clear message, nothing written.
  CHECK(pelab_np2("train " + cfg + " --set train.batch_size=7 --out " + dir + "/odd", dir + "/odd.log") == 2);
  CHECK(read_file(dir + "/odd.log").find("batch_size = 7 is the global batch and must divide by the 2 MPI ranks") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/odd"));
  // Resume needs the same number of ranks.
  CHECK(run_pelab("train " + cfg + " --set train.steps=30 --out " + dir + "/a --resume", dir + "/resume.log") == 2);
  CHECK(run_pelab("train " + cfg + " --out " + dir + "/a2 --quiet --set train.steps=30 --set train.checkpoint_every=10",
              dir + "/a2.log") == 0);
  fs::remove_all(dir + "/a2/checkpoints/step_000000030");
  fs::remove(dir + "/a2/eval.json");
  CHECK(pelab_np2("train " + cfg + " --out " + dir + "/a2 --resume --set train.steps=30 --set train.checkpoint_every=10",
                  dir + "/resume2.log") == 2);
  CHECK(read_file(dir + "/resume2.log").find("was trained on 1 MPI rank(s), this run has 2") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a sweep whose rank is killed mid-cell finishes the grid when re-run, resuming that cell",
          "[killed_rank_sweep_resumes]") {
  const std::string dir = temp_dir("kill");
  const std::string cfg = dir + "/tiny.toml", out = dir + "/out";
  std::ofstream(cfg) << sweep_config(1500, "checkpoint_every = 50\n");
  const std::string cmd = "exec " + kMpirun + PELAB_BINARY + " sweep " + cfg + " --out " + out + " --no-report > " +
                          dir + "/run1.log 2>&1";
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  pid_t mpirun = 0;
  REQUIRE(posix_spawn(&mpirun, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) == 0);
  // Wait until rank 1 trains a cell that has written a checkpoint, then kill it.
  std::string victim;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (std::chrono::steady_clock::now() < deadline) {
    const auto ranks = ranks_of(mpirun);
    if (auto it = ranks.find(1); it != ranks.end()) {
      const std::string cell = locked_cell(it->second);
      if (!cell.empty() && has_checkpoint(cell) && !fs::exists(cell + "/eval.json")) {
        victim = cell;
        ::kill(it->second, SIGKILL);
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int status = 0;
  ::waitpid(mpirun, &status, 0);
  INFO(read_file(dir + "/run1.log"));
  REQUIRE_FALSE(victim.empty());
  CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));  // the job ended with the rank
  CHECK_FALSE(fs::exists(victim + "/eval.json"));
  std::size_t finished_before = 0;
  for (const auto& c : kCells) finished_before += fs::exists(out + "/" + c + "/eval.json");
  CHECK(finished_before < kCells.size());

  const int rc = pelab_np2("sweep " + cfg + " --out " + out, dir + "/run2.log");
  const std::string log2 = read_file(dir + "/run2.log");
  INFO(log2);
  REQUIRE(rc == 0);
  CHECK(log2.find("(" + std::to_string(finished_before) + " already finished)") != std::string::npos);
  for (const auto& c : kCells) CHECK(fs::exists(out + "/" + c + "/eval.json"));
  CHECK(read_file(victim + "/train.log").find("resumed from " + victim + "/checkpoints/step_") != std::string::npos);
  // Resumed training is bit-identical to uninterrupted training: the killed cell equals a fresh run.
  const std::string cell_name = fs::path(victim).filename();
  std::size_t k = 0;
  while (k < kCells.size() && kCells[k] != cell_name) ++k;
  REQUIRE(k < kCells.size());
  REQUIRE(run_pelab("train " + cfg + " --cell " + std::to_string(k) + " --out " + dir + "/fresh --quiet",
                dir + "/fresh.log") == 0);
  CHECK(eval_without_times(dir + "/fresh/eval.json") == eval_without_times(victim + "/eval.json"));
  fs::remove_all(dir);
}

int main(int argc, char** argv) {
  if (!dist::built_with_mpi() || std::string(PELAB_MPIEXEC).empty() || !fs::exists(PELAB_MPIEXEC)) {
    std::printf("skipped: pelab was built without MPI (or mpirun is missing)\n");
    return 77;
  }
  // CI containers run as root; Open MPI refuses that unless told.
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  ::setenv("OPENBLAS_NUM_THREADS", "1", 0);
  return Catch::Session().run(argc, argv);
}
