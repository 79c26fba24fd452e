// PyTorch parity: the same model, weights and batch as tests/pytorch/gen_fixtures.py (Debian's torch 1.13)
// must give the same logits, loss and every parameter's gradient. Fixtures are committed; see
// tests/pytorch/README.md for the regeneration command.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/ops/cross_entropy.hpp"
#include "core/safetensors.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"

using namespace pelab;

namespace {

struct Compare {
  double worst_abs = 0, worst_rel = 0;
  std::string worst_where;
  double worst_ratio = 0;  // max of err / (atol + rtol |want|): > 1 fails
  std::string ratio_where;
  bool ok = true;
};

// allclose(a, b, rtol, atol) elementwise, remembering the worst element.
void allclose(const Array& got, const Array& want, double rtol, double atol, const std::string& what, Compare& c) {
  REQUIRE(got.size() == want.size());
  REQUIRE(got.size() > 0);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got.data()[i], w = want.data()[i];
    const double err = std::abs(g - w);
    if (!(err <= atol + rtol * std::abs(w))) c.ok = false;
    const double ratio = err / (atol + rtol * std::abs(w));
    if (!(ratio <= c.worst_ratio)) {
      c.worst_ratio = ratio;
      c.ratio_where = what + "[" + std::to_string(i) + "]: " + std::to_string(g) + " vs " + std::to_string(w);
    }
    const double rel = err / std::max(std::abs(w), 1e-12);
    if (err > c.worst_abs) {
      c.worst_abs = err;
      c.worst_rel = rel;
      c.worst_where = what + "[" + std::to_string(i) + "]: " + std::to_string(g) + " vs " + std::to_string(w);
    }
  }
}

ModelConfig fixture_config(const std::string& fixture) {
  ModelConfig c;
  c.vocab = 20;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.train_seq_len = 12;
  c.encoding = fixture == "rope_half" ? "rope" : fixture;
  if (fixture == "learned") c.encoding_params["max_len"] = Value(std::int64_t(16));
  if (fixture == "rope") c.encoding_params["layout"] = Value(std::string("interleaved"));
  if (fixture == "rope_half") c.encoding_params["layout"] = Value(std::string("half"));
  return c;
}

struct Loaded {
  SafeTensors st;
  std::unique_ptr<Transformer> model;
};

Loaded load_fixture(const std::string& fixture) {
  Loaded l;
  l.st = load_safetensors(std::string(PELAB_FIXTURES_DIR) + "/model_" + fixture + ".safetensors");
  l.model = std::make_unique<Transformer>(fixture_config(fixture));
  for (const auto& p : l.model->parameters()) {
    INFO("parameter " << p.name);
    REQUIRE(l.st.floats.count(p.name) == 1);
    const Array& w = l.st.floats.at(p.name);
    REQUIRE(w.shape() == p.tensor.shape());
    Tensor t = p.tensor;
    t.mutable_value() = w;
  }
  return l;
}

// Forward + backward of the fixture batch; returns the loss tensor.
Tensor run(Loaded& l) {
  Tape::current().clear();
  l.model->zero_grad();
  const IndexArray& tokens = l.st.ints.at("input.tokens");
  const IndexArray& positions = l.st.ints.at("input.positions");
  const IndexArray& targets = l.st.ints.at("input.targets");
  const Array& mask = l.st.floats.at("input.mask");
  Tensor logits = l.model->forward(tokens, positions);
  logits.retain_grad();
  Tensor loss = cross_entropy(logits, targets, &mask);
  loss.backward();
  return loss;
}

const std::vector<std::string> kFixtures = {"none", "learned", "sinusoidal", "rope", "rope_half"};

}  // namespace

TEST_CASE("PyTorch parity: logits, loss and every gradient for each encoding", "[parity]") {
  for (const auto& fx : kFixtures) {
    INFO("fixture model_" << fx);
    Loaded l = load_fixture(fx);
    const IndexArray& tokens = l.st.ints.at("input.tokens");
    Tensor logits = l.model->forward(tokens, l.st.ints.at("input.positions"));
    Compare cl;
    allclose(logits.value(), l.st.floats.at("out.logits"), 1e-5, 1e-6, "logits", cl);
    Tape::current().clear();
    Tensor loss = run(l);
    Compare closs;
    allclose(loss.value(), l.st.floats.at("out.loss"), 1e-5, 1e-6, "loss", closs);
    Compare cg;
    std::size_t n_grads = 0;
    for (const auto& p : l.model->parameters()) {
      REQUIRE(p.tensor.has_grad());
      REQUIRE(l.st.floats.count("grad." + p.name) == 1);
      allclose(p.tensor.grad(), l.st.floats.at("grad." + p.name), 1e-4, 1e-6, p.name, cg);
      ++n_grads;
    }
    std::printf("parity %-10s logits worst %.2e (%s) | loss %.2e | grads (%zu) worst %.2e at %s\n", fx.c_str(),
                cl.worst_abs, cl.worst_where.c_str(), closs.worst_abs, n_grads, cg.worst_abs, cg.worst_where.c_str());
    CHECK(n_grads == l.model->parameters().size());
    std::printf("  tolerance use (1 = at the limit): logits %.2f at %s, grads %.2f at %s\n", cl.worst_ratio,
                cl.ratio_where.c_str(), cg.worst_ratio, cg.ratio_where.c_str());
    INFO("worst logit: " << cl.ratio_where);
    CHECK(cl.ok);
    INFO("worst loss: " << closs.worst_where);
    CHECK(closs.ok);
    INFO("worst grad: " << cg.ratio_where);
    CHECK(cg.ok);
  }
}

TEST_CASE("PyTorch parity fails when any single parameter's gradient is perturbed", "[parity]") {
  // The comparison must be sensitive: nudging one element of one gradient (by 1e-3 relative + 1e-5) fails it.
  Loaded l = load_fixture("rope");
  run(l);
  std::size_t caught = 0, tried = 0;
  for (const auto& p : l.model->parameters()) {
    Array g = p.tensor.grad();
    const std::size_t i = g.size() / 2;
    g.data()[i] += static_cast<real>(1e-3 * std::abs(g.data()[i]) + 1e-5);
    Compare c;
    allclose(g, l.st.floats.at("grad." + p.name), 1e-4, 1e-6, p.name, c);
    caught += !c.ok;
    ++tried;
  }
  CHECK(tried == l.model->parameters().size());
  CHECK(caught == tried);
}
