// `pelab train CONFIG`: one model from a config file (or cell K of its [sweep] grid).
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/cli/command.hpp"
#include "experiments/run/run.hpp"
#include "training/distributed.hpp"
#include "training/signals.hpp"

namespace pelab::cli {

namespace {

struct TrainArgs {
  std::string config_path, out_dir;
  std::vector<std::string> overrides;
  bool resume = false, resume_or_start = false, quiet = false;
  int threads = 0;
  std::string memory_mb;
  std::string cell_text;
};

std::string quote_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// The run of the config to train: its one run, or the cell --cell names when it defines a [sweep] grid.
// Sets ro.run_dir (a cell's directory under output.dir unless --out).
std::size_t choose_run(const TrainArgs& a, const LoadedConfig& loaded, RunOptions& ro) {
  const ExperimentConfig& cfg = loaded.config;
  ro.run_dir = a.out_dir.empty() ? cfg.output_dir : a.out_dir;
  if (cfg.sweep.empty()) {
    if (!a.cell_text.empty()) throw Error("--cell " + a.cell_text + ": " + a.config_path + " has no [sweep] grid");
    return 0;
  }
  const auto& cells = loaded.runs;
  std::string list;
  for (std::size_t i = 0; i < cells.size(); ++i) list += "\n  " + std::to_string(i) + ": " + cells[i].config.cell.label;
  const std::string range = "0.." + std::to_string(cells.size() - 1);
  const auto cell = parse_count("--cell", a.cell_text, "a cell index " + range + " of the [sweep] grid:" + list);
  if (!cell)
    throw Error(a.config_path + " defines a [sweep] grid of " + std::to_string(cells.size()) +
                " cells: run them all with `pelab sweep " + a.config_path + "`, or one with --cell K:" + list);
  if (*cell >= cells.size())
    throw Error("--cell " + a.cell_text + " is out of range: " + a.config_path + " defines a [sweep] grid of " +
                std::to_string(cells.size()) + " cells (" + range + "):" + list);
  if (a.out_dir.empty()) ro.run_dir = cfg.output_dir + "/" + cells[*cell].dir_name;
  return *cell;
}

int cmd_train(const TrainArgs& a, const Invocation& line) {
  const MemoryLimit limit = parse_memory_limit(a.memory_mb);
  const LoadedConfig loaded = load_train_config(a.config_path, a.overrides, a.threads);
  RunOptions ro;
  ro.dir_source = dir_source(loaded.config, a.out_dir);
  ro.memory = limit;
  const std::size_t k = choose_run(a, loaded, ro);
  ro.resume = a.resume || a.resume_or_start;
  ro.require_checkpoint = a.resume;
  ro.console = !a.quiet && dist::rank() == 0;
  ro.data_parallel = dist::size() > 1;
  ro.resume_command = (dist::size() > 1 ? "mpirun -np " + std::to_string(dist::size()) + " " : std::string()) +
                      quote_args(line.argc, line.argv) + (ro.resume ? "" : " --resume");
  install_stop_handlers();
  return run_experiment(loaded.runs[k], ro);
}

}  // namespace

void add_train(CLI::App& app, Commands& commands) {
  auto a = std::make_shared<TrainArgs>();
  auto* c = app.add_subcommand("train", "train one model from a config file");
  add_config_options(*c, a->config_path, a->overrides);
  c->add_option("--out", a->out_dir, "run directory (default: output.dir of the config)");
  auto* resume_flag = c->add_flag("--resume", a->resume, "continue from the latest usable checkpoint (error if none)");
  c->add_flag("--resume-or-start", a->resume_or_start, "like --resume, but a run directory without checkpoints "
              "starts at step 0 (what pelab sweep runs for each cell)")->excludes(resume_flag);
  c->add_option("--threads", a->threads, "threads of a training step, 1 to the cores this process may use (default: train.threads)")->check(CLI::Range(1, 256));
  c->add_flag("--quiet", a->quiet, "no console output");
  add_memory_limit(*c, a->memory_mb);
  c->add_option("--cell", a->cell_text, "train only cell K (0-based) of the config's [sweep] grid");
  commands.push_back({c, [a](const Invocation& line) { return cmd_train(*a, line); }});
}

}  // namespace pelab::cli
