#include "experiments/run/resources.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/allocator.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/reduce.hpp"
#include "core/tape.hpp"
#include "experiments/config/config_schema.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"
#include "training/optimizer_registry.hpp"

namespace pelab {

namespace {

constexpr double kReal = sizeof(real);

std::size_t to_bytes(double x) { return x >= 1.8e19 ? std::size_t(1.8e19) : static_cast<std::size_t>(x); }

// Buffers per parameter of the configured optimizer: built over one 1-element parameter and counted.
std::size_t optimizer_buffers(const TrainConfig& t) {
  Parameter p;
  p.name = "p";
  p.tensor = Tensor::zeros({1}, true);
  p.kind = ParamKind::weight;
  const std::vector<Parameter> one{p};
  OptimizerCommon common;
  common.weight_decay = t.weight_decay;
  auto it = t.optimizer_params.find(t.optimizer);
  const auto opt = make_optimizer(t.optimizer, it == t.optimizer_params.end() ? std::map<std::string, Value>{} : it->second,
                                  common, one);
  SafeTensors st;
  opt->state_to(st);
  return st.floats.size();
}

// Bytes the encoding's attention-side hooks hold, over all layers, for `rows` rows of T tokens sharing
// ids: system bytes the caching allocator hands out from an emptied cache (its high-water mark).
std::size_t encoding_bytes_at(PositionalEncoding& enc, const ModelDims& d, std::size_t T, std::size_t rows, bool grad) {
  memory::release_cache();
  const std::size_t before = memory::stats().system_bytes;
  {
    std::optional<NoGrad> ng;
    if (!grad) ng.emplace();
    const IndexArray pos = default_positions(rows, T);
    // q and k as the attention passes them (CoPE's gates are built from q k^T per row).
    const Tensor q = Tensor::zeros({rows, d.n_heads, T, d.head_dim}, grad),
                 k = Tensor::zeros({rows, d.n_heads, T, d.head_dim}, grad);
    std::vector<Tensor> kept;
    std::vector<RelativeKV> rel;
    enc.begin_forward(pos);
    Tensor loss;
    for (std::size_t l = 0; l < d.n_layers; ++l) {
      const AttentionContext ctx{pos, l, true};
      const Tensor b = enc.attention_bias(q, k, ctx);
      rel.push_back(enc.relative_kv(ctx));
      if (!b.defined()) continue;
      kept.push_back(b);
      if (grad && b.requires_grad()) loss = loss.defined() ? add(loss, sum(b)) : sum(b);
    }
    if (loss.defined()) loss.backward();
  }
  const std::size_t after = memory::stats().system_bytes;
  Tape::current().clear();
  enc.zero_grad();
  return after > before ? after - before : 0;
}

// The T^2 coefficients of the encoding's bytes, from lengths t, 2t, 4t: d(T) = a T^2 + b T + c gives
// (d(4t) - d(2t)) - 2 (d(2t) - d(t)) = 6 a t^2. One row and two rows with the same ids separate what
// is built once per id set (tables of distances) from what each row needs (CoPE's gates).
PairBytes pair_coefficients(PositionalEncoding& enc, const ModelDims& d, bool grad) {
  const std::size_t t = 64;
  auto coef = [&](std::size_t rows) {
    const double d1 = double(encoding_bytes_at(enc, d, t, rows, grad)),
                 d2 = double(encoding_bytes_at(enc, d, 2 * t, rows, grad)),
                 d3 = double(encoding_bytes_at(enc, d, 4 * t, rows, grad));
    return std::max(0.0, ((d3 - d2) - 2 * (d2 - d1)) / (6.0 * double(t) * double(t)));
  };
  const double one = coef(1), two = coef(2);
  PairBytes p;
  p.per_row = std::max(0.0, two - one);
  p.shared = std::max(0.0, one - p.per_row);
  return p;
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

std::size_t count_parameters(const ModelConfig& m, const EncodingCost& enc) {
  const std::size_t C = m.d_model, F = m.d_ff ? m.d_ff : 4 * C, V = m.vocab, W = enc.token_width ? enc.token_width : C;
  // ln1, qkv (weight, bias), proj, ln2, mlp fc and proj
  const std::size_t block = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (C * F + F) + (F * C + C);
  return V * W + enc.parameters + m.n_layers * block + 2 * C + (m.tie_embeddings ? 0 : C * V);
}

EncodingCost measure_encoding(const ModelConfig& m) {
  const ModelDims d = m.dims();
  EncodingCost c;
  memory::release_cache();
  const std::size_t before = memory::stats().system_bytes;
  auto enc = make_encoding(m.encoding, resolve_encoding_params(m.encoding, m.encoding_params, d), d);
  c.parameters = enc->num_parameters();
  c.token_width = enc->token_width(m.d_model);
  const std::size_t held = memory::stats().system_bytes - before;
  c.buffers = held > c.parameters * sizeof(real) ? held - c.parameters * sizeof(real) : 0;
  Rng rng(0);
  init_parameters(*enc, rng);  // the values do not matter, but no op should see uninitialized ones
  c.pair_train = pair_coefficients(*enc, d, true);
  c.pair_eval = pair_coefficients(*enc, d, false);
  return c;
}

namespace {
// Activations of one forward without a tape: one layer at a time, plus the encoding's pair tables.
double forward_activations(const ModelConfig& m, const EncodingCost& enc, double B, double T, bool shared) {
  const double C = double(m.d_model), F = double(m.d_ff ? m.d_ff : 4 * m.d_model), V = double(m.vocab);
  const double H = double(m.n_heads);
  return B * T * (14 * C + 2 * F + 2 * V) * kReal + B * H * T * T * kReal + enc.pair_eval.bytes(B, shared) * T * T;
}
double attention_maps_bytes(const ModelConfig& m, double B, double T) {
  return double(m.n_layers) * B * double(m.n_heads) * T * T * kReal;
}
double data_bytes(double B, double T) { return B * T * (12 + kReal); }
}  // namespace

std::size_t forward_bytes(const ModelConfig& m, const EncodingCost& enc, std::size_t batch, std::size_t tokens,
                          bool attention_maps, bool shared_positions) {
  const double B = double(batch), T = double(tokens);
  const double w = double(count_parameters(m, enc)) * kReal + double(enc.buffers);
  return to_bytes(w + forward_activations(m, enc, B, T, shared_positions) +
                  (attention_maps ? attention_maps_bytes(m, B, T) : 0) + data_bytes(B, T));
}

std::size_t forward_bytes(const ModelConfig& m, std::size_t batch, std::size_t tokens, bool attention_maps,
                          bool shared_positions) {
  return forward_bytes(m, measure_encoding(m), batch, tokens, attention_maps, shared_positions);
}

void check_memory(const std::string& what, std::size_t bytes, const std::string& setting, const MemoryLimit& limit) {
  if (limit.bytes == 0 || bytes <= limit.bytes) return;
  throw Error(setting + ": " + what + " needs about " + format_bytes(double(bytes)) + limit_text(limit));
}

ResourceModel::ResourceModel(const RunSpec& spec) : spec_(spec), enc_(measure_encoding(spec.model)) {
  n_params_ = count_parameters(spec.model, enc_);
  optimizer_buffers_ = optimizer_buffers(spec.config.train);
}

MemoryEstimate ResourceModel::weights_only() const {
  MemoryEstimate e;
  e.parameters = n_params_;
  e.weights = to_bytes(double(n_params_) * kReal) + enc_.buffers;
  return e;
}

MemoryEstimate ResourceModel::training() const {
  const ModelConfig& m = spec_.model;
  const double B = double(spec_.config.train.batch_size), T = double(spec_.task->sequence_length(spec_.config.train_len));
  const double C = double(m.d_model), F = double(m.d_ff ? m.d_ff : 4 * m.d_model), V = double(m.vocab);
  const double H = double(m.n_heads), L = double(m.n_layers);
  const bool shared = spec_.config.train.positions == PositionMode::contiguous;
  MemoryEstimate e = weights_only();
  e.gradients = to_bytes(double(n_params_) * kReal);
  e.optimizer = to_bytes(double(optimizer_buffers_) * double(n_params_) * kReal);
  const double layer = B * T * (16 * C + 2 * F) * kReal + B * H * T * T * kReal;
  e.activations = to_bytes(L * layer + enc_.pair_train.bytes(B, shared) * T * T + B * T * (4 * C + 3 * V) * kReal +
                           B * T * (16 * C + 2 * F) * kReal + T * T * kReal);
  e.data = to_bytes(B * T * (12 + kReal));
  return e;
}

MemoryEstimate ResourceModel::evaluation(std::size_t n, std::size_t batch) const {
  const std::size_t T = spec_.task->sequence_length(n);
  MemoryEstimate e = weights_only();
  const bool shared = eval_positions(spec_.config).mode == PositionMode::contiguous;
  e.activations = to_bytes(forward_activations(spec_.model, enc_, double(batch), double(T), shared));
  e.data = to_bytes(data_bytes(double(batch), double(T)));
  return e;
}

MemoryEstimate ResourceModel::probe(std::size_t n, std::size_t batch) const {
  MemoryEstimate e = evaluation(n, batch);
  const double T = double(spec_.task->sequence_length(n));
  e.activations += to_bytes(attention_maps_bytes(spec_.model, double(batch), T));
  return e;
}

std::size_t ResourceModel::eval_batch_that_fits(std::size_t n, std::size_t wanted, std::size_t limit) const {
  if (limit == 0 || evaluation(n, wanted).total() <= limit) return wanted;
  std::size_t lo = 0, hi = wanted;  // evaluation(lo) fits (lo = 0 stands for "none"), evaluation(hi) does not
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
      throw Error(location_any(cfg, {"eval.lengths", "task.train_len", "eval"}) + ": evaluating length " + num(n) +
                  " (" + num(spec.task->sequence_length(n)) + " tokens) needs about " + e.breakdown() +
                  " even one example at a time (attention holds (heads, tokens, tokens) per example)" + tail +
                  "; choose shorter [eval] lengths");
    }
    if (b < cfg.eval.batch_size) out.reduced.emplace_back(n, b);
  }
  return out;
}

std::vector<std::string> describe(const EvalBatches& b, const RunSpec& spec, const MemoryLimit& limit) {
  std::vector<std::string> v;
  const ResourceModel rm(spec);
  for (const auto& [n, bs] : b.reduced)
    v.push_back("eval length " + num(n) + ": batch size " + num(spec.config.eval.batch_size) + " -> " + num(bs) +
                " to fit the memory limit (" + format_bytes(double(limit.bytes)) + ", " + limit.source +
                "; about " + format_bytes(double(rm.evaluation(n, bs).total())) +
                " per batch); the held-out examples and results are the same");
  return v;
}

}  // namespace pelab
