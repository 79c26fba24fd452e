// `pelab list`: the encodings, tasks and optimizers with their parameters, the attention settings and the metrics.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/params/param_spec.hpp"
#include "core/params/value.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/config/config_schema.hpp"
#include "experiments/run/run.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"
#include "training/distributed.hpp"
#include "training/metrics_table.hpp"
#include "training/optimizer_registry.hpp"

namespace pelab::cli {

namespace {

void print_params(const std::vector<ParamSpec>& params) {
  for (const auto& p : params)
    std::printf("      %-16s %-10s default %-14s %s; %s\n", p.key.c_str(), type_name(p.type).c_str(),
                format_value(p.default_value).c_str(), p.allowed().c_str(), p.help.c_str());
}

template <class Registry>
void print_registry(const char* title, const Registry& r) {
  std::printf("%s\n", title);
  for (const auto& n : r.names()) {
    const auto& s = r.get(n);
    std::printf("  %-12s %s\n", n.c_str(), s.summary.c_str());
    print_params(s.params);
  }
}

int cmd_list() {
  print_registry("positional encodings ([encoding] name = ...; parameters in [encoding.NAME]):",
                 EncodingRegistry::instance());
  std::printf("\nper-layer layout and per-head subsets, with the attention-level encodings ([encoding]):\n");
  std::vector<ParamSpec> layout;
  for (const auto& f : config_detail::find_section("encoding")->fields)
    if (f.spec.key != "name") layout.push_back(f.spec);
  print_params(layout);
  std::printf("\nattention scaling, windows, chunks and temperature tuning, with every encoding ([attention]; at "
              "evaluation: pelab eval --set attention.KEY=V):\n");
  std::vector<ParamSpec> attention;
  for (const auto& f : config_detail::find_section("attention")->fields) attention.push_back(f.spec);
  print_params(attention);
  std::printf("\nCanon layers, with every encoding ([canon]; QK-norm is attention.qk_norm above):\n");
  std::vector<ParamSpec> canon;
  for (const auto& f : config_detail::find_section("canon")->fields) canon.push_back(f.spec);
  print_params(canon);
  std::printf("\nlooped depth, with every encoding ([loop]; at evaluation: pelab eval --set loop.KEY=V):\n");
  std::vector<ParamSpec> loop;
  for (const auto& f : config_detail::find_section("loop")->fields) loop.push_back(f.spec);
  print_params(loop);
  print_registry("\ntasks ([task] name = ...; parameters in [task.NAME]):", TaskRegistry::instance());
  print_registry("\noptimizers ([train] optimizer = ...; parameters in [train.NAME]):", OptimizerRegistry::instance());
  std::printf("\nmetrics ([train] early_stop_metric, pelab report --metric):\n");
  for (const auto& m : metric_table())
    std::printf("  %-12s %s; %s is better%s\n", m.name.c_str(), m.title.c_str(), m.lower_is_better ? "lower" : "higher",
                m.for_lm ? "" : "; sequence tasks only");
  std::printf("\nMPI (mpirun -np N pelab train|sweep): %s\n", dist::summary().c_str());
  return kOk;
}

}  // namespace

void add_list(CLI::App& app, Commands& commands) {
  auto* c = app.add_subcommand("list", "encodings, tasks and optimizers with their parameters, and the metrics");
  commands.push_back({c, [](const Invocation&) { return cmd_list(); }});
}

}  // namespace pelab::cli
