// matmul / linear: forward against the naive reference, backward against central differences.
#include "core/blas.hpp"
#include "core/ops/matmul.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

TEST_CASE("gemm matches the naive reference for all transpose combinations", "[matmul]") {
  Rng rng(1);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::size_t M = 5, N = 7, K = 3;
      Tensor A = randn(ta ? Shape{K, M} : Shape{M, K}, rng, 1, false);
      Tensor B = randn(tb ? Shape{N, K} : Shape{K, N}, rng, 1, false);
      Array C1 = xt::ones<real>({M, N}), C2 = C1;
      blas::gemm(ta, tb, M, N, K, 0.5, A.data(), ta ? M : K, B.data(), tb ? K : N, 1, C1.data(), N);
      blas::gemm_reference(ta, tb, M, N, K, 0.5, A.data(), ta ? M : K, B.data(), tb ? K : N, 1, C2.data(), N);
      REQUIRE(C1.size() == C2.size());
      for (std::size_t i = 0; i < C1.size(); ++i) CHECK(C1.data()[i] == Approx(C2.data()[i]).epsilon(1e-12));
    }
}

TEST_CASE("matmul 2-D gradients, every transpose combination, non-square", "[matmul][grad]") {
  Rng rng(2);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::size_t M = 4, N = 3, K = 5;
      Tensor A = randn(ta ? Shape{K, M} : Shape{M, K}, rng);
      Tensor B = randn(tb ? Shape{N, K} : Shape{K, N}, rng);
      auto r = gradcheck([&](const std::vector<Tensor>& in) { return matmul(in[0], in[1], ta, tb); }, {A, B});
      CHECK(r.checked == A.numel() + B.numel());
    }
}

TEST_CASE("matmul batched, and batched A with shared 2-D B", "[matmul][grad]") {
  Rng rng(3);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor A = randn(ta ? Shape{2, 3, 5, 4} : Shape{2, 3, 4, 5}, rng);
      Tensor B = randn(tb ? Shape{2, 3, 6, 5} : Shape{2, 3, 5, 6}, rng);
      gradcheck([&](const std::vector<Tensor>& in) { return matmul(in[0], in[1], ta, tb); }, {A, B});
      Tensor B2 = randn(tb ? Shape{6, 5} : Shape{5, 6}, rng);
      gradcheck([&](const std::vector<Tensor>& in) { return matmul(in[0], in[1], ta, tb); }, {A, B2});
    }
}

TEST_CASE("matmul forward values", "[matmul]") {
  Tensor A = Tensor::from({2, 2}, {1, 2, 3, 4});
  Tensor B = Tensor::from({2, 2}, {5, 6, 7, 8});
  Tensor C = matmul(A, B);
  REQUIRE(C.shape() == Shape{2, 2});
  CHECK(C.data()[0] == 19);
  CHECK(C.data()[1] == 22);
  CHECK(C.data()[2] == 43);
  CHECK(C.data()[3] == 50);
  Tensor Ct = matmul(A, B, true, true);  // A^T B^T = (BA)^T
  CHECK(Ct.data()[0] == 23);
  CHECK(Ct.data()[1] == 31);
  CHECK(Ct.data()[2] == 34);
  CHECK(Ct.data()[3] == 46);
}

TEST_CASE("matmul shape errors name the op and shapes", "[matmul][errors]") {
  Tensor A = Tensor::zeros({2, 3}), B = Tensor::zeros({4, 5});
  CHECK_THROWS_WITH(matmul(A, B), Catch::Contains("matmul") && Catch::Contains("(2, 3)") && Catch::Contains("(4, 5)"));
  CHECK_THROWS_AS(matmul(Tensor::zeros({3}), B), Error);
  CHECK_THROWS_AS(matmul(Tensor::zeros({2, 2, 3}), Tensor::zeros({3, 3, 2})), Error);
}

TEST_CASE("linear gradients with and without bias, 3-D input", "[linear][grad]") {
  Rng rng(4);
  Tensor x = randn({2, 3, 5}, rng), w = randn({4, 5}, rng), b = randn({4}, rng);
  gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); }, {x, w, b});
  gradcheck([](const std::vector<Tensor>& in) { return linear(in[0], in[1]); }, {x, w});
  CHECK_THROWS_WITH(linear(x, randn({4, 6}, rng)), Catch::Contains("linear"));
  CHECK_THROWS_WITH(linear(x, w, randn({3}, rng)), Catch::Contains("bias"));
}
