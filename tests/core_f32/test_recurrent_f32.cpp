// gru and lstm in float32: a repeated forward and backward takes no new memory from the system
// (every buffer, per step or per call, comes back from the caching allocator).
#include <catch2/catch.hpp>

#include "core/allocator.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/recurrent.hpp"
#include "core/ops/reduce.hpp"
#include "core/tape.hpp"

using namespace pelab;

TEST_CASE("gru and lstm forward and backward stop allocating from the system after warm-up", "[allocator][recurrent]") {
  const std::size_t B = 4, T = 16, I = 8, H = 8;
  Tensor x = Tensor::full({B, T, I}, 0.3f, true), h0 = Tensor::full({B, H}, 0.1f, true);
  Tensor gw_ih = Tensor::full({3 * H, I}, 0.05f, true), gw_hh = Tensor::full({3 * H, H}, -0.05f, true);
  Tensor lw_ih = Tensor::full({4 * H, I}, 0.05f, true), lw_hh = Tensor::full({4 * H, H}, -0.05f, true);
  Tensor b = Tensor::full({3 * H}, 0.01f, true), lb = Tensor::full({4 * H}, 0.01f, true);
  auto step = [&] {
    Tensor y = sum(gru(x, h0, gw_ih, gw_hh, b, b)) + sum(lstm(x, h0, h0, lw_ih, lw_hh, lb, lb));
    y.backward();
    for (Tensor* t : {&x, &h0, &gw_ih, &gw_hh, &lw_ih, &lw_hh, &b, &lb}) t->zero_grad();
  };
  for (int i = 0; i < 3; ++i) step();  // warm up
  const auto before = memory::stats();
  for (int i = 0; i < 10; ++i) step();
  const auto after = memory::stats();
  CHECK(after.system_allocs == before.system_allocs);
  CHECK(after.cache_hits > before.cache_hits);
}
