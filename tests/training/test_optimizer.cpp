// Optimizers against hand-written double-precision references, the decay rule, gradient clipping and
// the optimizer's checkpoint state.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstring>
#include <cmath>

#include "core/rng.hpp"
#include "training/optimizer.hpp"
#include "training/optimizer_registry.hpp"

using namespace pelab;

namespace {

// Same shape and the same bits (xtensor's operator== does not mix with Catch's decomposer).
bool bit_equal(const Array& a, const Array& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(real)) == 0;
}

Parameter make_param(const std::string& name, const Shape& shape, ParamKind kind, Rng& rng) {
  Tensor t = Tensor::zeros(shape, true);
  real* d = t.mutable_data();
  for (std::size_t i = 0; i < t.numel(); ++i) d[i] = real(rng.normal());
  Parameter p;
  p.name = name;
  p.tensor = t;
  p.kind = kind;
  return p;
}

// One parameter of each kind.
std::vector<Parameter> make_params(Rng& rng) {
  return {make_param("lin.weight", Shape{3, 4}, ParamKind::weight, rng),
          make_param("lin.bias", Shape{3}, ParamKind::bias, rng),
          make_param("tok_emb.weight", Shape{5, 2}, ParamKind::embedding, rng),
          make_param("ln.weight", Shape{4}, ParamKind::norm_gain, rng),
          make_param("ln.bias", Shape{4}, ParamKind::norm_bias, rng)};
}

void set_grad(const Parameter& p, Rng& rng, double scale = 1.0) {
  Array& g = grad_buffer(*p.tensor.impl());
  for (std::size_t i = 0; i < g.size(); ++i) g.data()[i] = real(rng.normal() * scale);
}

std::vector<double> to_double(const Tensor& t) { return std::vector<double>(t.data(), t.data() + t.numel()); }

void require_close(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(got.numel() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": " << got.data()[i] << " vs " << want[i]);
    REQUIRE(std::abs(double(got.data()[i]) - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

// A parameter's double-precision mirror for the references.
struct Ref {
  std::vector<double> p, a, b;  // value and two buffers
  std::uint64_t t = 0;
  bool decay = false;
};

}  // namespace

TEST_CASE("decays follows the parameter kind and the rule") {
  Rng rng(1);
  auto ps = make_params(rng);
  ParamGroupRule def;
  CHECK(decays(ps[0], def));
  CHECK_FALSE(decays(ps[1], def));
  CHECK(decays(ps[2], def));
  CHECK_FALSE(decays(ps[3], def));
  CHECK_FALSE(decays(ps[4], def));
  ParamGroupRule all, none;
  all.decay_norm_and_bias = all.decay_embeddings = true;
  none.decay_norm_and_bias = none.decay_embeddings = false;
  for (const auto& p : ps) CHECK(decays(p, all));
  CHECK(decays(ps[0], none));  // weights always decay
  CHECK_FALSE(decays(ps[2], none));
}

TEST_CASE("AdamW matches a double reference over several steps") {
  Rng rng(7);
  auto ps = make_params(rng);
  const double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;  // beta2 not the default: the given values are used
  OptimizerCommon cfg;
  cfg.weight_decay = 0.1;
  cfg.rule.decay_embeddings = GENERATE(true, false);
  auto opt = make_optimizer("adamw", {{"beta1", Value(beta1)}, {"beta2", Value(beta2)}, {"eps", Value(eps)}}, cfg, ps);

  std::vector<Ref> ref(ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    ref[i].p = to_double(ps[i].tensor);
    ref[i].a.assign(ref[i].p.size(), 0.0);
    ref[i].b.assign(ref[i].p.size(), 0.0);
    ref[i].decay = decays(ps[i], cfg.rule);
  }
  const double lrs[] = {1e-2, 2e-2, 5e-3, 1e-2, 1e-3, 3e-2};
  for (std::size_t s = 0; s < 6; ++s) {
    opt->zero_grad();
    for (std::size_t i = 0; i < ps.size(); ++i) {
      if (s == 1 && i == 3) continue;  // ln.weight gets no gradient on step 1: skipped entirely
      set_grad(ps[i], rng, 0.1 + 0.5 * double(i));
      Ref& r = ref[i];
      const Array& g = ps[i].tensor.grad();
      ++r.t;
      const double lr = lrs[s];
      for (std::size_t j = 0; j < r.p.size(); ++j) {
        const double gj = g.data()[j];
        if (r.decay) r.p[j] *= 1 - lr * cfg.weight_decay;
        r.a[j] = beta1 * r.a[j] + (1 - beta1) * gj;
        r.b[j] = beta2 * r.b[j] + (1 - beta2) * gj * gj;
        const double mh = r.a[j] / (1 - std::pow(beta1, double(r.t)));
        const double vh = r.b[j] / (1 - std::pow(beta2, double(r.t)));
        r.p[j] -= lr * mh / (std::sqrt(vh) + eps);
      }
    }
    opt->step(lrs[s]);
  }
  CHECK(opt->steps() == 6);
  for (std::size_t i = 0; i < ps.size(); ++i) require_close(ps[i].tensor, ref[i].p, 2e-6, ps[i].name);
}

TEST_CASE("AdamW decays exactly the decaying parameters") {
  // With zero gradients the Adam update is 0 / (0 + eps) = 0: only the decoupled decay moves values.
  Rng rng(3);
  auto ps = make_params(rng);
  std::vector<std::vector<double>> before;
  for (const auto& p : ps) before.push_back(to_double(p.tensor));
  OptimizerCommon cfg;
  cfg.weight_decay = 0.5;
  cfg.rule.decay_embeddings = false;
  auto opt = make_optimizer("adamw", {}, cfg, ps);
  for (const auto& p : ps) grad_buffer(*p.tensor.impl());  // zeros
  const double lr = 0.1;
  opt->step(lr);
  const real factor = real(1 - lr * cfg.weight_decay);
  for (std::size_t i = 0; i < ps.size(); ++i) {
    INFO(ps[i].name);
    REQUIRE(ps[i].tensor.numel() == before[i].size());
    const bool decayed = i == 0;  // only the Linear weight under this rule
    for (std::size_t j = 0; j < before[i].size(); ++j) {
      const real want = decayed ? real(before[i][j]) * factor : real(before[i][j]);
      REQUIRE(ps[i].tensor.data()[j] == want);
    }
  }
}

TEST_CASE("optimizer step writes in place and skips parameters without gradients") {
  Rng rng(4);
  auto ps = make_params(rng);
  auto opt = make_optimizer("adamw", {}, OptimizerCommon{}, ps);
  const auto v0 = ps[0].tensor.version();
  const auto untouched = to_double(ps[1].tensor);
  const real* storage = ps[0].tensor.data();
  set_grad(ps[0], rng);
  opt->step(1e-2);
  CHECK(ps[0].tensor.version() > v0);
  CHECK(ps[0].tensor.data() == storage);  // same buffer: updated in place
  CHECK(to_double(ps[1].tensor) == untouched);
  opt->zero_grad();
  for (const auto& p : ps) CHECK_FALSE(p.tensor.has_grad());
}

TEST_CASE("SGD with momentum matches a double reference") {
  Rng rng(11);
  auto ps = make_params(rng);
  const double momentum = GENERATE(0.0, 0.9);
  OptimizerCommon cfg;
  cfg.weight_decay = 0.05;
  auto opt = make_optimizer("sgd", {{"momentum", Value(momentum)}}, cfg, ps);
  std::vector<Ref> ref(ps.size());
  for (std::size_t i = 0; i < ps.size(); ++i) {
    ref[i].p = to_double(ps[i].tensor);
    ref[i].a.assign(ref[i].p.size(), 0.0);
    ref[i].decay = decays(ps[i], cfg.rule);
  }
  const double lrs[] = {0.1, 0.05, 0.2, 0.1, 0.01};
  for (std::size_t s = 0; s < 5; ++s) {
    opt->zero_grad();
    for (std::size_t i = 0; i < ps.size(); ++i) {
      if (s == 0 && i == 2) continue;  // the embedding's buffer starts on step 1
      set_grad(ps[i], rng);
      Ref& r = ref[i];
      const Array& g = ps[i].tensor.grad();
      const bool first = r.t++ == 0;
      for (std::size_t j = 0; j < r.p.size(); ++j) {
        double d = g.data()[j] + (r.decay ? cfg.weight_decay * r.p[j] : 0.0);
        if (momentum != 0) {
          r.a[j] = first ? d : momentum * r.a[j] + d;
          d = r.a[j];
        }
        r.p[j] -= lrs[s] * d;
      }
    }
    opt->step(lrs[s]);
  }
  for (std::size_t i = 0; i < ps.size(); ++i) require_close(ps[i].tensor, ref[i].p, 2e-6, ps[i].name);
}

TEST_CASE("clip_grad_norm returns the pre-clip norm and scales only above the threshold") {
  Rng rng(5);
  std::vector<Parameter> ps = {make_param("a", Shape{2}, ParamKind::weight, rng),
                               make_param("b", Shape{1}, ParamKind::weight, rng),
                               make_param("c", Shape{3}, ParamKind::bias, rng)};  // no gradient
  auto set = [&] {
    Array& ga = grad_buffer(*ps[0].tensor.impl());
    ga.data()[0] = 3;
    ga.data()[1] = 4;
    grad_buffer(*ps[1].tensor.impl()).data()[0] = 12;
  };
  set();
  SECTION("below the threshold nothing changes") {
    CHECK(clip_grad_norm(ps, 13.5) == Approx(13.0).epsilon(1e-12));
    CHECK(ps[0].tensor.grad().data()[1] == 4);
    CHECK(ps[1].tensor.grad().data()[0] == 12);
  }
  SECTION("max_norm 0 disables clipping") {
    CHECK(clip_grad_norm(ps, 0) == Approx(13.0).epsilon(1e-12));
    CHECK(ps[1].tensor.grad().data()[0] == 12);
  }
  SECTION("above the threshold grads are scaled by max_norm / (norm + 1e-6)") {
    CHECK(clip_grad_norm(ps, 6.5) == Approx(13.0).epsilon(1e-12));
    const double coef = 6.5 / (13.0 + 1e-6);
    CHECK(ps[0].tensor.grad().data()[0] == Approx(3 * coef).epsilon(1e-7));
    CHECK(ps[0].tensor.grad().data()[1] == Approx(4 * coef).epsilon(1e-7));
    CHECK(ps[1].tensor.grad().data()[0] == Approx(12 * coef).epsilon(1e-7));
    CHECK(clip_grad_norm(ps, 0) == Approx(6.5).epsilon(1e-6));
    CHECK_FALSE(ps[2].tensor.has_grad());
  }
  SECTION("non-finite gradients are reported and left alone") {
    CHECK(all_finite_grads(ps));
    grad_buffer(*ps[1].tensor.impl()).data()[0] = std::numeric_limits<real>::infinity();
    CHECK_FALSE(all_finite_grads(ps));
    CHECK(std::isinf(clip_grad_norm(ps, 1.0)));
    CHECK(ps[0].tensor.grad().data()[0] == 3);
    grad_buffer(*ps[1].tensor.impl()).data()[0] = std::numeric_limits<real>::quiet_NaN();
    CHECK_FALSE(all_finite_grads(ps));
    CHECK(std::isnan(clip_grad_norm(ps, 1.0)));
  }
}

TEST_CASE("optimizer state round trips exactly and continues identically") {
  Rng rng(9);
  auto a = make_params(rng);
  Rng rng_b(9);
  auto b = make_params(rng_b);  // same values, separate tensors
  const std::string kind = GENERATE(std::string("adamw"), std::string("sgd"));
  OptimizerCommon common;
  common.weight_decay = 0.1;
  auto opt_a = make_optimizer(kind, {}, common, a);
  auto opt_b = make_optimizer(kind, {}, common, b);
  Rng g1(1);
  for (int s = 0; s < 3; ++s) {
    for (const auto& p : a) set_grad(p, g1);
    opt_a->step(1e-2);
    opt_a->zero_grad();
  }
  SafeTensors st;
  opt_a->state_to(st);
  CHECK(st.metadata.at("optimizer") == kind);
  CHECK(st.metadata.at(kind + ".steps") == "3");
  CHECK(st.metadata.at(kind + ".t.lin.weight") == "3");
  // Bring b's values to a's, then load the state.
  for (std::size_t i = 0; i < a.size(); ++i) b[i].tensor.mutable_value() = a[i].tensor.value();
  opt_b->state_from(st);
  CHECK(opt_b->steps() == 3);
  SafeTensors st2;
  opt_b->state_to(st2);
  REQUIRE(st2.floats.size() == st.floats.size());
  for (const auto& [k, v] : st.floats) {
    INFO(k);
    REQUIRE(st2.floats.count(k) == 1);
    CHECK(bit_equal(st2.floats.at(k), v));
  }
  CHECK(st2.metadata == st.metadata);
  Rng g2(2), g3(2);
  for (int s = 0; s < 3; ++s) {
    for (const auto& p : a) set_grad(p, g2);
    for (const auto& p : b) set_grad(p, g3);
    opt_a->step(2e-2);
    opt_b->step(2e-2);
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].name);
    CHECK(bit_equal(a[i].tensor.value(), b[i].tensor.value()));
  }
}

TEST_CASE("optimizer state loading rejects mismatches and leaves the state untouched") {
  Rng rng(12);
  auto ps = make_params(rng);
  auto opt = make_optimizer("adamw", {}, OptimizerCommon{}, ps);
  SafeTensors good;
  opt->state_to(good);
  REQUIRE(good.floats.count("adamw.m.lin.weight") == 1);
  REQUIRE(good.floats.count("adamw.v.ln.bias") == 1);

  auto fails_with = [&](const SafeTensors& st, const std::string& needle) {
    auto fresh = make_optimizer("adamw", {}, OptimizerCommon{}, ps);
    try {
      fresh->state_from(st);
      FAIL("no error for " << needle);
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
    CHECK(fresh->steps() == 0);
  };
  SafeTensors st = good;
  st.floats.erase("adamw.v.ln.bias");
  fails_with(st, "missing tensor 'adamw.v.ln.bias'");
  st = good;
  st.floats["adamw.m.lin.weight"] = Array(Shape{4, 3});
  fails_with(st, "shape (4, 3)");
  fails_with(st, "(3, 4)");
  st = good;
  st.floats["adamw.m.other"] = Array(Shape{2});
  fails_with(st, "unexpected tensor 'adamw.m.other'");
  st = good;
  st.metadata["optimizer"] = "sgd";
  fails_with(st, "'sgd'");
  st = good;
  st.metadata["adamw.steps"] = "12x";
  fails_with(st, "adamw.steps");
  st = good;
  st.metadata.erase("adamw.t.tok_emb.weight");
  fails_with(st, "adamw.t.tok_emb.weight");
}

TEST_CASE("make_optimizer rejects unknown kinds and bad hyperparameters") {
  Rng rng(1);
  auto ps = make_params(rng);
  const OptimizerCommon common;
  auto error_of = [&](const std::string& name, const std::map<std::string, Value>& given, OptimizerCommon c) {
    try {
      make_optimizer(name, given, c, ps);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_THAT(error_of("adam", {}, common),
             Catch::StartsWith("unknown optimizer 'adam' (did you mean 'adamw'?); known optimizers: adamw, sgd"));
  CHECK_THAT(error_of("adamw", {{"beta2", Value(1.0)}}, common),
             Catch::Contains("'beta2'") && Catch::Contains("[0, 1)"));
  CHECK_THAT(error_of("adamw", {{"momentum", Value(0.5)}}, common),
             Catch::Contains("unknown key 'momentum'"));
  CHECK_THAT(error_of("sgd", {{"momentum", Value(1.5)}}, common), Catch::Contains("'momentum'"));
  OptimizerCommon bad_wd;
  bad_wd.weight_decay = -1;
  CHECK_THROWS_AS(make_optimizer("adamw", {}, bad_wd, ps), Error);
  CHECK(error_of("sgd", {{"momentum", Value(std::int64_t(0))}}, common) == "(no error)");  // an integer is a number
  std::vector<Parameter> twice = {ps[0], ps[0]};
  CHECK_THROWS_AS(make_optimizer("adamw", {}, common, twice), Error);
}

TEST_CASE("the optimizer registry builds each optimizer with its own parameters") {
  // Contains rather than equals: a test may register an optimizer of its own (tests/training/plugins/).
  const auto names = OptimizerRegistry::instance().names();
  for (const char* builtin : {"adamw", "sgd"})
    CHECK(std::find(names.begin(), names.end(), builtin) != names.end());
  // The classes are private to their files, so the given values are checked by what they do: two steps
  // from the same start agree bit for bit exactly when the hyperparameters do.
  OptimizerCommon common;
  common.weight_decay = 0.05;
  common.rule.decay_embeddings = false;
  auto after_two_steps = [&](const std::string& name, const std::map<std::string, Value>& given,
                             const OptimizerCommon& c) {
    Rng rng(3), grads(4);
    auto ps = make_params(rng);
    auto opt = make_optimizer(name, given, c, ps);
    for (int s = 0; s < 2; ++s) {
      for (const auto& p : ps) set_grad(p, grads);
      opt->step(1e-2);
    }
    return to_double(ps[0].tensor);
  };
  const auto adamw = after_two_steps("adamw", {}, common);
  CHECK(after_two_steps("adamw", {{"beta1", Value(0.9)}, {"beta2", Value(0.999)}, {"eps", Value(1e-8)}}, common) ==
        adamw);  // the defaults
  CHECK(after_two_steps("adamw", {{"beta1", Value(0.8)}}, common) != adamw);
  CHECK(after_two_steps("adamw", {{"eps", Value(1e-2)}}, common) != adamw);
  CHECK(after_two_steps("adamw", {}, OptimizerCommon{}) != adamw);  // weight decay 0.01, not 0.05
  const auto sgd = after_two_steps("sgd", {}, common);
  CHECK(after_two_steps("sgd", {{"momentum", Value(0.9)}}, common) == sgd);
  CHECK(after_two_steps("sgd", {{"momentum", Value(0.25)}}, common) != sgd);
  CHECK(after_two_steps("sgd", {}, OptimizerCommon{}) != sgd);
}
