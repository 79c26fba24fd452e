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
    }));

}  // namespace
}  // namespace pelab
