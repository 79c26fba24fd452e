// The pelab command line: train, sweep, eval, report, list, show-task, predict, probe (eval, report,
// list and show-task in experiments/cli/).
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "core/blas.hpp"
#include "core/blas_coretype.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/config.hpp"
#include "experiments/predict.hpp"
#include "experiments/probe.hpp"
#include "experiments/resources.hpp"
#include "experiments/run.hpp"
#include "experiments/sweep.hpp"
#include "training/distributed.hpp"
#include "training/signals.hpp"

namespace fs = std::filesystem;
using namespace pelab;

namespace {

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("cannot locate the pelab executable (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string quote_args(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// Prints the error and ends with `code`; under MPI it ends the whole job (a rank that stops alone would
// leave the others waiting). Ranks other than 0 wait a moment first: rank 0 usually meets the same
// error, and its message (and the end of the job) should come once.
int fail(int code, const char* what) {
  if (dist::size() > 1 && dist::rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
  if (dist::size() > 1) std::fprintf(stderr, "error (rank %d): %s\n", dist::rank(), what);
  else std::fprintf(stderr, "error: %s\n", what);
  return dist::abort_job(code);
}

// The flag or key that chose an output directory, for messages.
std::string dir_source(const ExperimentConfig& cfg, const std::string& out_flag) {
  if (!out_flag.empty()) return "--out";
  auto it = cfg.locations.find("output.dir");
  if (it != cfg.locations.end()) return "output.dir at " + it->second;
  return "output.dir, by default " + cfg.output_dir + " from the config file's name";
}

}  // namespace

int main(int argc, char** argv) {
  blas::select_coretype(argv);  // may re-execute with OPENBLAS_CORETYPE set: before anything else
  const dist::Session mpi(&argc, &argv);  // MPI only under mpirun / srun (training/distributed.hpp)
  CLI::App app{"pelab: train small transformers and compare positional encodings in and beyond the training length"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");
  app.set_version_flag("--version", "pelab\nMPI: " + dist::summary());
  std::string memory_mb;

  // train
  std::string config_path, out_dir;
  std::vector<std::string> overrides;
  bool resume = false, resume_or_start = false, quiet = false;
  int threads = 0;
  auto* train = app.add_subcommand("train", "train one model from a config file");
  train->add_option("config", config_path, "TOML config file")->required()->check(CLI::ExistingFile);
  train->add_option("--set", overrides, "override a key: section.key=value (repeatable)");
  train->add_option("--out", out_dir, "run directory (default: output.dir of the config)");
  auto* resume_flag = train->add_flag("--resume", resume, "continue from the latest usable checkpoint (error if none)");
  train->add_flag("--resume-or-start", resume_or_start, "like --resume, but a run directory without checkpoints "
                  "starts at step 0 (what pelab sweep runs for each cell)")->excludes(resume_flag);
  train->add_option("--threads", threads, "threads of a training step, 1 to the cores this process may use (default: train.threads)")->check(CLI::Range(1, 256));
  train->add_flag("--quiet", quiet, "no console output");
  cli::add_memory_limit(*train, memory_mb);
  std::string cell_text;
  train->add_option("--cell", cell_text, "train only cell K (0-based) of the config's [sweep] grid");

  // sweep
  int jobs = 1;
  bool no_report = false;
  auto* sweep = app.add_subcommand("sweep", "run every cell of a config's [sweep] grid, then report");
  sweep->add_option("config", config_path, "TOML config file")->required()->check(CLI::ExistingFile);
  sweep->add_option("--set", overrides, "override a key: section.key=value (repeatable)");
  sweep->add_option("--out", out_dir, "sweep directory (default: output.dir of the config)");
  sweep->add_option("--jobs,-j", jobs, "cells run in parallel (one process each)")->check(CLI::Range(1, 256));
  sweep->add_option("--threads", threads, "step threads per cell (default: the cores / --jobs, at least 1)")->check(CLI::Range(1, 256));
  sweep->add_flag("--no-report", no_report, "skip the report at the end");
  bool sweep_probe = false;
  sweep->add_flag("--probe", sweep_probe, "run `pelab probe run` on every finished cell (the report shows the probes)");
  cli::add_memory_limit(*sweep, memory_mb, "; passed on to every cell");

  cli::Commands commands;
  cli::add_eval(app, commands);
  cli::add_report(app, commands);
  cli::add_list(app, commands);
  cli::add_show_task(app, commands);

  PredictArgs predict_args;
  auto* predict = add_predict_command(app, predict_args);
  ProbeCommand probe;
  add_probe_command(app, probe);
  // The inspection commands check the same estimate (experiments/resources.hpp) as train, sweep and eval.
  cli::add_memory_limit(*predict, memory_mb);
  cli::add_memory_limit(*probe.run, memory_mb);

  // CLI11 reports an unknown first word as "A subcommand is required": name it (and the commands).
  if (argc > 1 && argv[1][0] != '-') {
    std::string list;
    bool known = false;
    for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; })) {
      list += (list.empty() ? "" : ", ") + c->get_name();
      known = known || c->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr, "error: unknown command '%s'; commands: %s (pelab --help for more)\n", argv[1], list.c_str());
      return kBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, or the error with a hint
    return rc == 0 ? kOk : kBadInput;
  }

  try {
    set_phase("starting");
    const cli::Invocation line{argc, argv};
    for (const cli::Command& c : commands)
      if (c.app->parsed()) return c.run(line);
    const MemoryLimit limit = cli::parse_memory_limit(memory_mb);
    predict_args.memory = probe.run_args.memory = limit;
    if (*predict) return run_predict(predict_args);
    if (*probe.app) return run_probe_command(probe);

    if (threads) overrides.push_back("train.threads=" + std::to_string(threads));
    set_phase("loading the config");
    const LoadedConfig loaded = load_config(config_path, overrides);
    for (const auto& w : loaded.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());

    if (*sweep) {
      SweepOptions so;
      so.out_dir = out_dir;
      so.jobs = jobs;
      so.threads = threads;
      so.report = !no_report;
      so.probe = sweep_probe;
      so.self_exe = self_exe();
      so.dir_source = dir_source(loaded.config, out_dir);
      so.memory = limit;
      so.memory_flag = memory_mb;
      return run_sweep(loaded, so);
    }

    // train: the config's one run, or cell K of its grid
    const ExperimentConfig& cfg = loaded.config;
    RunOptions ro;
    ro.run_dir = out_dir.empty() ? cfg.output_dir : out_dir;
    ro.dir_source = dir_source(cfg, out_dir);
    ro.memory = limit;
    std::size_t k = 0;
    if (!cfg.sweep.empty()) {
      const auto& cells = loaded.runs;
      std::string list;
      for (std::size_t i = 0; i < cells.size(); ++i) list += "\n  " + std::to_string(i) + ": " + cells[i].config.cell.label;
      const std::string range = "0.." + std::to_string(cells.size() - 1);
      const auto cell = cli::parse_count("--cell", cell_text, "a cell index " + range + " of the [sweep] grid:" + list);
      if (!cell)
        throw Error(config_path + " defines a [sweep] grid of " + std::to_string(cells.size()) +
                    " cells: run them all with `pelab sweep " + config_path + "`, or one with --cell K:" + list);
      if (*cell >= cells.size())
        throw Error("--cell " + cell_text + " is out of range: " + config_path + " defines a [sweep] grid of " +
                    std::to_string(cells.size()) + " cells (" + range + "):" + list);
      k = *cell;
      if (out_dir.empty()) ro.run_dir = cfg.output_dir + "/" + cells[k].dir_name;
    } else if (!cell_text.empty()) {
      throw Error("--cell " + cell_text + ": " + config_path + " has no [sweep] grid");
    }
    ro.resume = resume || resume_or_start;
    ro.require_checkpoint = resume;
    ro.console = !quiet && dist::rank() == 0;
    ro.data_parallel = dist::size() > 1;
    ro.resume_command = (dist::size() > 1 ? "mpirun -np " + std::to_string(dist::size()) + " " : std::string()) +
                        quote_args(argc, argv) + (ro.resume ? "" : " --resume");
    install_stop_handlers();
    return run_experiment(loaded.runs[k], ro);
  } catch (const Error& e) {
    return fail(kBadInput, e.what());
  } catch (const std::bad_alloc&) {
    const std::string msg = "out of memory while " + current_phase() +
                            "; the estimate checked before the run did not foresee it (--memory-limit sets the "
                            "limit it is checked against)";
    return fail(kBadInput, msg.c_str());
  } catch (const std::filesystem::filesystem_error& e) {
    const std::string msg = "while " + current_phase() + ": " + e.what();
    return fail(kBadInput, msg.c_str());
  } catch (const std::exception& e) {
    return fail(kError, e.what());
  }
}
