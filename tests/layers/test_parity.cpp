// PyTorch parity: for every fixture tests/fixtures/model_*.safetensors written by tests/pytorch/gen_fixtures.py
// (Debian's torch 1.13; the reference evaluated in float64 from the same float32 weights), the same model,
// weights and batch must give the same logits, loss and every parameter's gradient. Every registered
// encoding must have a fixture. See tests/pytorch/README.md for the regeneration command.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "core/ops/cross_entropy.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"
#include "parity_fixture.hpp"
#include "test_paths.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

struct Loaded {
  SafeTensors st;
  std::unique_ptr<Transformer> model;
};

Loaded load_fixture(const std::string& path) {
  Loaded l;
  l.st = load_safetensors(path);
  l.model = std::make_unique<Transformer>(fixture_model_config(l.st));
  set_fixture_weights(l.st, *l.model);
  return l;
}

// Forward + backward of the fixture batch; returns the loss tensor.
Tensor run(Loaded& l) {
  Tape::current().clear();
  l.model->zero_grad();
  const Array& mask = l.st.get_float("input.mask");
  Tensor logits = l.model->forward(l.st.get_int("input.tokens"), l.st.get_int("input.positions"),
                                    fixture_forward_options(l.st));
  Tensor loss = cross_entropy(logits, l.st.get_int("input.targets"), &mask);
  loss.backward();
  return loss;
}

}  // namespace

TEST_CASE("every registered encoding has a PyTorch parity fixture", "[parity]") {
  std::set<std::string> covered;
  for (const auto& path : fixture_files("model_")) covered.insert(load_safetensors(path).metadata.at("encoding"));
  const auto names = EncodingRegistry::instance().names();
  REQUIRE(!names.empty());
  for (const auto& name : names) {
    if (covered.count(name)) continue;
    FAIL_CHECK("encoding '" << name << "' has no PyTorch fixture (tests/fixtures/model_*.safetensors): add it to "
               "tests/pytorch/pelab_ref.py and FIXTURES in tests/pytorch/gen_fixtures.py, then regenerate");
  }
  for (const auto& enc : covered) {
    INFO("a fixture's encoding '" << enc << "' is not registered in pelab");
    CHECK(std::find(names.begin(), names.end(), enc) != names.end());
  }
}

TEST_CASE("PyTorch parity: logits, loss and every gradient for each fixture", "[parity]") {
  const auto paths = fixture_files("model_");
  REQUIRE(paths.size() >= EncodingRegistry::instance().names().size());
  for (const auto& path : paths) {
    const std::string fx = fixture_name(path);
    INFO("fixture " << fx);
    Loaded l = load_fixture(path);
    Tensor logits = l.model->forward(l.st.get_int("input.tokens"), l.st.get_int("input.positions"),
                                    fixture_forward_options(l.st));
    Compare cl;
    // atol 3e-6: float32 logits near 0 of a 2-layer model carry a few ulps of its O(1) intermediates;
    // gcc's build uses up to 0.84 of 1e-6, clang's sanitized -O1 build (other contraction and
    // association) up to 1.35 (alibi_fixed_temperature).
    allclose(logits.value(), l.st.get_float("out.logits"), 1e-5, 3e-6, "logits", cl);
    Tape::current().clear();
    Tensor loss = run(l);
    Compare closs;
    closs.add(loss.item(), l.st.get_float("out.loss")(), 1e-5, 1e-6, "loss");
    Compare cg;
    std::size_t n_grads = 0;
    for (const auto& p : l.model->parameters()) {
      REQUIRE(p.tensor.has_grad());
      REQUIRE(l.st.floats.count("grad." + p.name) == 1);
      allclose(p.tensor.grad(), l.st.get_float("grad." + p.name), 1e-4, 1e-6, p.name, cg);
      ++n_grads;
    }
    std::printf("parity %-18s logits worst %.2e (%s) | loss %.2e | grads (%zu) worst %.2e at %s\n", fx.c_str(),
                cl.worst_abs, cl.worst_where.c_str(), closs.worst_abs, n_grads, cg.worst_abs, cg.worst_where.c_str());
    CHECK(n_grads == l.model->parameters().size());
    std::printf("  tolerance use (1 = at the limit): logits %.2f at %s, grads %.2f at %s\n", cl.worst_ratio,
                cl.ratio_where.c_str(), cg.worst_ratio, cg.ratio_where.c_str());
    check_ok(cl, "logit");
    check_ok(closs, "loss");
    check_ok(cg, "grad");
  }
}

TEST_CASE("PyTorch parity fails when any single parameter's gradient is perturbed", "[parity]") {
  // The comparison must be sensitive: nudging one element of one gradient (by 1e-3 relative + 1e-5) fails it.
  Loaded l = load_fixture(std::string(PELAB_FIXTURES_DIR) + "/model_rope.safetensors");
  run(l);
  std::size_t caught = 0, tried = 0;
  for (const auto& p : l.model->parameters()) {
    Array g = p.tensor.grad();
    const std::size_t i = g.size() / 2;
    g.data()[i] += static_cast<real>(1e-3 * std::abs(g.data()[i]) + 1e-5);
    Compare c;
    allclose(g, l.st.get_float("grad." + p.name), 1e-4, 1e-6, p.name, c);
    caught += !c.ok;
    ++tried;
  }
  CHECK(tried == l.model->parameters().size());
  CHECK(caught == tried);
}

// QK-norm and Canon layers (issue 46): the fixtures that turn them on, at 1x, 2x and 4x the training length.
// Every tensor the fixture has under a parameter's name must be a parameter of the model built from its
// metadata, so a feature the config reader dropped fails here rather than passing with fewer parameters.
TEST_CASE("PyTorch parity of QK-norm and Canon layers at 1x, 2x and 4x the training length", "[parity][qk_norm][canon]") {
  for (const std::string fx : {"model_rope_qk_norm", "model_hybrid_qk_norm", "model_none_canon", "model_rope_canon_bd",
                               "model_alibi_canon_qk_norm"}) {
    INFO(fx);
    Loaded l = load_fixture(std::string(PELAB_FIXTURES_DIR) + "/" + fx + ".safetensors");
    std::size_t stored = 0;
    for (const auto& [name, a] : l.st.floats) stored += l.st.floats.count("grad." + name);
    CHECK(stored == l.model->parameters().size());
    std::size_t features = 0;
    for (const Parameter& p : l.model->parameters())
      features += p.name.find("canon_") != std::string::npos || p.name.find("_norm.") != std::string::npos;
    CHECK(features > 0);
    CHECK(check_long_logits(fx) == 3);
  }
}
