// QK-norm and Canon layers (layers/qk_norm.hpp, layers/canon.hpp) beyond the PyTorch parity fixtures: their
// initialization under every scheme, Canon's one-sidedness (also in a bidirectional model), and that Canon
// with zero weights and its residual is the model without it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/tape.hpp"
#include "layers/canon.hpp"
#include "model_helpers.hpp"

using namespace pelab;
using namespace pelab::test;

TEST_CASE("Canon weights start as torch's Conv1d default and QK-norm's gains at 1, under every init scheme",
          "[canon][qk_norm][init]") {
  for (InitScheme scheme : {InitScheme::gpt2, InitScheme::scaled, InitScheme::pytorch}) {
    ModelConfig c = small_config("rope");
    c.d_model = 64, c.qk_norm = "on", c.canon.points = "ABCD";
    Transformer m(c);
    InitOptions o = c.init_options();
    o.scheme = scheme;
    Rng rng(3);
    init_parameters(m, rng, o);
    std::size_t canons = 0, gains = 0;
    for (const Parameter& p : m.parameters()) {
      INFO(init_scheme_name(scheme) << " " << p.name);
      const Array& v = p.tensor.value();
      if (p.name.find(".canon_") != std::string::npos) {  // uniform(-1/2, 1/2) at K = 4: std 1/sqrt(12)
        ++canons;
        double sq = 0;
        for (real x : v) sq += double(x) * x;
        CHECK(std::all_of(v.begin(), v.end(), [](real x) { return std::abs(x) <= 0.5; }));
        CHECK(std::sqrt(sq / double(v.size())) == Approx(1 / std::sqrt(12.0)).epsilon(0.15));
      }
      if (p.name.find("_norm.weight") != std::string::npos) {
        ++gains;
        CHECK(std::all_of(v.begin(), v.end(), [](real x) { return x == 1; }));
      }
    }
    CHECK(canons == 4 * c.n_layers);
    CHECK(gains == 2 * c.n_layers);
  }
}

TEST_CASE("a Canon layer mixes in earlier tokens only, whatever model.causal says", "[canon]") {
  Canon canon(6, 4, true);
  Rng rng(5);
  init_parameters(canon, rng);
  Array x(Shape{2, 9, 6});
  for (auto& v : x) v = static_cast<real>(rng.normal());
  const NoGrad ng;
  const Array base = canon.forward(Tensor(x)).value();
  for (std::size_t t : {std::size_t(0), std::size_t(4)}) {
    Array later = x;
    for (std::size_t s = t + 1; s < 9; ++s)
      for (std::size_t c = 0; c < 6; ++c) later(1, s, c) += 1;
    const Array out = canon.forward(Tensor(later)).value();
    bool before_same = true, after_changed = false;
    for (std::size_t s = 0; s < 9; ++s)
      for (std::size_t c = 0; c < 6; ++c) {
        if (s <= t) before_same = before_same && out(1, s, c) == base(1, s, c);
        else after_changed = after_changed || out(1, s, c) != base(1, s, c);
      }
    CHECK(before_same);
    CHECK(after_changed);
  }
  // In a bidirectional model the attention sees every token; Canon still adds only the earlier ones.
  ModelConfig c = small_config("none");
  c.causal = false, c.canon.points = "ABCD";
  CHECK_NOTHROW(Transformer(c));
}

TEST_CASE("Canon layers with zero weights and their residual are the model without them", "[canon]") {
  for (const char* enc : {"rope", "alibi"}) {
    INFO(enc);
    ModelConfig plain = small_config(enc), with = plain;
    with.canon.points = "ABCD";
    auto a = make_model(plain, 4), b = make_model(with, 4);
    for (const Parameter& p : b->parameters()) {
      Tensor t = p.tensor;
      if (p.name.find(".canon_") != std::string::npos) t.mutable_value().fill(0);
      else t.mutable_value() = a->parameter(p.name).value();
    }
    Rng rng(6);
    const IndexArray tok = random_tokens(2, 10, plain.vocab, rng), pos = default_positions(2, 10);
    const NoGrad ng;
    const Array la = a->forward(tok, pos).value(), lb = b->forward(tok, pos).value();
    double worst = 0;
    for (std::size_t i = 0; i < la.size(); ++i) worst = std::max(worst, double(std::abs(la.data()[i] - lb.data()[i])));
    CHECK(worst < 1e-5);  // Canon D takes the MLP off its fused linear + GELU: not the same bits
  }
}
