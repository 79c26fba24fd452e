// FIRE (Li et al. 2023, "Functional Interpolation for Relative Positions Improves Long Context
// Transformers"): a small MLP of the normalized log distance, one output per head (or one for all):
//   bias[h, i, j] = f_theta( psi(p_i - p_j) / psi(max(L, p_i)) )_h,   psi(x) = log(|c x| + 1),
// with f_theta: 1 -> hidden -> ReLU -> H, and learned c and L = |L_multiplier * init_L|. p_i, p_j are
// position ids (randomized or offset ids work). As in the paper's reference code: c starts at 0.1,
// L_multiplier at 1 with init_L = 512 fixed, hidden width 32, eps = 1e-6 added to the normalizer; the
// MLP's Linear layers are initialized as every pelab Linear (model.init_std). Dividing by psi(max(L, p_i))
// makes the bias depend on the query's id once p_i > L: FIRE is not translation invariant.
#include <algorithm>
#include <cmath>

#include "core/ops/elementwise.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/basic.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

constexpr real kEps = real(1e-6);  // keeps the normalizer away from 0 (the reference's eps)

Initializer constant(double v) {
  return [v](Array& a, Rng&) { a.fill(static_cast<real>(v)); };
}

struct FireTable : Module {
  FireTable(std::size_t hidden, std::size_t outputs, double init_c) {
    fc = &add_module("fc", std::make_unique<Linear>(1, hidden));
    out = &add_module("out", std::make_unique<Linear>(hidden, outputs));
    c = add_parameter("c", {1}, ParamKind::bias, constant(init_c));
    L_multiplier = add_parameter("L_multiplier", {1}, ParamKind::bias, constant(1.0));
  }
  Linear *fc, *out;
  Tensor c, L_multiplier;  // (1)
};

class Fire : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  Fire(const ModelDims& dims, std::size_t hidden, double init_c, double init_L, bool per_head, bool shared_layers)
      : init_L_(static_cast<real>(init_L)), shared_layers_(shared_layers) {
    for (std::size_t l = 0; l < (shared_layers ? 1 : dims.n_layers); ++l)  // null: a layer it does not run in
      tables_.push_back(!dims.makes_table(l, shared_layers) ? nullptr :
                        &add_module("tables." + std::to_string(l),
                                    std::make_unique<FireTable>(hidden, per_head ? dims.n_heads : 1, init_c)));
  }

  void begin_forward(const IndexArray&) override { biases_.clear(); }

  bool bias_by_query_rows() const override { return true; }

  // (1 or B, H or 1, T, T), or the rows of ctx.tile
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext& ctx) override {
    const FireTable& table = *tables_.at(shared_layers_ ? 0 : ctx.layer);
    if (ctx.tile.active())
      return bias(table, Tensor(pairwise_difference(ctx.positions, ctx.shared_positions, ctx.tile)),
                  Tensor(query_positions(ctx.positions, ctx.shared_positions, ctx.tile)));
    if (!seen_.same(ctx.positions)) {  // constants of the ids: p_i - p_j (rows, T, T) and p_i (rows, T, 1)
      difference_ = Tensor(pairwise_difference(ctx.positions, ctx.shared_positions));
      query_ = Tensor(query_positions(ctx.positions, ctx.shared_positions, ctx.tile));
      seen_.set(ctx.positions);
      biases_.clear();
    }
    const std::size_t t = shared_layers_ ? 0 : ctx.layer;
    if (biases_.size() <= t) biases_.resize(t + 1);
    if (!biases_[t].defined()) biases_[t] = bias(table, difference_, query_);
    return biases_[t];
  }

 private:
  // difference (rows, Tq, Tk), query ids (rows, Tq, 1) -> (rows, H or 1, Tq, Tk)
  Tensor bias(const FireTable& f, const Tensor& difference, const Tensor& query) const {
    // log1p, not log(1 + .): 1 + |c x| in float32 would drop the low digits of a small |c x| (c near
    // its allowed minimum 1e-6), and psi is then divided by another small psi.
    auto psi = [&](const Tensor& x) { return log1p(abs(mul(f.c, x))); };
    const Tensor threshold = abs(mul_scalar(f.L_multiplier, init_L_));             // (1)
    const Tensor normalizer = add_scalar(psi(maximum(query, threshold)), kEps);  // (rows, Tq, 1)
    const Tensor x = div(psi(difference), normalizer);                           // (rows, Tq, Tk)
    const Shape& s = x.shape();
    const Tensor h = relu(f.fc->forward(reshape(x, {s[0], s[1], s[2], 1})));     // (rows, T, T, hidden)
    return permute(f.out->forward(h), {0, 3, 1, 2});                              // (rows, H or 1, T, T)
  }

  real init_L_;
  bool shared_layers_;
  std::vector<FireTable*> tables_;
  SeenPositions seen_;
  Tensor difference_, query_;   // constants of the ids
  std::vector<Tensor> biases_;  // this forward's bias per table
};

}  // namespace

PELAB_REGISTER_ENCODING(fire, encoding_spec("fire",
    "MLP of the log distance normalized by log max(L, query id), per head (Li et al. 2023)")
    .relative(false)  // only while every query id is below L
    .params({
        integer_param("hidden", 32, "width of the MLP 1 -> hidden -> heads").in(1.0, 4096.0),
        number_param("init_c", 0.1, "initial c of psi(x) = log(|c x| + 1)").in(1e-6, 1e3),
        number_param("init_L", 512.0,
            "L = |L_multiplier * init_L| with L_multiplier learned from 1: "
            "query ids below L share one normalizer").in(1.0, 1e9),
        bool_param("per_head", true, "one MLP output per head; false: one shared by all heads"),
        bool_param("shared_layers", false, "one FIRE for all layers; false: one per layer"),
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Fire>(dims, static_cast<std::size_t>(p.get_int("hidden")), p.get_number("init_c"),
                                    p.get_number("init_L"), p.get_bool("per_head"), p.get_bool("shared_layers"));
    }));

}  // namespace pelab
