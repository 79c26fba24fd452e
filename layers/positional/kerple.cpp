// Kerple (Chi et al. 2022, "KERPLE: Kernelized Relative Positional Embedding for Length Extrapolation"):
// each head adds a conditionally positive definite kernel of the distance d = |p_i - p_j| to its logits,
//   log variant:    b = -r1 log(1 + r2 d)
//   power variant:  b = -r1 d^r2,  r2 in (0, 2]
// with learned r1, r2 > 0 per head (and per layer unless shared_layers). Positivity is kept as the
// authors' code does (github.com/chijames/KERPLE, megatron/model/positional_embeddings.py): the
// parameters are projected back into [0.01, inf) (r2 of power: [0.01, 2]) in place at the start of every
// forward pass, a projected gradient step; the gradient is the plain one of the formula. Initialization
// as there: log r1 ~ U(0, 2), r2 ~ U(0, 1); power r1 ~ U(0, 1), r2 ~ U(0, 2).
// A function of id differences only: relative, and defined for any length.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/shape_only.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

constexpr real kEps = real(0.01);  // the authors' lower bound of every parameter
constexpr real kMaxPower = 2;      // power r2 <= 2 keeps the kernel conditionally positive definite

Initializer uniform_init(double hi) {
  return [hi](Array& v, Rng& rng) {
    for (auto& x : v) x = static_cast<real>(hi * rng.uniform());
  };
}

struct KerpleTable : Module {
  KerpleTable(std::size_t H, bool power) {
    r1 = add_parameter("r1", {H}, ParamKind::bias, uniform_init(power ? 1.0 : 2.0));
    r2 = add_parameter("r2", {H}, ParamKind::bias, uniform_init(power ? 2.0 : 1.0));
  }
  Tensor r1, r2;  // (H)
};

class Kerple : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  Kerple(const ModelDims& dims, bool power, bool shared_layers)
      : H_(dims.n_heads), power_(power), shared_layers_(shared_layers) {
    for (std::size_t l = 0; l < (shared_layers ? 1 : dims.n_layers); ++l)  // null: a layer it does not run in
      tables_.push_back(!dims.makes_table(l, shared_layers) ? nullptr :
                        &add_module("tables." + std::to_string(l), std::make_unique<KerpleTable>(H_, power)));
  }

  void begin_forward(const IndexArray& positions) override {
    biases_.clear();
    for (KerpleTable* t : tables_) {  // the projection onto the allowed range
      if (!t) continue;
      project(t->r1, kEps, std::numeric_limits<real>::infinity());
      project(t->r2, kEps, power_ ? kMaxPower : std::numeric_limits<real>::infinity());
    }
  }

  bool bias_by_query_rows() const override { return true; }

  // (1 or B, H, T, T), or the rows of ctx.tile
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext& ctx) override {
    const KerpleTable& k = *tables_.at(shared_layers_ ? 0 : ctx.layer);
    if (ctx.tile.active()) return bias(k, distance(ctx.positions, ctx.shared_positions, ctx.tile));
    if (!seen_.same(ctx.positions)) {  // new ids: new distances (kept while the ids repeat)
      begin_forward(ctx.positions);  // a caller outside the model (a probe) may not have
      distance_ = distance(ctx.positions, ctx.shared_positions, ctx.tile);
      seen_.set(ctx.positions);
    }
    const std::size_t t = shared_layers_ ? 0 : ctx.layer;
    if (biases_.size() <= t) biases_.resize(t + 1);
    if (!biases_[t].defined()) biases_[t] = bias(k, distance_);
    return biases_[t];
  }

 private:
  // d = |p_i - p_j|: (rows, 1, Tq, Tk), one head dim to broadcast the per-head parameters against; a constant
  static Tensor distance(const IndexArray& positions, bool shared, const QueryTile& tile) {
    Array d = pairwise_difference(positions, shared, tile);
    if (!shape_only())  // core/shape_only.hpp: no values
      for (auto& x : d) x = std::abs(x);
    d.reshape({d.shape()[0], std::size_t(1), d.shape()[1], d.shape()[2]});
    return Tensor(std::move(d));
  }

  Tensor bias(const KerpleTable& k, const Tensor& d) const {
    const Tensor neg_r1 = reshape(neg(k.r1), {1, H_, 1, 1}), r2 = reshape(k.r2, {1, H_, 1, 1});
    return power_ ? mul(neg_r1, pow(d, r2))                       // -r1 d^r2
                  : mul(neg_r1, log(add_scalar(mul(r2, d), 1)));  // -r1 log(1 + r2 d)
  }

  static void project(Tensor& p, real lo, real hi) {
    if (shape_only()) return;  // core/shape_only.hpp: no values
    for (auto& x : p.mutable_value()) x = std::min(std::max(x, lo), hi);
  }

  std::size_t H_;
  bool power_, shared_layers_;
  std::vector<KerpleTable*> tables_;
  SeenPositions seen_;
  Tensor distance_;             // (rows, 1, T, T), constant
  std::vector<Tensor> biases_;  // this forward's bias per table
};

}  // namespace

PELAB_REGISTER_ENCODING(kerple, encoding_spec("kerple",
    "learned kernel of the distance per head: -r1 log(1 + r2 d) or -r1 d^r2 (Chi et al. 2022)")
    .relative()
    .params({
        choice_param("variant", "log", {"log", "power"},
                     "log: -r1 log(1 + r2 |i-j|); power: -r1 |i-j|^r2 with r2 in (0, 2]"),
        bool_param("shared_layers", false,
            "one (r1, r2) per head for all layers; false: per layer (as the authors)"),
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Kerple>(dims, p.get_string("variant") == "power", p.get_bool("shared_layers"));
    }));

}  // namespace pelab
