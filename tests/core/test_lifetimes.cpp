// What each op's tape node keeps alive (core/tape.hpp): after forward, the values that stay are the
// caller's and exactly those the op's backward reads. Every op is listed, with the inputs it may keep.
// Also: gradients when only some inputs require grad (ops then keep fewer values).
#include <algorithm>
#include <memory>

#include "core/ops/attention.hpp"
#include "core/ops/causal_conv.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/ops/cumsum.hpp"
#include "core/ops/dropout.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/embedding.hpp"
#include "core/ops/heads.hpp"
#include "core/ops/interp_gather.hpp"
#include "core/ops/layer_norm.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/recurrent.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/rotary.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/softmax.hpp"
#include "core/ops/unary.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::uniform;

namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Case {
  const char* name;
  std::vector<Shape> shapes;
  const char* grads;  // per input: 'g' requires grad (a recorded intermediate), 'c' a constant leaf
  const char* kept;   // per input: 'k' the tape keeps its value, '-' it does not
  bool out_kept;      // the tape keeps the output's value
  Fn f;
};

// Whether the value behind w can still be read: held by someone and not released.
bool alive(const std::weak_ptr<TensorImpl>& w) {
  const auto p = w.lock();
  return p && !p->released;
}

// Runs f on fresh inputs and backpropagates sum(f). With drop, the caller's handles to the inputs and
// the output go before backward, and what the tape kept is checked. Returns the leaves' gradients.
std::vector<Array> run(const Case& c, bool drop) {
  Tape::current().clear();
  Rng rng(7);
  std::vector<Tensor> leaves, xs;
  for (std::size_t i = 0; i < c.shapes.size(); ++i) {
    const bool g = c.grads[i] == 'g';
    Tensor leaf = uniform(c.shapes[i], rng, 0.5, 2.0, g);
    if (g) {
      leaves.push_back(leaf);
      xs.push_back(mul_scalar(leaf, 1));  // an intermediate: released when its last handle goes
    } else {
      xs.push_back(leaf);  // a constant: gone when nothing holds it
    }
  }
  Tensor y = c.f(xs);
  Tensor root = sum(y);
  std::vector<std::weak_ptr<TensorImpl>> wx;
  for (const Tensor& x : xs) wx.push_back(x.shared());
  const std::weak_ptr<TensorImpl> wy = y.shared();
  if (drop) {
    xs.clear();
    y = Tensor();
    for (std::size_t i = 0; i < wx.size(); ++i) {
      INFO(c.name << ": input " << i);
      CHECK(alive(wx[i]) == (c.kept[i] == 'k'));
    }
    INFO(c.name << ": output");
    CHECK(alive(wy) == c.out_kept);
  }
  root.backward();
  xs.clear();
  y = Tensor();
  for (std::size_t i = 0; i < wx.size(); ++i) {
    INFO(c.name << ": input " << i << " after backward");
    CHECK(wx[i].expired());  // the consumed tape holds nothing
  }
  std::vector<Array> grads;
  for (const Tensor& l : leaves) grads.push_back(l.grad());
  return grads;
}

// Buckets for a (1, 3, 3) attention block: clipped distance j - i + 2 in [0, 5).
std::shared_ptr<const IndexArray> relative_index() {
  auto idx = std::make_shared<IndexArray>(IndexArray::shape_type{1, 3, 3});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) (*idx)(0, i, j) = std::max(-2, std::min(2, j - i)) + 2;
  return idx;
}

IndexArray ids(const Shape& shape, std::int32_t n) {
  IndexArray a(shape);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<std::int32_t>((i * 5 + 1) % n);
  return a;
}

std::vector<Case> cases() {
  const Shape s{3, 4};
  AttentionOptions no_bias;
  auto attn = [](const std::vector<Tensor>& in) {
    AttentionOptions o;
    o.bias = in[3];
    return attention(in[0], in[1], in[2], o);
  };
  const Shape q{1, 2, 3, 4}, bias{1, 2, 3, 3}, table{5, 4};
  auto rel_attn = [](const std::vector<Tensor>& in) {
    AttentionOptions o;
    o.bias = in[3];
    o.rel = {relative_index(), in[4], in[5]};
    return attention(in[0], in[1], in[2], o);
  };
  auto tables = std::make_shared<RotaryTables>(rotary_tables(ids({1, 3}, 9), 4, 100.0));
  return {
      {"add", {s, s}, "gg", "--", false, [](auto& in) { return add(in[0], in[1]); }},
      {"add broadcast", {s, {4}}, "gg", "--", false, [](auto& in) { return add(in[0], in[1]); }},
      {"sub", {s, s}, "gg", "--", false, [](auto& in) { return sub(in[0], in[1]); }},
      {"mul", {s, s}, "gg", "kk", false, [](auto& in) { return mul(in[0], in[1]); }},
      {"mul by a constant", {s, s}, "gc", "-k", false, [](auto& in) { return mul(in[0], in[1]); }},
      {"mul a constant", {s, s}, "cg", "k-", false, [](auto& in) { return mul(in[0], in[1]); }},
      {"div", {s, s}, "gg", "kk", false, [](auto& in) { return div(in[0], in[1]); }},
      {"div by a constant", {s, s}, "gc", "-k", false, [](auto& in) { return div(in[0], in[1]); }},
      {"div a constant", {s, s}, "cg", "kk", false, [](auto& in) { return div(in[0], in[1]); }},
      {"add_scalar", {s}, "g", "-", false, [](auto& in) { return add_scalar(in[0], 2); }},
      {"mul_scalar", {s}, "g", "-", false, [](auto& in) { return mul_scalar(in[0], 2); }},
      {"neg", {s}, "g", "-", false, [](auto& in) { return neg(in[0]); }},
      {"exp", {s}, "g", "-", true, [](auto& in) { return exp(in[0]); }},
      {"log", {s}, "g", "k", false, [](auto& in) { return log(in[0]); }},
      {"log1p", {s}, "g", "k", false, [](auto& in) { return log1p(in[0]); }},
      {"sqrt", {s}, "g", "-", true, [](auto& in) { return sqrt(in[0]); }},
      {"tanh", {s}, "g", "-", true, [](auto& in) { return tanh(in[0]); }},
      {"sigmoid", {s}, "g", "-", true, [](auto& in) { return sigmoid(in[0]); }},
      {"relu", {s}, "g", "-", true, [](auto& in) { return relu(in[0]); }},
      {"gelu", {s}, "g", "k", false, [](auto& in) { return gelu(in[0]); }},
      {"gelu_tanh", {s}, "g", "k", false, [](auto& in) { return gelu_tanh(in[0]); }},
      {"square", {s}, "g", "k", false, [](auto& in) { return square(in[0]); }},
      {"abs", {s}, "g", "k", false, [](auto& in) { return abs(in[0]); }},
      {"clamp", {s}, "g", "k", false, [](auto& in) { return clamp(in[0], real(0.7), real(1.5)); }},
      {"softplus", {s}, "g", "k", false, [](auto& in) { return softplus(in[0]); }},
      {"maximum", {s, {4}}, "gg", "kk", false, [](auto& in) { return maximum(in[0], in[1]); }},
      {"minimum, constant b", {s, s}, "gc", "kk", false, [](auto& in) { return minimum(in[0], in[1]); }},
      {"pow", {s, {4}}, "gg", "kk", false, [](auto& in) { return pow(in[0], in[1]); }},
      {"cumsum", {{2, 3, 4}}, "g", "-", false, [](auto& in) { return cumsum(in[0], 1, true); }},
      {"causal_depthwise_conv", {{2, 3, 4}, {4, 1, 3}}, "gg", "kk", false,
       [](auto& in) { return causal_depthwise_conv(in[0], in[1]); }},
      {"causal_depthwise_conv, constant taps", {{2, 3, 4}, {4, 1, 3}}, "gc", "-k", false,
       [](auto& in) { return causal_depthwise_conv(in[0], in[1]); }},
      {"causal_depthwise_conv, constant input", {{2, 3, 4}, {4, 1, 3}}, "cg", "k-", false,
       [](auto& in) { return causal_depthwise_conv(in[0], in[1]); }},
      {"interp_gather", {{2, 3, 4}, {2, 3, 5}}, "gg", "kk", false,
       [](auto& in) { return interp_gather(in[0], in[1]); }},
      {"interp_gather, constant p", {{2, 3, 4}, {2, 3, 5}}, "gc", "-k", false,
       [](auto& in) { return interp_gather(in[0], in[1]); }},
      {"interp_gather, constant z", {{2, 3, 4}, {2, 3, 5}}, "cg", "kk", false,
       [](auto& in) { return interp_gather(in[0], in[1]); }},
      {"softmax", {s}, "g", "-", true, [](auto& in) { return softmax(in[0]); }},
      {"log_softmax", {s}, "g", "-", true, [](auto& in) { return log_softmax(in[0]); }},
      {"matmul", {{3, 4}, {4, 5}}, "gg", "kk", false, [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul by a constant", {{3, 4}, {4, 5}}, "gc", "-k", false, [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul a constant", {{3, 4}, {4, 5}}, "cg", "k-", false, [](auto& in) { return matmul(in[0], in[1]); }},
      {"matmul batched", {{2, 3, 4}, {2, 4, 5}}, "gg", "kk", false,
       [](auto& in) { return matmul(in[0], in[1], false, false); }},
      {"linear", {{3, 4}, {5, 4}, {5}}, "ggg", "kk-", false, [](auto& in) { return linear(in[0], in[1], in[2]); }},
      {"linear, constant weight", {{3, 4}, {5, 4}, {5}}, "gcg", "-k-", false,
       [](auto& in) { return linear(in[0], in[1], in[2]); }},
      {"linear, constant input", {{3, 4}, {5, 4}, {5}}, "cgg", "k--", false,
       [](auto& in) { return linear(in[0], in[1], in[2]); }},
      {"layer_norm", {{3, 4}, {4}, {4}}, "ggg", "kk-", false,
       [](auto& in) { return layer_norm(in[0], in[1], in[2]); }},
      {"layer_norm, constant affine", {{3, 4}, {4}, {4}}, "gcc", "kk-", false,
       [](auto& in) { return layer_norm(in[0], in[1], in[2]); }},
      {"layer_norm, constant input", {{3, 4}, {4}, {4}}, "cgg", "k--", false,
       [](auto& in) { return layer_norm(in[0], in[1], in[2]); }},
      {"attention", {q, q, q, bias}, "gggg", "kkk-", false, attn},
      {"attention, only v", {q, q, q, bias}, "ccgc", "----", false, attn},
      {"attention, only q", {q, q, q, bias}, "gccc", "-kk-", false, attn},
      {"attention, no bias", {q, q, q}, "ggg", "kkk", false,
       [no_bias](auto& in) { return attention(in[0], in[1], in[2], no_bias); }},
      // relative keys/values: da^V reads only P (op-private); dS (dq, dk, da^K) reads v and a^V; dq also k
      // and a^K; dk and da^K also q
      {"attention, relative keys and values", {q, q, q, bias, table, table}, "gggggg", "kkk-kk", false, rel_attn},
      {"attention, relative, only a^V", {q, q, q, bias, table, table}, "cccccg", "------", false, rel_attn},
      {"attention, relative, only a^K", {q, q, q, bias, table, table}, "ccccgc", "k-k--k", false, rel_attn},
      {"attention, relative, only q", {q, q, q, bias, table, table}, "gccccc", "-kk-kk", false, rel_attn},
      // recurrent: dx reads w_ih, the BPTT reads w_hh; x (time-major), h0, c0 and every state are op-private
      {"gru", {{2, 3, 2}, {2, 3}, {9, 2}, {9, 3}, {9}, {9}}, "gggggg", "--kk--", false,
       [](auto& in) { return gru(in[0], in[1], in[2], in[3], in[4], in[5]); }},
      {"gru, only w_ih", {{2, 3, 2}, {2, 3}, {9, 2}, {9, 3}, {9}, {9}}, "ccgccc", "---k--", false,
       [](auto& in) { return gru(in[0], in[1], in[2], in[3], in[4], in[5]); }},
      {"lstm", {{2, 3, 2}, {2, 3}, {2, 3}, {12, 2}, {12, 3}, {12}, {12}}, "ggggggg", "---kk--", false,
       [](auto& in) { return lstm(in[0], in[1], in[2], in[3], in[4], in[5], in[6]); }},
      {"lstm, only b_hh", {{2, 3, 2}, {2, 3}, {2, 3}, {12, 2}, {12, 3}, {12}, {12}}, "ccccccg", "----k--", false,
       [](auto& in) { return lstm(in[0], in[1], in[2], in[3], in[4], in[5], in[6]); }},
      {"cross_entropy", {s}, "g", "k", false, [](auto& in) { return cross_entropy(in[0], ids({3}, 4)); }},
      {"dropout", {s}, "g", "-", false,
       [](auto& in) {
         Rng r(3);
         return dropout(in[0], real(0.5), r, true);
       }},
      {"embedding", {{6, 4}}, "g", "-", false, [](auto& in) { return embedding(in[0], ids({2, 3}, 6)); }},
      {"split_heads", {{1, 3, 12}}, "g", "-", false, [](auto& in) { return split_heads(in[0], 2, 3, 1); }},
      {"merge_heads", {q}, "g", "-", false, [](auto& in) { return merge_heads(in[0]); }},
      {"rotary", {q}, "g", "-", false,
       [tables](auto& in) { return rotary(in[0], tables, RotaryLayout::half); }},
      {"rotary_qkv", {{1, 3, 24}}, "g", "-", false,
       [tables](auto& in) { return rotary_qkv(in[0], 2, tables, tables, RotaryLayout::interleaved); }},
      {"sum", {s}, "g", "-", false, [](auto& in) { return sum(in[0], {0}); }},
      {"mean", {s}, "g", "-", false, [](auto& in) { return mean(in[0], {1}); }},
      {"max", {s}, "g", "-", false, [](auto& in) { return max(in[0], 1); }},
      {"reshape", {s}, "g", "-", false, [](auto& in) { return reshape(in[0], {4, 3}); }},
      {"permute", {{2, 3, 4}}, "g", "-", false, [](auto& in) { return permute(in[0], {2, 0, 1}); }},
      {"transpose", {s}, "g", "-", false, [](auto& in) { return transpose(in[0], 0, 1); }},
      {"slice", {s}, "g", "-", false, [](auto& in) { return slice(in[0], 1, 1, 3); }},
      {"concat", {s, s, s}, "gcg", "---", false, [](auto& in) { return concat(in, 0); }},
      {"broadcast_to", {{4}}, "g", "-", false, [](auto& in) { return broadcast_to(in[0], {3, 4}); }},
  };
}

}  // namespace

TEST_CASE("each op's node keeps alive exactly the values its backward reads", "[tape][memory]") {
  for (const Case& c : cases()) {
    REQUIRE(std::string(c.grads).size() == c.shapes.size());
    REQUIRE(std::string(c.kept).size() == c.shapes.size());
    const std::vector<Array> kept_handles = run(c, false);
    const std::vector<Array> dropped = run(c, true);
    // The released values were not needed: the gradients are the same bits.
    REQUIRE(dropped.size() == kept_handles.size());
    for (std::size_t i = 0; i < dropped.size(); ++i) {
      INFO(c.name << ": gradient of input leaf " << i);
      REQUIRE(dropped[i].shape() == kept_handles[i].shape());
      CHECK(dropped[i] == kept_handles[i]);
    }
  }
}

TEST_CASE("gradients are right when only some inputs require grad (fewer values are saved)", "[tape][grad]") {
  Rng rng(11);
  // Each input in turn is the only one requiring grad.
  auto each_alone = [&](const std::vector<Shape>& shapes, const Fn& f, double lo = -1.0) {
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      std::vector<Tensor> in;
      for (std::size_t i = 0; i < shapes.size(); ++i) in.push_back(uniform(shapes[i], rng, lo, 2.0, i == k));
      INFO("only input " << k << " requires grad");
      gradcheck(f, in);
    }
  };
  each_alone({{3, 4}, {3, 4}}, [](auto& in) { return mul(in[0], in[1]); });
  each_alone({{3, 4}, {4}}, [](auto& in) { return div(in[0], in[1]); }, 0.5);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      each_alone({ta ? Shape{4, 3} : Shape{3, 4}, tb ? Shape{5, 4} : Shape{4, 5}},
                 [=](auto& in) { return matmul(in[0], in[1], ta, tb); });
  each_alone({{2, 3, 4}, {2, 4, 5}}, [](auto& in) { return matmul(in[0], in[1]); });
  each_alone({{2, 3, 4}, {4, 5}}, [](auto& in) { return matmul(in[0], in[1]); });
  each_alone({{3, 4}, {5, 4}, {5}}, [](auto& in) { return linear(in[0], in[1], in[2]); });
  each_alone({{3, 4}, {4}, {4}}, [](auto& in) { return layer_norm(in[0], in[1], in[2]); });
  each_alone({{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 3}}, [](auto& in) {
    AttentionOptions o;
    o.bias = in[3];
    return attention(in[0], in[1], in[2], o);
  });
  each_alone({{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 3}, {5, 4}, {5, 4}}, [](auto& in) {
    AttentionOptions o;
    o.bias = in[3];
    o.rel = {relative_index(), in[4], in[5]};
    return attention(in[0], in[1], in[2], o);
  });
  each_alone({{3, 4}, {4}}, [](auto& in) { return maximum(in[0], in[1]); });
  each_alone({{3, 4}, {3, 1}}, [](auto& in) { return pow(in[0], in[1]); }, 0.5);
  each_alone({{2, 3, 4}, {2, 3, 5}}, [](auto& in) { return interp_gather(in[0], in[1]); }, 0.1);
}
