#include "experiments/eval/evaluate_grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/tape.hpp"
#include "training/metrics.hpp"
#include "training/metrics_table.hpp"
#include "training/signals.hpp"

namespace pelab {
namespace {

// The summed negative log-likelihood of the counted targets (the loss metric is its mean).
double masked_nll(const Array& logits, const Batch& b) {
  const std::size_t N = b.batch() * b.length(), V = logits.shape()[2];
  double total = 0;
  for (std::size_t r = 0; r < N; ++r) {
    if (b.mask.data()[r] <= 0) continue;
    const real* row = logits.data() + r * V;
    const double mx = *std::max_element(row, row + V);
    double se = 0;
    for (std::size_t v = 0; v < V; ++v) se += std::exp(double(row[v]) - mx);
    total += mx + std::log(se) - double(row[b.targets.data()[r]]);
  }
  return total;
}

}  // namespace

LengthResult evaluate_operands(Transformer& model, const Task& task, const EvalConfig& ecfg,
                               const PositionConfig& positions, std::size_t len_a, std::size_t len_b,
                               std::size_t min_len, std::size_t train_len) {
  LengthResult r;
  r.length = std::max(len_a, len_b);
  r.len_a = len_a, r.len_b = len_b;
  r.in_distribution = std::min(len_a, len_b) >= min_len && r.length <= train_len;
  const std::size_t T = task.operand_sequence_length(len_a, len_b);
  if (auto why = is_task_mode(positions.mode) ? std::nullopt : model.encoding().unsupported(max_position_id(positions, T))) {
    r.ok = false, r.reason = *why;
    return r;
  }
  NoGrad ng;
  TokenStats stats;
  const std::size_t bs = std::max<std::size_t>(1, ecfg.batch_size);
  for (std::size_t done = 0, i = 0; done < ecfg.samples; done += bs, ++i) {
    const std::size_t b = std::min(bs, ecfg.samples - done);
    // Its own sets: fixed by the eval seed, both lengths and the batch index.
    const std::uint64_t seed = ecfg.seed ^ (0x9E3779B97F4A7C15ull * (len_a + 1)) ^ (0xD6E8FEB86659FD93ull * (len_b + 1)) ^
                               (i * 0xC2B2AE3D27D4EB4Full);
    Batch batch = task.eval_batch_operands(seed, b, len_a, len_b);
    Rng position_rng(seed, 4);
    assign_positions(batch, positions, position_rng);
    if (auto why = ids_unsupported(model, batch, positions)) {
      r.ok = false, r.reason = *why;
      return r;
    }
    throw_if_stopped("evaluating operand lengths (" + std::to_string(len_a) + ", " + std::to_string(len_b) + ")");
    ForwardOptions fo;
    if (batch.has_digit_index()) fo.digit_index = &batch.digit_index;
    const Tensor logits = model.forward(batch.tokens, batch.positions, fo);
    TokenStats s = token_stats(logits.value(), batch);
    s.loss_sum = masked_nll(logits.value(), batch);
    stats.add(s);
    r.samples += b;
  }
  r.metrics = compute_metrics(stats, false);
  return r;
}

std::vector<LengthResult> evaluate_grid(Transformer& model, const RunSpec& spec, const EvalOptions& opt) {
  const ExperimentConfig& cfg = spec.config;
  const std::vector<std::size_t> ls = range_lengths(cfg.eval.operand_grid);
  if (ls.empty()) return {};
  const bool was = model.training();
  model.set_training(false);
  std::vector<LengthResult> out;
  try {
    for (std::size_t a : ls) {
      if (opt.progress) std::printf("evaluating operand lengths (%zu, %zu..%zu)\n", a, ls.front(), ls.back());
      for (std::size_t b : ls)
        out.push_back(evaluate_operands(model, *spec.task, cfg.eval, eval_positions(cfg), a, b, cfg.min_len, cfg.train_len));
    }
  } catch (...) {
    model.set_training(was);
    throw;
  }
  model.set_training(was);
  return out;
}

std::string format_grid(const std::vector<LengthResult>& grid) {
  std::set<std::size_t> as, bs;
  std::map<std::pair<std::size_t, std::size_t>, const LengthResult*> cell;
  for (const LengthResult& r : grid) {
    const std::size_t a = r.len_a.value_or(r.length), b = r.len_b.value_or(r.length);
    as.insert(a), bs.insert(b), cell[{a, b}] = &r;
  }
  std::ostringstream os;
  char buf[64];
  os << "exact match (%) per operand lengths: rows len_a, columns len_b\n" << "  a \\ b";
  for (std::size_t b : bs) std::snprintf(buf, sizeof buf, " %6zu", b), os << buf;
  os << '\n';
  for (std::size_t a : as) {
    std::snprintf(buf, sizeof buf, "%7zu", a), os << buf;
    for (std::size_t b : bs) {
      const auto it = cell.find({a, b});
      const std::optional<double> em =
          it == cell.end() || !it->second->ok ? std::nullopt : it->second->metric("exact_match");
      if (em) std::snprintf(buf, sizeof buf, " %6.1f", 100 * *em);
      else std::snprintf(buf, sizeof buf, " %6s", "n/a");
      os << buf;
    }
    os << '\n';
  }
  return os.str();
}

}  // namespace pelab
