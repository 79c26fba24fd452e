// `pelab abc`'s calibration reads the attention under the position ids the run is evaluated with ([eval]
// positions), not the task's raw 0..T-1: the lines are id differences, and the stage-2 biases apply to the
// ids evaluation feeds. A run trained and evaluated with randomized ids in [0, 64) must give lines past T-1;
// the same run read with contiguous evaluation ids must not.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cli_helpers.hpp"
#include "experiments/run/abc_calibration.hpp"
#include "experiments/tasks/task.hpp"
#include "tiny_config.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

// The largest |d| of the lines.
std::int64_t widest_line(const AbcLines& lines) {
  std::int64_t w = 0;
  for (const auto& [d, count] : lines.count) w = std::max(w, d < 0 ? -d : d);
  return w;
}

}  // namespace

TEST_CASE("abc calibration: the lines are read under the run's evaluation position ids", "[abc][calibration]") {
  const std::string dir = fresh_temp_dir("abc_calibration_ids"), cfg = dir + "/tiny.toml";
  std::ofstream(cfg) << tiny_config(10);
  REQUIRE(run_cli("train " + cfg + " --out " + dir + "/run --threads 1 --quiet --set train.positions=randomized "
                  "--set train.max_position=64", dir + "/log", 120) == 0);
  AbcCalibration c;
  c.samples = 8;
  TrainedRun randomized = load_trained_run(dir + "/run");  // [eval] positions = "train": randomized
  const std::int64_t T = std::int64_t(randomized.spec.task->sequence_length(randomized.spec.config.train_len));
  CHECK(widest_line(calibration_lines(randomized, c, 0)) > T - 1);
  TrainedRun contiguous = load_trained_run(dir + "/run", {"eval.positions=contiguous"}, std::nullopt);
  const AbcLines lines = calibration_lines(contiguous, c, 0);
  CHECK(!lines.count.empty());
  CHECK(widest_line(lines) <= T - 1);
  std::filesystem::remove_all(dir);
}
