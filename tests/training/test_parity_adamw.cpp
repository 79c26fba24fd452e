// PyTorch parity of a short training run: tests/pytorch/gen_fixtures.py ran 5 AdamW steps (cosine
// schedule with warmup, decay on weights and embeddings only, clipping at 1.0) from each fixture's
// weights on its fixed batch; the same run here must give the same losses and pre-clip grad norms.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/ops/cross_entropy.hpp"
#include "core/safetensors.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"
#include "training/checkpoint.hpp"
#include "training/optimizer.hpp"
#include "training/schedule.hpp"

using namespace pelab;
using json = nlohmann::json;

namespace {

bool is_fixture_data(const std::string& key) {
  for (const char* prefix : {"grad.", "input.", "out.", "train."})
    if (key.rfind(prefix, 0) == 0) return true;
  return false;
}

// The model described by the fixture's metadata. Encoding parameters are passed through only when the
// pelab encoding declares them (the fixture also records e.g. the sinusoidal layout, which is fixed here).
ModelConfig fixture_config(const SafeTensors& st) {
  const json cfg = json::parse(st.metadata.at("config"));
  const json enc_params = json::parse(st.metadata.at("encoding_params"));
  ModelConfig c;
  c.vocab = cfg.at("vocab").get<std::size_t>();
  c.d_model = cfg.at("d_model").get<std::size_t>();
  c.n_layers = cfg.at("n_layers").get<std::size_t>();
  c.n_heads = cfg.at("n_heads").get<std::size_t>();
  c.d_ff = cfg.at("d_mlp").get<std::size_t>();
  c.ln_eps = cfg.at("ln_eps").get<real>();
  c.train_seq_len = cfg.at("seq_len").get<std::size_t>();
  const std::string enc = st.metadata.at("encoding");
  c.encoding = enc == "rope_half" ? "rope" : enc;
  const auto& spec = EncodingRegistry::instance().get(c.encoding);
  for (const auto& ps : spec.params) {
    if (!enc_params.contains(ps.key)) continue;
    const json& v = enc_params.at(ps.key);
    if (v.is_string()) c.encoding_params[ps.key] = Value(v.get<std::string>());
    else if (v.is_number_integer()) c.encoding_params[ps.key] = Value(v.get<std::int64_t>());
    else if (v.is_number()) c.encoding_params[ps.key] = Value(v.get<double>());
    else if (v.is_boolean()) c.encoding_params[ps.key] = Value(v.get<bool>());
  }
  return c;
}

double rel_err(double got, double want) { return std::abs(got - want) / std::max(std::abs(want), 1e-12); }

}  // namespace

TEST_CASE("AdamW training matches PyTorch on every fixture") {
  const std::string fixture = GENERATE(as<std::string>{}, "none", "learned", "sinusoidal", "rope", "rope_half");
  INFO("fixture model_" << fixture);
  const std::string path = std::string(PELAB_FIXTURES_DIR) + "/model_" + fixture + ".safetensors";
  const SafeTensors st = load_safetensors(path);
  const json train = json::parse(st.metadata.at("train"));

  Transformer model(fixture_config(st));
  SafeTensors weights;
  for (const auto& [key, a] : st.floats)
    if (!is_fixture_data(key)) weights.floats[key] = a;
  load_weights(weights, model, path);  // strict: every parameter, nothing else

  AdamWConfig ac;
  ac.beta1 = train.at("betas").at(0).get<double>();
  ac.beta2 = train.at("betas").at(1).get<double>();
  ac.eps = train.at("eps").get<double>();
  ac.weight_decay = train.at("weight_decay").get<double>();
  AdamW opt(model.parameters(), ac);  // default rule: Linear weights, tok_emb, head, pos.weight
  ScheduleConfig sc;
  sc.kind = "cosine";
  sc.peak = train.at("peak_lr").get<double>();
  sc.min_lr = train.at("min_lr").get<double>();
  sc.warmup = train.at("warmup").get<std::size_t>();
  sc.total = train.at("steps").get<std::size_t>();
  const double clip = train.at("clip_norm").get<double>();

  const IndexArray& tokens = st.get_int("input.tokens");
  const IndexArray& positions = st.get_int("input.positions");
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
    Tensor loss = cross_entropy(model.forward(tokens, positions), targets, &mask);
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
    const double l = cross_entropy(model.forward(tokens, positions), targets, &mask).item();
    worst_loss = std::max(worst_loss, rel_err(l, want_losses(sc.total)));
    CHECK(l == Approx(want_losses(sc.total)).epsilon(1e-4));
  }
  std::printf("parity adamw %-10s worst relative error: loss %.2e, grad norm %.2e\n", fixture.c_str(), worst_loss,
              worst_norm);
}
