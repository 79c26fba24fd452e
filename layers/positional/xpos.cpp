// xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer"): RoPE whose rotation of pair i also
// scales it, q by zeta_i^(s / scale_base) and k by zeta_i^(-s / scale_base), with
//   zeta_i = (2i / hs + gamma) / (1 + gamma),  i in [0, hs/2),  gamma = 0.4,
// so that q_m . k_n carries zeta_i^((m - n) / scale_base): a decay with distance on top of RoPE's
// rotation, relative by construction. Laid out as the authors' code (microsoft/torchscale,
// torchscale/component/xpos_relative_position.py and component/multihead_attention.py):
//   - interleaved pairs (2i, 2i+1) over the whole head, angles p * base^(-2i/hs) of the position ids;
//   - the scale's position s is centred: torchscale uses s = t - ceil(T/2) for t = 0..T-1 (its min_pos
//     = -(T // 2) rounded down); with position ids that is s = p - (p_0 + ceil(T/2)), p_0 the row's first
//     id (the same as torchscale for ids 0..T-1, and bounded for offset ids). The centre cancels in
//     q . k, it only keeps the magnitudes of q and k near 1;
//   - k is "downscaled": its tables carry 1 / zeta^(s / scale_base).
// Two rotary tables (q's and k's) are built once per forward with scale_rotary_tables and shared by
// every layer.
#include <cmath>

#include "core/ops/rotary.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/rotary_encoding.hpp"

namespace pelab {
namespace {

constexpr double kMaxExponent = 60;  // |log of a scale| allowed: e^60 = 1e26, float holds 3e38

void check(const Params&, const ModelDims& dims) {
  if (dims.head_dim == 0 || dims.head_dim % 2 != 0)
    throw Error("encoding 'xpos': head_dim " + std::to_string(dims.head_dim) +
                " (d_model / n_heads) must be even: xPos rotates pairs of dims");
}

class XPos : public RotaryEncoding {
 public:
  XPos(const ModelDims& dims, double base, double scale_base, double gamma)
      : RotaryEncoding(RotaryLayout::interleaved), inv_freq_(rotary_inv_freq(dims.head_dim, base)),
        scale_base_(scale_base) {
    const std::size_t pairs = dims.head_dim / 2;
    for (std::size_t i = 0; i < pairs; ++i)
      log_zeta_.push_back(std::log((2.0 * double(i) / double(dims.head_dim) + gamma) / (1.0 + gamma)));
  }

  // |s| <= the largest id: the scales zeta^(+-s/B) must stay well inside float's range (q's pair 0
  // shrinks to zeta_0^(|s|/B), k's grows to its inverse; past e^+-60 their product loses its meaning).
  std::optional<std::string> unsupported(std::int64_t max_position) const override {
    const double exponent = -log_zeta_.front() * double(max_position) / scale_base_;
    if (exponent <= kMaxExponent) return std::nullopt;
    return "encoding 'xpos': ids up to " + std::to_string(max_position) + " scale q and k by e^+-" +
           std::to_string(int(exponent)) + " (scale_base " + format_value(Value(scale_base_)) +
           "), beyond float range; use a larger scale_base";
  }

 private:
  // q's tables scaled by zeta^(s / scale_base), k's by its inverse.
  QKTables build_tables(const IndexArray& positions) const override {
    const std::size_t B = positions.shape()[0], T = positions.shape()[1];
    IndexArray centred(positions.shape());  // s = p - (p_0 + ceil(T/2)) per row
    for (std::size_t b = 0; b < B; ++b) {
      const std::int64_t c = std::int64_t(positions(b, 0)) + std::int64_t((T + 1) / 2);
      for (std::size_t t = 0; t < T; ++t) centred(b, t) = static_cast<std::int32_t>(positions(b, t) - c);
    }
    RotaryTables tq = rotary_tables(positions, inv_freq_), tk{array_copy(tq.cos), array_copy(tq.sin)};
    // zeta_i^(+-s / scale_base), evaluated in double
    scale_rotary_tables(tq, centred, [&](std::int32_t s, std::size_t i) { return std::exp(log_zeta_[i] * s / scale_base_); });
    scale_rotary_tables(tk, centred, [&](std::int32_t s, std::size_t i) { return std::exp(-log_zeta_[i] * s / scale_base_); });
    return {std::make_shared<const RotaryTables>(std::move(tq)), std::make_shared<const RotaryTables>(std::move(tk))};
  }

  std::vector<double> inv_freq_, log_zeta_;  // per pair: theta_i, log zeta_i
  double scale_base_;
};

}  // namespace

PELAB_REGISTER_ENCODING(xpos, encoding_spec("xpos",
    "RoPE with a per-dimension decay zeta_i^((m - n) / scale_base) between q_m and k_n (Sun et al. 2022)")
    .relative()
    .params({
        number_param("base", 10000.0, "rotation frequencies theta_i = base^(-2i/hs), as RoPE").in(2.0, 1e9),
        number_param("scale_base", 512.0,
            "the decay's length scale B: q scaled by zeta^(s/B), k by zeta^(-s/B)").in(1.0, 1e9),
        number_param("gamma", 0.4, "zeta_i = (2i/hs + gamma) / (1 + gamma)").in(1e-3, 1e3),
    })
    .validate(check)
    .make([](const Params& p, const ModelDims& dims) {
      check(p, dims);
      return std::make_unique<XPos>(dims, p.get_number("base"), p.get_number("scale_base"), p.get_number("gamma"));
    }));

}  // namespace pelab
