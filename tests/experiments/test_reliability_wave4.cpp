// Reliability, part 4 (issue #38): settings that were accepted and then did nothing or something else
// (an encoding in no layer, FoX without a causal mask, DAPE's base parameters, heads of an input-level
// encoding, hints without index hints, SSMax with L = 1, a too small Abacus table, trailing commas),
// flags that a --set silently overrode, a trained scaling changed at evaluation, a zero size, an empty
// [sweep] table, and a failed sweep cell that said only its label.
#include <catch2/catch.hpp>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli_helpers.hpp"
#include "config_error.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using test::has;
using test::run_cli;

std::string err(const std::string& text) { return test::config_error(text, "c.toml"); }

std::string model(const std::string& extra) {
  return "[model]\nd_model = 16\nn_layers = 2\nn_heads = 2\n" + extra + "[task]\nname = \"copy\"\ntrain_len = 4\n";
}

std::string addition(const std::string& encoding) {
  return "[model]\nd_model = 16\nn_layers = 2\nn_heads = 2\n" + encoding +
         "[task]\nname = \"addition\"\ntrain_len = 8\n";
}

std::string write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

}  // namespace

TEST_CASE("an [encoding] name that runs in no layer of the layout is refused at its line", "[config][errors]") {
  const std::string e = err(model("[encoding]\nname = \"fire\"\nlayers = \"none,alibi\"\n"));
  INFO(e);
  CHECK(has(e, "c.toml:7"));
  CHECK(has(e, "name = \"fire\" runs in no layer"));
  CHECK(has(e, "none, alibi"));
  // The hybrid configs' base ("none"), a name in the layout, and an input-level name beside a layout run.
  CHECK(err(model("[encoding]\nname = \"none\"\nlayers = \"rope\"\n")) == "(no error)");
  CHECK(err(model("[encoding]\nname = \"rope\"\nlayers = \"none,rope\"\n")) == "(no error)");
  CHECK(err(addition("[encoding]\nname = \"abacus\"\nlayers = \"fire\"\n")) == "(no error)");
}

TEST_CASE("FoX needs causal attention", "[config][errors]") {
  const std::string e = err(model("causal = false\n[encoding]\nname = \"fox\"\n"));
  INFO(e);
  CHECK(has(e, "fox needs causal attention (model.causal = true)"));
  CHECK(has(e, "c.toml:"));
  CHECK(has(err(model("causal = false\n[encoding]\nname = \"none\"\nlayers = \"fox,none\"\n")), "fox needs causal"));
}

TEST_CASE("DAPE refuses its base's parameters, which it would ignore", "[config][errors]") {
  std::string e = err(model("[encoding]\nname = \"dape\"\n[encoding.kerple]\nvariant = \"power\"\n"));
  INFO(e);
  CHECK(has(e, "c.toml:8"));
  CHECK(has(e, "[encoding.kerple] key 'variant' = \"power\" has no effect: DAPE builds its kerple bias at kerple's defaults"));
  e = err(model("[encoding]\nname = \"dape\"\n[encoding.dape]\nbase = \"alibi\"\n[encoding.alibi]\nslope_scale = 2.0\n"));
  CHECK(has(e, "[encoding.alibi] key 'slope_scale'"));
  // The defaults written out change nothing; a layout running the base itself, or a sweep over the
  // encoding, uses the table.
  CHECK(err(model("[encoding]\nname = \"dape\"\n[encoding.kerple]\nvariant = \"log\"\n")) == "(no error)");
  CHECK(err(model("[encoding]\nname = \"dape\"\nlayers = \"dape,kerple\"\n[encoding.kerple]\nvariant = \"power\"\n")) ==
        "(no error)");
  CHECK(err(model("[encoding]\nname = \"dape\"\n[encoding.kerple]\nvariant = \"power\"\n[sweep]\n"
                  "\"encoding.name\" = [\"kerple\", \"dape\"]\n")) == "(no error)");
}

TEST_CASE("settings without effect are refused: heads of NoPE or an input-level encoding, hint_symbols, SSMax with L = 1",
          "[config][errors]") {
  std::string e = err(model("[encoding]\nname = \"learned\"\nheads = 1\n"));
  INFO(e);
  CHECK(has(e, "c.toml:7"));
  CHECK(has(e, "[encoding] heads = 1 has no effect: encoding 'learned' acts on the token embeddings"));
  CHECK(has(err(model("[encoding]\nname = \"none\"\nheads = 1\n")), "heads = 1 has no effect"));
  CHECK(has(err(model("[encoding]\nname = \"sinusoidal\"\nheads = 1\n")), "heads = 1 has no effect"));
  CHECK(err(model("[encoding]\nname = \"rope\"\nheads = 1\n")) == "(no error)");
  CHECK(has(err(model("[encoding]\nname = \"pope\"\nheads = 1\n")), "c.toml:7: [encoding] heads = 1 cannot restrict 'pope'"));
  CHECK(err(model("[encoding]\nname = \"learned\"\nlayers = \"rope\"\nheads = 1\n")) == "(no error)");

  e = err(addition("[encoding]\nname = \"rope\"\n") + "[task.addition]\nhint_symbols = 20\n");
  CHECK(has(e, "c.toml:11"));
  CHECK(has(e, "'hint_symbols' has no effect without index hints"));
  CHECK(err(addition("[encoding]\nname = \"rope\"\n") + "[task.addition]\nhint_symbols = 40\nindex_hints = true\n") ==
        "(no error)");

  e = err(model("[attention]\nscaling = \"ssmax\"\nlog_length_base = 1\n"));
  CHECK(has(e, "c.toml:7"));
  CHECK(has(e, "scaling = \"ssmax\" needs a base length L >= 2"));
  CHECK(err(model("[attention]\nscaling = \"ssmax\"\nlog_length_base = 2\n")) == "(no error)");
}

TEST_CASE("an Abacus table smaller than the training digits plus max_k is refused at config time", "[config][errors]") {
  // addition at train_len 8: answers of up to 9 digits.
  const std::string e = err(addition("[encoding]\nname = \"abacus\"\n[encoding.abacus]\nsize = 12\nmax_k = 5\n"));
  INFO(e);
  CHECK(has(e, "c.toml:8"));
  CHECK(has(e, "[encoding.abacus] size = 12 rows is too small: training reaches digit index 9"));
  CHECK(has(e, "expected size >= 15"));
  CHECK(err(addition("[encoding]\nname = \"abacus\"\n[encoding.abacus]\nsize = 15\nmax_k = 5\n")) == "(no error)");
}

TEST_CASE("a list with a trailing comma is refused in the config", "[config][errors]") {
  std::string e = err(model("[attention]\nwindow = \"0,2,\"\n"));
  INFO(e);
  CHECK(has(e, "c.toml:6"));
  CHECK(has(e, "[attention] key 'window' = \"0,2,\" ends with ','"));
  e = err(model("[encoding]\nname = \"rope\"\nlayers = \"rope,none,\"\n"));
  CHECK(has(e, "[encoding] key 'layers' = \"rope,none,\" ends with ','"));
}

TEST_CASE("eval refuses a --set that a flag also sets, empty and trailing-comma lists, a trained scaling changed",
          "[cli][errors]") {
  const std::string dir = test::fresh_temp_dir("rel4_eval"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(4));
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --quiet", log, 120) == 0);
  const auto refused = [&](const std::string& args, const std::string& message) {
    const int rc = run_cli("eval " + run + " " + args, log, 60);
    const std::string out = read_file(log);
    INFO(args << ": exit " << rc << "\n" << out);
    CHECK(rc == 2);
    CHECK(has(out, message));
  };
  refused("--set 'eval.length_range=[1,3]' --length-range 1,4",
          "--set eval.length_range=[1,3] and --length-range 1,4 both set the evaluation lengths; give one of them");
  refused("--lengths 4 --set 'eval.lengths=[8]'", "--set eval.lengths=[8] and --lengths 4 both set the evaluation lengths");
  refused("--lengths 4 --set 'eval.length_range=[1,3]'", "both set the evaluation lengths");
  refused("--samples 4 --set eval.samples=8", "--set eval.samples=8 and --samples 4 both set the evaluation samples");
  refused("--length-range ''", "'' is empty; expected a comma-separated list");
  refused("--lengths ''", "'' is empty; expected a comma-separated list");
  refused("--length-range 1,5,", "--length-range: '1,5,' is not a comma-separated list");
  refused("--lengths 2,", "--lengths: '2,' is not a comma-separated list");
  refused("--set attention.scaling=ssmax", "key 'attention.scaling' cannot become \"ssmax\" at evaluation: SSMax's s_h are "
                                           "trained parameters");
  refused("--set attention.scaling=learned", "cannot become \"learned\" at evaluation: learned temperatures are");
  CHECK(run_cli("eval " + run + " --set attention.scaling=fixed --lengths 2", log, 60) == 0);  // parameter-free
  fs::remove_all(dir);
}

TEST_CASE("eval of an SSMax run refuses to drop SSMax", "[cli][errors]") {
  const std::string dir = test::fresh_temp_dir("rel4_ssmax"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(4) + "[attention]\nscaling = \"ssmax\"\n");
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --quiet", log, 120) == 0);
  CHECK(run_cli("eval " + run + " --set attention.scaling=none", log, 60) == 2);
  CHECK(has(read_file(log), "key 'attention.scaling' cannot leave \"ssmax\" at evaluation: SSMax's s_h are trained"));
  fs::remove_all(dir);
}

TEST_CASE("show-task refuses a zero size", "[cli][errors]") {
  const std::string dir = test::fresh_temp_dir("rel4_show"), log = dir + "/log.txt";
  CHECK(run_cli("show-task copy --len 0", log, 30) == 2);
  CHECK(has(read_file(log), "'0' is not a positive integer"));
  CHECK(run_cli("show-task copy --len 3", log, 30) == 0);
  CHECK(has(read_file(log), "samples (n = 3"));
  CHECK(run_cli("show-task copy", log, 30) == 0);
  CHECK(has(read_file(log), "samples (n = 8"));
  fs::remove_all(dir);
}

TEST_CASE("sweep refuses a config without a grid, an empty [sweep] at its line, before writing anything",
          "[cli][errors][sweep]") {
  const std::string dir = test::fresh_temp_dir("rel4_nogrid"), log = dir + "/log.txt";
  const std::string empty = write_text(dir + "/empty.toml", test::tiny_config(4) + "[sweep]\n");
  CHECK(run_cli("sweep " + empty + " --out " + dir + "/a", log, 60) == 2);
  CHECK(has(read_file(log), empty + ":15: [sweep] is empty, so the config has one run and no grid: train it with "
                                    "`pelab train " + empty + "`"));
  const std::string none = write_text(dir + "/none.toml", test::tiny_config(4));
  CHECK(run_cli("sweep " + none + " --out " + dir + "/b", log, 60) == 2);
  CHECK(has(read_file(log), none + " has no [sweep] grid, so it has one run: train it with `pelab train " + none + "`"));
  CHECK_FALSE(fs::exists(dir + "/a"));
  CHECK_FALSE(fs::exists(dir + "/b"));
  fs::remove_all(dir);
}

TEST_CASE("a sweep names each failed cell with its first error line", "[cli][sweep]") {
  const std::string dir = test::fresh_temp_dir("rel4_failed"), out = dir + "/sweep", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(4) + "[sweep]\n\"train.seed\" = [0, 1]\n");
  fs::create_directories(out + "/train.seed=1");
  write_text(out + "/train.seed=1/checkpoints", "a file where the checkpoints go\n");  // the cell fails to save
  CHECK(run_cli("sweep " + cfg + " --out " + out + " --no-report", log, 120) == 1);
  const std::string text = read_file(log);
  INFO(text);
  CHECK(has(text, "1 cell(s) failed:\n  train.seed=1: error: checkpoint: saving step 4 under " + out +
                      "/train.seed=1/checkpoints failed"));
  fs::remove_all(dir);
}

TEST_CASE("pelab list shows the [encoding] keys layers and heads", "[cli]") {
  const std::string dir = test::fresh_temp_dir("rel4_list"), log = dir + "/log.txt";
  REQUIRE(run_cli("list", log, 30) == 0);
  const std::string text = read_file(log);
  CHECK(has(text, "([encoding]):\n      layers "));
  CHECK(has(text, "\n      heads "));
  fs::remove_all(dir);
}

TEST_CASE("a long predict prints its estimate and progress, and SIGINT names the phase, sweep --dry-run estimates",
          "[cli][estimate]") {
  const std::string dir = test::fresh_temp_dir("rel4_estimate"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(4) + "[encoding]\nname = \"rope\"\n");
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --quiet", log, 120) == 0);
  CHECK(run_cli("predict " + run + " --len 300 --count 2", log, 120) == 0);  // under the default 10 s: quiet
  CHECK_FALSE(has(read_file(log), "estimate:"));
  {
    test::ScopedEnv low("PELAB_PROGRESS_AFTER", "0");
    CHECK(run_cli("predict " + run + " --len 300 --count 2", log, 120) == 0);
    const std::string text = read_file(log);
    INFO(text);
    CHECK(has(text, "estimate: decoding 2 row(s) of "));
    CHECK(has(text, "GFLOP/s measured on this model); Ctrl-C stops it"));
    CHECK(has(text, "decoding row "));
    CHECK(has(text, "% after "));
    CHECK(run_cli("eval " + run + " --lengths 300 --samples 4", log, 120) == 0);
    CHECK(has(read_file(log), "estimate: evaluating 1 length(s) of 4 examples takes about "));
    // SIGINT in the middle of decoding: the message names the phase.
    write_text(log, "");
    const pid_t pid = test::start_cli("predict " + run + " --len 3000 --count 50", log);
    const auto t0 = std::chrono::steady_clock::now();
    while (!has(read_file(log), "decoding row") && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::kill(pid, SIGINT);
    CHECK(test::wait_for(pid, 30) == 130);
    CHECK(has(read_file(log), "interrupted while decoding"));
  }
  {
    test::ScopedEnv bad("PELAB_PROGRESS_AFTER", "soon");
    CHECK(run_cli("predict " + run + " --len 300 --count 2", log, 60) == 2);
    CHECK(has(read_file(log), "PELAB_PROGRESS_AFTER = 'soon' is not a number of seconds"));
  }
  const std::string grid = write_text(dir + "/grid.toml", test::tiny_config(40) + "[sweep]\n\"train.seed\" = [0, 1, 2]\n");
  CHECK(run_cli("sweep " + grid + " --out " + dir + "/sweep --dry-run --jobs 2", log, 120) == 0);
  const std::string text = read_file(log);
  INFO(text);
  CHECK(has(text, "dry run: 3 cell(s); nothing is trained or written."));
  CHECK(has(text, "  train.seed=2 "));
  CHECK(has(text, "total: "));
  CHECK(has(text, "with --jobs 2"));
  CHECK_FALSE(fs::exists(dir + "/sweep"));
  // A model with dropout is timed in evaluation mode (dropout would need the run's RNG).
  CHECK(run_cli("sweep " + grid + " --out " + dir + "/sweep --dry-run --set model.dropout=0.1", log, 120) == 0);
  CHECK_FALSE(fs::exists(dir + "/sweep"));
  fs::remove_all(dir);
}

TEST_CASE("a length range of 100000 lengths is validated at its ends, not by sampling each length", "[cli][errors]") {
  const std::string dir = test::fresh_temp_dir("rel4_range"), run = dir + "/run", log = dir + "/log.txt";
  const std::string cfg = write_text(dir + "/cfg.toml", test::tiny_config(4));
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --quiet", log, 120) == 0);
  // The memory limit refuses the long lengths right after validation (which took 30 s of CPU before).
  CHECK(run_cli("eval " + run + " --length-range 1,100000 --memory-limit 1", log, 20) == 2);
  CHECK(has(read_file(log), "error: --length-range 1,100000: evaluating length "));
  // A range past what the task can make is still refused at its end: assoc_recall's 16 keys.
  const std::string recall = write_text(dir + "/recall.toml", "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n"
                                        "[task]\nname = \"assoc_recall\"\ntrain_len = 4\n[eval]\nlength_range = [1, 40]\n");
  const std::string e = test::config_error(read_file(recall), "r.toml");
  INFO(e);
  CHECK(has(e, "r.toml:9: [eval] length_range [1, 40, 1] includes length 17, which task 'assoc_recall' cannot generate"));
  fs::remove_all(dir);
}
