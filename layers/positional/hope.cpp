// HoPE, high-frequency rotary position encoding (Chen, Lv, Luan, Wang and Liu, ACL 2025, "HoPE: A Novel
// Positional Encoding Without Long-Term Decay for Enhanced Context Awareness and Extrapolation",
// arXiv 2410.21216): RoPE whose low-frequency components are replaced by position-independent ones, so
// that only high-frequency signals carry position. The abstract says that much; the cut-off could not be
// read from the paper's method section or from authors' code (none was found). Two third parties state
// the rule below: Levy, Videau et al., "RoPE is dead, long live RoPE" (their Eq. 2 and HoPE baseline),
// and the praxis port (praxis/encoding/hope.py at e7a642e); docs/encodings.md quotes both.
// The rule here: pair i keeps RoPE's theta_i = base^(-2i/hs) when it turns at least one full period within
// the training length L (theta_i >= 2 pi / L) and is left unrotated otherwise (theta_i = 0: q . k on those
// dims), the same floor as FoPE's clipping (fope.cpp). `length` sets L (0: the training position range).
// The kept pairs are the first ones, the highest frequencies: the first 2m dims are rotated (layout as
// in rope.cpp, over those 2m dims), the rest pass through. A function of id differences only: relative.
#include <cmath>

#include "core/ops/rotary.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/frequency_cut.hpp"
#include "layers/positional/rotary_encoding.hpp"

namespace pelab {
namespace {

// The kept frequencies, highest first: base^(-2i/hs) >= 2 pi / L.
std::vector<double> kept_inv_freq(const Params& p, const ModelDims& dims) {
  const double floor = frequency_floor(p, dims);
  std::vector<double> theta;
  for (double t : rotary_inv_freq(dims.head_dim, p.get_number("base")))
    if (t >= floor) theta.push_back(t);
  return theta;
}

void check_hope(const Params& p, const ModelDims& dims) {
  if (dims.head_dim % 2 != 0)
    throw Error("encoding 'hope': head_dim " + std::to_string(dims.head_dim) + " must be even (dims rotate in pairs)");
  if (cut_length(p, dims) == 0)
    throw Error("encoding 'hope': length 0 means the training position range, and the model has none; set length");
  if (kept_inv_freq(p, dims).empty())
    throw Error("encoding 'hope': length " + std::to_string(cut_length(p, dims)) +
                " keeps no frequency (pair 0 turns once in 2 pi = 6.28 ids); expected length >= 7");
}

// cos and sin (B, T, m) of the kept pairs, shared by the layers (rotary_encoding.hpp).
class Hope : public RotaryEncoding {
 public:
  Hope(std::vector<double> inv_freq, RotaryLayout layout) : RotaryEncoding(layout), inv_freq_(std::move(inv_freq)) {}

 private:
  QKTables build_tables(const IndexArray& positions) const override {
    auto tb = std::make_shared<const RotaryTables>(rotary_tables(positions, inv_freq_));
    return {tb, tb};
  }

  std::vector<double> inv_freq_;
};

PELAB_REGISTER_ENCODING(hope, encoding_spec("hope",
    "RoPE keeping only the pairs that turn a full period within the training length, the rest unrotated "
    "(Chen et al. 2025)")
    .relative()
    .params({
        number_param("base", 10000.0, "theta_i = base^(-2i/hs), before the cut").in(2.0, 1e9),
        choice_param("layout", "interleaved", {"interleaved", "half"},
                     "pairs (2i, 2i+1), or (i, i+m) over the 2m rotated dims"),
        integer_param("length", 0,
                      "L of the cut: pairs with theta_i < 2 pi / L are not rotated; 0 = the training position "
                      "range").in(0.0, 1e9),
    })
    .validate(check_hope)
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Hope>(kept_inv_freq(p, dims), rotary_layout_of(p));
    }));

}  // namespace
}  // namespace pelab
