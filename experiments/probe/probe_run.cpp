// `pelab probe run RUN_DIR`: attention maps, attention entropy, per-position accuracy and (absolute
// encodings) the first layer's position-position logits of a trained run, into RUN_DIR/probe.
// One forward per length on `samples` held-out examples with the attention probabilities kept
// (ForwardOptions::attention_maps: the training path never asks for them).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/tape.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/probe/probe.hpp"
#include "training/signals.hpp"
#include "experiments/probe/probe_plot.hpp"
#include "experiments/report/report_detail.hpp"
#include "experiments/run/trained_run.hpp"
#include "training/positions.hpp"

namespace pelab {

using namespace probe_detail;
using report_detail::gp_string;

namespace {

struct LengthProbe {
  std::size_t factor = 0, n = 0, T = 0;
  bool ok = false;
  std::string reason;                  // why skipped
  std::vector<double> entropy;         // per query position, mean over samples, heads and layers
  std::vector<std::vector<double>> layer_entropy;  // [layer][t]
  PositionAccuracy acc;
  std::vector<Matrix> maps;            // sample 0: [layer * H + head] (T, T)
};

// The report puts one probe of several runs side by side: its heading is the title without the run.
Plot captioned(Plot p) {
  p.caption = p.title.substr(0, p.title.rfind(": "));
  return p;
}

std::string factor_tag(std::size_t f) { return std::to_string(f) + "x"; }

std::string run_tag(const TrainedRun& r) {
  const ExperimentConfig& c = r.spec.config;
  return c.encoding + ", " + c.task + " (train_len " + std::to_string(c.train_len) + ")";
}

Plot attention_plot(const TrainedRun& run, const LengthProbe& lp, std::size_t L, std::size_t H) {
  Plot p;
  p.name = "attention_" + factor_tag(lp.factor);
  p.title = "attention maps at " + factor_tag(lp.factor) + " the training size (n = " + std::to_string(lp.n) +
            ", " + std::to_string(lp.T) + " tokens), one held-out sample, rows = layers, columns = heads: " + run_tag(run);
  p.csv = "layer,head,query,key,p\n";
  std::vector<std::string> titles;
  for (std::size_t l = 0; l < L; ++l)
    for (std::size_t h = 0; h < H; ++h) {
      const Matrix& m = lp.maps[l * H + h];
      for (std::size_t i = 0; i < lp.T; ++i)
        for (std::size_t j = 0; j <= i || (j < lp.T && !run.spec.model.causal); ++j)
          p.csv += std::to_string(l) + "," + std::to_string(h) + "," + std::to_string(i) + "," + std::to_string(j) + "," +
                   num(m[i][j]) + "\n";
      p.dat += image_block(m, run.spec.model.causal) + "\n";
      titles.push_back("layer " + std::to_string(l + 1) + ", head " + std::to_string(h + 1));
    }
  p.width = int(std::min<std::size_t>(2400, 60 + H * 380)), p.height = int(std::min<std::size_t>(2400, 80 + L * 300));
  p.gp = image_grid(p.name, p.title, L, H, titles, "[0:1]", true, lp.T, p.width);
  p.json["n"] = lp.n;
  p.json["tokens"] = lp.T;
  return p;
}

Plot entropy_plot(const TrainedRun& run, const std::vector<LengthProbe>& lps, std::size_t train_T) {
  Plot p;
  p.name = "entropy";
  p.title = "attention entropy per query position (mean over samples, heads, layers) at 1x/2x/4x the training size: " +
            run_tag(run);
  std::size_t maxT = 0;
  p.csv = "query";
  for (const auto& lp : lps)
    if (lp.ok) {
      maxT = std::max(maxT, lp.T);
      p.csv += ",entropy_" + factor_tag(lp.factor);
      for (std::size_t l = 0; l < lp.layer_entropy.size(); ++l)
        p.csv += ",entropy_" + factor_tag(lp.factor) + "_layer" + std::to_string(l + 1);
    }
  p.csv += ",uniform_log_t_plus_1\n";
  for (std::size_t t = 0; t < maxT; ++t) {
    p.csv += std::to_string(t);
    for (const auto& lp : lps)
      if (lp.ok) {
        p.csv += "," + (t < lp.T ? num(lp.entropy[t]) : std::string("NaN"));
        for (const auto& le : lp.layer_entropy) p.csv += "," + (t < lp.T ? num(le[t]) : std::string("NaN"));
      }
    p.csv += "," + num(std::log(double(t + 1))) + "\n";
  }
  std::string plot = "plot ";
  std::size_t col = 2, k = 0;
  for (const auto& lp : lps)
    if (lp.ok) {
      plot += "\"entropy.csv\" skip 1 using 1:" + std::to_string(col) + " with lines lw 2 lc rgb \"" +
              report_detail::plot_color(k++) + "\" title \"" + factor_tag(lp.factor) + " (n = " + std::to_string(lp.n) + ")\", ";
      col += 1 + lp.layer_entropy.size();
    }
  plot += "\"entropy.csv\" skip 1 using 1:" + std::to_string(col) +
          " with lines dt 2 lc rgb \"#888888\" title \"uniform over the prefix: log(t+1)\"\n";
  p.gp = "set title " + gp_string(p.title) + "\nset xlabel \"query position t (tokens)\"\nset ylabel \"entropy (nats)\"\n"
         "set grid\nset key outside right top\nset arrow from " + std::to_string(train_T) + ", graph 0 to " + std::to_string(train_T) +
         ", graph 1 nohead dt 3 lc rgb \"#444444\"\nset label \"training length\" at " + std::to_string(train_T) +
         ", graph 0.04 offset 0.5,0\n" + plot;
  for (const auto& lp : lps) {
    nlohmann::ordered_json j;
    j["n"] = lp.n;
    j["tokens"] = lp.T;
    if (!lp.ok) {
      j["skipped"] = lp.reason;
    } else {
      double s = 0;
      for (double v : lp.entropy) s += v;
      j["mean_entropy"] = s / double(lp.entropy.size());
      j["last_query_entropy"] = lp.entropy.back();
      j["last_query_uniform"] = std::log(double(lp.T));
    }
    p.json["lengths"][factor_tag(lp.factor)] = j;
  }
  return p;
}

Plot accuracy_plot(const TrainedRun& run, const std::vector<LengthProbe>& lps, bool lm) {
  Plot p;
  p.name = "position_accuracy";
  p.title = std::string("token accuracy per ") + (lm ? "position" : "answer position") +
            " (teacher forced) at 1x/2x/4x the training size: " + run_tag(run);
  std::size_t maxJ = 0;
  p.csv = "position";
  for (const auto& lp : lps)
    if (lp.ok) maxJ = std::max(maxJ, lp.acc.acc.size()), p.csv += ",acc_" + factor_tag(lp.factor);
  p.csv += "\n";
  for (std::size_t j = 0; j < maxJ; ++j) {
    p.csv += std::to_string(j + 1);
    for (const auto& lp : lps)
      if (lp.ok) p.csv += "," + (j < lp.acc.acc.size() ? num(100 * lp.acc.acc[j]) : std::string("NaN"));
    p.csv += "\n";
  }
  std::string plot = "plot ";
  std::size_t col = 2, k = 0;
  for (const auto& lp : lps)
    if (lp.ok) {
      plot += std::string(k ? ", " : "") + "\"position_accuracy.csv\" skip 1 using 1:" + std::to_string(col++) +
              " with linespoints pt 7 ps 0.4 lw 1.5 lc rgb \"" + report_detail::plot_color(k) + "\" title \"" +
              factor_tag(lp.factor) + " (n = " + std::to_string(lp.n) + ")\"";
      ++k;
    }
  const std::size_t train_len = run.spec.config.train_len;
  p.gp = "set title " + gp_string(p.title) + "\nset xlabel \"" + (lm ? "position" : "answer position (1 = first y token)") +
         "\"\nset ylabel \"token accuracy (%)\"\nset yrange [0:105]\nset grid\nset key outside right top\n"
         "set arrow from " + std::to_string(train_len) + ".5, graph 0 to " + std::to_string(train_len) +
         ".5, graph 1 nohead dt 3 lc rgb \"#444444\"\n" + plot + "\n";
  for (const auto& lp : lps) {
    if (!lp.ok) continue;
    // The first answer position whose accuracy falls below 90%: where errors begin.
    std::optional<std::size_t> first;
    for (std::size_t j = 0; j < lp.acc.acc.size() && !first; ++j)
      if (lp.acc.acc[j] < 0.9) first = j + 1;
    p.json["first_position_below_90"][factor_tag(lp.factor)] = first ? nlohmann::ordered_json(*first) : nullptr;
  }
  return p;
}

// One LengthProbe per --lengths factor, every length checked against the memory limit before any work
// (the estimate keeps every layer's attention maps).
std::vector<LengthProbe> plan_lengths(const RunProbeArgs& a, const TrainedRun& run, std::size_t samples) {
  const ExperimentConfig& cfg = run.spec.config;
  const Task& task = *run.spec.task;
  const ResourceModel resources(run.spec);
  std::vector<LengthProbe> lps;
  for (std::size_t f : a.factors) {
    LengthProbe lp;
    lp.factor = f;
    lp.n = f * cfg.train_len;
    lp.T = task.sequence_length(lp.n);
    check_memory("pelab probe run at " + factor_tag(f) + " (n = " + std::to_string(lp.n) + ", " +
                     std::to_string(samples) + " samples of " + std::to_string(lp.T) + " tokens)",
                 resources.probe(lp.n, samples).total(), "--lengths / --samples", a.memory);
    lps.push_back(lp);
  }
  return lps;
}

// Head h of sample 0 of one layer's attention probabilities (B, H, T, T), in double.
Matrix sample0_map(const Array& probs, std::size_t h, std::size_t T) {
  Matrix m(T, std::vector<double>(T));
  const real* p = probs.data() + h * T * T;  // sample 0
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j) m[i][j] = p[i * T + j];
  return m;
}

// One forward at lp.n on `samples` held-out examples, keeping the attention maps: fills lp (ok), or
// lp.reason when the task or the encoding cannot give this length.
void probe_length(LengthProbe& lp, TrainedRun& run, const PositionConfig& positions, const RunProbeArgs& a,
                  std::size_t samples) {
  const Task& task = *run.spec.task;
  Transformer& model = *run.model;
  const std::size_t L = run.spec.model.n_layers, H = run.spec.model.n_heads;
  Batch batch;
  try {
    batch = task.eval_batch(a.seed ^ (0x9E3779B97F4A7C15ull * (lp.n + 1)), samples, lp.n);
  } catch (const Error& e) {
    lp.reason = e.what();
    return;
  }
  lp.T = batch.length();
  Rng position_rng(a.seed, 4);
  assign_positions(batch, positions, position_rng);
  if (auto why = model.encoding().unsupported(max_position_id(positions, lp.T))) {
    lp.reason = *why;
    return;
  }
  std::vector<Array> maps;  // per layer (B, H, T, T)
  ForwardOptions fo;
  fo.attention_maps = &maps;
  if (batch.has_digit_index()) fo.digit_index = &batch.digit_index;  // Abacus reads them
  fo.between_layers = [&lp] { throw_if_stopped("probing length " + std::to_string(lp.n)); };
  const Tensor logits = model.forward(batch.tokens, batch.positions, fo);
  lp.ok = true;
  throw_if_stopped("probing length " + std::to_string(lp.n));
  lp.acc = position_accuracy(logits.value(), batch);
  lp.entropy.assign(lp.T, 0.0);
  for (std::size_t l = 0; l < L; ++l) {
    throw_if_stopped("probing length " + std::to_string(lp.n));
    lp.layer_entropy.push_back(attention_entropy(maps[l]));
    for (std::size_t t = 0; t < lp.T; ++t) lp.entropy[t] += lp.layer_entropy.back()[t] / double(L);
  }
  if (lp.factor <= 2) {  // maps of sample 0 at 1x and 2x (4x maps are too dense to read)
    for (std::size_t l = 0; l < L; ++l)
      for (std::size_t h = 0; h < H; ++h) lp.maps.push_back(sample0_map(maps[l], h, lp.T));
  }
}

// (Tq, Tq) p_i^T W_Q^T W_K p_j from the first layer's qkv weight w (3C, C) and position vectors pe (1, Tq, C).
Matrix qk_position_logits(const Array& w, const Array& pe, std::size_t Tq, std::size_t C) {
  std::vector<std::vector<double>> q(Tq, std::vector<double>(C)), k(Tq, std::vector<double>(C));
  for (std::size_t t = 0; t < Tq; ++t)
    for (std::size_t o = 0; o < C; ++o) {
      double sq = 0, sk = 0;
      for (std::size_t i = 0; i < C; ++i) sq += double(w(o, i)) * pe(0, t, i), sk += double(w(C + o, i)) * pe(0, t, i);
      q[t][o] = sq, k[t][o] = sk;
    }
  Matrix m(Tq, std::vector<double>(Tq));
  for (std::size_t i = 0; i < Tq; ++i)
    for (std::size_t j = 0; j < Tq; ++j) {
      double s = 0;
      for (std::size_t o = 0; o < C; ++o) s += q[i][o] * k[j][o];
      m[i][j] = s;
    }
  return m;
}

Plot qk_positions_plot(const TrainedRun& run, const Matrix& m, std::size_t Tq, std::size_t train_T) {
  Plot p;
  p.name = "qk_positions";
  p.title = "p_i^T W_Q^T W_K p_j of layer 1 (position vectors only, all heads): " + run_tag(run);
  p.csv = "i,j,value\n";
  for (std::size_t i = 0; i < Tq; ++i)
    for (std::size_t j = 0; j < Tq; ++j) p.csv += std::to_string(i) + "," + std::to_string(j) + "," + num(m[i][j]) + "\n";
  p.dat = image_block(m, false);
  double mx = 0;
  for (const auto& r : m)
    for (double v : r) mx = std::max(mx, std::abs(v));
  p.gp = "set title " + gp_string(p.title) + "\nset xlabel \"key position j\"\nset ylabel \"query position i\"\n"
         "set palette defined (0 \"#2166ac\", 0.5 \"#f7f7f7\", 1 \"#b2182b\")\nset cbrange [" + num(-mx) + ":" + num(mx) +
         "]\nset size ratio -1\n" + square_ranges(Tq) + "unset key\nplot \"qk_positions.dat\" using 1:2:3 with image\n";
  p.width = 760, p.height = 680;
  p.json["tokens"] = Tq;
  p.json["train_tokens"] = train_T;
  return p;
}

// Absolute encodings: p_i^T W_Q^T W_K p_j of layer 1 over the longest length probed at 1x or 2x (one the
// encoding represents). Writes nothing for encodings with no input-side vectors.
void write_qk_positions(Output& out, TrainedRun& run, const std::vector<LengthProbe>& lps, std::size_t train_T) {
  std::size_t Tq = 0;
  for (const auto& lp : lps)
    if (lp.ok && lp.factor <= 2) Tq = std::max(Tq, lp.T);
  if (!Tq) return;
  Transformer& model = *run.model;
  PositionalEncoding& enc = model.encoding();
  const IndexArray pos = default_positions(1, Tq);
  const std::size_t C = run.spec.model.d_model;
  enc.begin_forward(pos);
  Array zeros = xt::zeros<real>(Shape{1, Tq, enc.token_width(C)});
  const Array pe = enc.encode_input(Tensor(zeros), pos).value();  // (1, Tq, C)
  if (!std::any_of(pe.begin(), pe.end(), [](real v) { return v != 0; })) return;
  const Array w = model.parameter("blocks.0.attn.qkv.weight").value();  // (3C, C): rows [W_Q; W_K; W_V]
  write_plot(out, captioned(qk_positions_plot(run, qk_position_logits(w, pe, Tq, C), Tq, train_T)));
}

}  // namespace

std::vector<std::string> probe_run(const RunProbeArgs& a) {
  if (a.factors.empty()) throw Error("--lengths: give at least one multiple of the training length");
  TrainedRun run = load_trained_run(a.run_dir);
  const std::size_t samples = a.samples ? a.samples : run.spec.config.probe.samples;
  const ExperimentConfig& cfg = run.spec.config;
  const Task& task = *run.spec.task;
  const std::size_t L = run.spec.model.n_layers, H = run.spec.model.n_heads;
  std::vector<LengthProbe> lps = plan_lengths(a, run, samples);

  NoGrad ng;
  const PositionConfig positions = eval_positions(cfg);
  for (auto& lp : lps) probe_length(lp, run, positions, a, samples);

  Output out = open_output(a.out_dir.empty() ? a.run_dir + "/" + report_detail::kProbeDir : a.out_dir);
  for (const auto& lp : lps)
    if (lp.ok && !lp.maps.empty()) write_plot(out, captioned(attention_plot(run, lp, L, H)));
  const std::size_t train_T = task.sequence_length(cfg.train_len);
  if (std::any_of(lps.begin(), lps.end(), [](const LengthProbe& lp) { return lp.ok; })) {
    write_plot(out, captioned(entropy_plot(run, lps, train_T)));
    write_plot(out, captioned(accuracy_plot(run, lps, task.is_language_model())));
  }
  for (const auto& lp : lps)
    if (!lp.ok) out.warnings.push_back(factor_tag(lp.factor) + " (n = " + std::to_string(lp.n) + ") skipped: " + lp.reason);
  write_qk_positions(out, run, lps, train_T);
  for (const auto& w : out.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return out.files;
}

}  // namespace pelab
