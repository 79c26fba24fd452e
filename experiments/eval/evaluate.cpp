#include "experiments/eval/evaluate.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/tape.hpp"
#include "experiments/run/resources.hpp"
#include "training/signals.hpp"
#include "training/metrics.hpp"
#include "training/metrics_table.hpp"

namespace pelab {

std::vector<std::size_t> range_lengths(const std::vector<std::size_t>& range) {
  std::vector<std::size_t> v;
  if (range.size() == 3)
    for (std::size_t n = range[0]; n <= range[1]; n += range[2]) v.push_back(n);
  return v;
}

std::vector<std::size_t> eval_lengths(const ExperimentConfig& cfg, const Task& task) {
  if (!cfg.eval.length_range.empty()) return range_lengths(cfg.eval.length_range);
  if (!cfg.eval.lengths.empty()) return cfg.eval.lengths;
  const std::size_t L = cfg.train_len;
  std::vector<std::size_t> v;
  if (!task.is_language_model() && L / 2 >= std::max<std::size_t>(1, cfg.min_len)) v.push_back(L / 2);
  for (std::size_t f : {1, 2, 4}) v.push_back(L * f);
  return v;
}

PositionConfig eval_positions(const ExperimentConfig& cfg) {
  PositionConfig p{cfg.train.positions, cfg.train.max_position};
  // "train" follows the training mode. For randomized training this means fresh random ids at test time
  // too: Ruoss et al.'s code (google-deepmind/randomized_positional_encodings) samples the ordered subset
  // from [0, noise_max_length) on every forward pass, evaluation included (models/positional_encodings.py,
  // noisy_fixed_positional_encodings; experiments/range_evaluation.py passes a fresh rng per batch).
  if (cfg.eval.positions != "train") p.mode = parse_position_mode(cfg.eval.positions);
  // Position coupling trains on the task's ids with a random offset and evaluates them as the task
  // writes them (Cho et al.'s configs: randomize = True for train, False for val).
  else if (p.mode == PositionMode::task_offset) p.mode = PositionMode::task;
  return p;
}

namespace {

// Per-token negative log-likelihoods of the counted targets, accumulated into position buckets.
void add_nll(const Array& logits, const Batch& b, std::vector<double>& pos_sum, std::vector<std::size_t>& pos_n,
             double& total) {
  const std::size_t B = b.batch(), T = b.length(), V = logits.shape()[2];
  if (pos_sum.size() < T) pos_sum.resize(T, 0.0), pos_n.resize(T, 0);
  const real* pl = logits.data();
  for (std::size_t i = 0; i < B; ++i)
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t r = i * T + t;
      if (b.mask.data()[r] <= 0) continue;
      const real* row = pl + r * V;
      const double mx = *std::max_element(row, row + V);
      double se = 0;
      for (std::size_t v = 0; v < V; ++v) se += std::exp(double(row[v]) - mx);
      const double nll = mx + std::log(se) - double(row[b.targets.data()[r]]);
      pos_sum[t] += nll;
      ++pos_n[t];
      total += nll;
    }
}

// Console progress of one length: a line when it starts, then the forward passes done (rewritten in
// place on a terminal, a line every 10 s otherwise, so logs show it too).
class Progress {
 public:
  Progress(bool on, std::size_t n, std::size_t T, std::size_t samples, std::size_t bs, std::size_t rows)
      : on_(on), n_(n) {
    if (!on_) return;
    auto up = [](std::size_t a, std::size_t b) { return (a + b - 1) / b; };
    total_ = samples / bs * up(bs, rows) + up(samples % bs, rows);  // each drawn batch of bs runs in slices
    tty_ = ::isatty(STDOUT_FILENO);
    std::printf("evaluating length %zu (%zu tokens): %zu examples, %zu forward passes of up to %zu\n", n, T, samples,
                total_, rows);
    std::fflush(stdout);
    start_ = last_ = Clock::now();
  }
  void step(std::size_t done) {
    if (!on_) return;
    const auto now = Clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    if (!tty_ && since < 10 && done < total_) return;
    if (tty_ && since < 0.2 && done < total_) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    if (tty_) std::printf("\r\033[K  length %zu: %zu/%zu  %.0fs", n_, done, total_, secs);
    else std::printf("  length %zu: %zu/%zu  %.0fs\n", n_, done, total_, secs);
    if (tty_ && done == total_) std::printf("\r\033[K");
    std::fflush(stdout);
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool on_, tty_ = false;
  std::size_t n_, total_ = 0;
  Clock::time_point start_, last_;
};

// Rows per forward pass at T tokens: at most `rows` (what fits the memory limit), and at most what keeps
// the bytes that grow with the rows of one pass (the memory model's estimate: activations, and any
// per-row (T, T) table an encoding builds) within kPassBudget. Beyond that, fresh pages cost more than
// the forward: when attention kept (rows, H, T, T), T = 1500 with 4 heads at 64 rows (2.3 GB) spent
// 5.5 s of system time (the kernel zeroing pages) beside 4.5 s of compute, 8 rows 0.2 s
// (scripts/bench_range_eval.sh, 2026-11-26). Slicing a drawn batch keeps its examples, so the results
// are the same.
constexpr std::size_t kPassBudget = std::size_t(256) << 20;

std::size_t rows_within_budget(const ModelConfig& m, std::size_t rows, std::size_t T) {
  const std::size_t one = forward_bytes(m, 1, T), two = forward_bytes(m, 2, T);
  const std::size_t per_row = std::max<std::size_t>(1, two > one ? two - one : one);
  return std::max<std::size_t>(1, std::min(rows, kPassBudget / per_row));
}

// Rows per pass when `b` rows go in passes of at most `rows`: as many passes, all of one size (16 at 12:
// 8 + 8, not 12 + 4). The caching allocator then reuses one set of buffers: with 12 + 4, the second pass's
// smaller buffers came fresh beside the first pass's cached ones (FIRE at 16384 characters: 1.78 GB peak
// RSS).
std::size_t balanced_rows(std::size_t b, std::size_t rows) {
  const std::size_t passes = (b + rows - 1) / rows;
  return (b + passes - 1) / passes;
}

}  // namespace

std::optional<std::string> ids_unsupported(const Transformer& model, const Batch& b, const PositionConfig& positions) {
  if (is_task_mode(positions.mode) && b.positions.size())
    if (auto why = model.encoding().unsupported(*std::max_element(b.positions.begin(), b.positions.end())))
      return why;
  if (!b.has_digit_index()) return std::nullopt;
  return model.encoding().unsupported_digits(*std::max_element(b.digit_index.begin(), b.digit_index.end()));
}

namespace {

}  // namespace

LengthResult evaluate_length(Transformer& model, const Task& task, const EvalConfig& ecfg,
                             const PositionConfig& positions, std::size_t n, std::size_t min_len,
                             std::size_t train_len, const EvalOptions& opt) {
  LengthResult r;
  r.length = n;
  r.in_distribution = n <= train_len && n >= min_len;
  if (auto c = task.chance(n)) r.chance = {{"token_acc", c->token_acc}, {"exact_match", c->exact_match}};
  const std::size_t T = task.sequence_length(n);
  // A task's own ids are checked batch by batch (ids_unsupported): its largest is task-specific.
  if (auto why = is_task_mode(positions.mode) ? std::nullopt : model.encoding().unsupported(max_position_id(positions, T))) {
    r.ok = false;
    r.reason = *why;
    return r;
  }
  NoGrad ng;
  TokenStats stats;
  std::vector<double> pos_sum;
  std::vector<std::size_t> pos_n;
  double total = 0;  // over the targets with mask > 0, which stats.counted counts too
  const std::size_t bs = std::max<std::size_t>(1, ecfg.batch_size);
  const std::size_t rows = rows_within_budget(model.config(), opt.batches ? opt.batches->batch_for(n, bs) : bs, T);
  Progress progress(opt.progress, n, T, ecfg.samples, bs, balanced_rows(std::min(bs, ecfg.samples), rows));
  std::size_t passes = 0;
  set_phase("evaluating length " + std::to_string(n));
  for (std::size_t done = 0, i = 0; done < ecfg.samples; done += bs, ++i) {
    const std::size_t b = std::min(bs, ecfg.samples - done);
    // The held-out set depends only on the eval seed, the length and the batch index.
    const std::uint64_t seed = ecfg.seed ^ (0x9E3779B97F4A7C15ull * (n + 1)) ^ (i * 0xC2B2AE3D27D4EB4Full);
    Batch batch = task.eval_batch(seed, b, n);
    Rng position_rng(seed, 4);  // like the data: fixed by the eval seed, the length and the batch index
    assign_positions(batch, positions, position_rng);
    if (auto why = ids_unsupported(model, batch, positions)) {
      r.ok = false;
      r.reason = *why;
      return r;
    }
    const std::size_t per = balanced_rows(b, rows);  // the last drawn batch may be smaller
    for (std::size_t from = 0; from < b; from += per) {
      if (opt.stoppable && stop_requested())
        throw Interrupted("interrupted during evaluation at length " + std::to_string(n) + " (" +
                          std::to_string(r.samples) + " of " + std::to_string(ecfg.samples) + " examples done)");
      const Batch part = rows_of(batch, from, std::min(b, from + per));
      ForwardOptions fo;
      if (part.has_digit_index()) fo.digit_index = &part.digit_index;
      if (opt.stoppable)  // between layers too: one forward at a long length may take a minute
        fo.between_layers = [&] {
          if (stop_requested())
            throw Interrupted("interrupted during evaluation at length " + std::to_string(n) + " (" +
                              std::to_string(r.samples) + " of " + std::to_string(ecfg.samples) + " examples done)");
        };
      const Tensor logits = model.forward(part.tokens, part.positions, fo);
      stats.add(token_stats(logits.value(), part));
      add_nll(logits.value(), part, pos_sum, pos_n, total);
      r.samples += part.batch();
      progress.step(++passes);
    }
  }
  stats.loss_sum = total;  // the loss metric is loss_sum / counted
  r.metrics = compute_metrics(stats, task.is_language_model());
  if (task.is_language_model()) {
    // buckets of half the training context: the first two cover what training saw
    const std::size_t w = std::max<std::size_t>(1, train_len / 2);
    for (std::size_t from = 0; from < pos_sum.size(); from += w) {
      Bucket bk{from, std::min(from + w, pos_sum.size()), 0};
      double s = 0;
      std::size_t c = 0;
      for (std::size_t t = bk.from; t < bk.to; ++t) s += pos_sum[t], c += pos_n[t];
      bk.loss = c ? s / double(c) : 0;
      r.buckets.push_back(bk);
    }
  }
  return r;
}

std::vector<LengthResult> evaluate_lengths(Transformer& model, const RunSpec& spec, const EvalOptions& opt) {
  const ExperimentConfig& cfg = spec.config;
  struct EvalMode {  // restored on every exit, an interruption included
    Transformer& m;
    bool was;
    ~EvalMode() { m.set_training(was); }
  } mode{model, model.training()};
  model.set_training(false);
  std::vector<LengthResult> out;
  for (std::size_t n : cfg.eval.lengths)
    out.push_back(evaluate_length(model, *spec.task, cfg.eval, eval_positions(cfg), n, cfg.min_len, cfg.train_len, opt));
  return out;
}

std::string format_results(const std::vector<LengthResult>& rs, bool is_lm) {
  std::vector<const MetricSpec*> cols;
  for (const auto& m : metric_table())
    if (m.for_lm || !is_lm) cols.push_back(&m);
  std::ostringstream os;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%8s  %-5s", "length", "dist");
  os << buf;
  for (const MetricSpec* m : cols) {
    std::snprintf(buf, sizeof buf, "  %11s", m->name.c_str());
    os << buf;
  }
  os << '\n';
  for (const auto& r : rs) {
    std::snprintf(buf, sizeof buf, "%8zu  %-5s", r.length, r.in_distribution ? "in" : "OOD");
    os << buf;
    if (!r.ok) {
      os << "  n/a: " << r.reason << '\n';
      continue;
    }
    for (const MetricSpec* m : cols) {
      const double v = r.metric(m->name).value_or(0);
      if (m->percent) std::snprintf(buf, sizeof buf, "  %10.1f%%", 100 * v);
      else std::snprintf(buf, sizeof buf, "  %11.4f", v);
      os << buf;
    }
    if (is_lm) {
      os << "   loss by position:";  // where in the context the loss rises
      for (const auto& bk : r.buckets) {
        std::snprintf(buf, sizeof buf, " [%zu,%zu) %.3f", bk.from, bk.to, bk.loss);
        os << buf;
      }
    }
    os << '\n';
  }
  return os.str();
}

}  // namespace pelab
