// `pelab predict RUN_DIR`: a trained model's outputs. Its options and the command are in
// experiments/eval/predict.cpp; here the memory limit that the inspection commands check like train and eval.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "experiments/cli/command.hpp"
#include "training/signals.hpp"
#include "experiments/eval/predict.hpp"

namespace pelab::cli {

namespace {

struct PredictCli {
  PredictArgs args;
  std::string memory_mb;
};

int cmd_predict(PredictCli& p) {
  install_stop_handlers();
  arm_stop_deadline(kStopDeadline);  // read-only: writes nothing
  p.args.memory = parse_memory_limit(p.memory_mb);
  return run_predict(p.args);
}

}  // namespace

void add_predict(CLI::App& app, Commands& commands) {
  auto p = std::make_shared<PredictCli>();
  auto* c = add_predict_command(app, p->args);
  add_memory_limit(*c, p->memory_mb);
  commands.push_back({c, [p](const Invocation&) { return cmd_predict(*p); }});
}

}  // namespace pelab::cli
