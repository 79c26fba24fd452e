// `pelab probe spectrum`: the singular values, effective rank and Toeplitz-ness of the position-position
// matrices an encoding defines (--encoding NAME, untrained) or a trained run holds (--run DIR). Which matrix
// each encoding yields is in docs/reports.md ("Spectrum"); the numbers are in spectrum.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/tape.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/probe/probe.hpp"
#include "experiments/probe/probe_args.hpp"
#include "experiments/probe/probe_plot.hpp"
#include "experiments/probe/spectrum.hpp"
#include "experiments/report/report_detail.hpp"
#include "experiments/run/trained_run.hpp"
#include "layers/positional/encoding.hpp"
#include "training/positions.hpp"

namespace pelab {

using namespace probe_detail;
using report_detail::gp_string;

namespace {

struct Named {
  std::string name, what;
  Matrix m;  // (T, T)
  bool lower_only = false;
};

// The matrices an encoding defines over positions 0..T-1, through the hooks the model calls (as
// `pelab probe encoding` does: experiments/probe/probe_encoding.cpp). `not_defined` collects the kinds it
// does not define, with the reason.
std::vector<Named> encoding_matrices(PositionalEncoding& enc, std::size_t T, std::size_t C, std::size_t H,
                                     std::vector<std::string>& not_defined, Array* pe_out) {
  NoGrad ng;
  const std::size_t hs = C / H;
  const IndexArray pos = default_positions(1, T);
  enc.begin_forward(pos);
  std::vector<Named> out;
  const auto nonzero = [](const Array& x) { return std::any_of(x.begin(), x.end(), [](real v) { return v != 0; }); };

  // Input side: PE(t) = encode_input(0, t); for encodings that scale x, PE(t) = encode_input(1, t) - 1.
  const std::size_t w = enc.token_width(C);
  Array zeros = xt::zeros<real>(Shape{1, T, w});
  Array pe = enc.encode_input(Tensor(zeros), pos).value();  // (1, T, C)
  bool scaled = false;
  if (!nonzero(pe) && w == C) {
    Array ones = xt::ones<real>(Shape{1, T, w});
    pe = enc.encode_input(Tensor(ones), pos).value();
    for (real& v : pe) v -= 1;
    scaled = true;
  }
  if (nonzero(pe)) {
    Array rows = pe;
    rows.reshape({T, pe.shape()[2]});  // (T, C)
    out.push_back({"gram", scaled ? "<PE(i), PE(j)>, PE(t) = encode_input(1, t) - 1 (an encoding that scales x)"
                                  : "<PE(i), PE(j)> of the input-side position vectors",
                   gram_matrix(rows), false});
    if (pe_out && !scaled) *pe_out = pe;
  } else {
    not_defined.push_back("gram: encode_input adds no position vector");
  }

  // Rotations: <R_i 1, R_j 1> of all-ones q and k in head 0. For RoPE, sum_k 2 cos((i - j) theta_k) =
  // tr(R_{j-i}): the expected <R_i u, R_j u> of an isotropic u with E[u u^T] = I.
  Tensor q(Array(xt::ones<real>(Shape{1, H, T, hs}))), k(Array(xt::ones<real>(Shape{1, H, T, hs})));
  const Array before = q.value();
  enc.encode_qk(q, k, {pos, 0, true});
  if (!std::equal(before.begin(), before.end(), q.value().begin())) {
    const real* qr = q.value().data();  // head 0: the first T * hs values
    const real* kr = k.value().data();
    Matrix g(T, std::vector<double>(T, 0.0));
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < T; ++j)
        for (std::size_t d = 0; d < hs; ++d) g[i][j] += double(qr[i * hs + d]) * double(kr[j * hs + d]);
    out.push_back({"rotary", "<R_i 1, R_j 1> of all-ones q, k after encode_qk, head 0 (the rotation kernel)", g, false});
  } else {
    not_defined.push_back("rotary: encode_qk leaves q and k alone");
  }

  // Bias: zero q and k (content-dependent biases see no content), layer 0, every head, the causal mask not applied.
  Tensor zq(Array(xt::zeros<real>(Shape{1, H, T, hs}))), zk(Array(xt::zeros<real>(Shape{1, H, T, hs})));
  const Tensor zx(Array(xt::zeros<real>(Shape{1, T, H * hs})));  // the layer input, for FoX
  const Tensor bias = enc.attention_bias(zq, zk, {pos, 0, true, &zx});
  if (bias.defined()) {
    const Array& bv = bias.value();  // (1, H or 1, T, T)
    for (std::size_t h = 0; h < bv.shape()[1]; ++h) {
      Matrix m(T, std::vector<double>(T));
      bool zero = true;
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) m[i][j] = bv(0, h, i, j), zero = zero && m[i][j] == 0;
      if (zero) {  // CoPE: its gates see no content at zero q, k
        not_defined.push_back("bias_head" + std::to_string(h) + ": zero at zero q, k (a content-dependent bias)");
        continue;
      }
      out.push_back({"bias_head" + std::to_string(h), "the attention-logit bias b(i, j) at zero q, k, layer 0, head " +
                     std::to_string(h) + ", every (i, j) (no causal mask)", m, false});
    }
  } else {
    not_defined.push_back("bias: attention_bias adds none");
  }

  // Relative keys (Shaw): q . a^K[bucket(i, j)] of an all-ones q.
  const RelativeKV rel = enc.relative_kv({pos, 0, true});
  if (rel.defined() && rel.key.defined() && rel.index) {
    const IndexArray& idx = *rel.index;  // (1, T, T)
    const Array& ak = rel.key.value();   // (R, hs)
    Matrix m(T, std::vector<double>(T, 0.0));
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < T; ++j)
        for (std::size_t c = 0; c < ak.shape()[1]; ++c) m[i][j] += double(ak(std::size_t(idx(0, i, j)), c));
    out.push_back({"relative_key", "q . a^K[bucket(i, j)] of an all-ones q (Shaw's relative keys)", m, false});
  } else {
    not_defined.push_back("relative_key: no relative key table");
  }
  return out;
}

// Layer 0's position-only logits per head: (W_Q^h p_i) . (W_K^h p_j), p = the input-side vectors (1, T, C),
// W = blocks.0.attn.qkv.weight (3C, C), rows [W_Q; W_K; W_V], head h = rows h*hs .. (h+1)*hs - 1 of each.
// Layer norm, biases and the 1/sqrt(hs) scale are left out, as in the qk_positions probe.
std::vector<Named> qk_matrices(const Array& w, const Array& pe, std::size_t H) {
  const std::size_t T = pe.shape()[1], C = pe.shape()[2], hs = C / H;
  std::vector<std::vector<double>> q(T, std::vector<double>(C)), k(T, std::vector<double>(C));  // (T, C) each
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t o = 0; o < C; ++o) {
      double sq = 0, sk = 0;
      for (std::size_t i = 0; i < C; ++i) sq += double(w(o, i)) * pe(0, t, i), sk += double(w(C + o, i)) * pe(0, t, i);
      q[t][o] = sq, k[t][o] = sk;
    }
  std::vector<Named> out;
  Matrix all(T, std::vector<double>(T, 0.0));
  for (std::size_t h = 0; h < H; ++h) {
    Matrix m(T, std::vector<double>(T, 0.0));
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < T; ++j) {
        for (std::size_t o = h * hs; o < (h + 1) * hs; ++o) m[i][j] += q[i][o] * k[j][o];
        all[i][j] += m[i][j];
      }
    out.push_back({"qk_head" + std::to_string(h),
                   "p_i^T W_Q^T W_K p_j of layer 0, head " + std::to_string(h) + " (position vectors only)", m, false});
  }
  out.push_back({"qk", "p_i^T W_Q^T W_K p_j of layer 0, all heads summed (the qk_positions probe)", all, false});
  return out;
}

std::string tag_of(const std::string& name, const std::vector<std::string>& sets) {
  std::string s;
  for (const auto& kv : sets) s += (s.empty() ? "" : ", ") + kv;
  return s.empty() ? name : name + " (" + s + ")";
}

Plot spectrum_plot(const std::vector<MatrixSpectrum>& ms, const std::string& title) {
  Plot p;
  p.name = "spectrum";
  p.title = title;
  p.csv = "matrix,k,singular_value,relative,eigenvalue\n";
  std::string names;
  for (const auto& s : ms) {
    const double mx = s.sigma.empty() ? 0 : s.sigma[0];
    for (std::size_t k = 0; k < s.sigma.size(); ++k) {
      const double rel = mx > 0 ? s.sigma[k] / mx : std::nan("");
      p.csv += s.name + "," + std::to_string(k + 1) + "," + num(s.sigma[k]) + "," + num(rel) + "," +
               (s.symmetric ? num(s.eigenvalues[k]) : std::string("NaN")) + "\n";
      p.dat += std::to_string(k + 1) + " " + num(rel) + "\n";
    }
    p.dat += "\n\n";  // one gnuplot `index` per matrix
    names += (names.empty() ? "" : " ") + s.name;
  }
  p.gp = "set title " + gp_string(title) + "\nset xlabel \"k (singular values in descending order)\"\n"
         "set ylabel \"sigma_k / sigma_1\"\nset logscale y\nset format y \"%.0e\"\nset yrange [1e-12:2]\nset grid\n"
         "set key outside right\nnames = " + gp_string(names) + "\nplot for [i=0:" + std::to_string(ms.size() - 1) +
         "] \"spectrum.dat\" index i using 1:2 with linespoints pt 7 ps 0.4 lw 1.5 title word(names, i + 1)\n";
  p.width = 1100;
  p.json["definitions"] = {
      {"singular_value", "sigma_k of the matrix (LAPACK gesdd via xt::linalg::svd), descending"},
      {"eigenvalue", "for a symmetric matrix, its eigenvalues (LAPACK syevd via xt::linalg::eigvalsh), descending"},
      {"erank_entropy", "Roy & Vetterli (2007): exp(-sum p_k log p_k), p_k = sigma_k / sum sigma"},
      {"rank_above_1pct", "the number of sigma_k > 0.01 sigma_1"},
      {"toeplitz_deviation", "||M - P(M)||_F / ||M||_F, P(M): each diagonal i - j replaced by its mean (0: depends "
                             "on i - j only)"},
      {"lower_only", "only the entries j <= i are defined and counted (causal attention); the rest are zero"}};
  for (const auto& s : ms) {
    nlohmann::ordered_json j;
    j["name"] = s.name;
    j["what"] = s.what;
    j["size"] = s.size;
    j["lower_only"] = s.lower_only;
    j["symmetric"] = s.symmetric;
    j["sigma_max"] = s.sigma.empty() ? 0.0 : s.sigma[0];
    j["erank_entropy"] = s.erank;
    j["rank_above_1pct"] = s.rank_1pct;
    j["toeplitz_deviation"] = s.toeplitz;
    if (s.symmetric) j["eigenvalue_max"] = s.eigenvalues.front(), j["eigenvalue_min"] = s.eigenvalues.back();
    p.json["matrices"].push_back(j);
  }
  return p;
}

SpectrumReport finish(const std::vector<Named>& named, std::vector<std::string> not_defined, const std::string& dir,
                      const std::string& title, const std::string& caption, const nlohmann::ordered_json& settings) {
  SpectrumReport r;
  for (const auto& n : named) r.matrices.push_back(analyze_matrix(n.name, n.what, n.m, n.lower_only));
  r.not_defined = std::move(not_defined);
  Output out = open_output(dir);
  Plot p = spectrum_plot(r.matrices, title);
  p.caption = caption;
  p.json["settings"] = settings;
  p.json["not_defined"] = r.not_defined;
  write_plot(out, p);
  for (const auto& w : out.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  r.files = out.files;
  return r;
}

SpectrumReport spectrum_of_encoding(const SpectrumProbeArgs& a) {
  const ModelDims dims = probe_detail::probe_model_dims(a.length, a.d_model, a.n_heads, 1024, "--length");
  const std::map<std::string, Value> given = probe_detail::parse_encoding_sets(a.sets, a.encoding);
  const Params params = resolve_encoding_params(a.encoding, given, dims);  // Error: unknown name or parameter
  auto enc = make_encoding(a.encoding, params, dims);
  Rng rng(0);
  init_parameters(*enc, rng, InitOptions{});  // learned parameters at their initialization (seed 0)
  std::vector<std::string> not_defined;
  const auto named = encoding_matrices(*enc, a.length, a.d_model, a.n_heads, not_defined, nullptr);
  if (named.empty()) {
    std::string why;
    for (const auto& nd : not_defined) why += (why.empty() ? "" : "; ") + nd;
    throw Error("encoding '" + a.encoding + "' defines no position matrix at positions 0.." + std::to_string(a.length - 1) +
                " (" + why + "); `pelab probe spectrum --run DIR` still measures a trained model's attention");
  }
  const nlohmann::ordered_json settings =
      probe_detail::encoding_probe_settings(a.encoding, params, a.length, a.d_model, a.n_heads);
  const std::string title = "spectra of position-position matrices, untrained: " + tag_of(a.encoding, a.sets);
  return finish(named, not_defined, a.out_dir.empty() ? "runs/probe-encoding/" + a.encoding : a.out_dir, title, "",
                settings);
}

SpectrumReport spectrum_of_run(const SpectrumProbeArgs& a) {
  TrainedRun run = load_trained_run(a.run_dir);
  const ExperimentConfig& cfg = run.spec.config;
  const Task& task = *run.spec.task;
  const ModelConfig& mc = run.spec.model;
  Transformer& model = *run.model;
  const std::size_t samples = a.samples ? a.samples : cfg.probe.samples;
  const std::size_t n = a.factor * cfg.train_len;
  const std::string at = std::to_string(a.factor) + "x the training size (n = " + std::to_string(n) + ")";
  check_memory("pelab probe spectrum at " + at + ", " + std::to_string(samples) + " samples",
               ResourceModel(run.spec).probe(n, samples).total(), "--factor / --samples", a.memory);

  // Layer 0's attention probabilities, averaged over held-out samples (as `probe run` draws them).
  NoGrad ng;
  Batch batch = task.eval_batch(a.seed ^ (0x9E3779B97F4A7C15ull * (n + 1)), samples, n);
  const std::size_t T = batch.length(), H = mc.n_heads;
  const PositionConfig positions = eval_positions(cfg);
  Rng position_rng(a.seed, 4);
  assign_positions(batch, positions, position_rng);
  if (auto why = model.encoding().unsupported(max_position_id(positions, T)))
    throw Error("pelab probe spectrum at " + at + ": " + *why);
  std::vector<Array> maps;
  ForwardOptions fo;
  fo.attention_maps = &maps;
  if (batch.has_digit_index()) fo.digit_index = &batch.digit_index;  // Abacus reads them
  model.forward(batch.tokens, batch.positions, fo);
  const Array& p0 = maps.at(0);  // (B, H, T, T)
  const std::size_t B = p0.shape()[0];
  std::vector<Named> named;
  for (std::size_t h = 0; h < H; ++h) {
    Matrix m(T, std::vector<double>(T, 0.0));
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) m[i][j] += double(p0(b, h, i, j)) / double(B);
    named.push_back({"attention_head" + std::to_string(h),
                     "attention probabilities of layer 0, head " + std::to_string(h) + ", mean over " +
                         std::to_string(B) + " held-out samples" + (mc.causal ? " (j <= i)" : ""),
                     m, mc.causal});
  }

  // The trained encoding's own matrices over positions 0..T-1, and for input-side vectors layer 0's qk.
  std::vector<std::string> not_defined;
  Array pe;
  for (auto& m : encoding_matrices(model.encoding(), T, mc.d_model, H, not_defined, &pe)) named.push_back(std::move(m));
  if (pe.size()) {
    for (auto& m : qk_matrices(model.parameter("blocks.0.attn.qkv.weight").value(), pe, H)) named.push_back(std::move(m));
  } else {
    not_defined.push_back("qk: no input-side position vectors");
  }
  nlohmann::ordered_json settings;
  settings["run"] = a.run_dir;
  settings["checkpoint"] = run.checkpoint;
  settings["factor"] = a.factor;
  settings["n"] = n;
  settings["tokens"] = T;
  settings["samples"] = B;
  settings["seed"] = a.seed;
  const std::string caption = "spectra of layer-0 position-position matrices at " + std::to_string(a.factor) + "x, trained";
  const std::string title = caption + " (" + std::to_string(T) + " tokens): " + cfg.encoding + ", " + cfg.task +
                            " (train_len " + std::to_string(cfg.train_len) + ")";
  return finish(named, not_defined, a.out_dir.empty() ? a.run_dir + "/" + report_detail::kProbeDir : a.out_dir, title,
                caption, settings);
}

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace

SpectrumReport probe_spectrum(const SpectrumProbeArgs& a) {
  if (a.encoding.empty() == a.run_dir.empty())
    throw Error("pelab probe spectrum: give exactly one of --encoding NAME (untrained) and --run DIR (trained)");
  return a.run_dir.empty() ? spectrum_of_encoding(a) : spectrum_of_run(a);
}

std::string spectrum_table(const SpectrumReport& r) {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof line, "%-18s %5s %11s %8s %8s %10s  %s\n", "matrix", "T", "sigma_max", "erank", "rank>1%",
                "toeplitz", "eigenvalues (symmetric only)");
  s += line;
  for (const auto& m : r.matrices) {
    const std::string eig = m.symmetric ? "[" + sci(m.eigenvalues.back()) + ", " + sci(m.eigenvalues.front()) + "]" : "-";
    std::snprintf(line, sizeof line, "%-18s %5zu %11s %8.2f %8zu %10s  %s\n", m.name.c_str(), m.size,
                  sci(m.sigma.empty() ? 0 : m.sigma[0]).c_str(), m.erank, m.rank_1pct, sci(m.toeplitz).c_str(),
                  eig.c_str());
    s += line;
  }
  s += "erank: Roy & Vetterli (2007) entropy effective rank; rank>1%: sigma_k > 0.01 sigma_1; toeplitz: "
       "||M - P(M)||_F / ||M||_F (0 = depends on i - j only)\n";
  for (const auto& nd : r.not_defined) s += "not defined: " + nd + "\n";
  return s;
}

}  // namespace pelab
