// The caching allocator: blocks are reused by size class, and a repeated workload stops asking the system.
#include <catch2/catch.hpp>

#include "core/allocator.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/unary.hpp"
#include "core/tape.hpp"

using namespace pelab;

TEST_CASE("size classes are at most 1/8 larger than the request", "[allocator]") {
  for (std::size_t b : {1ul, 63ul, 64ul, 300ul, 1000ul, 4096ul, 5000ul, 123457ul, 1ul << 24}) {
    const std::size_t c = memory::size_class(b);
    INFO(b);
    CHECK(c >= b);
    CHECK(c <= b + std::max<std::size_t>(64, b / 8));
  }
}

TEST_CASE("size classes are multiples of the 64-byte alignment (aligned_alloc's contract)", "[allocator]") {
  for (std::size_t b = 0; b < 70000; ++b) {
    const std::size_t c = memory::size_class(b);
    if (c % 64 != 0) {
      INFO("request " << b << " bytes -> class " << c);
      CHECK(c % 64 == 0);
      break;
    }
  }
  CHECK(memory::size_class(257) % 64 == 0);
}

TEST_CASE("a freed block is handed to the next request of its class", "[allocator]") {
  void* p = memory::allocate(100000);
  memory::deallocate(p, 100000);
  const auto before = memory::stats();
  void* q = memory::allocate(100000);
  const auto after = memory::stats();
  CHECK(q == p);
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.cache_hits == before.cache_hits + 1);
  memory::deallocate(q, 100000);
}

TEST_CASE("a repeated forward and backward stops allocating from the system", "[allocator]") {
  Tensor x = Tensor::full({64, 32}, 0.5f, true), w = Tensor::full({48, 32}, 0.1f, true);
  auto step = [&] {
    Tensor y = gelu(linear(x, w));
    y.backward(Array(xt::ones<real>(y.shape())));
    x.zero_grad();
    w.zero_grad();
  };
  for (int i = 0; i < 3; ++i) step();  // warm up
  const auto before = memory::stats();
  for (int i = 0; i < 20; ++i) step();
  const auto after = memory::stats();
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.cache_hits > before.cache_hits);
}
