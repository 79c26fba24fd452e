// FoPE, Fourier position embedding (Hua et al., ICML 2025, "Fourier Position Embedding: Enhancing
// Attention's Periodic Extension for Length Generalization", arXiv 2412.17739), as the authors' code does
// it (github.com/TsinghuaC3I/Fourier-Position-Embedding, olmo/model.py: RotaryEmbedding.get_inv_freq and
// FourierEmbedding; the configs configs/*/ce-fourier/*.yaml):
// - RoPE's frequencies w_n = base^(-2n/hs) below 2 pi / L (no full period within the training length L)
//   are clipped to 0 and dropped (rope_clamp_floor_freq, _to_zero, fourier_ignore_zero): D' remain;
// - each layer and head has fixed random coefficients C, S (D', d_out), d_out = min(D', hs/4), and the
//   first d_out dim pairs of q and k get Fourier series over every kept frequency instead of one rotation:
//     (x1, x2) -> (x1 c_m - x2 s_m, x1 s_m + x2 c_m),  c_m(p) = sum_n C[n,m] cos(w_n p),
//                                                      s_m(p) = sum_n S[n,m] sin(w_n p),
//   with pairs (m, m + hs/2) (rotate_half); the other pairs get c = s = 1, (x1 - x2, x1 + x2), which does
//   not depend on the position (the code pads with 1, where a zero frequency would give c = 1, s = 0);
// - C, S = xavier_normal(gain sigma) of the (H, D', d_out) tensor, std sigma sqrt(2 / (d_out (D' + H))),
//   plus 1 at [h, m ceil(D'/d_out), m] ("eye_xavier_norm"); not trained (fourier_learnable is off in
//   every shipped config). The paper describes the coefficients as drawn from N(0, sigma); we follow the
//   code. They are drawn from Rng(seed, layer), not stored: the same seed gives the same coefficients.
// c_m mixes frequencies, so q'.k' is not a function of p_i - p_j alone: not relative.
#include <algorithm>
#include <cmath>

#include "core/shape_only.hpp"
#include "core/ops/rotary.hpp"
#include "core/ops/shape.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/frequency_cut.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

// The kept frequencies w_n >= 2 pi / L, highest first.
std::vector<double> kept_freq(const Params& p, const ModelDims& dims) {
  const double floor = frequency_floor(p, dims);
  std::vector<double> w;
  for (std::size_t n = 0; n < dims.head_dim / 2; ++n) {
    const double v = std::pow(p.get_number("base"), -2.0 * double(n) / double(dims.head_dim));
    if (v >= floor) w.push_back(v);
  }
  return w;
}

void check_fope(const Params& p, const ModelDims& dims) {
  if (dims.head_dim % 2 != 0 || dims.head_dim < 4)
    throw Error("encoding 'fope': head_dim " + std::to_string(dims.head_dim) +
                " must be even and at least 4 (hs/4 dim pairs carry Fourier series)");
  if (cut_length(p, dims) == 0)
    throw Error("encoding 'fope': length 0 means the training position range, and the model has none; set length");
  if (kept_freq(p, dims).empty())
    throw Error("encoding 'fope': length " + std::to_string(cut_length(p, dims)) +
                " keeps no frequency (w_0 = 1 turns once in 2 pi = 6.28 ids); expected length >= 7");
}

// C and S of one layer, each (H, D', d_out) row-major, as FourierEmbedding.reset_parameters: S drawn first.
struct Coefficients {
  std::vector<real> cos, sin;
};

Coefficients draw_coefficients(std::size_t H, std::size_t D, std::size_t d_out, double sigma, std::uint64_t seed,
                               std::size_t layer) {
  Rng rng(seed, layer);
  // torch's xavier_normal_ on a 3-d tensor: fan_in = D' d_out, fan_out = H d_out.
  const double std = sigma * std::sqrt(2.0 / double(d_out * (D + H)));
  const std::size_t step = (D + d_out - 1) / d_out;
  auto draw = [&](std::vector<real>& c) {
    c.resize(H * D * d_out);
    for (auto& v : c) v = static_cast<real>(rng.normal() * std);
    for (std::size_t h = 0; h < H; ++h)
      for (std::size_t m = 0; m < d_out && m * step < D; ++m) c[(h * D + m * step) * d_out + m] += real(1);
  };
  Coefficients k;
  draw(k.sin);
  draw(k.cos);
  return k;
}

class Fope : public PositionalEncoding {
 public:
  Fope(const Params& p, const ModelDims& d) : H_(d.n_heads), hs_(d.head_dim), freq_(kept_freq(p, d)) {
    d_out_ = std::min(freq_.size(), hs_ / 4);
    for (std::size_t l = 0; l < d.n_layers; ++l)
      coef_.push_back(draw_coefficients(H_, freq_.size(), d_out_, p.get_number("sigma"),
                                        static_cast<std::uint64_t>(p.get_int("seed")), l));
    tables_.resize(d.n_layers);
  }

  void begin_forward(const IndexArray& positions) override {
    if (seen_.same(positions)) return;
    std::fill(tables_.begin(), tables_.end(), nullptr);
    shared_ = rows_share_positions(positions);
    seen_.set(positions);
  }

  // q, k (B, H, T, hs) seen as (1, B, H T, hs) when the rows share their ids, else (B, 1, H T, hs), so that
  // the rotary op's (rows, H T, hs/2) tables hold one series per head.
  void encode_qk(Tensor& q, Tensor& k, const AttentionContext& ctx) override {
    if (!seen_.same(ctx.positions)) begin_forward(ctx.positions);
    auto& tb = tables_.at(ctx.layer);
    if (!tb) tb = build_tables(ctx.positions, coef_.at(ctx.layer));
    const Shape shape = q.shape();
    const std::size_t B = shape[0], T = shape[2];
    const Shape folded = shared_ ? Shape{1, B, H_ * T, hs_} : Shape{B, 1, H_ * T, hs_};
    q = reshape(rotary(reshape(q, folded), tb, RotaryLayout::half), shape);
    k = reshape(rotary(reshape(k, folded), tb, RotaryLayout::half), shape);
  }

 private:
  // (rows, H T, hs/2): c_m and s_m per row, head and position (summed in double), 1 past d_out.
  std::shared_ptr<const RotaryTables> build_tables(const IndexArray& positions, const Coefficients& k) const {
    const std::size_t rows = shared_ ? 1 : positions.shape()[0], T = positions.shape()[1], D = freq_.size();
    const std::size_t P = hs_ / 2;
    auto tb = std::make_shared<RotaryTables>();
    tb->cos = shape_only() ? Array(Shape{rows, H_ * T, P}) : Array(Shape{rows, H_ * T, P}, real(1));
    tb->sin = shape_only() ? Array(Shape{rows, H_ * T, P}) : Array(Shape{rows, H_ * T, P}, real(1));
    if (shape_only()) return tb;  // core/shape_only.hpp: allocated, not computed
    std::vector<double> cw(D), sw(D);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t t = 0; t < T; ++t) {
        for (std::size_t n = 0; n < D; ++n) {
          cw[n] = std::cos(double(positions(r, t)) * freq_[n]);
          sw[n] = std::sin(double(positions(r, t)) * freq_[n]);
        }
        for (std::size_t h = 0; h < H_; ++h)
          for (std::size_t m = 0; m < d_out_; ++m) {
            double c = 0, s = 0;
            for (std::size_t n = 0; n < D; ++n) {
              c += double(k.cos[(h * D + n) * d_out_ + m]) * cw[n];
              s += double(k.sin[(h * D + n) * d_out_ + m]) * sw[n];
            }
            tb->cos(r, h * T + t, m) = static_cast<real>(c);
            tb->sin(r, h * T + t, m) = static_cast<real>(s);
          }
      }
    return tb;
  }

  std::size_t H_, hs_, d_out_ = 0;
  std::vector<double> freq_;
  std::vector<Coefficients> coef_;  // one per layer
  std::vector<std::shared_ptr<const RotaryTables>> tables_;  // per layer, built on first use for these ids
  SeenPositions seen_;
  bool shared_ = true;
};

PELAB_REGISTER_ENCODING(fope, encoding_spec("fope",
    "Fourier position embedding: RoPE frequencies below one turn in the training length clipped, each dim "
    "pair a fixed random Fourier series over the rest (Hua et al. 2025)")
    .relative(false)  // the series mix frequencies: not a function of id differences
    .params({
        number_param("base", 10000.0, "w_n = base^(-2n/hs), before the clipping").in(2.0, 1e9),
        integer_param("length", 0,
                      "L of the clipping: frequencies w_n < 2 pi / L are dropped; 0 = the training position "
                      "range").in(0.0, 1e9),
        number_param("sigma", 0.3, "the coefficients' xavier-normal gain (the authors' configs: 0.3 at 60M, 0.4 at "
                                   "180M, 0.6 at 1.2B parameters)").in(0.0, 10.0),
        integer_param("seed", 0, "the coefficients' random stream (Rng(seed, layer)); fixed, not trained")
            .in(0.0, 2147483647.0),
    })
    .validate(check_fope)
    .make([](const Params& p, const ModelDims& dims) { return std::make_unique<Fope>(p, dims); }));

}  // namespace
}  // namespace pelab
