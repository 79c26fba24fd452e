// The model's fast paths against what they replace.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/ops/cross_entropy.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"
#include "layers/positional/encoding.hpp"
#include "model_helpers.hpp"

using namespace pelab;

namespace {

std::vector<std::string> claiming_encodings() {
  std::vector<std::string> out;
  ModelDims dims = test::small_config("none").dims();
  for (const std::string& name : EncodingRegistry::instance().names())
    if (make_encoding(name, resolve_encoding_params(name, {}, dims), dims)->leaves_qk_alone()) out.push_back(name);
  return out;
}

// One forward and backward of the cross-entropy, the model's gradients zeroed first: the loss.
Array loss_and_backward(Transformer& m, const IndexArray& tokens, const IndexArray& pos, const IndexArray& targets) {
  Tape::current().clear();
  m.zero_grad();
  const Tensor l = cross_entropy(m.forward(tokens, pos), targets);
  l.backward();
  return l.value();
}

// The same model twice, the second always on split heads (the reference), and a batch (3, 9) for them.
struct FastAndSplit {
  std::unique_ptr<Transformer> fast, ref;
  IndexArray tokens, targets;
};
FastAndSplit fast_and_split(const ModelConfig& cfg) {
  FastAndSplit m{test::make_model(cfg, 5), test::make_model(cfg, 5), {}, {}};
  m.ref->set_packed_attention(false);
  Rng rng(9);
  m.tokens = test::random_tokens(3, 9, cfg.vocab, rng);
  m.targets = test::random_tokens(3, 9, cfg.vocab, rng);
  return m;
}

// Loss and backward of both models at ids `pos`: every parameter's gradient within 1e-5 of the largest.
void check_same_gradients(const FastAndSplit& m, const IndexArray& pos) {
  for (Transformer* model : {m.fast.get(), m.ref.get()}) loss_and_backward(*model, m.tokens, pos, m.targets);
  const auto pf = m.fast->parameters(), pr = m.ref->parameters();
  REQUIRE(pf.size() == pr.size());
  for (std::size_t i = 0; i < pf.size(); ++i) {
    INFO(pf[i].name);
    REQUIRE(pf[i].tensor.has_grad() == pr[i].tensor.has_grad());
    if (!pf[i].tensor.has_grad()) continue;
    const Array &gf = pf[i].tensor.grad(), &gr = pr[i].tensor.grad();
    REQUIRE(gf.shape() == gr.shape());
    double mx = 0, diff = 0;
    for (std::size_t j = 0; j < gf.size(); ++j) {
      mx = std::max(mx, std::abs(double(gr.data()[j])));
      diff = std::max(diff, std::abs(double(gf.data()[j]) - double(gr.data()[j])));
    }
    CHECK(diff <= 1e-5 * (mx + 1e-3));
  }
}

}  // namespace

TEST_CASE("an encoding that says it leaves q and k alone does nothing to them and never reads them",
          "[fast_paths][positional]") {
  // The transformer skips the head split and encode_qk for these encodings, and asks for the bias with
  // undefined q and k.
  const ModelDims dims = test::small_config("none").dims();
  Rng rng(3);
  const std::vector<std::string> names = claiming_encodings();
  for (const std::string& name : names) {
    INFO(name);
    auto enc = make_encoding(name, resolve_encoding_params(name, {}, dims), dims);
    const IndexArray pos = default_positions(2, 6);
    enc->begin_forward(pos);
    const std::size_t hs = dims.head_dim;
    Array qa(Shape{2, dims.n_heads, 6, hs}), ka(Shape{2, dims.n_heads, 6, hs});
    for (auto& v : qa) v = static_cast<real>(rng.normal());
    for (auto& v : ka) v = static_cast<real>(rng.normal());
    Tensor q(qa, true), k(ka, true);
    const Tensor q0 = q, k0 = k;
    Array xa(Shape{2, 6, dims.d_model});  // the layer input, for the content-dependent ones (FoX)
    for (auto& v : xa) v = static_cast<real>(rng.normal());
    const Tensor x(xa);
    for (std::size_t layer = 0; layer < dims.n_layers; ++layer) {
      const AttentionContext ctx{pos, layer, true, &x};
      enc->encode_qk(q, k, ctx);
      const Tensor with = enc->attention_bias(q, k, ctx), without = enc->attention_bias(Tensor(), Tensor(), ctx);
      REQUIRE(with.defined() == without.defined());
      if (with.defined()) {
        REQUIRE(with.shape() == without.shape());
        CHECK(with.value() == without.value());
      }
    }
    CHECK(q.impl() == q0.impl());
    CHECK(k.impl() == k0.impl());
    CHECK(q.version() == 0);
    CHECK(k.version() == 0);
  }
  CHECK(names.size() >= 1);
  // Those that do touch q and k (or read them) must not claim it.
  for (const std::string name : {"rope", "xpos", "cope"}) CHECK(std::find(names.begin(), names.end(), name) == names.end());
}

TEST_CASE("the packed attention path computes what the split-heads path computes, for every encoding that takes it",
          "[fast_paths][positional]") {
  const std::vector<std::string> names = claiming_encodings();
  REQUIRE(names.size() >= 1);
  for (const std::string& name : names) {
    INFO(name);
    const FastAndSplit m = fast_and_split(test::small_config(name));
    IndexArray pos = default_positions(3, 9);
    pos(1, 0) = 2;  // rows with different ids: the per-row (B, ...) bias path
    for (std::size_t t = 1; t < 9; ++t) pos(1, t) = pos(1, t - 1) + 1 + static_cast<std::int32_t>(t % 2);
    check_same_gradients(m, pos);
  }
}

// Canon B convolves the packed projection before either path splits it (layers/canon.hpp).
TEST_CASE("with Canon B the packed and rotated paths compute what split heads compute", "[fast_paths][canon]") {
  for (const std::string name : {"none", "alibi", "rope"}) {
    INFO(name);
    ModelConfig c = test::small_config(name);
    c.canon.points = "AB";
    const FastAndSplit m = fast_and_split(c);
    check_same_gradients(m, default_positions(3, 9));
  }
}

namespace {
// Encodings (with parameter variants) whose q/k transform is a rotation: rotary_qk gives tables.
struct RotaryCase {
  std::string name;
  std::map<std::string, Value> params;
};
std::vector<RotaryCase> rotary_cases() {
  std::vector<RotaryCase> out;
  const ModelDims dims = test::small_config("none").dims();
  const IndexArray pos = default_positions(2, 6);
  for (const std::string& name : EncodingRegistry::instance().names()) {
    auto enc = make_encoding(name, resolve_encoding_params(name, {}, dims), dims);
    enc->begin_forward(pos);
    if (enc->rotary_qk(AttentionContext{pos, 0, true})) out.push_back({name, {}});
  }
  out.push_back({"rope", {{"layout", Value(std::string("half"))}, {"fraction", Value(0.5)}}});
  out.push_back({"rope", {{"scaling", Value(std::string("yarn"))}, {"factor", Value(4.0)}}});
  return out;
}
}  // namespace

TEST_CASE("an encoding that gives rotary tables rotates q and k by them and adds nothing else to attention",
          "[fast_paths][positional]") {
  const std::vector<RotaryCase> cases = rotary_cases();
  std::vector<std::string> names;
  for (const RotaryCase& c : cases) names.push_back(c.name);
  for (const std::string want : {"rope", "xpos", "hope"}) CHECK(std::count(names.begin(), names.end(), want) >= 1);
  Rng rng(4);
  for (const RotaryCase& c : cases) {
    INFO(c.name << " with " << c.params.size() << " parameters set");
    const ModelDims dims = test::small_config(c.name, c.params).dims();
    auto enc = make_encoding(c.name, resolve_encoding_params(c.name, c.params, dims), dims);
    IndexArray pos = default_positions(2, 6);
    pos(1, 0) = 3;  // rows with different ids
    for (std::size_t t = 1; t < 6; ++t) pos(1, t) = pos(1, t - 1) + 2;
    enc->begin_forward(pos);
    Array qa(Shape{2, dims.n_heads, 6, dims.head_dim}), ka(qa.shape());
    for (auto& v : qa) v = static_cast<real>(rng.normal());
    for (auto& v : ka) v = static_cast<real>(rng.normal());
    for (std::size_t layer = 0; layer < dims.n_layers; ++layer) {
      const AttentionContext ctx{pos, layer, false};
      const auto r = enc->rotary_qk(ctx);
      REQUIRE(r);
      Tensor q(qa), k(ka);
      enc->encode_qk(q, k, ctx);
      const bool q_same = q.value() == rotary(Tensor(qa), r->q, r->layout).value();
      const bool k_same = k.value() == rotary(Tensor(ka), r->k, r->layout).value();
      CHECK(q_same);
      CHECK(k_same);
      CHECK_FALSE(enc->attention_bias(q, k, ctx).defined());
      CHECK_FALSE(enc->relative_kv(ctx).defined());
      AttentionOptions o;
      enc->choose_normalizer(o);
      CHECK(o.normalizer == Normalizer::softmax);
    }
  }
}

TEST_CASE("the rotated packed projection computes what split heads compute, bit for bit", "[fast_paths][positional]") {
  for (const RotaryCase& c : rotary_cases()) {
    INFO(c.name << " with " << c.params.size() << " parameters set");
    const FastAndSplit m = fast_and_split(test::small_config(c.name, c.params));
    IndexArray pos = default_positions(3, 9);
    for (std::size_t t = 0; t < 9; ++t) pos(2, t) = static_cast<std::int32_t>(3 * t + 1);
    const Array loss_fast = loss_and_backward(*m.fast, m.tokens, pos, m.targets);
    const bool same_loss = loss_fast == loss_and_backward(*m.ref, m.tokens, pos, m.targets);
    CHECK(same_loss);
    const auto pf = m.fast->parameters(), pr = m.ref->parameters();
    REQUIRE(pf.size() == pr.size());
    for (std::size_t i = 0; i < pf.size(); ++i) {
      INFO(pf[i].name);
      REQUIRE(pf[i].tensor.has_grad() == pr[i].tensor.has_grad());
      const bool same = !pf[i].tensor.has_grad() || pf[i].tensor.grad() == pr[i].tensor.grad();
      CHECK(same);
    }
  }
}
