// FoX, the Forgetting Transformer (Lin et al., "Forgetting Transformer: Softmax Attention with a Forget
// Gate", ICLR 2025; "data-dependent ALiBi"): each head of each layer has a forget gate computed from the
// layer's input, f_t = sigmoid(w_h . x_t + b_h), and the logits get the log of the gates between key and query,
//   D_ij = sum_{j < l <= i} log f_l = c_i - c_j,   c_t = sum_{l <= t} log f_l   (a cumulative sum over tokens).
// x_t is the attention's input (after the block's LayerNorm: AttentionContext::input). With every f = e^-m
// it is ALiBi with slope m; learned from content, a head can keep or forget. The gate projection is a
// trainable (H, C) weight and (H) bias per layer (pos.gates.<l>.weight / .bias); bias_init sets b's start
// (the default 0 starts every head at f = 1/2). The "Pro" variant's output gate, QK-norm and KV-shift are
// not included. Position ids are never read: relative.
#include <string>

#include "core/ops/cumsum.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

struct ForgetGate : Module {
  ForgetGate(std::size_t C, std::size_t H, double bias_init) {
    weight = add_parameter("weight", {H, C}, ParamKind::weight, C);
    bias = add_parameter("bias", {H}, ParamKind::bias, [bias_init](Array& v, Rng&) { v.fill(real(bias_init)); });
  }
  Tensor weight, bias;  // (H, C), (H)
};

class Fox : public PositionalEncoding {
 public:
  Fox(const ModelDims& dims, double bias_init) : H_(dims.n_heads) {
    for (std::size_t l = 0; l < dims.n_layers; ++l)
      gates_.push_back(&add_module("gates." + std::to_string(l),
                                   std::make_unique<ForgetGate>(dims.d_model, dims.n_heads, bias_init)));
  }
  bool leaves_qk_alone() const override { return true; }  // the bias reads x, not q or k

  // (B, H, T, T): c_i - c_j; the attention masks the future keys (where it is not a log of gates).
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext& ctx) override {
    if (!ctx.input) throw Error("fox: the attention layer gave no input to compute the forget gates from");
    const Tensor& x = *ctx.input;  // (B, T, C)
    const std::size_t B = x.size(0), T = x.size(1);
    const ForgetGate& g = *gates_.at(ctx.layer);
    const Tensor log_f = neg(softplus(neg(linear(x, g.weight, g.bias))));  // log sigmoid: (B, T, H)
    const Tensor c = permute(cumsum(log_f, 1), {0, 2, 1});                 // (B, H, T)
    return sub(reshape(c, {B, H_, T, 1}), reshape(c, {B, H_, 1, T}));      // (B, H, T, T)
  }

 private:
  std::size_t H_;
  std::vector<ForgetGate*> gates_;
};

// Per layer: the gates' logits, log f and c (N, H) (three saved for backward), the bias (B, H, T, T), alive
// while the attention runs beside its probabilities (saved by nothing: the attention never reads its value);
// backward: its gradient and the small ones.
EncodingCost fox_cost(const Params&, const ModelDims& d, const ForwardShape& s) {
  const double N = double(s.batch * s.tokens), H = double(d.n_heads), X = double(s.batch) * H * double(s.tokens * s.tokens);
  EncodingCost c;
  c.parameters = d.n_layers * d.n_heads * (d.d_model + 1);
  c.layers.hold(N * H, s.training ? 5.0 * double(d.n_layers) : 5.0).hold(X);
  if (s.training) c.layers.add_backward(X).add_backward(N * H, 4);
  return c;
}

PELAB_REGISTER_ENCODING(fox, EncodingSpec{
    "fox",
    "FoX forget gates: logits + sum of log sigmoid(w_h . x_l + b_h) over the tokens between key and query (Lin et al. 2025)",
    true,  // relative: position ids are never read
    {number_param("bias_init", 0.0, "initial gate bias b: f = sigmoid(w.x + b) starts near sigmoid(b) (0: 1/2)")
         .in(-20.0, 20.0)},
    nullptr,
    [](const Params& p, const ModelDims& dims) { return std::make_unique<Fox>(dims, p.get_number("bias_init")); },
    fox_cost,
});

}  // namespace
}  // namespace pelab
