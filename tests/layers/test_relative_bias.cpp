// The additive-bias encodings beyond ALiBi: T5's buckets against the reference function's values,
// their tables shared or per layer, Kerple's projection onto positive parameters, FIRE's threshold, and
// the load-time checks of their parameters. (Their formulas, and every gradient, are checked against
// PyTorch in test_parity.cpp.)
#include <catch2/catch.hpp>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/safetensors.hpp"
#include "core/tape.hpp"
#include "layers/positional/t5.hpp"
#include "model_helpers.hpp"
#include "test_paths.hpp"

using namespace pelab;
using namespace pelab::test;

TEST_CASE("t5 buckets equal Hugging Face's function over distances -600..600 for six settings", "[positional][t5]") {
  // tests/fixtures/t5_buckets.safetensors: T5Attention._relative_position_bucket run in torch.
  const SafeTensors st = load_safetensors(std::string(PELAB_FIXTURES_DIR) + "/t5_buckets.safetensors");
  const IndexArray& rel = st.get_int("relative");
  REQUIRE(rel.size() == 1201);
  const auto settings = nlohmann::json::parse(st.metadata.at("settings"));
  REQUIRE(settings.size() == 6);
  for (const auto& s : settings) {
    const int nb = s.at(0).get<int>(), md = s.at(1).get<int>();
    const bool bidir = s.at(2).get<bool>();
    const std::string key = "buckets." + std::to_string(nb) + "_" + std::to_string(md) + "_" + (bidir ? "bidirectional" : "causal");
    INFO(key);
    const IndexArray& want = st.get_int(key);
    REQUIRE(want.size() == rel.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < rel.size(); ++i) {
      const std::int32_t got = t5_bucket(rel.data()[i], bidir, nb, md);
      if (got != want.data()[i]) {
        if (++wrong <= 3) FAIL_CHECK("relative " << rel.data()[i] << ": bucket " << got << ", reference " << want.data()[i]);
      }
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("t5 buckets by hand: exact below num_buckets/2, logarithmic up to max_distance, one bucket beyond",
          "[positional][t5]") {
  // causal, 32 buckets, max_distance 128: 16 + int(log(n / 16) / log(8) * 16)
  CHECK(t5_bucket(-15, false, 32, 128) == 15);
  CHECK(t5_bucket(-16, false, 32, 128) == 16);
  CHECK(t5_bucket(-20, false, 32, 128) == 17);   // log(1.25) / log(8) * 16 = 1.72
  CHECK(t5_bucket(-127, false, 32, 128) == 31);  // 15.96
  CHECK(t5_bucket(-100000, false, 32, 128) == 31);
  CHECK(t5_bucket(5, false, 32, 128) == 0);  // keys after the query: masked, bucket 0
  // bidirectional: 16 per side, keys after the query in 16..31; 8 + int(log(n / 8) / log(16) * 8)
  CHECK(t5_bucket(-3, true, 32, 128) == 3);
  CHECK(t5_bucket(3, true, 32, 128) == 19);
  CHECK(t5_bucket(-16, true, 32, 128) == 10);  // log 2 / log 16 * 8 = 2 exactly (float32: 2 too)
  CHECK(t5_bucket(100, true, 32, 128) == 31);  // 7.29 -> 15, upper half
  CHECK(t5_bucket(0, true, 32, 128) == 0);
}

TEST_CASE("t5 bias: one table shared by the layers or one per layer, bidirectional when not causal", "[positional][t5]") {
  const IndexArray pos = default_positions(1, 6);
  Rng rng(3);
  const IndexArray tok = random_tokens(1, 6, 11, rng);
  auto shared = make_model(small_config("t5"), 1);
  CHECK(shared->parameters().size() == make_model(small_config("none"), 1)->parameters().size() + 1);
  CHECK(shared->parameter("pos.tables.0.weight").shape() == Shape{32, 2});
  auto per_layer = make_model(small_config("t5", {{"shared_layers", Value(false)}}), 1);
  CHECK(per_layer->parameter("pos.tables.1.weight").shape() == Shape{32, 2});
  for (auto* m : {shared.get(), per_layer.get()}) {
    Tape::current().clear();
    m->forward(tok, pos);  // begin_forward: the bias is then built once per table
    PositionalEncoding& e = m->encoding();
    const Tensor b0 = e.attention_bias(Tensor(), Tensor(), {pos, 0, true});
    const Tensor b1 = e.attention_bias(Tensor(), Tensor(), {pos, 1, true});
    REQUIRE(b0.shape() == Shape{1, 2, 6, 6});
    const bool same_tensor = b0.impl() == b1.impl();
    CHECK(same_tensor == (m == shared.get()));
    // bias[0, h, i, j] = table[bucket(j - i), h]
    const Tensor table = m->parameter("pos.tables.0.weight");
    CHECK(b0.value()(0, 1, 5, 2) == table.value()(3, 1));
    CHECK(b0.value()(0, 0, 4, 4) == table.value()(0, 0));
  }
  ModelConfig bidir = small_config("t5", {{"num_buckets", Value(std::int64_t(8))}, {"max_distance", Value(std::int64_t(20))}});
  bidir.causal = false;
  auto mb = make_model(bidir, 2);
  const Tensor b = mb->encoding().attention_bias(Tensor(), Tensor(), {pos, 0, true});
  const Tensor table = mb->parameter("pos.tables.0.weight");
  CHECK(b.value()(0, 0, 1, 3) == table.value()(4 + 2, 0));  // key 2 after the query: upper half
  CHECK(b.value()(0, 0, 3, 1) == table.value()(2, 0));
}

TEST_CASE("t5 rejects a max_distance that leaves no room for the logarithmic buckets, naming the keys", "[positional][t5]") {
  ModelDims dims = small_config("t5").dims();
  auto params = [](std::int64_t nb, std::int64_t md) {
    return std::map<std::string, Value>{{"num_buckets", Value(nb)}, {"max_distance", Value(md)}};
  };
  CHECK_THROWS_WITH(resolve_encoding_params("t5", params(32, 15), dims),
                    Catch::Contains("max_distance 15 must be greater than num_buckets/2 = 16"));
  CHECK_THROWS_WITH(resolve_encoding_params("t5", params(32, 16), dims), Catch::Contains("num_buckets/2 = 16"));
  CHECK_NOTHROW(resolve_encoding_params("t5", params(32, 17), dims));
  dims.causal = false;  // half the buckets per side: max_exact = 8
  CHECK_THROWS_WITH(resolve_encoding_params("t5", params(32, 8), dims), Catch::Contains("num_buckets/4 = 8"));
  CHECK_NOTHROW(resolve_encoding_params("t5", params(32, 9), dims));
  CHECK_THROWS_WITH(resolve_encoding_params("t5", params(3, 128), dims), Catch::Contains("num_buckets"));
}

TEST_CASE("kerple keeps r1, r2 positive (power r2 <= 2) by projecting them at each forward", "[positional][kerple]") {
  for (const char* variant : {"log", "power"}) {
    INFO(variant);
    auto m = make_model(small_config("kerple", {{"variant", Value(std::string(variant))}}), 4);
    Tensor r1 = m->parameter("pos.tables.1.r1"), r2 = m->parameter("pos.tables.1.r2");
    REQUIRE(r1.shape() == Shape{2});
    // initialized as the authors: log r1 ~ U(0, 2), r2 ~ U(0, 1); power r1 ~ U(0, 1), r2 ~ U(0, 2)
    auto init = make_model(small_config("kerple", {{"variant", Value(std::string(variant))}}), 4);
    r1.mutable_value() = Array({-0.5, 0.3});
    r2.mutable_value() = Array({5.0, -1.0});
    Rng rng(1);
    NoGrad ng;
    m->forward(random_tokens(1, 4, 11, rng), default_positions(1, 4));
    CHECK(r1.value()(0) == Approx(0.01));
    CHECK(r1.value()(1) == Approx(0.3));
    CHECK(r2.value()(0) == Approx(std::string(variant) == "power" ? 2.0 : 5.0));
    CHECK(r2.value()(1) == Approx(0.01));
    // bias[0, h, i, j] = -r1 log(1 + r2 d) or -r1 d^r2 with d = |i - j|
    const Tensor b = m->encoding().attention_bias(Tensor(), Tensor(), {default_positions(1, 4), 1, true});
    const double d = 3, want = std::string(variant) == "power" ? -0.01 * std::pow(d, 2.0) : -0.01 * std::log(1 + 5.0 * d);
    CHECK(b.value()(0, 0, 3, 0) == Approx(want));
    double lo = 1e9, hi = -1e9;
    for (const auto& p : init->parameters())
      if (p.name.rfind("pos.", 0) == 0)
        for (real v : p.tensor.value()) lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
    CHECK(lo > 0);
    CHECK(hi < 2);
  }
}

TEST_CASE("fire starts at c = 0.1, L = 512, and depends on the query id only past L", "[positional][fire]") {
  auto m = make_model(small_config("fire", {{"init_L", Value(6.0)}}), 5);
  CHECK(m->parameter("pos.tables.0.c").value()(0) == Approx(0.1));
  CHECK(m->parameter("pos.tables.1.L_multiplier").value()(0) == Approx(1.0));
  CHECK(m->parameter("pos.tables.0.out.weight").shape() == Shape{2, 32});  // per head
  auto shared = make_model(small_config("fire", {{"per_head", Value(false)}, {"shared_layers", Value(true)}}), 5);
  CHECK(shared->parameter("pos.tables.0.out.weight").shape() == Shape{1, 32});
  CHECK_THROWS(shared->parameter("pos.tables.1.c"));
  // Query ids below L = 6: the bias depends on p_i - p_j only; past it on p_i too.
  auto bias_at = [&](std::int32_t qi, std::int32_t kj) {
    IndexArray p(Shape{1, 2});
    p(0, 0) = kj;
    p(0, 1) = qi;
    return m->encoding().attention_bias(Tensor(), Tensor(), {p, 0, true}).value()(0, 0, 1, 0);
  };
  CHECK(bias_at(3, 1) == Approx(bias_at(5, 3)).epsilon(1e-6));
  CHECK(std::abs(bias_at(9, 7) - bias_at(5, 3)) > 1e-4);
}

namespace {

// FIRE's bias of layer 0 by its definition in double, from the model's float32 parameters: (B, H, T, T).
std::vector<double> fire_bias_f64(const Transformer& m, const IndexArray& p, double init_L) {
  auto at = [&](const std::string& name) { return m.parameter("pos.tables.0." + name).value(); };
  const Array c = at("c"), Lm = at("L_multiplier"), w1 = at("fc.weight"), b1 = at("fc.bias"), w2 = at("out.weight"),
              b2 = at("out.bias");
  const std::size_t B = p.shape()[0], T = p.shape()[1], H = w2.shape()[0], hidden = w1.shape()[0];
  auto psi = [&](double x) { return std::log1p(std::abs(double(c(0)) * x)); };
  const double L = std::abs(double(Lm(0)) * init_L);
  std::vector<double> out(B * H * T * T);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t j = 0; j < T; ++j) {
        const double x = psi(double(p(b, i)) - p(b, j)) / (psi(std::max(L, double(p(b, i)))) + 1e-6);
        for (std::size_t h = 0; h < H; ++h) {
          double y = b2(h);
          for (std::size_t k = 0; k < hidden; ++k) y += double(w2(h, k)) * std::max(0.0, double(w1(k, 0)) * x + b1(k));
          out[((b * H + h) * T + i) * T + j] = y;
        }
      }
  return out;
}

}  // namespace

TEST_CASE("fire's bias matches its float64 definition to 1e-5 relative at every allowed c, 1e-6 included",
          "[positional][fire]") {
  // Ids 0..129 (copy at size 64) in one row, sorted ids up to 4159 in the other: query ids on both
  // sides of L = 512.
  const std::size_t T = 130;
  IndexArray p(Shape{2, T});
  Rng rng(7);
  for (std::size_t t = 0; t < T; ++t) p(0, t) = std::int32_t(t), p(1, t) = std::int32_t(t * 32 + rng.below(32));
  for (double c : {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0, 1e3}) {
    auto m = make_model(small_config("fire", {{"init_c", Value(c)}}), 5);
    const Array got = m->encoding().attention_bias(Tensor(), Tensor(), {p, 0, false}).value();  // (2, H, T, T)
    const std::vector<double> want = fire_bias_f64(*m, p, 512.0);
    REQUIRE(got.size() == want.size());
    double worst = 0;  // the largest relative difference of one bias entry (none is near 0 here)
    for (std::size_t k = 0; k < want.size(); ++k)
      worst = std::max(worst, std::abs(double(got.data()[k]) - want[k]) / std::abs(want[k]));
    INFO("c = " << c << ": largest relative difference " << worst);
    CHECK(worst <= 1e-5);  // log(1 + |c x|) in float32 gave 4.6e-2 at c = 1e-6, 1.7e-4 at 1e-4
  }
}
