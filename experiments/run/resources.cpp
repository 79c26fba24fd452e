#include "experiments/run/resources.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "experiments/config/config_schema.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/tasks/task.hpp"
#include "core/allocator.hpp"
#include "layers/dry_run.hpp"
#include "layers/transformer.hpp"
#include "training/optimizer_registry.hpp"

namespace pelab {

namespace {

constexpr double kReal = sizeof(real);
constexpr double kIds = 3 * sizeof(std::int32_t);  // token, target and position ids per token

std::size_t to_bytes(double x) { return x >= 1.8e19 ? std::size_t(1.8e19) : static_cast<std::size_t>(x); }

// Buffers per parameter of the configured optimizer, as its spec declares them.
std::size_t optimizer_buffers(const TrainConfig& t) {
  const OptimizerSpec& spec = OptimizerRegistry::instance().get(t.optimizer);
  if (!spec.state_buffers) throw Error("optimizer '" + t.optimizer + "' declares no state_buffers (OptimizerSpec)");
  auto it = t.optimizer_params.find(t.optimizer);
  return spec.state_buffers(resolve_params(spec.params, it == t.optimizer_params.end() ? std::map<std::string, Value>{}
                                                                                        : it->second,
                                           "optimizer '" + t.optimizer + "'"));
}

// One forward of shape s (and its backward when training) run shape-only (layers/dry_run.hpp): the bytes a
// cold caching allocator would hold at its peak, the model's weights (and, training, the gradients that
// are live then) included. What is not the weights or their gradients is activations; the batch's ids and
// mask are the data. e.weights and e.gradients must be set.
void add_forward(MemoryEstimate& e, const ModelConfig& m, const DryRunShape& s) {
  const DryRunResult r = dry_run(m, s);
  const std::size_t held = e.weights + e.gradients, peak = r.summary.peak_system_bytes;
  const double N = double(s.batch) * double(s.tokens);
  e.activations = peak > held ? peak - held : 0;
  e.data = to_bytes(double(memory::size_class(std::size_t(N) * sizeof(real))) + N * kIds);
  e.untracked = 0;
}

std::string num(std::size_t x) { return std::to_string(x); }

std::string limit_text(const MemoryLimit& limit) {
  return "; the limit is " + format_bytes(double(limit.bytes)) + " (" + limit.source +
         "; --memory-limit MB sets it, 0 turns the check off)";
}

}  // namespace

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (b >= 1024 && u < 6) b /= 1024, ++u;
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%.0f B", b);
  else std::snprintf(buf, sizeof buf, b < 10 ? "%.2f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string MemoryEstimate::breakdown() const {
  std::string s = format_bytes(double(total())) + " (";
  auto part = [&](const char* name, std::size_t v, bool first = false) {
    if (v || first) s += std::string(first ? "" : ", ") + name + " " + format_bytes(double(v));
  };
  part("weights", weights, true);
  part("gradients", gradients);
  part("optimizer state", optimizer);
  part("activations", activations);
  part("data", data);
  return s + ")";
}

std::size_t count_parameters(const ModelConfig& m) { return dry_parameter_count(m); }

std::size_t forward_bytes(const ModelConfig& m, std::size_t batch, std::size_t tokens, bool attention_maps,
                          bool shared_positions) {
  DryRunShape s;
  s.batch = batch, s.tokens = tokens, s.shared_positions = shared_positions, s.attention_maps = attention_maps;
  MemoryEstimate e;
  e.weights = to_bytes(double(count_parameters(m)) * kReal);
  add_forward(e, m, s);
  return e.total();
}

void check_memory(const std::string& what, std::size_t bytes, const std::string& setting, const MemoryLimit& limit) {
  if (limit.bytes == 0 || bytes <= limit.bytes) return;
  throw Error(setting + ": " + what + " needs about " + format_bytes(double(bytes)) + limit_text(limit));
}

ResourceModel::ResourceModel(const RunSpec& spec) : spec_(spec) {
  n_params_ = count_parameters(spec.model);
  optimizer_buffers_ = optimizer_buffers(spec.config.train);
}

MemoryEstimate ResourceModel::weights_only() const {
  MemoryEstimate e;
  e.parameters = n_params_;
  e.weights = to_bytes(double(n_params_) * kReal);
  return e;
}

MemoryEstimate ResourceModel::training() const {
  const TrainConfig& t = spec_.config.train;
  DryRunShape s;
  s.batch = t.batch_size;
  s.tokens = spec_.task->sequence_length(spec_.config.train_len);
  s.training = true;
  s.shared_positions = t.positions == PositionMode::contiguous;
  MemoryEstimate e = weights_only();
  e.gradients = to_bytes(double(n_params_) * kReal);
  e.optimizer = to_bytes(double(optimizer_buffers_) * double(n_params_) * kReal);
  add_forward(e, spec_.model, s);
  return e;
}

MemoryEstimate ResourceModel::evaluation(std::size_t n, std::size_t batch) const {
  return forward_only(n, batch, false);
}

MemoryEstimate ResourceModel::probe(std::size_t n, std::size_t batch) const { return forward_only(n, batch, true); }

MemoryEstimate ResourceModel::forward_only(std::size_t n, std::size_t batch, bool attention_maps) const {
  DryRunShape s;
  s.batch = batch;
  s.tokens = spec_.task->sequence_length(n);
  s.shared_positions = eval_positions(spec_.config).mode == PositionMode::contiguous;
  s.attention_maps = attention_maps;
  MemoryEstimate e = weights_only();
  add_forward(e, spec_.model, s);
  return e;
}

std::size_t ResourceModel::eval_batch_that_fits(std::size_t n, std::size_t wanted, std::size_t limit) const {
  if (limit == 0) return wanted;
  // A dry run's ids are real (B x T of them), so past 2^23 tokens in the batch one example is tried first:
  // a length that cannot fit is then refused without gigabytes of ids (10^7 tokens at batch 16: 25 s and
  // 10 GB resident before, 1.1 s now). Below it the whole batch first, the usual answer in one dry run.
  const bool huge = double(wanted) * double(spec_.task->sequence_length(n)) > double(std::size_t(1) << 23);
  if (huge && evaluation(n, 1).total() > limit) return 0;
  if (wanted <= 1 || evaluation(n, wanted).total() <= limit) return wanted;
  if (!huge && evaluation(n, 1).total() > limit) return 0;
  std::size_t lo = 1, hi = wanted;  // evaluation(lo) fits (lo = 0 stands for "none"), evaluation(hi) does not
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (evaluation(n, mid).total() <= limit ? lo : hi) = mid;
  }
  return lo;
}

std::optional<std::size_t> available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key;
    std::size_t kb = 0;
    if (ls >> key >> kb && key == "MemAvailable:") return kb * 1024;
  }
  return std::nullopt;
}

MemoryLimit memory_limit(std::optional<std::size_t> flag_mb) {
  MemoryLimit l;
  if (flag_mb) {
    l.bytes = *flag_mb * 1024 * 1024;
    l.source = "--memory-limit " + num(*flag_mb);
  } else if (auto a = available_memory()) {
    l.bytes = *a;
    l.source = "MemAvailable in /proc/meminfo";
  } else {
    l.source = "none (/proc/meminfo has no MemAvailable)";
  }
  return l;
}

std::size_t EvalBatches::batch_for(std::size_t n, std::size_t configured) const {
  for (const auto& [len, b] : reduced)
    if (len == n) return b;
  return configured;
}

EvalBatches check_memory(const RunSpec& spec, const MemoryLimit& limit, bool train) {
  using config_detail::location_any;
  EvalBatches out;
  if (limit.bytes == 0) return out;
  const ResourceModel rm(spec);
  const ExperimentConfig& cfg = spec.config;
  const std::string tail = limit_text(limit);
  // A run evaluates with its trainer alive: its gradients and optimizer state stay allocated.
  std::size_t eval_limit = limit.bytes;
  if (train) {
    const MemoryEstimate e = rm.training();
    eval_limit = e.gradients + e.optimizer < limit.bytes ? limit.bytes - e.gradients - e.optimizer : 1;
    if (e.total() > limit.bytes) {
      // Name what dominates: the weights and their training state, or the activations of one batch.
      const bool model_bound = e.weights + e.gradients + e.optimizer >= e.activations;
      const std::string where =
          model_bound ? location_any(cfg, {"model.d_model", "model.n_layers", "model.d_ff", "model"})
                      : location_any(cfg, {"train.batch_size", "task.train_len", "model.n_heads", "train"});
      const std::string what =
          model_bound ? "the model (d_model " + num(spec.model.d_model) + ", " + num(spec.model.n_layers) +
                            " layers, " + num(rm.parameters()) + " parameters) with its gradients and " +
                            cfg.train.optimizer + " state"
                      : "one training batch (batch_size " + num(cfg.train.batch_size) + " x " +
                            num(spec.task->sequence_length(cfg.train_len)) + " tokens at train_len " +
                            num(cfg.train_len) + "; attention keeps (batch, heads, tokens, tokens) per layer)";
      throw Error(where + ": training needs about " + e.breakdown() + " for " + what + tail);
    }
  }
  std::vector<std::size_t> lengths = cfg.eval.lengths;
  if (train && cfg.train.eval_every && std::find(lengths.begin(), lengths.end(), cfg.train_len) == lengths.end())
    lengths.push_back(cfg.train_len);  // the periodic evaluation during training
  for (std::size_t n : lengths) {
    const std::size_t b = rm.eval_batch_that_fits(n, cfg.eval.batch_size, eval_limit);
    if (b == 0) {
      const MemoryEstimate e = rm.evaluation(n, 1);
      throw Error(location_any(cfg, {cfg.eval.length_range.empty() ? "eval.lengths" : "eval.length_range", "task.train_len", "eval"}) + ": evaluating length " + num(n) +
                  " (" + num(spec.task->sequence_length(n)) + " tokens) needs about " + e.breakdown() +
                  " even one example at a time" + tail +
                  "; choose shorter [eval] lengths (or a shorter length_range)");
    }
    if (b < cfg.eval.batch_size) out.reduced.emplace_back(n, b);
  }
  return out;
}

std::vector<std::string> describe(const EvalBatches& b, const RunSpec& spec, const MemoryLimit& limit) {
  std::vector<std::string> v;
  if (b.reduced.empty()) return v;  // nothing to estimate (a dry run builds the model: --memory-limit 0 runs none)
  const ResourceModel rm(spec);
  for (const auto& [n, bs] : b.reduced)
    v.push_back("eval length " + num(n) + ": batch size " + num(spec.config.eval.batch_size) + " -> " + num(bs) +
                " to fit the memory limit (" + format_bytes(double(limit.bytes)) + ", " + limit.source +
                "; about " + format_bytes(double(rm.evaluation(n, bs).total())) +
                " per batch); the held-out examples and results are the same");
  return v;
}

}  // namespace pelab
