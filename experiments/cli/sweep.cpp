// `pelab sweep CONFIG`: every cell of a config's [sweep] grid, one process each, then the report.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/cli/command.hpp"
#include "experiments/config/config_schema.hpp"
#include "experiments/run/sweep.hpp"

namespace pelab::cli {

namespace {

struct SweepArgs {
  std::string config_path, out_dir;
  std::vector<std::string> overrides;
  int jobs = 1;
  int threads = 0;
  bool no_report = false;
  bool probe = false;
  bool dry_run = false;
  std::string memory_mb;
};

// A config without a grid has one run, which would have to sit in the sweep directory itself.
void check_has_grid(const LoadedConfig& loaded, const std::string& path) {
  const ExperimentConfig& cfg = loaded.config;
  if (!cfg.sweep.empty()) return;
  if (config_detail::given(cfg, "sweep"))
    throw Error(config_detail::location(cfg, "sweep") + ": [sweep] is empty, so the config has one run and no grid: "
                "train it with `pelab train " + path + "`, or give [sweep] a key and its values");
  throw Error(path + " has no [sweep] grid, so it has one run: train it with `pelab train " + path +
              "`, or add a [sweep] table (e.g. \"train.seed\" = [0, 1, 2])");
}

int cmd_sweep(const SweepArgs& a) {
  const MemoryLimit limit = parse_memory_limit(a.memory_mb);
  const LoadedConfig loaded = load_train_config(a.config_path, a.overrides, a.threads);
  check_has_grid(loaded, a.config_path);
  SweepOptions so;
  so.out_dir = a.out_dir;
  so.jobs = a.jobs;
  so.threads = a.threads;
  so.report = !a.no_report;
  so.probe = a.probe;
  so.self_exe = pelab_executable();
  so.dir_source = dir_source(loaded.config, a.out_dir);
  so.memory = limit;
  so.memory_flag = a.memory_mb;
  if (a.dry_run) return print_sweep_estimate(loaded, so);
  return run_sweep(loaded, so);
}

}  // namespace

void add_sweep(CLI::App& app, Commands& commands) {
  auto a = std::make_shared<SweepArgs>();
  auto* c = app.add_subcommand("sweep", "run every cell of a config's [sweep] grid, then report");
  add_config_options(*c, a->config_path, a->overrides);
  c->add_option("--out", a->out_dir, "sweep directory (default: output.dir of the config)");
  c->add_option("--jobs,-j", a->jobs, "cells run in parallel (one process each)")->check(CLI::Range(1, 256));
  c->add_option("--threads", a->threads, "step threads per cell (default: the cores / --jobs, at least 1)")->check(CLI::Range(1, 256));
  c->add_flag("--no-report", a->no_report, "skip the report at the end");
  c->add_flag("--probe", a->probe, "run `pelab probe run` on every finished cell (the report shows the probes)");
  c->add_flag("--dry-run", a->dry_run, "list the cells with their estimated CPU time and memory, and the totals; "
              "train and write nothing");
  add_memory_limit(*c, a->memory_mb, "; passed on to every cell");
  commands.push_back({c, [a](const Invocation&) { return cmd_sweep(*a); }});
}

}  // namespace pelab::cli
