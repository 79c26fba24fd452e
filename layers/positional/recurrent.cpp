// A recurrent layer in front of the transformer: an RNN needs no position encoding, its structure
// carries order, so put one after the input and add none (Neishi & Yoshinaga 2019, "On the Relation
// between Position Information and Sentence Length in Neural Machine Translation", CoNLL, replace the
// position encoding with an RNN; Su 2021, kexue.fm/archives/8130, lists it as the "recursive" kind). One
// GRU or LSTM layer (`cell`), hidden size d_model, runs over the token embeddings from the first token
// on, zero initial state; its outputs replace them (residual = false: RNN, then the transformer, as in
// both) or are added to them (residual = true). Core op: core/ops/recurrent.hpp, PyTorch's equations
// and gate order; the parameters are named as torch.nn.GRU / nn.LSTM's (pos.rnn.weight_ih_l0, ...) and
// initialized as there, U(-1/sqrt(d), 1/sqrt(d)), under every scheme.
// Position ids are ignored: the model is invariant to any change of ids (declared relative), yet it
// is not permutation-equivariant even without a causal mask, since the recurrence reads tokens in
// order. The cost is a sequential loop over T in every forward and backward.
#include <cmath>

#include "core/ops/elementwise.hpp"
#include "core/ops/recurrent.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {
namespace {

Initializer rnn_uniform(std::size_t hidden) {
  const double bound = 1.0 / std::sqrt(double(hidden));
  return [bound](Array& v, Rng& rng) {
    for (auto& x : v) x = static_cast<real>(bound * (2 * rng.uniform() - 1));
  };
}

// torch.nn.GRU / nn.LSTM's parameters, under the same names.
struct RnnParams : Module {
  RnnParams(std::size_t gates, std::size_t d) {
    w_ih = add_parameter("weight_ih_l0", {gates * d, d}, ParamKind::weight, rnn_uniform(d));
    w_hh = add_parameter("weight_hh_l0", {gates * d, d}, ParamKind::weight, rnn_uniform(d));
    b_ih = add_parameter("bias_ih_l0", {gates * d}, ParamKind::bias, rnn_uniform(d));
    b_hh = add_parameter("bias_hh_l0", {gates * d}, ParamKind::bias, rnn_uniform(d));
  }
  Tensor w_ih, w_hh, b_ih, b_hh;
};

class Recurrent : public PositionalEncoding {
 public:
  bool leaves_qk_alone() const override { return true; }  // the attention runs on the packed q, k, v
  Recurrent(bool lstm_cell, bool residual, std::size_t d) : lstm_(lstm_cell), residual_(residual) {
    rnn_ = &add_module("rnn", std::make_unique<RnnParams>(lstm_ ? 4 : 3, d));
  }

  // x (B, T, C) -> (B, T, C); the ids are not read.
  Tensor encode_input(const Tensor& x, const IndexArray&) override {
    const RnnParams& r = *rnn_;
    const Tensor h = lstm_ ? lstm(x, Tensor(), Tensor(), r.w_ih, r.w_hh, r.b_ih, r.b_hh)
                           : gru(x, Tensor(), r.w_ih, r.w_hh, r.b_ih, r.b_hh);
    return residual_ ? add(x, h) : h;
  }

 private:
  bool lstm_, residual_;
  RnnParams* rnn_;
};

PELAB_REGISTER_ENCODING(recurrent, encoding_spec("recurrent",
    "a GRU or LSTM over the token embeddings in front of the first block; no position vector")
    .relative()  // ids are ignored altogether
    .params({
        choice_param("cell", "gru", {"gru", "lstm"},
                     "the recurrence (torch.nn.GRU / nn.LSTM equations, one layer, hidden size d_model)"),
        bool_param("residual", false,
            "false: the RNN's outputs replace the embeddings; true: they are added to them"),
    })
    .make([](const Params& p, const ModelDims& dims) {
      return std::make_unique<Recurrent>(p.get_string("cell") == "lstm", p.get_bool("residual"), dims.d_model);
    })
    .input_level()
    .reads_position_ids(false));

}  // namespace
}  // namespace pelab
