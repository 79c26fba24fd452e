// `pelab probe encoding NAME`: what an (untrained) encoding does to positions, through the same hooks
// the model calls: encode_input on zero token embeddings gives the input-side vectors PE(t);
// encode_qk on all-ones q and k gives the rotated vectors; attention_bias gives the bias. Learned
// parameters are at their initialization (seed 0), so a learned table shows noise: that is the point
// of comparison with `pelab probe run`.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/shape_only.hpp"
#include "core/tape.hpp"
#include "experiments/probe/probe.hpp"
#include "training/signals.hpp"
#include "experiments/probe/probe_plot.hpp"
#include "experiments/report/report_detail.hpp"
#include "experiments/probe/probe_args.hpp"
#include "core/ops/attention.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {

using namespace probe_detail;

std::map<std::string, Value> probe_detail::parse_encoding_sets(const std::vector<std::string>& sets,
                                                             const std::string& enc) {
  std::map<std::string, Value> given;
  for (const auto& kv : sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--set '" + kv + "': expected KEY=VALUE, a parameter of encoding '" + enc + "' (see pelab list)");
    const ValueText v = parse_value_text(kv.substr(eq + 1));
    if (v.array) throw Error("--set '" + kv + "': one value expected, not an array");
    given[kv.substr(0, eq)] = v.values.at(0);
  }
  return given;
}

nlohmann::ordered_json probe_detail::encoding_probe_settings(const std::string& encoding, const Params& params,
                                                             std::size_t len, std::size_t d_model,
                                                             std::size_t n_heads) {
  nlohmann::ordered_json settings;
  settings["encoding"] = encoding;
  for (const auto& [k, v] : params.values()) settings["params"][k] = format_value(v);
  settings["positions"] = len;
  settings["d_model"] = d_model;
  settings["n_heads"] = n_heads;
  return settings;
}

ModelDims probe_detail::probe_model_dims(std::size_t len, std::size_t d_model, std::size_t n_heads,
                                         std::size_t max_len, const std::string& len_flag) {
  if (len < 2 || len > max_len)
    throw Error(len_flag + " must be in [2, " + std::to_string(max_len) + "] positions");
  if (n_heads == 0 || d_model == 0 || d_model % n_heads)
    throw Error("--d-model " + std::to_string(d_model) + " must be a positive multiple of --heads " +
                std::to_string(n_heads));
  ModelDims dims;
  dims.vocab = 16;
  dims.d_model = d_model;
  dims.n_heads = n_heads;
  dims.head_dim = d_model / n_heads;
  dims.n_layers = 1;
  dims.train_seq_len = dims.max_position = len;
  return dims;
}

namespace {


// The profile of matrix row c against the signed distance j - c.
std::string profile_csv(const Matrix& m, std::size_t c, const std::string& col) {
  std::string s = "distance," + col + "\n";
  for (std::size_t j = 0; j < m.size(); ++j) s += std::to_string(std::int64_t(j) - std::int64_t(c)) + "," + num(m[c][j]) + "\n";
  return s;
}

Plot heatmap(const std::string& name, const std::string& title, const Matrix& m, const std::string& what) {
  Plot p;
  p.name = name;
  p.title = title;
  p.csv = "i,j," + what + "\n";
  for (std::size_t i = 0; i < m.size(); ++i) {
    throw_if_stopped("writing the " + name + " plot");
    for (std::size_t j = 0; j < m.size(); ++j) p.csv += std::to_string(i) + "," + std::to_string(j) + "," + num(m[i][j]) + "\n";
  }
  p.dat = image_block(m, false);
  p.gp = "set title " + report_detail::gp_string(title) + "\nset xlabel \"position j\"\nset ylabel \"position i\"\n"
         "set palette defined (0 \"#2166ac\", 0.5 \"#f7f7f7\", 1 \"#b2182b\")\nset size ratio -1\n" +
         square_ranges(m.size()) + "unset key\nplot " + report_detail::gp_string(name + ".dat") + " using 1:2:3 with image\n";
  p.width = 760, p.height = 680;
  return p;
}

// What every plot of one probe shares: the encoding at its positions, and where and how to label.
struct EncodingProbe {
  const EncodingProbeArgs& a;
  const Params& params;
  PositionalEncoding& enc;
  const IndexArray& pos;                      // (1, T)
  std::size_t T, C, H, hs;
  const nlohmann::ordered_json& settings;     // each plot's JSON "settings"
  const std::string& tag;                     // the encoding and its --set values, in titles
  Output& out;
};

ModelDims probe_dims(const EncodingProbeArgs& a) {
  return probe_model_dims(a.len, a.d_model, a.n_heads, 4096, "--len");
}

// "NAME" or "NAME (k=v, k2=v2)".
std::string probe_tag(const EncodingProbeArgs& a) {
  if (a.sets.empty()) return a.name;
  std::string s;
  for (const auto& kv : a.sets) s += (s.empty() ? "" : ", ") + kv;
  return a.name + " (" + s + ")";
}

// Input side: PE(t) = encode_input(0, t) for encodings that add or concatenate; for those that scale x
// (multiplicative: zero stays zero) PE(t) = encode_input(1, t) - 1, what the position does to a unit input.
// Returns whether the encoding changes the input (and so was plotted).
bool plot_input_side(EncodingProbe& p) {
  const std::size_t T = p.T, C = p.C;
  const std::size_t w = p.enc.token_width(C);
  const auto nonzero = [](const Array& x) { return std::any_of(x.begin(), x.end(), [](real v) { return v != 0; }); };
  Array zeros = xt::zeros<real>(Shape{1, T, w});
  Array pe = p.enc.encode_input(Tensor(zeros), p.pos).value();  // (1, T, C)
  if (!nonzero(pe) && w == C) {
    Array ones = xt::ones<real>(Shape{1, T, w});
    pe = p.enc.encode_input(Tensor(ones), p.pos).value();
    for (real& v : pe) v -= 1;
  }
  if (!nonzero(pe)) return false;
  Array rows = pe;
  rows.reshape({T, pe.shape()[2]});
  const Matrix g = gram_matrix(rows);
  Plot hm = heatmap("similarity", "<PE(i), PE(j)> of input-side vectors: " + p.tag, g, "dot");
  hm.json["settings"] = p.settings;
  write_plot(p.out, hm);
  const std::size_t c = T / 2;
  Plot pr;
  pr.name = "similarity_profile";
  pr.title = "<PE(c), PE(c+k)> against k, c = " + std::to_string(c) + ": " + p.tag;
  pr.csv = profile_csv(g, c, "dot");
  pr.gp = "set title " + report_detail::gp_string(pr.title) + "\nset xlabel \"k = j - c\"\nset ylabel \"<PE(c), PE(c+k)>\"\n"
          "set grid\nunset key\nplot \"similarity_profile.csv\" skip 1 using 1:2 with linespoints pt 7 ps 0.5 lc rgb \"#1f77b4\"\n";
  pr.json["settings"] = p.settings;
  double asym = 0;
  for (std::size_t k = 1; k <= std::min(c, T - 1 - c); ++k) asym = std::max(asym, std::abs(g[c][c + k] - g[c][c - k]));
  pr.json["max_asymmetry"] = asym;  // max_k |S(c, c+k) - S(c, c-k)|
  write_plot(p.out, pr);
  return true;
}

// <q_i, k_j> of head 0 of batch row 0 (q, k: (1, H, T, hs)), in double.
Matrix head0_dots(const Tensor& q, const Tensor& k, std::size_t T, std::size_t hs) {
  const real* qr = q.value().data();  // head 0 of batch row 0: the first T * hs values
  const real* kr = k.value().data();
  Matrix g(T, std::vector<double>(T, 0.0));
  for (std::size_t i = 0; i < T; ++i) {
    throw_if_stopped("computing position similarities");
    for (std::size_t j = 0; j < T; ++j) {
      double s = 0;
      for (std::size_t d = 0; d < hs; ++d) s += double(qr[i * hs + d]) * double(kr[j * hs + d]);
      g[i][j] = s;
    }
  }
  return g;
}

// Against distance from query 0 (forward): the logit a key m positions away would get, normalized;
// with RoFormer's bound for encodings with a RoPE base.
Plot rotary_decay_plot(const EncodingProbe& p, const Matrix& g) {
  const std::size_t T = p.T;
  Plot dp;
  dp.name = "rotary_decay";
  dp.title = "remote decay: <R_0 1, R_m 1> / <R_0 1, R_0 1> against m: " + p.tag;
  dp.csv = "distance,normalized_dot";
  const bool has_bound = p.params.values().count("base") > 0;
  std::vector<double> bound;
  if (has_bound) {
    double frac = p.params.values().count("fraction") ? p.params.get_number("fraction") : 1.0;
    std::size_t rot = std::size_t(std::llround(frac * double(p.hs)));
    rot -= rot % 2;
    if (rot >= 2) bound = rope_decay_bound(rot, p.params.get_number("base"), T - 1);
    dp.csv += ",roformer_bound";
    dp.json["bound"] = "RoFormer 3.4.3: (1/(d/2)) sum_{j=1}^{d/2} |sum_{k<j} e^{i m theta_k}|, theta_k = base^(-2k/d), d = rotated dims";
  }
  dp.csv += "\n";
  for (std::size_t m = 0; m < T; ++m) {
    dp.csv += std::to_string(m) + "," + num(g[0][m] / g[0][0]);
    if (!bound.empty()) dp.csv += "," + num(bound[m] / bound[0]);
    dp.csv += "\n";
  }
  dp.gp = "set title " + report_detail::gp_string(dp.title) + "\nset xlabel \"relative distance m\"\n"
          "set ylabel \"relative to m = 0\"\nset grid\nset key outside right top\n"
          "plot \"rotary_decay.csv\" skip 1 using 1:2 with lines lw 1.5 lc rgb \"#1f77b4\" title \"<R_0 1, R_m 1> (all-ones q, k)\"" +
          std::string(bound.empty() ? "" : ", \"rotary_decay.csv\" skip 1 using 1:3 with lines lw 2 lc rgb \"#d62728\" title \"RoFormer bound (normalized)\"") + "\n";
  dp.json["settings"] = p.settings;
  return dp;
}

// Rotations: q = k = all ones in every head. Returns whether encode_qk changed q (and so was plotted).
bool plot_rotations(EncodingProbe& p) {
  const std::size_t T = p.T, H = p.H, hs = p.hs;
  Tensor q(Array(xt::ones<real>(Shape{1, H, T, hs}))), k(Array(xt::ones<real>(Shape{1, H, T, hs})));
  const Array before = q.value();
  p.enc.encode_qk(q, k, {p.pos, 0, true});
  if (std::equal(before.begin(), before.end(), q.value().begin())) return false;
  const Matrix g = head0_dots(q, k, T, hs);
  Plot hm = heatmap("rotary_similarity", "<R_i 1, R_j 1> of all-ones q, k after encode_qk (head 0): " + p.tag, g, "dot");
  hm.json["settings"] = p.settings;
  write_plot(p.out, hm);
  write_plot(p.out, rotary_decay_plot(p, g));
  return true;
}

// Bias: zero q, k and layer input (content-dependent biases see no content: FoX shows its decay at
// initialization, (i - j) log sigmoid(b)). Returns whether there is one (plotted).
bool plot_bias(EncodingProbe& p) {
  const std::size_t T = p.T, H = p.H, hs = p.hs;
  Tensor zq(Array(xt::zeros<real>(Shape{1, H, T, hs}))), zk(Array(xt::zeros<real>(Shape{1, H, T, hs})));
  const Tensor zx(Array(xt::zeros<real>(Shape{1, T, p.C})));
  const Tensor bias = p.enc.attention_bias(zq, zk, {p.pos, 0, true, &zx});
  if (!bias.defined()) return false;
  const Array& bv = bias.value();  // (1, H or 1, T, T)
  const std::size_t bh = bv.shape()[1];
  Plot pl;
  pl.name = "bias_by_distance";
  pl.title = "attention bias of the last query against distance, per head: " + p.tag;
  pl.csv = "distance";
  for (std::size_t h = 0; h < bh; ++h) pl.csv += ",head" + std::to_string(h);
  pl.csv += "\n";
  for (std::size_t d = 0; d < T; ++d) {
    pl.csv += std::to_string(d);
    for (std::size_t h = 0; h < bh; ++h) pl.csv += "," + num(bv(0, h, T - 1, T - 1 - d));
    pl.csv += "\n";
  }
  pl.gp = "set title " + report_detail::gp_string(pl.title) + "\nset xlabel \"distance i - j\"\nset ylabel \"bias\"\n"
          "set grid\nset key outside right\nplot for [h=2:" + std::to_string(bh + 1) +
          "] \"bias_by_distance.csv\" skip 1 using 1:h with lines lw 1.5 title sprintf(\"head %d\", h - 2)\n";
  pl.json["settings"] = p.settings;
  write_plot(p.out, pl);
  return true;
}

// Relative keys (Shaw): the logit term q_i . a^K[idx_ij] of an all-ones q, against distance from the last
// query. Returns whether the encoding has relative keys (plotted).
bool plot_relative_keys(EncodingProbe& p) {
  const std::size_t T = p.T;
  const RelativeKV rel = p.enc.relative_kv({p.pos, 0, true});
  if (!(rel.defined() && rel.key.defined() && rel.index)) return false;
  const IndexArray& idx = *rel.index;  // (1, T, T)
  const Array& ak = rel.key.value();   // (R, hs)
  Plot pl;
  pl.name = "relative_key_by_distance";
  pl.title = "relative-key logit term q . a^K[bucket(i - j)] of an all-ones q, last query, at initialization: " + p.tag;
  pl.csv = "distance,logit_term\n";
  for (std::size_t d = 0; d < T; ++d) {
    const std::int32_t b = idx(0, T - 1, T - 1 - d);
    double v = 0;
    for (std::size_t c = 0; c < ak.shape()[1]; ++c) v += double(ak(std::size_t(b), c));
    pl.csv += std::to_string(d) + "," + num(v) + "\n";
  }
  pl.gp = "set title " + report_detail::gp_string(pl.title) + "\nset xlabel \"distance i - j\"\nset ylabel \"logit term\"\n"
          "set grid\nunset key\nplot \"relative_key_by_distance.csv\" skip 1 using 1:2 with linespoints pt 7 ps 0.5\n";
  pl.json["settings"] = p.settings;
  write_plot(p.out, pl);
  return true;
}

// A (T, T) heatmap at its peak, per position pair: the matrix in double (8 B) and its CSV and gnuplot image
// lines (about 26 B each, "i,j,%.9g"), strings at up to twice their length while they grow.
constexpr double kHeatmapBytesPerPair = 8 + 2 * 2 * 26;

// What the probe's own calls allocate, run shape-only (core/shape_only.hpp): the encoding built (its
// parameters) and its tables, then the input-side, rotation, bias, relative-key and normalizer calls on the
// (1, ., T, .) inputs probe_encoding makes, every result kept (an upper bound: the real probe drops each
// after its plot). No declaration: the hooks' own code is the estimate, as for a run (layers/dry_run.hpp).
std::size_t probe_hooks_bytes(const EncodingProbeArgs& a, const Params& params, const ModelDims& dims) {
  const std::size_t T = a.len, H = a.n_heads, hs = dims.head_dim, C = a.d_model;
  const IndexArray pos = default_positions(1, T);
  ShapeOnly scope;
  {
    const auto enc = make_encoding(a.name, params, dims);
    NoGrad ng;
    enc->begin_forward(pos);
    const std::size_t w = enc->token_width(C);
    const Tensor pe0 = enc->encode_input(Tensor::zeros({1, T, w}), pos);
    const Tensor pe1 = enc->encode_input(Tensor::full({1, T, w}, 1), pos);
    Tensor q = Tensor::full({1, H, T, hs}, 1), k = Tensor::full({1, H, T, hs}, 1);
    const Array before = array_copy(q.value());  // plot_rotations compares q with its copy
    enc->encode_qk(q, k, {pos, 0, true});
    const Tensor zq = Tensor::zeros({1, H, T, hs}), zk = Tensor::zeros({1, H, T, hs}), zx = Tensor::zeros({1, T, C});
    const Tensor bias = enc->attention_bias(zq, zk, {pos, 0, true, &zx});
    const RelativeKV rel = enc->relative_kv({pos, 0, true});
    AttentionOptions o;
    enc->choose_normalizer(o);
    Array w_out;
    if (o.normalizer != Normalizer::softmax) {
      const Tensor z = Tensor::zeros({1, 1, T, 1});
      o.probs_out = &w_out;
      attention(z, z, z, o);
    }
  }
  return scope.trace().summary().peak_system_bytes;
}

// Refuses a probe that would not fit, before anything is built: its calls run shape-only
// (probe_hooks_bytes) and a heatmap.
void check_probe_memory(const EncodingProbeArgs& a, const Params& params, const ModelDims& dims) {
  const double T = double(a.len);
  const double bytes = double(probe_hooks_bytes(a, params, dims)) + T * T * kHeatmapBytesPerPair;
  check_memory("probing encoding '" + a.name + "' at " + std::to_string(a.len) + " positions (d_model " +
                   std::to_string(a.d_model) + ", " + std::to_string(a.n_heads) + " heads)",
               std::size_t(bytes), "--len / --d-model / --heads" + std::string(a.sets.empty() ? "" : " / --set"),
               a.memory);
}

}  // namespace

// A normalizer other than softmax (stick-breaking): the weights of the last query at zero logits against
// distance, the order the normalizer alone imposes (stick-breaking: 1/2, 1/4, 1/8, ... from the nearest
// key). Returns whether the encoding replaces the softmax (plotted).
bool plot_normalizer(EncodingProbe& p) {
  AttentionOptions o;
  p.enc.choose_normalizer(o);
  if (o.normalizer == Normalizer::softmax) return false;
  const std::size_t T = p.T;
  const Tensor z(Array(xt::zeros<real>(Shape{1, 1, T, 1})));
  Array w;
  o.probs_out = &w;
  attention(z, z, z, o);  // (1, 1, T, T) weights
  Plot pl;
  pl.name = "normalizer_weights";
  pl.title = "attention weights of the last query at zero logits against distance (the normalizer's own order): " + p.tag;
  pl.csv = "distance,weight\n";
  for (std::size_t d = 0; d < T; ++d) pl.csv += std::to_string(d) + "," + num(w(0, 0, T - 1, T - 1 - d)) + "\n";
  pl.gp = "set title " + report_detail::gp_string(pl.title) + "\nset xlabel \"distance i - j\"\nset ylabel \"weight\"\n"
          "set grid\nset logscale y\nplot \"normalizer_weights.csv\" skip 1 using 1:2 with linespoints lw 1.5 notitle\n";
  pl.json["settings"] = p.settings;
  write_plot(p.out, pl);
  return true;
}

std::vector<std::string> probe_encoding(const EncodingProbeArgs& a) {
  const ModelDims dims = probe_dims(a);
  const auto given = parse_encoding_sets(a.sets, a.name);
  const Params params = resolve_encoding_params(a.name, given, dims);  // Error: unknown name or parameter
  check_probe_memory(a, params, dims);
  auto enc = make_encoding(a.name, params, dims);
  Rng rng(0);
  init_parameters(*enc, rng, InitOptions{});
  NoGrad ng;
  const std::size_t T = a.len;
  const IndexArray pos = default_positions(1, T);
  enc->begin_forward(pos);
  Output out = open_output(a.out_dir.empty() ? "runs/probe-encoding/" + a.name : a.out_dir);
  const nlohmann::ordered_json settings = encoding_probe_settings(a.name, params, a.len, a.d_model, a.n_heads);
  const std::string tag = probe_tag(a);
  EncodingProbe p{a, params, *enc, pos, T, a.d_model, a.n_heads, dims.head_dim, settings, tag, out};
  bool any = plot_input_side(p);  // each step writes its own plots, in this order: none is skipped
  any |= plot_rotations(p);
  any |= plot_bias(p);
  any |= plot_relative_keys(p);
  any |= plot_normalizer(p);
  if (!any) {
    discard_if_unused(out);
    throw Error("encoding '" + a.name + "' changes neither the input, q and k, the attention bias, relative keys nor the normalizer at "
                "positions 0.." + std::to_string(T - 1) + ": nothing to plot (NoPE-like)");
  }
  for (const auto& wmsg : out.warnings) std::fprintf(stderr, "warning: %s\n", wmsg.c_str());
  return out.files;
}

}  // namespace pelab
