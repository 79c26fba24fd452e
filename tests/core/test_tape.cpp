// The tape's documented semantics (core/tape.hpp), each as a test that fails if the rule breaks.
#include "core/ops/elementwise.hpp"
#include "core/ops/matmul.hpp"
#include "core/tape.hpp"
#include "gradcheck.hpp"

using namespace pelab;

TEST_CASE("leaf gradients accumulate across backward calls until zero_grad", "[tape]") {
  Tensor x = Tensor::from({2}, {1, 2}, true);
  for (int i = 0; i < 3; ++i) {
    Tensor y = mul_scalar(x, 3);
    y.backward(xt::ones<real>({2}));
  }
  REQUIRE(x.grad().size() == 2);
  CHECK(x.grad()(0) == 9);
  x.zero_grad();
  CHECK_FALSE(x.has_grad());
  mul_scalar(x, 3).backward(xt::ones<real>({2}));
  CHECK(x.grad()(1) == 3);
}

TEST_CASE("NoGrad records nothing and allocates no gradients", "[tape]") {
  Tape::current().clear();
  Tensor x = Tensor::from({2}, {1, 2}, true);
  Tensor y;
  {
    NoGrad ng;
    y = mul(x, x);
  }
  CHECK(Tape::current().size() == 0);
  CHECK_FALSE(y.requires_grad());
  CHECK_FALSE(x.has_grad());
  CHECK_THROWS_AS(y.backward(xt::ones<real>({2})), Error);
  // and recording resumes after the scope
  Tensor z = mul(x, x);
  CHECK(Tape::current().size() == 1);
  CHECK(z.requires_grad());
  Tape::current().clear();
}

TEST_CASE("backward on a non-scalar without a seed is an error", "[tape]") {
  Tensor x = Tensor::from({2}, {1, 2}, true);
  Tensor y = mul_scalar(x, 2);
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("not a scalar"));
  CHECK_THROWS_WITH(y.backward(xt::ones<real>({3})), Catch::Contains("seed"));
  Tape::current().clear();
}

TEST_CASE("a second backward over a consumed tape is an error", "[tape]") {
  Tensor x = Tensor::from({1}, {2}, true);
  Tensor y = mul(x, x);
  y.backward();
  CHECK(x.grad()(0) == 4);
  CHECK(Tape::current().size() == 0);
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("consumed"));
  CHECK(x.grad()(0) == 4);  // untouched by the failed call
}

TEST_CASE("an in-place write to a saved tensor is detected at backward", "[tape]") {
  Tensor a = Tensor::from({2, 2}, {1, 2, 3, 4}, true);
  Tensor b = Tensor::from({2, 2}, {1, 0, 0, 1}, true);
  Tensor c = matmul(a, b);
  b.mutable_value()(0, 0) = 5;  // bumps b's version
  CHECK_THROWS_WITH(c.backward(xt::ones<real>({2, 2})), Catch::Contains("modified in place") && Catch::Contains("matmul"));
  CHECK(Tape::current().size() == 0);  // the failed backward consumed the tape
}

TEST_CASE("only nodes on a path to the root run, and non-leaf grads are freed unless retained", "[tape]") {
  Tensor x = Tensor::from({1}, {3}, true);
  Tensor h = mul_scalar(x, 2);
  h.retain_grad();
  Tensor unused = mul_scalar(x, 100);  // recorded, but not on the path to y
  Tensor g = add_scalar(h, 1);
  Tensor y = mul(g, g);  // y = (2x + 1)^2, dy/dx = 4 (2x + 1) = 28
  y.backward();
  CHECK(x.grad()(0) == 28);
  CHECK(h.has_grad());
  CHECK(h.grad()(0) == 14);
  CHECK_FALSE(g.has_grad());
  CHECK_FALSE(unused.has_grad());
}

TEST_CASE("backward on a leaf seeds its gradient", "[tape]") {
  Tensor x = Tensor::scalar(1, true);
  x.backward();
  CHECK(x.grad()() == 1);
  Tensor n;
  CHECK_THROWS_AS(n.backward(), Error);
}

TEST_CASE("Rng is deterministic, its streams differ, and its state round-trips", "[rng]") {
  Rng a(42), b(42), c(42, 1);
  for (int i = 0; i < 10; ++i) CHECK(a.next_u64() == b.next_u64());
  Rng d(42);
  CHECK(c.next_u64() != d.next_u64());
  auto s = a.state();
  const double u = a.uniform();
  a.set_state(s);
  CHECK(a.uniform() == u);
  double mean = 0, var = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double z = a.normal();
    mean += z / n;
    var += z * z / n;
  }
  CHECK(std::abs(mean) < 0.05);
  CHECK(std::abs(var - 1) < 0.05);
  for (int i = 0; i < 1000; ++i) {
    const auto r = a.range(-3, 3);
    CHECK((r >= -3 && r <= 3));
  }
  CHECK_THROWS_AS(a.below(0), Error);
}

TEST_CASE("an intermediate's value is released when its last handle goes and gradients still flow", "[tape][memory]") {
  Tensor x = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}, true);
  Tensor y;
  TensorImpl* mid_impl = nullptr;
  {
    Tensor mid = mul_scalar(x, 2);     // only add's closure (a gradient target) will hold it
    mid_impl = mid.impl();
    y = add(mid, x);
    CHECK_FALSE(mid_impl->released);   // a handle is alive
  }
  CHECK(mid_impl->released);           // no handle: the value's storage is gone
  CHECK(mid_impl->value.size() <= 1);
  y.backward(xt::ones<real>({2, 3}));
  REQUIRE(x.grad().size() == 6);
  for (std::size_t i = 0; i < 6; ++i) CHECK(x.grad().data()[i] == 3);  // d(2x + x)/dx
  // values a backward reads are kept: mul saves both operands
  Tensor a = Tensor::from({2}, {1, 2}, true);
  Tensor p;
  TensorImpl* sq_impl = nullptr;
  {
    Tensor sq = mul(a, a);
    sq_impl = sq.impl();
    p = mul(sq, a);
  }
  CHECK_FALSE(sq_impl->released);
  p.backward(xt::ones<real>({2}));
  CHECK(a.grad()(1) == 12);  // d(a^3)/da = 3a^2
}

TEST_CASE("a node may save only its inputs and output, and its backward sees what it declared", "[tape]") {
  Tape& tape = Tape::current();
  tape.clear();
  Tensor a = Tensor::from({2}, {1, 2}, true), c = Tensor::from({2}, {5, 7}, false);
  Tensor other = Tensor::from({2}, {3, 4}, false);
  Tensor out = Tensor::from({2}, {0, 0});
  CHECK_THROWS_WITH(tape.record("probe", out, {a, c}, {other}, [](const BackwardCtx&) {}),
                    Catch::Contains("probe") && Catch::Contains("neither one of its inputs nor its output"));
  CHECK(tape.size() == 0);
  // Inputs that need no gradient get none; a null saved slot keeps its position and reads as nullptr.
  bool ran = false;
  tape.record("probe", out, {a, c}, {Tensor(), c, out}, [&ran](const BackwardCtx& ctx) {
    ran = true;
    CHECK(ctx.needs_grad(0));
    CHECK_FALSE(ctx.needs_grad(1));
    CHECK(ctx.grad(1) == nullptr);
    CHECK(ctx.saved(0) == nullptr);
    REQUIRE(ctx.saved(1) != nullptr);
    CHECK(ctx.saved(1)[1] == 7);
    CHECK(ctx.saved(2)[0] == 0);
    CHECK_THROWS_WITH(ctx.saved(3), Catch::Contains("probe"));
    CHECK_THROWS_WITH(ctx.grad(2), Catch::Contains("probe"));
    real* ga = ctx.grad(0);
    REQUIRE(ga != nullptr);
    for (int i = 0; i < 2; ++i) ga[i] += ctx.grad_out().data()[i] * ctx.saved(1)[i];
  });
  out.backward(xt::ones<real>({2}));
  CHECK(ran);
  REQUIRE(a.grad().size() == 2);
  CHECK(a.grad()(0) == 5);
  CHECK(a.grad()(1) == 7);
  CHECK_FALSE(c.has_grad());
}
