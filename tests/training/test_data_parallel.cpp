// The data-parallel batch split and gradient reduction without MPI (one process): each rank's shard is
// its block of rows of the global batch, every field alike; reduce() at one rank returns the gradient,
// loss and statistics it was given. The multi-rank behaviour is tested under mpirun in tests/mpi.
#include <catch2/catch.hpp>

#include <malloc.h>

#include <cstring>

#include "core/allocator.hpp"
#include "training/data_parallel.hpp"

using namespace pelab;

namespace {

// (B, T) batch whose every element encodes its row and column.
Batch numbered_batch(std::size_t B, std::size_t T) {
  Batch b;
  b.tokens.resize({B, T});
  b.targets.resize({B, T});
  b.positions.resize({B, T});
  b.mask.resize({B, T});
  for (std::size_t r = 0; r < B; ++r) {
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t i = r * T + t;
      b.tokens.data()[i] = static_cast<std::int32_t>(100 * r + t);
      b.targets.data()[i] = static_cast<std::int32_t>(1000 + 100 * r + t);
      b.positions.data()[i] = static_cast<std::int32_t>(2000 + 100 * r + t);
      b.mask.data()[i] = static_cast<real>((r + t) % 2);
    }
    b.answer_begin.push_back(r);
    b.answer_end.push_back(r + 1);
  }
  return b;
}

}  // namespace

TEST_CASE("each rank's shard is its contiguous block of rows of the global batch", "[data_parallel]") {
  const std::size_t B = 6, T = 5;
  const Batch g = numbered_batch(B, T);
  for (int size : {1, 2, 3, 6}) {
    const std::size_t rows = B / static_cast<std::size_t>(size);
    for (int rank = 0; rank < size; ++rank) {
      INFO("rank " << rank << " of " << size);
      const Batch s = DataParallel(B, rank, size).shard(g);
      REQUIRE(s.batch() == rows);
      REQUIRE(s.length() == T);
      REQUIRE(s.answer_begin.size() == rows);
      REQUIRE(s.answer_end.size() == rows);
      const std::size_t r0 = static_cast<std::size_t>(rank) * rows;
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t t = 0; t < T; ++t) {
          const std::size_t i = r * T + t, gi = (r0 + r) * T + t;
          CHECK(s.tokens.data()[i] == g.tokens.data()[gi]);
          CHECK(s.targets.data()[i] == g.targets.data()[gi]);
          CHECK(s.positions.data()[i] == g.positions.data()[gi]);
          CHECK(s.mask.data()[i] == g.mask.data()[gi]);
        }
        CHECK(s.answer_begin[r] == g.answer_begin[r0 + r]);
        CHECK(s.answer_end[r] == g.answer_end[r0 + r]);
      }
    }
  }
  // Language-model batches have no answer spans: none in the shards either.
  Batch lm = numbered_batch(4, 3);
  lm.answer_begin.clear();
  lm.answer_end.clear();
  CHECK(DataParallel(4, 1, 2).shard(lm).answer_begin.empty());
}

TEST_CASE("the global batch must divide by the ranks, a batch of another size is an error", "[data_parallel]") {
  CHECK_THROWS_WITH(DataParallel(7, 0, 2), Catch::Contains("batch_size = 7 is the global batch and must divide by the 2"));
  CHECK_THROWS_AS(DataParallel(0, 0, 1), Error);
  CHECK_THROWS_WITH(DataParallel(8, 0, 2).shard(numbered_batch(6, 2)), Catch::Contains("expected 8"));
}

TEST_CASE("reduce at one rank keeps the gradient, the loss and the statistics", "[data_parallel]") {
  Tensor w = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}, true);
  Tensor unused = Tensor::from({4}, {0, 0, 0, 0}, true);
  const std::vector<float> g = {0.5f, -1.25f, 3e-3f, 7.0f, -0.1f, 2.0f};
  std::memcpy(grad_buffer(*w.impl()).data(), g.data(), g.size() * sizeof(float));
  std::vector<Parameter> params(2);
  params[0].name = "w";
  params[0].tensor = w;
  params[0].kind = ParamKind::weight;
  params[1].name = "unused";
  params[1].tensor = unused;
  params[1].kind = ParamKind::bias;
  TokenStats st;
  st.counted = 37;
  st.correct = 20;
  st.rows = 5;
  st.rows_exact = 2;
  DataParallel dp(8, 0, 1);
  const double loss = dp.reduce(params, 2.5, st);
  CHECK(loss == Approx(2.5).epsilon(1e-6));
  REQUIRE(w.has_grad());
  REQUIRE(w.grad().size() == g.size());
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(w.grad().data()[i] == Approx(g[i]).epsilon(1e-6));
  CHECK_FALSE(unused.has_grad());  // no rank had a gradient for it: still none
  CHECK(st.counted == 37);
  CHECK(st.correct == 20);
  CHECK(st.rows == 5);
  CHECK(st.rows_exact == 2);
  CHECK(dp.buffer_bytes() == (6 + 4 + 2 + 5) * sizeof(float));
}

TEST_CASE("a warm data-parallel step asks the system for nothing: shard and reduce reuse their buffers",
          "[data_parallel]") {
  // What DataParallel adds to a training step (the rest is the single-process step, whose steady state
  // bench_train checks): the shard of the global batch and the flat reduction buffer.
  Tensor w = Tensor::from({64, 32}, std::vector<real>(64 * 32, 0.5f), true);
  Tensor b = Tensor::from({32}, std::vector<real>(32, 0.25f), true);
  std::vector<Parameter> params(2);
  params[0].name = "w";
  params[0].tensor = w;
  params[1].name = "b";
  params[1].tensor = b;
  grad_buffer(*w.impl());
  grad_buffer(*b.impl());
  const Batch g = numbered_batch(8, 24);
  DataParallel dp(8, 0, 1);
  auto step = [&] {
    const Batch s = dp.shard(g);
    REQUIRE(s.batch() == 8);
    TokenStats st;
    st.counted = 10;
    dp.reduce(params, 1.0, st);
  };
  step();
  step();
  const memory::Stats before = memory::stats();
  const std::size_t heap_before = mallinfo2().uordblks, buffer = dp.buffer_bytes();
  for (int i = 0; i < 20; ++i) step();
  CHECK(memory::stats().system_allocs == before.system_allocs);  // tensor buffers: all reused
  CHECK(mallinfo2().uordblks == heap_before);                     // and nothing left behind on the heap
  CHECK(dp.buffer_bytes() == buffer);
  CHECK(dp.reduces() == 22);
}
