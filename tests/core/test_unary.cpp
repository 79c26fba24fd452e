// Unary elementwise ops: forward values against std:: / hand-computed numbers, gradients against
// central differences, IEEE behaviour outside the domain, and what each op saves for backward.
#include <cmath>
#include <limits>

#include "core/ops/elementwise.hpp"
#include "core/ops/unary.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;
using pelab::test::uniform;

namespace {
using UnFn = Tensor (*)(const Tensor&);
struct UnOp {
  const char* name;
  UnFn fn;
  double (*ref)(double);
};
const std::vector<UnOp> kOps = {
    {"neg", neg, [](double v) { return -v; }},
    {"exp", pelab::exp, [](double v) { return std::exp(v); }},
    {"log", pelab::log, [](double v) { return std::log(v); }},
    {"log1p", pelab::log1p, [](double v) { return std::log1p(v); }},
    {"sqrt", pelab::sqrt, [](double v) { return std::sqrt(v); }},
    {"tanh", pelab::tanh, [](double v) { return std::tanh(v); }},
    {"sin", pelab::sin, [](double v) { return std::sin(v); }},
    {"cos", pelab::cos, [](double v) { return std::cos(v); }},
    {"sigmoid", sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }},
    {"relu", relu, [](double v) { return v > 0 ? v : 0.0; }},
    {"gelu", gelu, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
    {"gelu_tanh", gelu_tanh,
     [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }},
    {"square", square, [](double v) { return v * v; }},
    {"abs", pelab::abs, [](double v) { return std::abs(v); }},
    {"softplus", [](const Tensor& x) { return softplus(x); },
     [](double v) { return v > 20 ? v : std::log1p(std::exp(v)); }},
};
bool positive_only(const std::string& n) { return n == "log" || n == "log1p" || n == "sqrt"; }

// Inputs safe for the op's gradient: positive for log/sqrt, away from the kink for relu.
Tensor test_input(const std::string& name, const Shape& shape, Rng& rng) {
  if (positive_only(name)) return uniform(shape, rng, 0.3, 3.0);
  Tensor x = randn(shape, rng, 1.5);
  if (name == "relu" || name == "abs")
    for (std::size_t i = 0; i < x.numel(); ++i) {
      real& v = x.impl()->value.data()[i];
      v = v >= 0 ? v + real(0.1) : v - real(0.1);
    }
  return x;
}
}  // namespace

TEST_CASE("unary ops: gradients on several shapes", "[unary][grad]") {
  const std::vector<Shape> shapes = {{}, {5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 2}};
  Rng rng(11);
  for (auto& op : kOps)
    for (auto& s : shapes) {
      INFO(op.name << " on " << shape_str(s));
      Tensor x = test_input(op.name, s, rng);
      auto r = gradcheck([fn = op.fn](const std::vector<Tensor>& in) { return fn(in[0]); }, {x});
      CHECK(r.checked == x.numel());
    }
}

TEST_CASE("unary ops: gradients through compositions accumulate", "[unary][grad]") {
  Rng rng(12);
  Tensor x = uniform({3, 5}, rng, 0.5, 2.0);
  // x feeds several ops: each backward must add into x's gradient, not overwrite it.
  gradcheck(
      [](const std::vector<Tensor>& in) {
        const Tensor& v = in[0];
        return pelab::exp(pelab::tanh(v)) + pelab::log(v) * sigmoid(v) + gelu(square(v)) - pelab::sqrt(v) +
               gelu_tanh(-v) + relu(v);
      },
      {x});
}

TEST_CASE("unary ops: forward values match the scalar reference", "[unary]") {
  const std::vector<real> vals = {-3.5, -1, -0.25, 0.125, 0.5, 1, 2.75, 6};
  Tensor x = Tensor::from({2, 4}, vals);
  for (auto& op : kOps) {
    INFO(op.name);
    Tensor in = positive_only(op.name) ? Tensor::from({2, 4}, {3.5, 1, 0.25, 0.125, 0.5, 1, 2.75, 6}) : x;
    Tensor y = op.fn(in);
    REQUIRE(y.shape() == in.shape());
    REQUIRE(y.numel() == in.numel());
    for (std::size_t i = 0; i < y.numel(); ++i)
      CHECK(y.data()[i] == Approx(op.ref(in.data()[i])).epsilon(1e-14).margin(1e-15));
    CHECK_FALSE(y.requires_grad());
  }
}

TEST_CASE("gelu both forms against hand-computed values", "[unary]") {
  Tensor x = Tensor::from({5}, {1, -1, 0.5, -2, 3});
  const std::vector<double> exact = {0.8413447460685429, -0.15865525393145707, 0.34573123063700656,
                                     -0.04550026389635842, 2.99595030590511};
  const std::vector<double> approx = {0.8411919906082768, -0.15880800939172324, 0.34571400982514394,
                                      -0.04540230591222494, 2.996362607918227};
  Tensor a = gelu(x), b = gelu_tanh(x);
  REQUIRE(a.numel() == exact.size());
  REQUIRE(b.numel() == approx.size());
  for (std::size_t i = 0; i < exact.size(); ++i) {
    CHECK(a.data()[i] == Approx(exact[i]).epsilon(1e-14));
    CHECK(b.data()[i] == Approx(approx[i]).epsilon(1e-14));
  }
  CHECK(gelu(Tensor::scalar(0)).item() == 0);
  CHECK(gelu_tanh(Tensor::scalar(0)).item() == 0);
}

TEST_CASE("unary ops: extreme inputs stay finite where the math is", "[unary]") {
  Tensor x = Tensor::from({4}, {-1000, -40, 40, 1000});
  Tensor s = sigmoid(x);
  REQUIRE(s.numel() == 4);
  CHECK(s.data()[0] == 0);
  CHECK(s.data()[1] == Approx(std::exp(-40.0)).epsilon(1e-12));  // no 1 - (1 - tiny) cancellation
  CHECK(s.data()[2] == 1);
  CHECK(s.data()[3] == 1);
  Tensor t = pelab::tanh(x);
  CHECK(t.data()[0] == -1);
  CHECK(t.data()[3] == 1);
  Tensor g = gelu(x), gt = gelu_tanh(x);
  CHECK(g.data()[0] == 0);
  CHECK(g.data()[3] == 1000);
  CHECK(gt.data()[0] == 0);
  CHECK(gt.data()[3] == 1000);
  // Gradients of saturated sigmoid / tanh are 0, not nan.
  Tensor xs = Tensor::from({2}, {-1000, 1000}, true);
  (sigmoid(xs) + pelab::tanh(xs)).backward(xt::ones<real>({2}));
  REQUIRE(xs.grad().size() == 2);
  CHECK(xs.grad()(0) == 0);
  CHECK(xs.grad()(1) == 0);
}

TEST_CASE("log and sqrt outside the domain follow IEEE", "[unary]") {
  Tensor x = Tensor::from({3}, {0, -1, 4});
  Tensor l = pelab::log(x), s = pelab::sqrt(x);
  REQUIRE(l.numel() == 3);
  REQUIRE(s.numel() == 3);
  CHECK(std::isinf(l.data()[0]));
  CHECK(l.data()[0] < 0);
  CHECK(std::isnan(l.data()[1]));
  CHECK(l.data()[2] == Approx(std::log(4.0)));
  CHECK(s.data()[0] == 0);
  CHECK(std::isnan(s.data()[1]));
  CHECK(s.data()[2] == 2);
}

TEST_CASE("log1p: exact where 1 + x rounds, IEEE at and below -1, gradient 1 / (1 + x)", "[unary][grad]") {
  // 1 + 1e-12 keeps four significant digits of 1e-12 in double; log1p keeps all of them.
  Tensor x = Tensor::from({5}, {1e-12, -1e-12, 3e-7, -1, -2}, true);
  Tensor y = pelab::log1p(x);
  REQUIRE(y.numel() == 5);
  CHECK(y.data()[0] == Approx(1e-12 - 0.5e-24).epsilon(1e-15));
  CHECK(y.data()[1] == Approx(-1e-12 - 0.5e-24).epsilon(1e-15));
  CHECK(y.data()[2] == Approx(std::log1p(3e-7)).epsilon(1e-15));
  CHECK(std::isinf(y.data()[3]));
  CHECK(y.data()[3] < 0);
  CHECK(std::isnan(y.data()[4]));
  y.backward(xt::ones<real>({5}));
  REQUIRE(x.grad().size() == 5);
  CHECK(x.grad()(0) == Approx(1 / (1 + 1e-12)).epsilon(1e-15));
  CHECK(x.grad()(2) == Approx(1 / (1 + 3e-7)).epsilon(1e-15));
  Rng rng(13);
  gradcheck([](const std::vector<Tensor>& in) { return pelab::log1p(in[0]); }, {uniform({3, 4}, rng, -0.9, 3.0)});
}

TEST_CASE("relu gradient is 0 at 0 and 1 above", "[unary][grad]") {
  Tensor x = Tensor::from({4}, {-2, 0, 0.5, 3}, true);
  relu(x).backward(xt::ones<real>({4}));
  REQUIRE(x.grad().size() == 4);
  CHECK(x.grad()(0) == 0);
  CHECK(x.grad()(1) == 0);
  CHECK(x.grad()(2) == 1);
  CHECK(x.grad()(3) == 1);
}

TEST_CASE("unary minus is neg", "[unary][grad]") {
  Tensor x = Tensor::from({2}, {1.5, -2}, true);
  Tensor y = -x;
  REQUIRE(y.numel() == 2);
  CHECK(y.data()[0] == -1.5);
  CHECK(y.data()[1] == 2);
  y.backward(Tensor::from({2}, {3, 4}).value());
  REQUIRE(x.grad().size() == 2);
  CHECK(x.grad()(0) == -3);
  CHECK(x.grad()(1) == -4);
}

TEST_CASE("unary ops save only what backward reads", "[unary][grad]") {
  // exp/tanh/sigmoid/sqrt/relu differentiate from their output: writing the input in place afterwards
  // is harmless, writing the output is detected.
  for (UnFn fn : {UnFn(pelab::exp), UnFn(pelab::tanh), UnFn(sigmoid), UnFn(pelab::sqrt), UnFn(relu)}) {
    Tensor x = Tensor::from({2}, {0.5, 1.5}, true);
    Tensor y = fn(x);
    x.mutable_data()[0] = 7;
    CHECK_NOTHROW(y.backward(xt::ones<real>({2})));
    Tensor x2 = Tensor::from({2}, {0.5, 1.5}, true);
    Tensor y2 = fn(x2);
    y2.mutable_data()[0] = 7;
    CHECK_THROWS_WITH(y2.backward(xt::ones<real>({2})), Catch::Contains("modified in place"));
  }
  // log/log1p/sin/cos/gelu/gelu_tanh/square differentiate from their input.
  for (UnFn fn : {UnFn(pelab::log), UnFn(pelab::log1p), UnFn(pelab::sin), UnFn(pelab::cos), UnFn(gelu),
                  UnFn(gelu_tanh), UnFn(square)}) {
    Tensor x = Tensor::from({2}, {0.5, 1.5}, true);
    Tensor y = fn(x);
    y.mutable_data()[0] = 7;
    CHECK_NOTHROW(y.backward(xt::ones<real>({2})));
    Tensor x2 = Tensor::from({2}, {0.5, 1.5}, true);
    Tensor y2 = fn(x2);
    x2.mutable_data()[0] = 7;
    CHECK_THROWS_WITH(y2.backward(xt::ones<real>({2})), Catch::Contains("modified in place"));
  }
  // neg saves nothing.
  Tensor x = Tensor::from({2}, {0.5, 1.5}, true);
  Tensor y = neg(x);
  x.mutable_data()[0] = 7;
  y.mutable_data()[0] = 7;
  CHECK_NOTHROW(y.backward(xt::ones<real>({2})));
}

TEST_CASE("unary ops: empty tensors and NoGrad", "[unary]") {
  Tensor e = Tensor::zeros({0, 3}, true);
  for (auto& op : kOps) {
    INFO(op.name);
    Tensor y = op.fn(e);
    CHECK(y.shape() == Shape{0, 3});
  }
  Tape::current().clear();
  Tensor x = Tensor::from({2}, {1, 2}, true);
  {
    NoGrad ng;
    for (auto& op : kOps) CHECK_FALSE(op.fn(x).requires_grad());
  }
  CHECK(Tape::current().size() == 0);
}

TEST_CASE("unary ops: undefined input throws naming the op", "[unary][errors]") {
  for (auto& op : kOps) CHECK_THROWS_WITH(op.fn(Tensor()), Catch::Contains(op.name));
}

TEST_CASE("clamp: values, PyTorch's gradient at the bounds (1) and outside (0), one-sided, errors", "[unary][grad]") {
  Tensor x = Tensor::from({7}, {-2, -1, -0.5, 0.25, 1, 1.5, std::numeric_limits<real>::quiet_NaN()}, true);
  Tensor y = clamp(x, -1, 1);
  const std::vector<real> want = {-1, -1, -0.5, 0.25, 1, 1};
  REQUIRE(y.numel() == 7);
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(y.data()[i] == want[i]);
  CHECK(std::isnan(y.data()[6]));
  y.backward(xt::ones<real>({7}));
  const std::vector<real> want_grad = {0, 1, 1, 1, 1, 0, 0};  // torch.clamp: bounds included; nan gets 0
  REQUIRE(x.grad().size() == want_grad.size());
  for (std::size_t i = 0; i < want_grad.size(); ++i) CHECK(x.grad()(i) == want_grad[i]);
  // central differences away from the bounds
  Rng rng(13);
  Tensor r = randn({4, 5}, rng, 2.0);
  for (std::size_t i = 0; i < r.numel(); ++i) {
    real& v = r.impl()->value.data()[i];
    if (std::abs(std::abs(v) - 1) < real(0.05)) v += real(0.1);
  }
  gradcheck([](const std::vector<Tensor>& in) { return clamp(in[0], -1, 1); }, {r});
  const real inf = std::numeric_limits<real>::infinity();
  Tensor lower = clamp(Tensor::from({3}, {-5, 0.5, 1e30}), 0, inf);
  CHECK(lower.data()[0] == 0);
  CHECK(lower.data()[2] == real(1e30));
  Tensor upper = clamp(Tensor::from({2}, {-1e30, 3}), -inf, 2);
  CHECK(upper.data()[0] == real(-1e30));
  CHECK(upper.data()[1] == 2);
  CHECK_THROWS_WITH(clamp(x, 2, 1), Catch::Contains("clamp") && Catch::Contains("lo <= hi"));
  CHECK_THROWS_WITH(clamp(x, std::numeric_limits<real>::quiet_NaN(), 1), Catch::Contains("clamp"));
}

TEST_CASE("abs: gradient sign(x), 0 at 0 and at nan (PyTorch)", "[unary][grad]") {
  Tensor x = Tensor::from({4}, {-2, 0, 3, std::numeric_limits<real>::quiet_NaN()}, true);
  pelab::abs(x).backward(xt::ones<real>({4}));
  REQUIRE(x.grad().size() == 4);
  CHECK(x.grad()(0) == -1);
  CHECK(x.grad()(1) == 0);
  CHECK(x.grad()(2) == 1);
  CHECK(x.grad()(3) == 0);
}

TEST_CASE("softplus: beta and threshold as in PyTorch", "[unary][grad]") {
  // torch.nn.functional.softplus(x, beta=2, threshold=5) at x = -3, 1, 10 (torch 1.13, float64)
  Tensor x = Tensor::from({3}, {-3, 1, 10}, true);
  Tensor y = softplus(x, 2, 5);
  const std::vector<double> want = {0.0012378425688652247, 1.0634640055214863, 10.0};
  const std::vector<double> want_grad = {0.0024726231566347748, 0.8807970779778824, 1.0};
  REQUIRE(y.numel() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(y.data()[i] == Approx(want[i]).epsilon(1e-14));
  y.backward(xt::ones<real>({3}));
  REQUIRE(x.grad().size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(x.grad()(i) == Approx(want_grad[i]).epsilon(1e-14));
  // The threshold is strict: beta x = threshold still takes the log branch, just above returns x.
  Tensor t = Tensor::from({3}, {20, 20.1, 50}, true);
  Tensor ty = softplus(t);
  REQUIRE(ty.numel() == 3);
  CHECK(ty.data()[0] == Approx(20.000000002061153).epsilon(1e-15));
  CHECK(ty.data()[0] != 20);
  CHECK(ty.data()[1] == real(20.1));
  CHECK(ty.data()[2] == 50);
  ty.backward(xt::ones<real>({3}));
  CHECK(t.grad()(0) == Approx(0.9999999979388464).epsilon(1e-15));
  CHECK(t.grad()(0) != 1);
  CHECK(t.grad()(1) == 1);
  Rng rng(14);
  Tensor r = randn({3, 4}, rng, 3.0);
  gradcheck([](const std::vector<Tensor>& in) { return softplus(in[0], real(0.7), 4); }, {r});
  CHECK_THROWS_WITH(softplus(x, 0), Catch::Contains("softplus"));
}
