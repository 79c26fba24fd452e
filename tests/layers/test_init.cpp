// Initialization schemes ([model] init): the distributions each scheme draws, in distribution (moments and
// Kolmogorov-Smirnov statistics, never exact values): "pytorch" against torch's own draws of the same
// architecture (tests/fixtures/init_pytorch.safetensors, tests/pytorch/gen_init_fixture.py) and against
// the analytic CDFs on large layers; "scaled" against GPT-2's residual rescaling; which parameters are
// residual projections and what fan-in each has.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "core/safetensors.hpp"
#include "model_helpers.hpp"
#include "test_paths.hpp"

using namespace pelab;
using Catch::Matchers::Contains;

namespace {

// Critical value of the KS statistic at significance 0.001 (asymptotic c(alpha) = 1.949).
constexpr double kC = 1.949;

std::vector<double> values(const Tensor& t) { return {t.data(), t.data() + t.numel()}; }
std::vector<double> values(const Array& a) { return {a.begin(), a.end()}; }

// One-sample KS statistic of x against the CDF F.
double ks_one(std::vector<double> x, const std::function<double(double)>& F) {
  std::sort(x.begin(), x.end());
  const double n = double(x.size());
  double d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double f = F(x[i]);
    d = std::max({d, double(i + 1) / n - f, f - double(i) / n});
  }
  return d;
}

// Two-sample KS statistic: the largest gap between the empirical CDFs.
double ks_two(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const double v = std::min(a[i], b[j]);
    while (i < a.size() && a[i] == v) ++i;
    while (j < b.size() && b[j] == v) ++j;
    d = std::max(d, std::abs(double(i) / double(a.size()) - double(j) / double(b.size())));
  }
  return d;
}
double crit_two(std::size_t n, std::size_t m) { return kC * std::sqrt(double(n + m) / (double(n) * double(m))); }

std::function<double(double)> normal_cdf(double sd) {
  return [sd](double x) { return 0.5 * std::erfc(-x / (sd * std::sqrt(2.0))); };
}
std::function<double(double)> uniform_cdf(double b) {
  return [b](double x) { return std::clamp((x + b) / (2 * b), 0.0, 1.0); };
}

struct Moments {
  double mean = 0, var = 0;
};
Moments moments(const std::vector<double>& x) {
  Moments m;
  for (double v : x) m.mean += v;
  m.mean /= double(x.size());
  for (double v : x) m.var += (v - m.mean) * (v - m.mean);
  m.var /= double(x.size() - 1);
  return m;
}

// Checks x ~ N(0, sd): mean within 5 standard errors, variance within 5 of its standard errors
// (2 sd^4 / (n-1) for a normal), KS below the critical value.
void check_normal(const std::vector<double>& x, double sd) {
  const double n = double(x.size());
  const Moments m = moments(x);
  CHECK(std::abs(m.mean) < 5 * sd / std::sqrt(n));
  CHECK(std::abs(m.var - sd * sd) < 5 * sd * sd * std::sqrt(2 / (n - 1)));
  CHECK(ks_one(x, normal_cdf(sd)) < kC / std::sqrt(n));
}

// Checks x ~ U(-b, b): inside the bounds, mean and variance (b^2/3, whose estimate has variance
// 4 b^4 / (45 n)) within 5 standard errors, KS below the critical value.
void check_uniform(const std::vector<double>& x, double b) {
  const double n = double(x.size());
  const Moments m = moments(x);
  CHECK(*std::min_element(x.begin(), x.end()) >= -b);
  CHECK(*std::max_element(x.begin(), x.end()) <= b);
  CHECK(std::abs(m.mean) < 5 * b / std::sqrt(3 * n));
  CHECK(std::abs(m.var - b * b / 3) < 5 * b * b * std::sqrt(4 / (45 * n)));
  CHECK(ks_one(x, uniform_cdf(b)) < kC / std::sqrt(n));
}

// Large layers of every kind, for the analytic checks.
struct Layers : Module {
  Linear* lin;
  Embedding* emb;
  LayerNorm* ln;
  Layers() {
    lin = &add_module("lin", std::make_unique<Linear>(300, 4000));
    emb = &add_module("emb", std::make_unique<Embedding>(1000, 300));
    ln = &add_module("ln", std::make_unique<LayerNorm>(300));
  }
};

// The architecture of the torch fixture (tests/pytorch/gen_init_fixture.py CFG).
ModelConfig fixture_config() {
  ModelConfig c;
  c.vocab = 40;
  c.d_model = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.d_ff = 256;
  c.encoding = "learned";
  c.train_seq_len = 32;
  return c;
}

InitOptions scheme(InitScheme s, double std = 0.02, double emb_std = 0.02, std::size_t n_layers = 1) {
  InitOptions o;
  o.scheme = s;
  o.std = std;
  o.emb_std = emb_std;
  o.n_layers = n_layers;
  return o;
}

bool is_residual_name(const std::string& n) {
  return n.find(".attn.proj.") != std::string::npos || n.find(".mlp.proj.") != std::string::npos;
}

}  // namespace

TEST_CASE("init: Linear parameters know their fan-in and the residual projections are marked", "[module][init]") {
  Transformer m(fixture_config());
  for (const auto& p : m.parameters()) {
    INFO(p.name);
    CHECK(p.residual == is_residual_name(p.name));
    if (p.kind == ParamKind::weight) CHECK(p.fan_in == p.tensor.shape()[1]);
    if (p.kind == ParamKind::bias) CHECK(p.fan_in == m.parameter(p.name.substr(0, p.name.size() - 4) + "weight").shape()[1]);
    if (p.kind == ParamKind::embedding || p.kind == ParamKind::norm_gain || p.kind == ParamKind::norm_bias)
      CHECK(p.fan_in == 0);
  }
  CHECK(m.parameters().size() == 2 + 2 * 12 + 2 + 1);
}

TEST_CASE("init pytorch: a large layer has PyTorch's distributions (moments and KS vs the analytic CDFs)",
          "[module][init]") {
  Layers l;
  Rng rng(11);
  init_parameters(l, rng, scheme(InitScheme::pytorch, 0.5, 0.5));  // std and emb_std do not apply
  const double b = 1 / std::sqrt(300.0);
  check_uniform(values(l.lin->weight), b);  // kaiming_uniform_(a = sqrt(5)): bound 1/sqrt(fan_in)
  check_uniform(values(l.lin->bias), b);    // U(-1/sqrt(fan_in), 1/sqrt(fan_in))
  check_normal(values(l.emb->weight), 1.0); // nn.Embedding: N(0, 1)
  for (double v : values(l.ln->weight)) REQUIRE(v == 1);
  for (double v : values(l.ln->bias)) REQUIRE(v == 0);
  // The checks have power: the same draws judged against a neighbouring distribution fail.
  CHECK(ks_one(values(l.lin->weight), uniform_cdf(1.1 * b)) > kC / std::sqrt(1.2e6));
  CHECK(ks_one(values(l.emb->weight), normal_cdf(1.05)) > kC / std::sqrt(3e5));
  CHECK(ks_one(values(l.lin->weight), normal_cdf(b / std::sqrt(3.0))) > kC / std::sqrt(1.2e6));
}

TEST_CASE("init pytorch: every parameter matches torch's own default draws of the same model (two-sample KS)",
          "[module][init][pytorch]") {
  const SafeTensors st = load_safetensors(std::string(PELAB_FIXTURES_DIR) + "/init_pytorch.safetensors");
  CHECK(st.metadata.at("encoding") == "learned");
  CHECK_THAT(st.metadata.at("config"), Contains("\"d_mlp\": 256") && Contains("\"d_model\": 64") &&
                                           Contains("\"n_layers\": 2") && Contains("\"seq_len\": 32") &&
                                           Contains("\"vocab\": 40"));
  Transformer m(fixture_config()), gpt2(fixture_config());
  Rng r1(5), r2(5);
  init_parameters(m, r1, scheme(InitScheme::pytorch));
  init_parameters(gpt2, r2, scheme(InitScheme::gpt2));
  std::set<std::string> names;
  for (const auto& p : m.parameters()) names.insert(p.name);
  std::set<std::string> fixture_names;
  for (const auto& [name, a] : st.floats) fixture_names.insert(name);
  CHECK(names == fixture_names);  // the same architecture, parameter for parameter
  std::size_t compared = 0, rejected_gpt2 = 0;
  for (const auto& p : m.parameters()) {
    INFO(p.name);
    if (!st.floats.count(p.name)) continue;
    const std::vector<double> ours = values(p.tensor), torch = values(st.get_float(p.name));
    REQUIRE(!torch.empty());
    if (p.kind == ParamKind::norm_gain || p.kind == ParamKind::norm_bias) {
      const double want = p.kind == ParamKind::norm_gain ? 1 : 0;
      for (double v : torch) REQUIRE(v == want);
      for (double v : ours) REQUIRE(v == want);
      continue;
    }
    const double crit = crit_two(ours.size(), torch.size());
    CHECK(ks_two(ours, torch) < crit);
    ++compared;
    if (ks_two(values(gpt2.parameter(p.name)), torch) > crit) ++rejected_gpt2;
  }
  CHECK(compared == 2 + 2 * 8 + 1);  // tok_emb, pos, 8 Linear tensors per block, head
  // Power: the gpt2 draws (N(0, 0.02), zero biases) are told apart from torch's for every parameter.
  CHECK(rejected_gpt2 == compared);
}

TEST_CASE("init scaled: GPT-2 with the residual projections at std / sqrt(2 n_layers)", "[module][init]") {
  ModelConfig c = fixture_config();
  c.n_layers = 3;
  c.d_model = 128;
  c.n_heads = 4;
  c.d_ff = 512;
  Transformer s(c), g(c);
  Rng r1(7), r2(7);
  init_parameters(s, r1, scheme(InitScheme::scaled, 0.02, 0.3, 3));
  init_parameters(g, r2, scheme(InitScheme::gpt2, 0.02, 0.3, 3));
  const double shrink = 1 / std::sqrt(6.0);
  for (const auto& p : s.parameters()) {
    INFO(p.name);
    const std::vector<double> v = values(p.tensor), w = values(g.parameter(p.name));
    REQUIRE(v.size() == w.size());
    if (p.kind == ParamKind::weight && p.residual) {
      check_normal(v, 0.02 * shrink);
      // The same random stream: each residual weight is the gpt2 one, shrunk.
      for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(v[i] == Approx(w[i] * shrink).margin(1e-9));
    } else {
      CHECK(v == w);  // everything else is gpt2, bit for bit
      if (p.kind == ParamKind::weight) check_normal(v, 0.02);
      if (p.kind == ParamKind::embedding) check_normal(v, 0.3);
    }
  }
  CHECK_THROWS_WITH(init_parameters(s, r1, scheme(InitScheme::scaled, 0.02, 0.02, 0)), Contains("n_layers"));
}

TEST_CASE("init: the gpt2 scheme is the old init_parameters and the names parse", "[module][init]") {
  ModelConfig c = pelab::test::small_config("learned");
  Transformer a(c), b(c);
  Rng r1(3), r2(3);
  init_parameters(a, r1, 0.05, 0.1);
  init_parameters(b, r2, scheme(InitScheme::gpt2, 0.05, 0.1));
  for (const auto& p : a.parameters()) CHECK(p.tensor.value() == b.parameter(p.name).value());
  CHECK(r1.state() == r2.state());
  ModelSettings ms;
  CHECK(ms.init == InitScheme::gpt2);
  ms.init = InitScheme::scaled;
  ms.n_layers = 5;
  ms.init_std = 0.01;
  CHECK(ms.init_options().scheme == InitScheme::scaled);
  CHECK(ms.init_options().n_layers == 5);
  CHECK(ms.init_options().std == 0.01);
  for (InitScheme s : {InitScheme::gpt2, InitScheme::pytorch, InitScheme::scaled})
    CHECK(parse_init_scheme(init_scheme_name(s)) == s);
  CHECK_THROWS_WITH(parse_init_scheme("xavier"), Contains("gpt2, pytorch, scaled"));
}

TEST_CASE("init pytorch: a bias without a fan-in is an error naming it", "[module][init]") {
  struct Odd : Module {
    Odd() { add_parameter("b", {4}, ParamKind::bias); }
  } odd;
  Rng rng(1);
  CHECK_NOTHROW(init_parameters(odd, rng));  // gpt2: zeros
  CHECK_THROWS_WITH(init_parameters(odd, rng, scheme(InitScheme::pytorch)), Contains("'b'") && Contains("fan-in"));
  // A weight of another module takes PyTorch's fan-in rule: the dims after the first.
  struct Table : Module {
    Tensor w;
    Table() { w = add_parameter("w", {500, 4, 25}, ParamKind::weight); }
  } table;
  init_parameters(table, rng, scheme(InitScheme::pytorch));
  check_uniform(values(table.w), 1 / std::sqrt(100.0));
}
