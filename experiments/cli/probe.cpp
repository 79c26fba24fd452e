// `pelab probe encoding|run|spectrum`: looking inside an encoding or a trained run. Their options and the command
// are in experiments/probe/probe_cli.cpp; here the memory limit that `probe encoding`, `probe run` and `probe
// spectrum --run` check like train and eval.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "experiments/cli/command.hpp"
#include "training/signals.hpp"
#include "experiments/probe/probe.hpp"

namespace pelab::cli {

namespace {

struct ProbeCli {
  ProbeCommand probe;
  std::string memory_mb;  // probe encoding, probe run, probe spectrum --run
};

int cmd_probe(ProbeCli& p) {
  install_stop_handlers();
  arm_stop_deadline(kStopDeadline);  // its files are written whole (training/fs.hpp)
  p.probe.enc.memory = p.probe.run_args.memory = p.probe.spectrum_args.memory = parse_memory_limit(p.memory_mb);
  return run_probe_command(p.probe);
}

}  // namespace

void add_probe(CLI::App& app, Commands& commands) {
  auto p = std::make_shared<ProbeCli>();
  add_probe_command(app, p->probe);
  add_memory_limit(*p->probe.encoding, p->memory_mb);
  add_memory_limit(*p->probe.run, p->memory_mb);
  add_memory_limit(*p->probe.spectrum, p->memory_mb);
  commands.push_back({p->probe.app, [p](const Invocation&) { return cmd_probe(*p); }});
}

}  // namespace pelab::cli
