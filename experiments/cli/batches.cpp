// `pelab batches CONFIG --steps N --out FILE`: the run's training batch stream into a file for the PyTorch
// twin (experiments/run/export_batches.hpp; python/pelab/torch_ref.py, load_batches).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/cli/command.hpp"
#include "experiments/run/export_batches.hpp"

namespace pelab::cli {

namespace {

struct BatchesArgs {
  std::string config_path, out, steps_text, cell_text;
  std::vector<std::string> overrides;
};

int run_batches(const BatchesArgs& a) {
  const LoadedConfig loaded = load_train_config(a.config_path, a.overrides, 0);
  const auto steps = parse_count("--steps", a.steps_text, "a number of steps from 1");
  if (!steps || *steps == 0) throw Error("--steps " + a.steps_text + ": expected a number of steps from 1");
  const std::size_t n = loaded.runs.size();
  const auto cell = parse_count("--cell", a.cell_text, "a cell index 0.." + std::to_string(n - 1));
  if (n > 1 && !cell)
    throw Error(a.config_path + " defines a [sweep] grid of " + std::to_string(n) + " cells: name one with --cell K");
  if (cell && *cell >= n)
    throw Error("--cell " + a.cell_text + " is out of range: the config has " + std::to_string(n) + " cell(s)");
  const RunSpec& spec = loaded.runs.at(cell.value_or(0));
  export_batches(spec, *steps, a.out);
  std::printf("wrote %s: %zu batches of %zu rows (seed %llu)\n", a.out.c_str(), *steps, spec.config.train.batch_size,
              static_cast<unsigned long long>(spec.config.train.seed));
  return 0;
}

}  // namespace

void add_batches(CLI::App& app, Commands& commands) {
  auto a = std::make_shared<BatchesArgs>();
  auto* c = app.add_subcommand("batches", "write a run's training batches to a file (for the PyTorch twin)");
  add_config_options(*c, a->config_path, a->overrides);
  c->add_option("--steps", a->steps_text, "batches to write, one per optimizer step")->required();
  c->add_option("--out", a->out, "the safetensors file to write")->required();
  c->add_option("--cell", a->cell_text, "cell K (0-based) of the config's [sweep] grid");
  commands.push_back({c, [a](const Invocation&) { return run_batches(*a); }});
}

}  // namespace pelab::cli
