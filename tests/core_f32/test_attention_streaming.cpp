// The tape-free attention forward (query tiles, core/ops/attention.cpp forward_tiles) against the
// materialising one (the same call asked for its probabilities, which keeps (B, H, Tq, Tk)): every
// option, lengths that are not multiples of the tile, in the float build where rounding shows; and the
// same bits at one and two threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "attention_reference.hpp"
#include "core/ops/attention.hpp"
#include "rel_diff.hpp"
#include "core/ops/shape.hpp"
#include "core/parallel.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"

using namespace pelab;
using pelab::test::rel_diff;

namespace {

Tensor randn_f(const Shape& shape, Rng& rng, double scale) {
  Array a(shape);
  for (auto& v : a) v = static_cast<real>(rng.normal() * scale);
  return Tensor(std::move(a));
}


struct Case {
  std::string name;
  std::size_t Tq, Tk;
  bool causal = true, bias = false, shared_bias = true, relative = false;
  Normalizer normalizer = Normalizer::softmax;
  std::size_t window = 0, chunk = 0;
};

// Streamed and materialised outputs of one case (and the streamed one at two threads).
void check_case(const Case& cs) {
  INFO(cs.name << ": Tq " << cs.Tq << " Tk " << cs.Tk);
  const std::size_t B = 2, H = 3, hs = 16;
  Rng rng(cs.Tq * 31 + cs.Tk);
  const Tensor q = randn_f({B, H, cs.Tq, hs}, rng, 1.0), k = randn_f({B, H, cs.Tk, hs}, rng, 1.0);
  const Tensor v = randn_f({B, H, cs.Tk, hs}, rng, 1.0);
  AttentionOptions o;
  o.causal = cs.causal;
  o.normalizer = cs.normalizer;
  o.window = cs.window;
  o.chunk = cs.chunk;
  if (cs.bias) o.bias = randn_f({cs.shared_bias ? 1 : B, cs.shared_bias ? H : 1, cs.Tq, cs.Tk}, rng, 1.0);
  if (cs.relative) {
    IndexArray pos(IndexArray::shape_type{1, cs.Tk});
    for (std::size_t t = 0; t < cs.Tk; ++t) pos(0, t) = static_cast<int>(t);
    const int clip = 8;
    o.rel.index = test::shaw_index(pos, cs.Tq, clip, !cs.causal);
    o.rel.key = randn_f({2 * clip + 1, hs}, rng, 0.5);
    o.rel.value = randn_f({2 * clip + 1, hs}, rng, 0.5);
  }
  NoGrad no_grad;
  const Array streamed = attention(q, k, v, o).value();
  Array probs;
  AttentionOptions keep = o;
  keep.probs_out = &probs;  // forces the materialising path
  const Array full = attention(q, k, v, keep).value();
  CHECK(rel_diff(streamed, full) < 2e-6);
  if (cs.normalizer == Normalizer::softmax && cs.window == 0 && cs.chunk == 0)  // what the naive reference covers
    CHECK(rel_diff(streamed, test::reference_attention(q, k, v, o).value()) < 2e-5);
  parallel::set_threads(2);
  const Array two = attention(q, k, v, o).value();
  parallel::set_threads(1);
  CHECK(std::equal(two.begin(), two.end(), streamed.begin()));
}

}  // namespace

TEST_CASE("tape-free attention streams query tiles and matches the materialising path", "[attention][f32]") {
  // 64-row tiles: 1, 63, 64, 65 and 150 query rows cover a partial first tile, exact tiles and a tail.
  for (std::size_t T : {1, 63, 64, 65, 150}) {
    check_case({"causal", T, T});
    check_case({"bidirectional", T, T, false});
  }
  check_case({"causal, fewer queries than keys", 70, 200});
  check_case({"bidirectional, fewer queries than keys", 70, 200, false});
  Case bias{"shared bias", 150, 150};
  bias.bias = true;
  check_case(bias);
  bias.name = "per-row bias shared by heads";
  bias.shared_bias = false;
  check_case(bias);
  for (bool causal : {true, false}) {
    Case rel{"Shaw relative keys and values", 130, 130, causal};
    rel.relative = true;
    rel.bias = true;
    check_case(rel);
  }
  Case stick{"stick-breaking", 150, 150};
  stick.normalizer = Normalizer::stick_breaking;
  stick.bias = true;
  check_case(stick);
  Case window{"sliding window", 150, 150};
  window.window = 20;
  check_case(window);
  window.name = "stick-breaking in a window";
  window.normalizer = Normalizer::stick_breaking;
  check_case(window);
  // Chunks that end inside a 64-row tile, on a tile edge and past the sequence; with a window and a bias.
  for (std::size_t chunk : {24, 64, 200}) {
    Case ch{"chunked " + std::to_string(chunk), 150, 150};
    ch.chunk = chunk;
    ch.bias = true;
    check_case(ch);
    ch.name += ", stick-breaking, window 20";
    ch.normalizer = Normalizer::stick_breaking;
    ch.window = 20;
    check_case(ch);
  }
}

TEST_CASE("packed tape-free attention matches its materialising path", "[attention][f32]") {
  const std::size_t B = 2, H = 4, hs = 8, T = 150;
  Rng rng(5);
  const Tensor qkv = randn_f({B, T, 3 * H * hs}, rng, 1.0);
  NoGrad no_grad;
  const Array streamed = attention_packed(qkv, H).value();
  Array probs;
  AttentionOptions keep;
  keep.probs_out = &probs;
  CHECK(rel_diff(streamed, attention_packed(qkv, H, keep).value()) < 2e-6);
}

TEST_CASE("query_offset: a tile of queries against every key gives those rows of the whole attention",
          "[attention][f32]") {
  const std::size_t B = 2, H = 3, hs = 8, T = 150, i0 = 64, i1 = 128;
  Rng rng(9);
  const Tensor q = randn_f({B, H, T, hs}, rng, 1.0), k = randn_f({B, H, T, hs}, rng, 1.0);
  const Tensor v = randn_f({B, H, T, hs}, rng, 1.0), bias = randn_f({1, H, T, T}, rng, 1.0);
  for (std::size_t window : {0, 20}) {
    INFO("window " << window);
    AttentionOptions o;
    o.window = window;
    o.bias = bias;
    NoGrad no_grad;
    const Array whole = attention(q, k, v, o).value();
    AttentionOptions t = o;
    t.bias = slice(bias, 2, i0, i1);
    t.query_offset = std::ptrdiff_t(i0);
    const Array tile = attention(slice(q, 2, i0, i1), k, v, t).value();
    Array expected = slice(Tensor(whole), 2, i0, i1).value();
    CHECK(rel_diff(tile, expected) < 2e-6);
  }
  AttentionOptions past;
  past.query_offset = std::ptrdiff_t(T - 10);  // 20 queries from row 140: the last 10 would see no key
  CHECK_THROWS_WITH(attention(slice(q, 2, 0, 20), k, v, past), Catch::Contains("query_offset"));
}

namespace {

// Output and gradients of q, k, v (and the bias) of one attention, with the probabilities kept or
// recomputed in backward (threshold 0), at `threads` threads.
std::vector<Array> attention_grads(const AttentionOptions& base, bool recompute, std::size_t threads, bool packed) {
  const std::size_t B = 2, H = 3, hs = 16, T = 70;
  Rng rng(7);
  Tensor q = randn_f({B, H, T, hs}, rng, 1.0), k = randn_f({B, H, T, hs}, rng, 1.0), v = randn_f({B, H, T, hs}, rng, 1.0);
  Tensor qkv = randn_f({B, T, 3 * H * hs}, rng, 1.0);
  Tensor bias = randn_f({1, H, T, T}, rng, 1.0);
  for (Tensor* t : {&q, &k, &v, &qkv, &bias}) t->set_requires_grad(true);
  AttentionOptions o = base;
  o.bias = bias;
  detail::set_keep_probs_bytes(recompute ? 0 : kKeepProbsBytes);
  parallel::set_threads(threads);
  Tape::current().clear();
  Tensor out = packed ? attention_packed(qkv, H, o) : attention(q, k, v, o);
  Array seed(out.shape());
  Rng r2(9);
  for (auto& x : seed) x = static_cast<real>(r2.normal());
  out.backward(seed);
  parallel::set_threads(1);
  detail::set_keep_probs_bytes(kKeepProbsBytes);
  if (packed) return {out.value(), qkv.grad(), bias.grad()};
  return {out.value(), q.grad(), k.grad(), v.grad(), bias.grad()};
}

}  // namespace

TEST_CASE("recomputing the probabilities in backward gives the kept path's bits, at one and two threads",
          "[attention][f32]") {
  for (const Normalizer n : {Normalizer::softmax, Normalizer::stick_breaking})
    for (const bool packed : {false, true}) {
      if (packed && n == Normalizer::stick_breaking) continue;  // the model packs only the softmax
      INFO("stick-breaking " << (n == Normalizer::stick_breaking) << ", packed " << packed);
      AttentionOptions o;
      o.normalizer = n;
      const std::vector<Array> kept = attention_grads(o, false, 1, packed);
      for (const std::size_t threads : {1, 2}) {
        const std::vector<Array> again = attention_grads(o, true, threads, packed);
        REQUIRE(again.size() == kept.size());
        for (std::size_t i = 0; i < kept.size(); ++i) {
          INFO("array " << i << " at " << threads << " threads");
          REQUIRE(again[i].size() == kept[i].size());
          CHECK(std::equal(again[i].begin(), again[i].end(), kept[i].begin()));
        }
      }
    }
}
