// Recipe benchmark: one training step of each recipe's main cell (experiments/reproduce/NAME.toml), so that
// "faster than PyTorch" is checked at the shapes the science runs (issue 41, item 0).
//
//   bench_recipe [--recipe NAME|all] [--dir DIR] [--steps N] [--warmup N] [--threads N] [--json]
//                [--dump FILE]
//
// The main cell is the first cell of the recipe's [sweep] grid (the file's own settings where only seeds
// are swept: zhou2024's FIRE with randomized ids, mcleish2024's Abacus, cho2024's coupled positions...).
// A step is the trainer's (training/trainer.cpp, Trainer::Impl::train_step) without its logging: forward
// (with the batch's digit indices, the dropout stream), masked cross-entropy, backward, gradient clipping
// at [train] grad_clip, the optimizer step, zero_grad. Dropout is set to 0 (--set model.dropout=0: only
// deletang has any) so that PyTorch can do the same work. The batches are drawn before timing from the
// run's own streams (task sample, then [train] positions), warm-up and timed ones alike.
//
// --dump FILE writes the cell's model settings and those batches as JSON for bench/bench_torch.py
// --recipe-file, which times its twin on exactly these batches (scripts/bench_recipe.sh runs both
// alternately); "blockers" lists what the twin cannot reproduce (then no PyTorch time is printed).
#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_common.hpp"
#include "bench/perf_control.hpp"
#include "core/blas.hpp"
#include "core/blas_coretype.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/parallel.hpp"
#include "experiments/config/config.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/transformer.hpp"
#include "training/optimizer.hpp"
#include "training/optimizer_registry.hpp"
#include "training/positions.hpp"
#include "training/trainer.hpp"

using namespace pelab;
using pelab::bench::cpu_now_s;
using pelab::bench::median;
using pelab::bench::parse_int;
using pelab::bench::parse_threads;

namespace {

struct Options {
  std::string recipe = "all", dir = "experiments/reproduce", dump;
  int steps = 20, warmup = 5, threads = 1;
  bool json = false;
};

// The recipe names of `dir`: its *.toml files without the extension, sorted.
std::vector<std::string> recipe_names(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string f = e->d_name;
      if (f.size() > 5 && f.compare(f.size() - 5, 5, ".toml") == 0) names.push_back(f.substr(0, f.size() - 5));
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) throw Error("--dir: no recipe (*.toml) in '" + dir + "'");
  return names;
}

// What bench/torch_fast.py's FastModel does not model: a twin with any of these would time other work.
std::vector<std::string> twin_blockers(const ModelConfig& m) {
  std::vector<std::string> b;
  if (m.activation != Activation::gelu) b.push_back("model.activation is not the erf GELU");
  if (m.tie_embeddings) b.push_back("model.tie_embeddings");
  if (m.d_ff != 0 && m.d_ff != 4 * m.d_model) b.push_back("model.d_ff is not 4 d_model");
  if (!m.layer_encodings.empty()) b.push_back("encoding.layers");
  if (m.encoding_heads != 0) b.push_back("encoding.heads");
  if (m.attention.scaling != "none" || m.attention.window != "0") b.push_back("[attention] scaling or window");
  return b;
}

nlohmann::json value_json(const Value& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

nlohmann::json batch_json(const Batch& b) {
  auto ints = [](const IndexArray& a) { return std::vector<std::int32_t>(a.begin(), a.end()); };
  nlohmann::json j = {{"B", b.batch()},
                      {"T", b.length()},
                      {"tokens", ints(b.tokens)},
                      {"targets", ints(b.targets)},
                      {"positions", ints(b.positions)},
                      {"mask", std::vector<float>(b.mask.begin(), b.mask.end())}};
  if (b.has_digit_index()) j["digit_index"] = ints(b.digit_index);
  return j;
}

// The cell and its batches for the PyTorch twin (bench_torch.py --recipe-file).
void write_dump(const std::string& path, const std::string& name, const RunSpec& spec, std::size_t params,
                const std::vector<Batch>& batches, const Options& o) {
  const ModelConfig& m = spec.model;
  const TrainConfig& t = spec.config.train;
  nlohmann::json j = {{"recipe", name}, {"cell", spec.config.cell.label}, {"encoding", m.encoding},
                      {"vocab", m.vocab}, {"d_model", m.d_model}, {"n_layers", m.n_layers},
                      {"n_heads", m.n_heads}, {"ln_eps", m.ln_eps}, {"causal", m.causal},
                      {"seq_len", m.train_seq_len}, {"params", params}, {"lr", t.lr},
                      {"weight_decay", t.weight_decay}, {"grad_clip", t.grad_clip}, {"optimizer", t.optimizer},
                      {"decay_norm_and_bias", t.decay_norm_and_bias}, {"decay_embeddings", t.decay_embeddings},
                      {"warmup", o.warmup}, {"steps", o.steps}, {"blockers", twin_blockers(m)}};
  nlohmann::json ep = nlohmann::json::object();
  for (const auto& [k, v] : m.encoding_params) ep[k] = value_json(v);
  j["encoding_params"] = ep;
  j["batches"] = nlohmann::json::array();
  for (const Batch& b : batches) j["batches"].push_back(batch_json(b));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump() << '\n';
    if (!out) throw Error("--dump: cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("--dump: cannot rename '" + tmp + "' to '" + path + "'");
}

// The run's batches as its trainer draws them: the task's sample from the data stream, then [train] positions.
std::vector<Batch> draw_batches(const RunSpec& spec, int n) {
  const ExperimentConfig& cfg = spec.config;
  Rng data = data_rng(cfg.train.seed), pos = position_rng(cfg.train.seed);
  std::vector<Batch> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(spec.task->sample(data, cfg.train.batch_size, cfg.min_len, cfg.train_len));
    assign_positions(out.back(), {cfg.train.positions, cfg.train.max_position}, pos);
  }
  return out;
}

struct Timing {
  std::vector<double> wall, cpu;  // seconds per timed step
  double loss_first = 0, loss_last = 0;
};

Timing time_recipe(const RunSpec& spec, Transformer& model, const std::vector<Batch>& batches, int warmup) {
  const TrainConfig& t = spec.config.train;
  const std::vector<Parameter> params = model.parameters();
  OptimizerCommon common;
  common.weight_decay = t.weight_decay;
  common.rule.decay_norm_and_bias = t.decay_norm_and_bias;
  common.rule.decay_embeddings = t.decay_embeddings;
  const auto given = t.optimizer_params.find(t.optimizer);
  auto optimizer = make_optimizer(t.optimizer, given == t.optimizer_params.end() ? std::map<std::string, Value>{}
                                                                                  : given->second, common, params);
  Rng dropout = dropout_rng(t.seed);
  Timing r;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    if (int(i) == warmup) bench::perf_enable();  // PELAB_PERF_CTL: a profile of the timed steps alone
    const Batch& b = batches[i];
    const double c0 = cpu_now_s();
    const auto t0 = std::chrono::steady_clock::now();
    ForwardOptions fo;
    fo.dropout_rng = &dropout;
    if (b.has_digit_index()) fo.digit_index = &b.digit_index;
    Tensor loss = cross_entropy(model.forward(b.tokens, b.positions, fo), b.targets, &b.mask);
    r.loss_last = loss.item();
    loss.backward();
    clip_grad_norm(params, t.grad_clip);
    optimizer->step(t.lr);
    model.zero_grad();
    if (int(i) >= warmup) {
      r.wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      r.cpu.push_back(cpu_now_s() - c0);
    }
    if (i == 0) r.loss_first = r.loss_last;
  }
  return r;
}

void run_recipe(const std::string& name, const Options& o) {
  const LoadedConfig lc = load_config(o.dir + "/" + name + ".toml", {"model.dropout=0"});
  const RunSpec& spec = lc.runs.at(0);
  use_gemm_path(spec.config);  // the recipe's [train] gemm: the path its results are made with
  parallel::set_threads(o.threads, "--threads");
  Transformer model(spec.model);
  Rng irng = init_rng(spec.config.train.seed);
  init_parameters(model, irng, spec.config.model.init_options());
  model.set_training(true);
  const std::vector<Batch> batches = draw_batches(spec, o.warmup + o.steps);
  if (!o.dump.empty()) write_dump(o.dump, name, spec, model.num_parameters(), batches, o);
  const Timing r = time_recipe(spec, model, batches, o.warmup);
  double tokens = 0;
  for (std::size_t i = o.warmup; i < batches.size(); ++i) tokens += double(batches[i].batch() * batches[i].length());
  const double mean_T = tokens / o.steps / double(spec.config.train.batch_size);
  const double step_ms = 1e3 * median(r.wall), cpu_ms = 1e3 * median(r.cpu);
  const std::string cell = spec.config.cell.label.empty() ? "(no grid)" : spec.config.cell.label;
  if (o.json)
    std::printf("{\"impl\":\"pelab\",\"recipe\":\"%s\",\"cell\":\"%s\",\"encoding\":\"%s\",\"task\":\"%s\","
                "\"batch\":%zu,\"mean_seq\":%.3f,\"params\":%zu,\"threads\":%d,\"warmup\":%d,\"steps\":%d,"
                "\"step_ms\":%.4f,\"cpu_ms\":%.4f,\"gemm_path\":\"%s\",\"loss_first\":%.5f,\"loss_last\":%.9g}\n",
                name.c_str(), cell.c_str(), spec.model.encoding.c_str(), spec.config.task.c_str(),
                spec.config.train.batch_size, mean_T, model.num_parameters(), o.threads, o.warmup, o.steps, step_ms,
                cpu_ms, blas::gemm_path_name().c_str(), r.loss_first, r.loss_last);
  else
    std::printf("%-12s %-40s %-9s %-18s B %3zu mean T %6.2f | median step %8.3f ms (cpu %8.3f ms) over %d after "
                "%d warm-up, %s\n", name.c_str(), cell.c_str(), spec.model.encoding.c_str(), spec.config.task.c_str(),
                spec.config.train.batch_size, mean_T, step_ms, cpu_ms, o.steps, o.warmup,
                blas::gemm_path_name().c_str());
  std::fflush(stdout);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw Error(a + ": missing value");
      return argv[++i];
    };
    if (a == "--recipe") o.recipe = value();
    else if (a == "--dir") o.dir = value();
    else if (a == "--dump") o.dump = value();
    else if (a == "--steps") o.steps = parse_int(a, value(), 1);
    else if (a == "--warmup") o.warmup = parse_int(a, value(), 0);
    else if (a == "--threads") o.threads = parse_threads(a, value());
    else if (a == "--json") o.json = true;
    else if (a == "--help" || a == "-h") {
      std::printf("usage: bench_recipe [--recipe NAME|all] [--dir DIR] [--steps N] [--warmup N] [--threads N] "
                  "[--json] [--dump FILE]\n");
      std::exit(0);
    } else
      throw Error("unknown argument '" + a + "'; see --help");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  blas::select_coretype(argv);  // as pelab does
  try {
    const Options o = parse(argc, argv);
    const std::vector<std::string> known = recipe_names(o.dir);
    std::vector<std::string> names = known;
    if (o.recipe != "all") {
      if (std::find(known.begin(), known.end(), o.recipe) == known.end()) {
        std::string list;
        for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
        throw Error("--recipe: no recipe '" + o.recipe + "' in " + o.dir + "; known: " + list + ", all");
      }
      names = {o.recipe};
    }
    if (!o.dump.empty() && names.size() != 1) throw Error("--dump: give one --recipe");
    for (const auto& n : names) run_recipe(n, o);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_recipe: %s\n", e.what());
    return 2;
  }
}
