// The threads of one training step: a small pool with static partitioning.
//
// pelab runs a step on N threads (`--threads N`, train.threads; 1 by default): the caller plus N - 1
// pool workers. Work is split statically: for_range(n, grain, f) cuts [0, n) into chunks(n, grain)
// contiguous, equal (to one item) ranges, chunk c runs on thread c (the caller runs chunk 0), and the
// call returns when all have run. Nothing depends on timing, so a result is a function of the inputs
// and N only. The engine goes further and keeps every result independent of N (docs: README,
// "Threads"): elementwise and per-row work does not care how rows are split, reductions over rows
// (bias, LayerNorm gain gradients) sum fixed-size blocks in a fixed order, and a GEMM is split only into
// pieces that OpenBLAS computes with the same kernel path as the whole.
//
// OpenBLAS always runs single-threaded (set_threads sets it to 1): large GEMMs are split across this
// pool instead (core/blas.cpp), so OpenBLAS's own threads never run inside a parallel region
// (oversubscription) and one pool decides every thread's work.
//
// Nested for_range calls (from inside a chunk) run serially on the calling thread. Only raw memory
// may be touched inside a chunk: the tape and Tensor handles belong to the thread that built the graph.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

namespace pelab::parallel {

// Hardware threads this process may run on (its CPU affinity mask; at least 1).
int hardware_threads();

// Why n is not a usable thread count ("" when it is): n must be >= 1 and <= hardware_threads().
// `what` names the setting in the message (e.g. "--threads", "train.threads").
std::string check_threads(long long n, const std::string& what);

// Sets the step's thread count (starts or stops workers) and OpenBLAS to 1 thread. Throws
// pelab::Error with check_threads' message (naming `what`) when n is not usable. Not inside a chunk.
void set_threads(long long n, const std::string& what = "threads");
int threads();  // the current count (1 until set_threads)

// How many chunks for_range(n, grain, ...) uses: min(threads(), ceil(n / grain)), at least 1 when
// n > 0 (0 when n == 0); 1 inside a chunk. grain >= 1 is the least work worth a thread.
std::size_t chunks(std::size_t n, std::size_t grain);
// The c-th of k equal contiguous ranges of [0, n): [begin, end).
inline std::size_t chunk_begin(std::size_t n, std::size_t k, std::size_t c) { return n / k * c + (c < n % k ? c : n % k); }

namespace detail {
using ChunkFn = void (*)(void* ctx, std::size_t chunk, std::size_t begin, std::size_t end);
void run(std::size_t n, std::size_t k, ChunkFn fn, void* ctx);  // k chunks, k <= threads()
}  // namespace detail

// f(chunk, begin, end) for each chunk of [0, n), in parallel. An exception thrown by a chunk is
// rethrown here (the first one, by chunk order) after every chunk has finished.
template <class F>
void for_range(std::size_t n, std::size_t grain, F&& f) {
  using Fn = std::remove_reference_t<F>;
  const std::size_t k = chunks(n, grain);
  if (k == 0) return;
  if (k == 1) {
    f(std::size_t(0), std::size_t(0), n);
    return;
  }
  detail::run(n, k,
              [](void* ctx, std::size_t c, std::size_t b, std::size_t e) { (*static_cast<Fn*>(ctx))(c, b, e); },
              const_cast<void*>(static_cast<const void*>(&f)));
}

// True while the calling thread runs a chunk (nested for_range calls run serially).
bool in_parallel_region();

}  // namespace pelab::parallel
