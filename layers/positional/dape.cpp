// DAPE (Zheng et al., "DAPE: Data-Adaptive Positional Encoding for Length Extrapolation", NeurIPS 2024):
// a static bias B (Kerple's log kernel, the paper's headline variant, or ALiBi) corrected per
// (query, key) pair by a small MLP that reads that pair's attention scores and biases across the heads,
//   bias = B + f([S ; B]),   S = q k^T / sqrt(hs) (before the mask),   f: Linear(2H, width) -> LeakyReLU -> Linear(width, H),
// so the logits are S + B + f(S, B). As the authors' code (chuanyang-Zheng/DAPE, megatron/model/
// positional_embeddings.py, classes AliBi_C / ParallelKerpleLog_C): width 32, LeakyReLU slope 0.01, an MLP
// per layer. The static bias is built by pelab's own alibi or kerple encoding at its defaults (its
// parameters under pos.base.*; a config setting [encoding.kerple] or [encoding.alibi] for it is refused,
// experiments/config/config_effect.cpp); the MLP's Linear layers are initialized as
// every pelab Linear. Reads q and k; a function of id differences and content: relative.
#include <cmath>
#include <string>

#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/basic.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

constexpr real kSlope = real(0.01);  // PyTorch's LeakyReLU default, as the authors

struct DapeMlp : Module {
  DapeMlp(std::size_t H, std::size_t width) {
    fc = &add_module("fc", std::make_unique<Linear>(2 * H, width));
    out = &add_module("out", std::make_unique<Linear>(width, H));
  }
  Linear *fc, *out;
};

class Dape : public PositionalEncoding {
 public:
  Dape(const ModelDims& dims, const std::string& base, std::size_t width) : H_(dims.n_heads) {
    base_ = &add_module("base", make_encoding(base, resolve_encoding_params(base, {}, dims), dims));
    for (std::size_t l = 0; l < dims.n_layers; ++l)  // null: a layer the layout gives another encoding
      mlps_.push_back(!dims.runs_in(l) ? nullptr :
                      &add_module("mlps." + std::to_string(l), std::make_unique<DapeMlp>(H_, width)));
  }
  void begin_forward(const IndexArray& positions) override { base_->begin_forward(positions); }
  // Each pair's correction reads only that pair's scores and biases: a query tile's rows need q's rows
  // alone, and both bases give their bias by tiles.
  bool bias_by_query_rows() const override { return base_->bias_by_query_rows(); }

  // (B, H, Tq, Tk): every query and key, or a tile's query rows (q holds only those) against its keys
  Tensor attention_bias(const Tensor& q, const Tensor& k, const AttentionContext& ctx) override {
    const std::size_t B = q.size(0), Tq = q.size(2), Tk = k.size(2), hs = q.size(3);
    const Tensor S = mul_scalar(matmul(q, k, false, true), real(1) / std::sqrt(real(hs)));  // (B, H, Tq, Tk)
    const Tensor Bias = broadcast_to(base_->attention_bias(Tensor(), Tensor(), ctx), {B, H_, Tq, Tk});
    const Tensor x = permute(concat({S, Bias}, 1), {0, 2, 3, 1});  // (B, Tq, Tk, 2H)
    const DapeMlp& m = *mlps_.at(ctx.layer);
    const Tensor h = m.fc->forward(x);
    const Tensor f = m.out->forward(sub(relu(h), mul_scalar(relu(neg(h)), kSlope)));  // LeakyReLU: (B, T, T, H)
    return add(Bias, permute(f, {0, 3, 1, 2}));  // (B, H, Tq, Tk)
  }

 private:
  std::size_t H_;
  PositionalEncoding* base_;
  std::vector<DapeMlp*> mlps_;
};

// The base encoding's cost, then per layer (X = B H Tq T, W = B Tq T width; Tq the bias's query rows: T
// with a tape, one tile without): the scores, the broadcast bias, their concatenation and its permuted
// copy (2X each), the hidden layer and the LeakyReLU's five temporaries (W), the output, its permuted
// copy and the sum. A tape keeps the MLP's inputs (2X, W), the two ReLUs' outputs (W) and the bias (X)
// of every layer.
EncodingCost dape_cost(const Params& p, const ModelDims& d, const ForwardShape& s) {
  const std::string base = p.get_string("base");
  const std::size_t width = std::size_t(p.get_int("width"));
  EncodingCost c = encoding_cost(base, resolve_encoding_params(base, {}, d), d, s);
  const double rows = double(s.bias_query_rows()), T = double(s.tokens);
  const double X = double(s.batch * d.n_heads) * rows * T, W = double(s.batch * width) * rows * T;
  const double L = double(d.n_layers);
  c.parameters += d.layers_run() * ((2 * d.n_heads + 1) * width + (width + 1) * d.n_heads);
  c.splits_heads = true;
  if (s.training) {
    c.layers.hold(2 * X, L).hold(W, 3 * L).hold(X, L).add_scratch(X, 3).add_scratch(2 * X).add_scratch(W, 3);
    c.layers.add_backward(2 * X, 2).add_backward(W, 3).add_backward(X, 3);
  } else {
    c.layers.hold(X, 5).hold(2 * X, 2).hold(W, 6);
  }
  return c;
}

PELAB_REGISTER_ENCODING(dape, encoding_spec("dape",
    "a static bias (kerple or alibi) plus an MLP of each pair's scores and biases across heads (Zheng et al. 2024)")
    .relative()
    .params({
        choice_param("base", "kerple", {"kerple", "alibi"},
                     "the static bias: Kerple's log kernel (the paper's headline) or ALiBi; its parameters at their "
                     "defaults"),
        integer_param("width", 32, "hidden width of the MLP (the authors': 32)").in(1.0, 4096.0),
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Dape>(dims, p.get_string("base"), std::size_t(p.get_int("width")));
    })
    .cost(dape_cost));

}  // namespace
}  // namespace pelab
