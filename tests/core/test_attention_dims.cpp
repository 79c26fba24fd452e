// The argument checks of attention and linear and the values derived from them (core/ops/attention_dims.hpp,
// core/ops/linear_dims.hpp): the bucket range the relative GEMMs span (visible pairs only), the block of a
// broadcast bias each (batch, head) reads, and the shapes linear works in. The ops' own tests run these
// through forward and backward; here the derived numbers are checked directly.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "core/ops/attention_dims.hpp"
#include "core/ops/linear_dims.hpp"

using namespace pelab;
using namespace pelab::detail;
using Catch::Matchers::Contains;

namespace {

Tensor zeros(const Shape& s) { return Tensor(Array(xt::zeros<real>(s))); }

}  // namespace

TEST_CASE("attention_dims: sizes and the bias block each batch and head reads", "[attention]") {
  const Tensor q = zeros({2, 3, 4, 8}), k = zeros({2, 3, 6, 8}), v = zeros({2, 3, 6, 8});
  AttentionOptions opt;
  AttnDims d = attention_dims(q, k, v, opt);
  CHECK(d.B == 2);
  CHECK(d.H == 3);
  CHECK(d.Tq == 4);
  CHECK(d.Tk == 6);
  CHECK(d.hs == 8);
  CHECK(d.bias_batch == 0);
  std::vector<real> bias_storage(2 * 3 * 4 * 6);  // the largest bias below: offsets stay inside it
  real* base = bias_storage.data();
  CHECK(d.bias_block(static_cast<real*>(nullptr), 1, 2) == nullptr);  // no bias: nothing to read
  const std::size_t blk = 4 * 6;
  opt.bias = zeros({2, 3, 4, 6});  // a block per (batch, head)
  d = attention_dims(q, k, v, opt);
  CHECK(d.bias_block(base, 1, 2) == base + (1 * 3 + 2) * blk);
  opt.bias = zeros({1, 3, 4, 6});  // shared by the batch
  d = attention_dims(q, k, v, opt);
  CHECK(d.bias_batch == 1);
  CHECK(d.bias_heads == 3);
  CHECK(d.bias_block(base, 1, 2) == base + 2 * blk);
  opt.bias = zeros({2, 1, 4, 6});  // shared by the heads
  d = attention_dims(q, k, v, opt);
  CHECK(d.bias_block(base, 1, 2) == base + 1 * blk);
  opt.bias = zeros({1, 1, 4, 6});
  d = attention_dims(q, k, v, opt);
  CHECK(d.bias_block(base, 1, 2) == base);
  opt.bias = zeros({2, 2, 4, 6});
  CHECK_THROWS_WITH(attention_dims(q, k, v, opt), Contains("attention") && Contains("bias (2, 2, 4, 6)"));
  opt.bias = Tensor();
  CHECK_THROWS_WITH(attention_dims(zeros({2, 3, 7, 8}), k, v, opt), Contains("causal attention needs Tq <= Tk"));
  CHECK_THROWS_WITH(attention_dims(q, zeros({2, 3, 6, 4}), v, opt), Contains("q and k differ"));
  opt.head_scale = {1, 2};
  CHECK_THROWS_WITH(attention_dims(q, k, v, opt), Contains("head_scale has 2 entries for 3 heads"));
}

TEST_CASE("attention_dims: the relative buckets span only the pairs a query sees", "[attention]") {
  const std::size_t B = 2, H = 1, Tq = 4, Tk = 6, hs = 4, R = 10;
  const Tensor q = zeros({B, H, Tq, hs}), k = zeros({B, H, Tk, hs}), v = zeros({B, H, Tk, hs});
  // Causal with Tk - Tq = 2: query i sees keys j <= i + 2. Visible pairs get bucket 2 + (i + 2 - j), the
  // masked ones -7, which is out of range and must never be read.
  auto idx = std::make_shared<IndexArray>(IndexArray::from_shape({1, Tq, Tk}));
  std::int32_t lo = 1000, hi = -1;
  for (std::size_t i = 0; i < Tq; ++i)
    for (std::size_t j = 0; j < Tk; ++j) {
      const bool visible = j <= i + 2;
      const std::int32_t x = visible ? std::int32_t(2 + (i + 2 - j)) : -7;
      (*idx)(0, i, j) = x;
      if (visible) lo = std::min(lo, x), hi = std::max(hi, x);
    }
  REQUIRE(lo == 2);
  REQUIRE(hi == 7);
  AttentionOptions opt;
  opt.rel.index = idx;
  opt.rel.key = zeros({R, hs});
  AttnDims d = attention_dims(q, k, v, opt);
  CHECK(d.rel_rows == 1);
  CHECK(d.rel_lo == lo);
  CHECK(d.rel_buckets == std::size_t(hi - lo + 1));
  CHECK(d.rel_index(idx.get(), 1) == idx->data());  // one table shared by the batch
  CHECK(d.rel_index(nullptr, 1) == nullptr);
  // Without the causal mask every pair is visible: the -7 is read and named.
  opt.causal = false;
  CHECK_THROWS_WITH(attention_dims(q, k, v, opt), Contains("relative index table entry (0, 0, 3) is -7") &&
                                                     Contains("outside [0, 10)"));
  // One table per batch row: row b's table starts b * Tq * Tk further.
  opt.causal = true;
  auto per_row = std::make_shared<IndexArray>(IndexArray::from_shape({B, Tq, Tk}));
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < Tq; ++i)
      for (std::size_t j = 0; j < Tk; ++j) (*per_row)(b, i, j) = (*idx)(0, i, j) + std::int32_t(b);
  opt.rel.index = per_row;
  d = attention_dims(q, k, v, opt);
  CHECK(d.rel_rows == B);
  CHECK(d.rel_lo == 2);
  CHECK(d.rel_buckets == 7);  // buckets 2..8 over both rows
  CHECK(d.rel_index(per_row.get(), 1) == per_row->data() + Tq * Tk);
  // Tables of the wrong width, or key and value tables of different sizes.
  opt.rel.key = zeros({R, hs + 1});
  CHECK_THROWS_WITH(attention_dims(q, k, v, opt), Contains("relative key table (10, 5) must be (R, hs)"));
  opt.rel.key = zeros({R, hs});
  opt.rel.value = zeros({R - 1, hs});
  CHECK_THROWS_WITH(attention_dims(q, k, v, opt), Contains("relative key and value tables differ in size"));
}

TEST_CASE("attention_packed_dims: qkv (B, T, 3C) split into heads", "[attention]") {
  const AttnDims d = attention_packed_dims(zeros({2, 5, 36}), 3, AttentionOptions{});
  CHECK(d.B == 2);
  CHECK(d.H == 3);
  CHECK(d.Tq == 5);
  CHECK(d.Tk == 5);
  CHECK(d.hs == 4);
  CHECK_THROWS_WITH(attention_packed_dims(zeros({2, 5, 35}), 3, AttentionOptions{}),
                    Contains("packed q, k, v must be (B, T, 3 C)"));
  CHECK_THROWS_WITH(attention_packed_dims(zeros({2, 5, 36}), 0, AttentionOptions{}), Contains("packed"));
}

TEST_CASE("linear_dims: x (..., in) viewed as rows, y (..., out)", "[linear]") {
  const LinearDims d = linear_dims("linear", zeros({2, 3, 4}), zeros({5, 4}), zeros({5}));
  CHECK(d.in == 4);
  CHECK(d.out == 5);
  CHECK(d.rows == 6);
  CHECK(d.out_shape == Shape{2, 3, 5});
  CHECK(linear_dims("linear", zeros({4}), zeros({5, 4}), Tensor()).rows == 1);
  CHECK_THROWS_WITH(linear_dims("linear", zeros({2, 3}), zeros({5, 4}), Tensor()),
                    Contains("linear") && Contains("does not end in the weight's in-features"));
  CHECK_THROWS_WITH(linear_dims("linear", zeros({2, 4}), zeros({5, 4}), zeros({4})), Contains("bias (4,) does not match weight (5, 4)"));
  CHECK_THROWS_WITH(linear_dims("linear", zeros({2, 4}), zeros({5, 4, 1}), Tensor()), Contains("weight must be 2-D"));
}
