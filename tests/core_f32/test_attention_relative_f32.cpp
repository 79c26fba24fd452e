// Relative attention in the float build at a realistic size: the fused kernel against the naive
// materialising reference (tests/attention_reference.hpp), also in float, forward and every gradient.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "attention_reference.hpp"
#include "core/ops/attention.hpp"
#include "rel_diff.hpp"
#include "core/rng.hpp"
#include "core/tape.hpp"

using namespace pelab;
using pelab::test::rel_diff;

namespace {

Tensor randn_f(const Shape& shape, Rng& rng, double scale) {
  Array a(shape);
  for (auto& v : a) v = static_cast<real>(rng.normal() * scale);
  return Tensor(std::move(a), true);
}

}  // namespace

TEST_CASE("float relative attention matches the materialising reference", "[attention][relative][f32]") {
  const std::size_t B = 2, H = 4, hs = 16;
  for (bool causal : {true, false})
    for (bool per_row : {false, true})
      for (int clip : {4, 40}) {  // 40: every distance its own bucket
        const std::size_t Tq = causal ? 24 : 32, Tk = 32;
        const bool mirror = per_row;  // causal pairs then use buckets [clip, 2 clip]
        INFO("causal " << causal << " per-row table " << per_row << " clip " << clip);
        Rng rng(41 + clip);
        IndexArray pos(IndexArray::shape_type{per_row ? B : 1, Tk});
        for (std::size_t b = 0; b < pos.shape()[0]; ++b)
          for (std::size_t t = 0; t < Tk; ++t) pos(b, t) = static_cast<int>(t * (b + 1));  // row 1: stride 2
        const std::size_t R = 2 * clip + 1;
        std::vector<Tensor> x = {randn_f({B, H, Tq, hs}, rng, 1.0), randn_f({B, H, Tk, hs}, rng, 1.0),
                                 randn_f({B, H, Tk, hs}, rng, 1.0), randn_f({B, 1, Tq, Tk}, rng, 0.5),
                                 randn_f({R, hs}, rng, 0.5), randn_f({R, hs}, rng, 0.5)};
        AttentionOptions o;
        o.causal = causal;
        o.rel.index = test::shaw_index(pos, Tq, clip, mirror);
        Array seed(Shape{B, H, Tq, hs});
        for (auto& s : seed) s = static_cast<real>(rng.normal());
        std::vector<Array> out, grads[2];
        for (int pass = 0; pass < 2; ++pass) {
          Tape::current().clear();
          for (Tensor& t : x) t.zero_grad();
          o.bias = x[3];
          o.rel.key = x[4];
          o.rel.value = x[5];
          const Tensor y = pass == 0 ? attention(x[0], x[1], x[2], o) : test::reference_attention(x[0], x[1], x[2], o);
          out.push_back(y.value());
          y.backward(seed);
          for (const Tensor& t : x) grads[pass].push_back(t.grad());
        }
        CHECK(rel_diff(out[0], out[1]) < 1e-5);
        for (std::size_t t = 0; t < x.size(); ++t) {
          INFO("gradient of input " << t);
          CHECK(rel_diff(grads[0][t], grads[1][t]) < 1e-5);
        }
      }
}
