// Attention that keeps no probabilities for backward (long contexts: kKeepProbsBytes) and recomputes
// each block's in backward: gradients against central differences in double, with the threshold at 0
// so that every call recomputes, for the softmax with biases, windows, per-head scales and Tq < Tk,
// stick-breaking, and the packed layout.
#include "core/ops/attention.hpp"
#include "core/ops/shape.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {

// Every attention in scope recomputes (threshold 0 bytes); the default comes back after.
struct RecomputeAll {
  RecomputeAll() { detail::set_keep_probs_bytes(0); }
  ~RecomputeAll() { detail::set_keep_probs_bytes(kKeepProbsBytes); }
};

struct Case {
  const char* name;
  Normalizer normalizer;
  bool causal;
  std::size_t window, Tq, Tk, bias_batch, bias_heads;  // bias dims (0: none)
  bool head_scale;
  std::size_t chunk = 0;
};

const std::vector<Case> kCases = {
    {"softmax causal", Normalizer::softmax, true, 0, 5, 5, 0, 0, false},
    {"softmax non-causal, per-row per-head bias", Normalizer::softmax, false, 0, 4, 5, 2, 3, false},
    {"softmax causal Tq < Tk, shared bias, head scales", Normalizer::softmax, true, 0, 3, 5, 1, 1, true},
    {"softmax window 2", Normalizer::softmax, true, 2, 6, 6, 1, 3, false},
    {"stick-breaking", Normalizer::stick_breaking, true, 0, 5, 5, 0, 0, false},
    {"stick-breaking window 3, bias", Normalizer::stick_breaking, true, 3, 6, 6, 2, 1, false},
    {"softmax chunk 3, bias", Normalizer::softmax, true, 0, 7, 7, 1, 3, false, 3},
    {"stick-breaking chunk 2", Normalizer::stick_breaking, true, 0, 6, 6, 0, 0, false, 2},
};

}  // namespace

TEST_CASE("attention without kept probabilities: backward recomputes them, gradients checked in double",
          "[attention][grad]") {
  REQUIRE(attention_keeps_probs(1, 1, 64, 64, false));             // small attentions keep theirs
  REQUIRE(!attention_keeps_probs(8, 4, 4096, 4096, false));       // 2 GiB: recomputed
  REQUIRE(attention_keeps_probs(8, 4, 4096, 4096, true));         // relative terms always keep theirs
  const RecomputeAll all;
  REQUIRE(!attention_keeps_probs(1, 1, 2, 2, false));
  Rng rng(31);
  constexpr std::size_t B = 2, H = 3, hs = 3;
  for (const Case& c : kCases) {
    INFO(c.name);
    std::vector<Tensor> in = {randn({B, H, c.Tq, hs}, rng), randn({B, H, c.Tk, hs}, rng), randn({B, H, c.Tk, hs}, rng)};
    if (c.bias_batch) in.push_back(randn({c.bias_batch, c.bias_heads, c.Tq, c.Tk}, rng));
    AttentionOptions o;
    o.causal = c.causal;
    o.normalizer = c.normalizer;
    o.window = c.window;
    o.chunk = c.chunk;
    if (c.head_scale) o.head_scale = {real(0.5), real(1.3), real(-0.7)};
    const auto r = gradcheck(
        [&](const std::vector<Tensor>& x) {
          AttentionOptions oo = o;
          if (x.size() > 3) oo.bias = x[3];
          return attention(x[0], x[1], x[2], oo);
        },
        in);
    std::size_t expected = 0;
    for (const Tensor& t : in) expected += t.numel();
    CHECK(r.checked == expected);
  }
}

TEST_CASE("packed attention without kept probabilities: gradients of qkv and a bias checked in double",
          "[attention][grad]") {
  const RecomputeAll all;
  Rng rng(32);
  constexpr std::size_t B = 2, H = 2, hs = 3, T = 5;
  const Tensor qkv = randn({B, T, 3 * H * hs}, rng), bias = randn({1, H, T, T}, rng);
  for (const bool causal : {true, false}) {
    INFO("causal " << causal);
    const auto r = gradcheck(
        [&](const std::vector<Tensor>& x) {
          AttentionOptions o;
          o.causal = causal;
          o.bias = x[1];
          return attention_packed(x[0], H, o);
        },
        {qkv, bias});
    CHECK(r.checked == qkv.numel() + bias.numel());
  }
}
