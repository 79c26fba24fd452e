// attention_packed (q, k, v read from the fused projection, heads merged on output) against the
// split path merge_heads(attention(split_heads(...))): forward and every gradient, for masks, biases,
// scales and relative keys/values; and central differences.
#include "attention_reference.hpp"
#include "core/ops/attention.hpp"
#include "core/ops/heads.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

constexpr std::size_t kB = 2, kH = 3, kHs = 4, kT = 5;

Tensor split_path(const Tensor& qkv, const AttentionOptions& o) {
  return merge_heads(attention(split_heads(qkv, kH, 3, 0), split_heads(qkv, kH, 3, 1), split_heads(qkv, kH, 3, 2), o));
}

struct Case {
  const char* name;
  bool causal;
  Shape bias;  // empty: none
  bool head_scale, rel_keys, rel_values;
};

const Case kCases[] = {
    {"causal", true, {}, false, false, false},
    {"non-causal", false, {}, false, false, false},
    {"causal, per-head bias shared by the batch", true, {1, kH, kT, kT}, false, false, false},
    {"non-causal, (B, 1) bias, head scales", false, {kB, 1, kT, kT}, true, false, false},
    {"causal, (B, H) bias", true, {kB, kH, kT, kT}, false, false, false},
    {"causal, one bias for all", true, {1, 1, kT, kT}, false, false, false},
    {"causal, relative keys and values", true, {}, false, true, true},
    {"non-causal, relative keys, per-head bias, head scales", false, {1, kH, kT, kT}, true, true, false},
    {"causal, relative values only", true, {}, true, false, true},
};

}  // namespace

TEST_CASE("attention_packed equals the split-heads path: values and every gradient", "[attention][packed]") {
  Rng rng(21);
  for (const Case& c : kCases) {
    INFO(c.name);
    Tensor qkv = randn({kB, kT, 3 * kH * kHs}, rng);
    Tensor bias = c.bias.empty() ? Tensor() : randn(c.bias, rng);
    Tensor ak = c.rel_keys ? randn({7, kHs}, rng) : Tensor(), av = c.rel_values ? randn({7, kHs}, rng) : Tensor();
    AttentionOptions o;
    o.causal = c.causal;
    o.bias = bias;
    if (c.head_scale) o.head_scale = {real(0.5), real(1.3), real(-0.7)};
    if (c.rel_keys || c.rel_values) {
      IndexArray pos(IndexArray::shape_type{kB, kT});
      for (std::size_t b = 0; b < kB; ++b)
        for (std::size_t t = 0; t < kT; ++t) pos(b, t) = static_cast<int>(2 * b + t);
      o.rel.index = test::shaw_index(pos, kT, 3);
      o.rel.key = ak;
      o.rel.value = av;
    }
    const Tensor g = randn({kB, kT, kH * kHs}, rng, 1, false);
    std::vector<Tensor> params = {qkv};
    for (const Tensor& t : {bias, ak, av})
      if (t.defined()) params.push_back(t);
    auto run = [&](bool packed) {
      for (Tensor& p : params) p.zero_grad();
      Tensor y = packed ? attention_packed(qkv, kH, o) : split_path(qkv, o);
      y.backward(g.value());
      std::vector<Array> out = {y.value()};
      for (Tensor& p : params) out.push_back(p.grad());
      return out;
    };
    const auto want = run(false), got = run(true);
    REQUIRE(got.size() == want.size());
    for (std::size_t t = 0; t < got.size(); ++t) {
      REQUIRE(got[t].shape() == want[t].shape());
      for (std::size_t i = 0; i < got[t].size(); ++i)
        CHECK(got[t].data()[i] == Approx(want[t].data()[i]).epsilon(1e-12).margin(1e-13));
    }
  }
}

TEST_CASE("attention_packed gradients by central differences", "[attention][packed][grad]") {
  Rng rng(22);
  Tensor qkv = randn({kB, kT, 3 * kH * kHs}, rng), bias = randn({1, kH, kT, kT}, rng);
  auto r = gradcheck(
      [](const std::vector<Tensor>& in) {
        AttentionOptions o;
        o.bias = in[1];
        return attention_packed(in[0], kH, o);
      },
      {qkv, bias});
  CHECK(r.checked == qkv.numel() + bias.numel());
}

TEST_CASE("attention_packed shape errors name the op", "[attention][packed][errors]") {
  Tensor bad = Tensor::zeros({2, 5, 10});
  CHECK_THROWS_WITH(attention_packed(bad, 3), Catch::Contains("attention") && Catch::Contains("(B, T, 3 C)"));
  Tensor qkv = Tensor::zeros({2, 5, 36});
  AttentionOptions o;
  o.bias = Tensor::zeros({1, 3, 5, 4});
  CHECK_THROWS_WITH(attention_packed(qkv, 3, o), Catch::Contains("bias"));
}
