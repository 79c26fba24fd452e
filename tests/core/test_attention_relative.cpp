// attention with relative keys/values (Shaw et al. 2018) and 4-D biases: gradients against central
// differences, the fused kernel against a naive reference that materialises (B, H, Tq, Tk, hs)
// (tests/attention_reference.hpp), masked pairs never read, and errors.
#include <cmath>

#include "attention_reference.hpp"
#include "core/ops/attention.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;
using pelab::test::reference_attention;
using pelab::test::shaw_index;

namespace {

constexpr std::size_t kB = 2, kH = 3, kHs = 3;
constexpr int kClip = 2;
constexpr std::size_t kR = 2 * kClip + 1;

struct RelCombo {
  const char* name;
  bool causal;
  std::size_t Tq, Tk;
  bool per_row;        // index table (B, Tq, Tk) from different positions per row, else (1, Tq, Tk)
  bool keys, values;   // which tables
  Shape bias;          // empty: no bias
  bool head_scale;
  bool mirror = false;  // buckets clip - distance: causal pairs use only buckets >= clip
};

const std::vector<RelCombo> kRelCombos = {
    {"causal square, shared table, keys+values", true, 5, 5, false, true, true, {}, false},
    {"causal Tq<Tk offset, per-row table, keys+values, per-row bias", true, 4, 6, true, true, true, {kB, 1, 4, 6}, false},
    {"causal Tq<Tk offset, shared table, keys only", true, 3, 5, false, true, false, {}, false},
    {"causal per-row table, values only, per-head scales", true, 5, 5, true, false, true, {}, true},
    {"non-causal square, shared table, keys only", false, 5, 5, false, true, false, {}, false},
    {"non-causal Tq<Tk, per-row table, values only, shared bias", false, 4, 6, true, false, true, {1, 1, 4, 6}, false},
    {"non-causal, per-row table, keys+values, per-head bias and scales", false, 5, 5, true, true, true, {1, kH, 5, 5}, true},
    {"causal, per-row table, keys+values, (B, H) bias", true, 5, 5, true, true, true, {kB, kH, 5, 5}, false},
    {"causal Tq<Tk, mirrored shared table (buckets from clip up), keys+values", true, 4, 6, false, true, true, {}, false, true},
    {"causal, mirrored per-row table, keys+values, per-head scales", true, 5, 5, true, true, true, {}, true, true},
};

// Positions (rows, Tk): row b starts at 3b and skips ahead at one place (per-row tables differ).
IndexArray row_positions(std::size_t rows, std::size_t T) {
  IndexArray p(IndexArray::shape_type{rows, T});
  for (std::size_t b = 0; b < rows; ++b)
    for (std::size_t t = 0; t < T; ++t) p(b, t) = static_cast<int>(3 * b + t + (t >= 2 + b ? 2 * b : 0));
  return p;
}

struct RelInputs {
  std::vector<Tensor> tensors;  // q, k, v, then bias, a^K, a^V where present
  AttentionOptions opt;         // index, flags and scales; the tensors are taken from `tensors`
  int bias_at = -1, key_at = -1, value_at = -1;

  AttentionOptions bind(const std::vector<Tensor>& in) const {
    AttentionOptions o = opt;
    if (bias_at >= 0) o.bias = in[bias_at];
    if (key_at >= 0) o.rel.key = in[key_at];
    if (value_at >= 0) o.rel.value = in[value_at];
    return o;
  }
};

RelInputs make_inputs(const RelCombo& c, Rng& rng) {
  RelInputs r;
  r.tensors = {randn({kB, kH, c.Tq, kHs}, rng), randn({kB, kH, c.Tk, kHs}, rng), randn({kB, kH, c.Tk, kHs}, rng)};
  r.opt.causal = c.causal;
  r.opt.rel.index = shaw_index(row_positions(c.per_row ? kB : 1, c.Tk), c.Tq, kClip, c.mirror);
  if (c.head_scale) r.opt.head_scale = {real(0.5), real(1.3), real(-0.7)};
  auto add = [&](Tensor t) {
    r.tensors.push_back(std::move(t));
    return int(r.tensors.size() - 1);
  };
  if (!c.bias.empty()) r.bias_at = add(randn(c.bias, rng));
  if (c.keys) r.key_at = add(randn({kR, kHs}, rng));
  if (c.values) r.value_at = add(randn({kR, kHs}, rng));
  return r;
}

}  // namespace

TEST_CASE("relative attention: gradients of q k v bias a^K a^V against central differences", "[attention][relative][grad]") {
  Rng rng(31);
  for (const RelCombo& c : kRelCombos) {
    INFO(c.name);
    const RelInputs in = make_inputs(c, rng);
    auto r = gradcheck([&](const std::vector<Tensor>& x) { return attention(x[0], x[1], x[2], in.bind(x)); },
                       in.tensors);
    std::size_t expected = 0;
    for (const Tensor& t : in.tensors) expected += t.numel();
    CHECK(r.checked == expected);
  }
}

TEST_CASE("relative attention: fused kernel matches the materialising reference, forward and every gradient",
          "[attention][relative]") {
  Rng rng(32);
  for (const RelCombo& c : kRelCombos) {
    INFO(c.name);
    const RelInputs in = make_inputs(c, rng);
    Rng seed_rng(5);
    const Tensor seed = randn({kB, kH, c.Tq, kHs}, seed_rng, 1, false);
    std::vector<Array> outs, grads[2];
    for (int pass = 0; pass < 2; ++pass) {
      Tape::current().clear();
      std::vector<Tensor> x = in.tensors;
      for (Tensor& t : x) t.zero_grad();
      const Tensor y = pass == 0 ? attention(x[0], x[1], x[2], in.bind(x)) : reference_attention(x[0], x[1], x[2], in.bind(x));
      outs.push_back(y.value());
      y.backward(seed.value());
      for (const Tensor& t : x) grads[pass].push_back(t.grad());
    }
    REQUIRE(outs[0].shape() == outs[1].shape());
    for (std::size_t i = 0; i < outs[0].size(); ++i) CHECK(outs[0].data()[i] == Approx(outs[1].data()[i]).margin(1e-12));
    REQUIRE(grads[0].size() == grads[1].size());
    for (std::size_t t = 0; t < grads[0].size(); ++t) {
      INFO("gradient of input " << t);
      REQUIRE(grads[0][t].shape() == grads[1][t].shape());
      for (std::size_t i = 0; i < grads[0][t].size(); ++i)
        CHECK(grads[0][t].data()[i] == Approx(grads[1][t].data()[i]).margin(1e-12));
    }
  }
}

TEST_CASE("relative attention: causal pairs past the diagonal are never read, and unused buckets get zero gradient",
          "[attention][relative]") {
  Rng rng(33);
  const std::size_t Tq = 4, Tk = 6;
  Tensor q = randn({kB, kH, Tq, kHs}, rng), k = randn({kB, kH, Tk, kHs}, rng), v = randn({kB, kH, Tk, kHs}, rng);
  // Causal Shaw buckets: keys at or before the query have distance <= 0, so buckets clip+1.. are unused.
  Tensor ak = randn({kR, kHs}, rng), av = randn({kR, kHs}, rng);
  auto idx = shaw_index(row_positions(1, Tk), Tq, kClip);
  auto garbage = std::make_shared<IndexArray>(*idx);
  for (std::size_t i = 0; i < Tq; ++i)
    for (std::size_t j = i + (Tk - Tq) + 1; j < Tk; ++j) (*garbage)(0, i, j) = (i + j) % 2 ? -7 : 1000;
  Array g[2][5];
  Array y[2];
  for (int pass = 0; pass < 2; ++pass) {
    Tape::current().clear();
    for (Tensor* t : {&q, &k, &v, &ak, &av}) t->zero_grad();
    AttentionOptions o;
    o.rel = {pass == 0 ? idx : garbage, ak, av};
    const Tensor out = attention(q, k, v, o);
    y[pass] = out.value();
    out.backward(xt::ones<real>(out.shape()));
    int n = 0;
    for (Tensor* t : {&q, &k, &v, &ak, &av}) g[pass][n++] = t->grad();
  }
  CHECK((y[0] == y[1]));  // bit-identical
  for (int n = 0; n < 5; ++n) CHECK((g[0][n] == g[1][n]));
  for (std::size_t r = kClip + 1; r < kR; ++r)
    for (std::size_t c = 0; c < kHs; ++c) {
      CHECK(g[0][3](r, c) == 0);
      CHECK(g[0][4](r, c) == 0);
    }
  bool used_nonzero = false;
  for (std::size_t c = 0; c < kHs; ++c) used_nonzero = used_nonzero || g[0][3](kClip, c) != 0;
  CHECK(used_nonzero);
}

TEST_CASE("relative attention: zero tables change nothing", "[attention][relative]") {
  Rng rng(34);
  Tensor q = randn({kB, kH, 5, kHs}, rng, 1, false), k = randn({kB, kH, 5, kHs}, rng, 1, false);
  Tensor v = randn({kB, kH, 5, kHs}, rng, 1, false);
  const Tensor plain = attention(q, k, v);
  AttentionOptions o;
  o.rel = {shaw_index(row_positions(kB, 5), 5, kClip), Tensor::zeros({kR, kHs}), Tensor::zeros({kR, kHs})};
  const Tensor rel = attention(q, k, v, o);
  REQUIRE(rel.numel() == plain.numel());
  for (std::size_t i = 0; i < rel.numel(); ++i) CHECK(rel.data()[i] == Approx(plain.data()[i]).margin(1e-14));
}

TEST_CASE("relative attention errors name the op and what is wrong", "[attention][relative][errors]") {
  Tensor q = Tensor::zeros({2, 3, 4, 5}), k = Tensor::zeros({2, 3, 6, 5}), v = Tensor::zeros({2, 3, 6, 5});
  auto idx = std::make_shared<const IndexArray>(xt::zeros<std::int32_t>({std::size_t(1), std::size_t(4), std::size_t(6)}));
  const Tensor table = Tensor::zeros({7, 5});
  auto with = [&](std::shared_ptr<const IndexArray> i, Tensor key, Tensor value) {
    AttentionOptions o;
    o.rel = {std::move(i), std::move(key), std::move(value)};
    return attention(q, k, v, o);
  };
  CHECK_NOTHROW(with(idx, table, table));
  CHECK_NOTHROW(with(idx, table, Tensor()));
  CHECK_NOTHROW(with(idx, Tensor(), table));
  CHECK_THROWS_WITH(with(idx, Tensor(), Tensor()), Catch::Contains("attention") && Catch::Contains("without a key or value"));
  CHECK_THROWS_WITH(with(nullptr, table, Tensor()), Catch::Contains("attention") && Catch::Contains("without an index"));
  CHECK_THROWS_WITH(with(idx, Tensor::zeros({7, 4}), Tensor()), Catch::Contains("relative key table") && Catch::Contains("(7, 4)"));
  CHECK_THROWS_WITH(with(idx, Tensor(), Tensor::zeros({7})), Catch::Contains("relative value table") && Catch::Contains("(7,)"));
  CHECK_THROWS_WITH(with(idx, Tensor::zeros({0, 5}), Tensor()), Catch::Contains("R > 0"));
  CHECK_THROWS_WITH(with(idx, table, Tensor::zeros({6, 5})), Catch::Contains("differ in size"));
  auto wrong_shape = std::make_shared<const IndexArray>(xt::zeros<std::int32_t>({std::size_t(1), std::size_t(6), std::size_t(4)}));
  CHECK_THROWS_WITH(with(wrong_shape, table, Tensor()), Catch::Contains("index table") && Catch::Contains("(1, 6, 4)"));
  auto three_rows = std::make_shared<const IndexArray>(xt::zeros<std::int32_t>({std::size_t(3), std::size_t(4), std::size_t(6)}));
  CHECK_THROWS_WITH(with(three_rows, table, Tensor()), Catch::Contains("index table") && Catch::Contains("(3, 4, 6)"));
  auto per_row = std::make_shared<IndexArray>(xt::zeros<std::int32_t>({std::size_t(2), std::size_t(4), std::size_t(6)}));
  CHECK_NOTHROW(with(per_row, table, table));
  (*per_row)(1, 2, 3) = 7;  // visible (causal offset 2: query 2 sees keys 0..4)
  CHECK_THROWS_WITH(with(per_row, table, table), Catch::Contains("entry (1, 2, 3) is 7") && Catch::Contains("[0, 7)"));
  (*per_row)(1, 2, 3) = -1;
  CHECK_THROWS_WITH(with(per_row, table, table), Catch::Contains("entry (1, 2, 3) is -1"));
  (*per_row)(1, 2, 3) = 0;
  (*per_row)(1, 2, 5) = 99;  // masked: never read
  CHECK_NOTHROW(with(per_row, table, table));
}
