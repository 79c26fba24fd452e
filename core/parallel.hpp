// Not OpenMP: schedule(static) could run the same fixed plan; on a loaded 2-core machine the comparison was
// inconclusive (bench/bench_libraries.cpp --threads 2; docs/performance.md), so the pool stays until re-measured.
// The threads of one training step: a small pool that runs a fixed plan of pieces.
//
// pelab runs a step on N threads (`--threads N`, train.threads; 1 by default): the caller plus N - 1
// pool workers. Results never depend on N, by construction rather than by what a CPU or BLAS kernel
// happens to do: for_range(n, grain, f) cuts [0, n) into pieces(n, grain) contiguous ranges, a
// function of n and grain alone, and calls f once per piece. One thread runs every piece, in order;
// N threads share the same pieces (worker w runs a contiguous group of them, in order). So every call
// that f makes (a GEMM on a block of rows, a SIMD loop with its tail, a column sum) is the same call
// with the same arguments at any N; only the thread that makes it changes (docs/performance.md,
// "Threads"). f also gets its worker's index, for scratch that belongs to one thread: a worker runs
// its pieces one after another, so per-worker scratch is never shared.
//
// OpenBLAS always runs single-threaded (set_threads and core/blas.cpp set it to 1): large GEMMs are
// cut into pieces by core/blas.cpp instead, so OpenBLAS never splits a product its own way and its
// threads never run inside a parallel region (oversubscription).
//
// Nested for_range calls (from inside a piece) run their pieces serially on the calling thread. Only
// raw memory may be touched inside a piece: the tape and Tensor handles belong to the thread that
// built the graph.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "core/shape_only.hpp"

namespace pelab::parallel {

// Hardware threads this process may run on (its CPU affinity mask; at least 1).
int hardware_threads();

// Why n is not a usable thread count ("" when it is): n must be >= 1 and <= hardware_threads().
// `what` names the setting in the message (e.g. "--threads", "train.threads").
std::string check_threads(long long n, const std::string& what);

// Sets the step's thread count (starts or stops workers) and OpenBLAS to 1 thread. Throws
// pelab::Error with check_threads' message (naming `what`) when n is not usable. Not inside a piece.
void set_threads(long long n, const std::string& what = "threads");
int threads();  // the current count (1 until set_threads)

// The plan: how many pieces for_range(n, grain, ...) cuts [0, n) into. The largest power of two
// p <= kMaxPieces with n / p >= grain (every piece gets at least `grain` items, and powers of two share
// out evenly over 2, 4 or 8 threads); 1 when 0 < n < 2 * grain; 0 when n == 0. grain >= 1 is the least
// work worth a piece. Never depends on threads(). One thread pays for the pieces too (a call each, and
// layer norm's parameter gradient takes a second pass when cut), so there are few: more than 8 threads
// do not speed a step up.
constexpr std::size_t kMaxPieces = 8;
std::size_t pieces(std::size_t n, std::size_t grain);

// How many threads run those pieces: min(threads(), pieces(n, grain)); 1 inside a piece; 0 when
// n == 0. The count of per-worker scratch buffers (f's `worker` argument is below it).
std::size_t workers(std::size_t n, std::size_t grain);

// The c-th of k equal contiguous ranges of [0, n): [begin, end). Piece c of p is
// [chunk_begin(n, p, c), chunk_begin(n, p, c + 1)); worker w of k runs pieces [chunk_begin(p, k, w),
// chunk_begin(p, k, w + 1)).
inline std::size_t chunk_begin(std::size_t n, std::size_t k, std::size_t c) { return n / k * c + (c < n % k ? c : n % k); }

namespace detail {
using PieceFn = void (*)(void* ctx, std::size_t worker, std::size_t begin, std::size_t end);
void run(std::size_t n, std::size_t p, std::size_t k, PieceFn fn, void* ctx);  // p pieces on k <= threads() workers

// Pieces [first, last) of the p pieces of [0, n), in order, on this thread as worker `worker`.
template <class F>
void run_pieces(std::size_t n, std::size_t p, std::size_t first, std::size_t last, std::size_t worker, F& f) {
  for (std::size_t c = first; c < last; ++c) f(worker, chunk_begin(n, p, c), chunk_begin(n, p, c + 1));
}
}  // namespace detail

// f(worker, begin, end) for each piece of [0, n), the pieces shared out over the workers. An exception
// thrown by a piece stops its worker's later pieces and is rethrown here (the lowest worker's) once
// every worker has stopped.
template <class F>
void for_range(std::size_t n, std::size_t grain, F&& f) {
  using Fn = std::remove_reference_t<F>;
  const std::size_t p = pieces(n, grain);
  // A shape-only run (core/shape_only.hpp) skips every kernel: pieces touch raw memory only, never the
  // allocator (above), so skipping them changes no allocation.
  if (p == 0 || shape_only()) return;
  const std::size_t k = workers(n, grain);
  if (k <= 1) return detail::run_pieces(n, p, 0, p, 0, f);
  detail::run(n, p, k,
              [](void* ctx, std::size_t w, std::size_t b, std::size_t e) { (*static_cast<Fn*>(ctx))(w, b, e); },
              const_cast<void*>(static_cast<const void*>(&f)));
}

// True while the calling thread runs a piece of a parallel for_range (nested calls run serially).
bool in_parallel_region();

}  // namespace pelab::parallel
