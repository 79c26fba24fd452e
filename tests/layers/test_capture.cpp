// A forward capture (layers/capture.hpp, what pelab.Model.activations reads) records every layer on the
// path training takes: the logits, the loss and every gradient are those of the same forward without it,
// to the bit (the split attention path would not give them: Shaw's logits differ between packed and split).
#include <catch2/catch.hpp>

#include <cmath>

#include "core/ops/cross_entropy.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"
#include "layers/capture.hpp"
#include "layers/positional/encoding.hpp"
#include "model_helpers.hpp"

using namespace pelab;

namespace {

struct LossAndGrads {
  double loss = 0;
  Array logits;
  std::vector<Array> grads;
  Array embedding_grad;
};

// One forward on a tape (with `capture` set, if any), the cross-entropy and its backward.
LossAndGrads step(Transformer& m, const IndexArray& tokens, const IndexArray& pos, const IndexArray& targets,
                  ForwardCapture* capture) {
  Tape::current().clear();
  m.zero_grad();
  forward_capture() = capture;
  const Tensor logits = m.forward(tokens, pos);
  forward_capture() = nullptr;
  const Tensor loss = cross_entropy(logits, targets);
  loss.backward();
  LossAndGrads out;
  out.loss = loss.item();
  out.logits = logits.value();
  for (const Parameter& p : m.parameters()) out.grads.push_back(p.tensor.has_grad() ? p.tensor.grad() : Array());
  if (capture && capture->embeddings.has_grad()) out.embedding_grad = capture->embeddings.grad();
  Tape::current().clear();
  return out;
}

}  // namespace

TEST_CASE("a capture records every layer and leaves the loss and gradients unchanged to the bit", "[capture]") {
  const std::size_t B = 3, T = 9;
  std::vector<std::pair<std::string, ModelConfig>> cases;  // every encoding, then the features (model_helpers.hpp)
  for (const std::string& name : EncodingRegistry::instance().names()) cases.push_back({name, test::small_config(name)});
  for (const test::FeatureCase& f : test::feature_cases()) cases.push_back({f.label, test::feature_config(f)});
  for (const auto& [name, cfg] : cases) {
    INFO(name);
    auto m = test::make_model(cfg, 5);
    Rng rng(9);
    const IndexArray tokens = test::random_tokens(B, T, cfg.vocab, rng), targets = test::random_tokens(B, T, cfg.vocab, rng);
    const IndexArray pos = default_positions(B, T);
    const LossAndGrads plain = step(*m, tokens, pos, targets, nullptr);
    ForwardCapture c;
    const LossAndGrads captured = step(*m, tokens, pos, targets, &c);
    CHECK(plain.loss == captured.loss);
    CHECK(plain.logits == captured.logits);
    REQUIRE(plain.grads.size() == captured.grads.size());
    for (std::size_t i = 0; i < plain.grads.size(); ++i) CHECK(plain.grads[i] == captured.grads[i]);
    CHECK(captured.embedding_grad.size() == B * T * c.embeddings.size(2));
    REQUIRE(c.layers.size() == cfg.n_layers);
    for (const LayerCapture& l : c.layers) {
      CHECK(l.residual.shape() == Array::shape_type{B, T, cfg.d_model});
      CHECK(l.attention.shape() == Array::shape_type{B, T, cfg.d_model});
      CHECK(l.mlp_hidden.shape() == Array::shape_type{B, T, 4 * cfg.d_model});
      CHECK(l.weights.shape() == Array::shape_type{B, cfg.n_heads, T, T});
      REQUIRE(l.q.dimension() == 4);
      CHECK(l.q.shape() == l.k.shape());
      CHECK(l.v.shape() == Array::shape_type{B, cfg.n_heads, T, cfg.d_model / cfg.n_heads});
      // causal: no weight on a later key
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < cfg.n_heads; ++h)
          for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = i + 1; j < T; ++j) CHECK(l.weights(b, h, i, j) == 0);
    }
    CHECK(c.final_residual.shape() == Array::shape_type{B, T, cfg.d_model});
  }
}

TEST_CASE("a capture of the embeddings only records no layer", "[capture]") {
  const ModelConfig cfg = test::small_config("rope");
  auto m = test::make_model(cfg, 5);
  Rng rng(9);
  const IndexArray tokens = test::random_tokens(2, 5, cfg.vocab, rng), targets = test::random_tokens(2, 5, cfg.vocab, rng);
  ForwardCapture c;
  c.layers_too = false;
  const LossAndGrads g = step(*m, tokens, default_positions(2, 5), targets, &c);
  CHECK(c.layers.empty());
  CHECK(c.final_residual.dimension() == 0);  // never assigned
  CHECK(g.embedding_grad.size() == 2 * 5 * cfg.d_model);
  CHECK(forward_capture() == nullptr);
}
