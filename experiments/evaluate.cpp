#include "experiments/evaluate.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/tape.hpp"
#include "training/metrics.hpp"

namespace pelab {

std::vector<std::size_t> eval_lengths(const ExperimentConfig& cfg, const Task& task) {
  if (!cfg.eval.lengths.empty()) return cfg.eval.lengths;
  const std::size_t L = cfg.train_len;
  std::vector<std::size_t> v;
  if (!task.is_language_model() && L / 2 >= std::max<std::size_t>(1, cfg.min_len)) v.push_back(L / 2);
  for (std::size_t f : {1, 2, 4}) v.push_back(L * f);
  return v;
}

namespace {

// Per-token negative log-likelihoods of the counted targets, accumulated into position buckets.
void add_nll(const Array& logits, const Batch& b, std::vector<double>& pos_sum, std::vector<std::size_t>& pos_n,
             double& total, std::size_t& count) {
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
      ++count;
    }
}

}  // namespace

LengthResult evaluate_length(Transformer& model, const Task& task, const EvalConfig& ecfg, std::size_t n,
                             std::size_t min_len, std::size_t train_len) {
  LengthResult r;
  r.length = n;
  r.in_distribution = n <= train_len && n >= min_len;
  const std::size_t T = task.sequence_length(n);
  if (auto why = model.encoding().unsupported(static_cast<std::int64_t>(T) - 1)) {
    r.ok = false;
    r.reason = *why;
    return r;
  }
  NoGrad ng;
  TokenStats stats;
  std::vector<double> pos_sum;
  std::vector<std::size_t> pos_n;
  double total = 0;
  std::size_t count = 0;
  const std::size_t bs = std::max<std::size_t>(1, ecfg.batch_size);
  for (std::size_t done = 0, i = 0; done < ecfg.samples; done += bs, ++i) {
    const std::size_t b = std::min(bs, ecfg.samples - done);
    // The held-out set depends only on the eval seed, the length and the batch index.
    const std::uint64_t seed = ecfg.seed ^ (0x9E3779B97F4A7C15ull * (n + 1)) ^ (i * 0xC2B2AE3D27D4EB4Full);
    const Batch batch = task.eval_batch(seed, b, n);
    const Tensor logits = model.forward(batch.tokens, default_positions(batch.batch(), batch.length()));
    stats.add(token_stats(logits.value(), batch));
    add_nll(logits.value(), batch, pos_sum, pos_n, total, count);
    r.samples += b;
  }
  r.loss = count ? total / double(count) : 0;
  r.token_acc = stats.token_acc();
  if (!task.is_language_model()) r.exact_match = stats.exact_match();
  else {
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

std::vector<LengthResult> evaluate_lengths(Transformer& model, const Task& task, const ExperimentConfig& cfg,
                                           const std::vector<std::size_t>& lengths) {
  const bool was = model.training();
  model.set_training(false);
  std::vector<LengthResult> out;
  for (std::size_t n : lengths) out.push_back(evaluate_length(model, task, cfg.eval, n, cfg.min_len, cfg.train_len));
  model.set_training(was);
  return out;
}

nlohmann::ordered_json to_json(const LengthResult& r) {
  nlohmann::ordered_json j;
  j["length"] = r.length;
  j["in_distribution"] = r.in_distribution;
  j["status"] = r.ok ? "ok" : "n/a";
  if (!r.ok) {
    j["reason"] = r.reason;
    return j;
  }
  j["loss"] = r.loss;
  j["token_acc"] = r.token_acc;
  j["exact_match"] = r.exact_match ? nlohmann::ordered_json(*r.exact_match) : nlohmann::ordered_json(nullptr);
  j["samples"] = r.samples;
  nlohmann::ordered_json b = nlohmann::ordered_json::array();
  for (const auto& bk : r.buckets) b.push_back({{"from", bk.from}, {"to", bk.to}, {"loss", bk.loss}});
  j["buckets"] = b;
  return j;
}

LengthResult length_result_from_json(const nlohmann::json& j) {
  LengthResult r;
  r.length = j.at("length").get<std::size_t>();
  r.in_distribution = j.at("in_distribution").get<bool>();
  r.ok = j.at("status").get<std::string>() == "ok";
  if (!r.ok) {
    r.reason = j.value("reason", "");
    return r;
  }
  r.loss = j.at("loss").get<double>();
  r.token_acc = j.at("token_acc").get<double>();
  if (!j.at("exact_match").is_null()) r.exact_match = j.at("exact_match").get<double>();
  r.samples = j.value("samples", std::size_t(0));
  for (const auto& b : j.value("buckets", nlohmann::json::array()))
    r.buckets.push_back({b.at("from").get<std::size_t>(), b.at("to").get<std::size_t>(), b.at("loss").get<double>()});
  return r;
}

std::string format_results(const std::vector<LengthResult>& rs, bool is_lm) {
  std::ostringstream os;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%8s  %-5s  %8s  %9s  %11s\n", "length", "dist", "loss", "token_acc",
                is_lm ? "" : "exact_match");
  os << buf;
  for (const auto& r : rs) {
    if (!r.ok) {
      std::snprintf(buf, sizeof buf, "%8zu  %-5s  n/a: %s\n", r.length, r.in_distribution ? "in" : "OOD",
                    r.reason.c_str());
    } else if (is_lm) {
      std::snprintf(buf, sizeof buf, "%8zu  %-5s  %8.4f  %8.1f%%   loss by position:", r.length,
                    r.in_distribution ? "in" : "OOD", r.loss, 100 * r.token_acc);
      std::string line = buf;
      for (const auto& bk : r.buckets) {  // where in the context the loss rises
        std::snprintf(buf, sizeof buf, " [%zu,%zu) %.3f", bk.from, bk.to, bk.loss);
        line += buf;
      }
      os << line << '\n';
      continue;
    } else {
      std::snprintf(buf, sizeof buf, "%8zu  %-5s  %8.4f  %8.1f%%  %10.1f%%\n", r.length,
                    r.in_distribution ? "in" : "OOD", r.loss, 100 * r.token_acc, 100 * r.exact_match.value_or(0));
    }
    os << buf;
  }
  return os.str();
}

}  // namespace pelab
