// `pelab sweep CONFIG`: every cell of a config's [sweep] grid, one process each, then the report.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/cli/command.hpp"
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
  std::string memory_mb;
};

int cmd_sweep(const SweepArgs& a) {
  const MemoryLimit limit = parse_memory_limit(a.memory_mb);
  const LoadedConfig loaded = load_train_config(a.config_path, a.overrides, a.threads);
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
  add_memory_limit(*c, a->memory_mb, "; passed on to every cell");
  commands.push_back({c, [a](const Invocation&) { return cmd_sweep(*a); }});
}

}  // namespace pelab::cli
