// PyTorch parity of the optimizer pieces: tests/pytorch/gen_fixtures.py ran 5 AdamW steps (cosine schedule
// with warmup, decay on weights and embeddings only, clipping at 1.0; float32 PyTorch) from each model
// fixture's weights on its fixed batch (with its own position ids, which the Trainer cannot take); the
// same steps here must give the same losses and pre-clip grad norms, for every encoding. The real training
// loop is pinned by test_parity_trainer.cpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/ops/cross_entropy.hpp"
#include "core/safetensors.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"
#include "parity_fixture.hpp"
#include "training/optimizer.hpp"
#include "training/optimizer_registry.hpp"
#include "training/schedule.hpp"

using namespace pelab;
using namespace pelab::test;
using json = nlohmann::json;

namespace {

double rel_err(double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-12); }

}  // namespace

TEST_CASE("AdamW training matches PyTorch on every fixture") {
  const auto paths = fixture_files("model_");
  REQUIRE(!paths.empty());
  for (const auto& path : paths) {
    const std::string fixture = fixture_name(path);
    INFO("fixture " << fixture);
    const SafeTensors st = load_safetensors(path);
    const json train = json::parse(st.metadata.at("train"));

    Transformer model(fixture_model_config(st));
    set_fixture_weights(st, model);

    const std::map<std::string, Value> adamw = {{"beta1", Value(train.at("betas").at(0).get<double>())},
                                                {"beta2", Value(train.at("betas").at(1).get<double>())},
                                                {"eps", Value(train.at("eps").get<double>())}};
    OptimizerCommon common;  // default rule: Linear weights, tok_emb, head, pos.weight
    common.weight_decay = train.at("weight_decay").get<double>();
    auto owned = make_optimizer("adamw", adamw, common, model.parameters());
    Optimizer& opt = *owned;
    ScheduleConfig sc;
    sc.kind = "cosine";
    sc.peak = train.at("peak_lr").get<double>();
    sc.min_lr = train.at("min_lr").get<double>();
    sc.warmup = train.at("warmup").get<std::size_t>();
    sc.total = train.at("steps").get<std::size_t>();
    const double clip = train.at("clip_norm").get<double>();

    const IndexArray& tokens = st.get_int("input.tokens");
    const IndexArray& positions = st.get_int("input.positions");
    const ForwardOptions fo = fixture_forward_options(st);  // abacus's digit indices
    const IndexArray& targets = st.get_int("input.targets");
    const Array& mask = st.get_float("input.mask");
    const Array& want_losses = st.get_float("train.losses");
    const Array& want_norms = st.get_float("train.grad_norms");
    const Array& want_lrs = st.get_float("train.lrs");
    REQUIRE(want_losses.size() == sc.total + 1);
    REQUIRE(want_norms.size() == sc.total);
    REQUIRE(want_lrs.size() == sc.total);

    Tape::current().clear();
    double worst_loss = 0, worst_norm = 0;
    for (std::size_t s = 0; s < sc.total; ++s) {
      INFO("step " << s);
      opt.zero_grad();
      Tensor loss = cross_entropy(model.forward(tokens, positions, fo), targets, &mask);
      const double l = loss.item();
      worst_loss = std::max(worst_loss, rel_err(l, want_losses(s)));
      CHECK(l == Approx(want_losses(s)).epsilon(1e-4));
      loss.backward();
      const double norm = clip_grad_norm(opt.params(), clip);
      worst_norm = std::max(worst_norm, rel_err(norm, want_norms(s)));
      CHECK(norm == Approx(want_norms(s)).epsilon(1e-4));
      const double lr = lr_at(sc, s);
      CHECK(lr == Approx(want_lrs(s)).epsilon(1e-6));  // stored as float32
      opt.step(lr);
    }
    {
      NoGrad no_grad;
      const double l = cross_entropy(model.forward(tokens, positions, fo), targets, &mask).item();
      worst_loss = std::max(worst_loss, rel_err(l, want_losses(sc.total)));
      CHECK(l == Approx(want_losses(sc.total)).epsilon(1e-4));
    }
    std::printf("parity adamw %-18s worst relative error: loss %.2e, grad norm %.2e\n", fixture.c_str(), worst_loss,
                worst_norm);
  }
}
