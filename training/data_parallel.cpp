#include "training/data_parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "training/distributed.hpp"

namespace pelab {

DataParallel::DataParallel(std::size_t global_batch) : DataParallel(global_batch, dist::rank(), dist::size()) {}

DataParallel::DataParallel(std::size_t global_batch, int rank, int size)
    : rank_(rank), size_(size), global_batch_(global_batch) {
  const auto n = static_cast<std::size_t>(size_);
  if (global_batch == 0 || global_batch % n != 0)
    throw Error("[train] batch_size = " + std::to_string(global_batch) + " is the global batch and must divide by "
                "the " + std::to_string(n) + " MPI ranks (each rank trains batch_size / ranks rows); choose a "
                "multiple of " + std::to_string(n) + " or another -np");
}

Batch DataParallel::shard(const Batch& g) const {
  const std::size_t B = g.batch();
  if (B != global_batch_)
    throw Error("data parallel: the task gave a batch of " + std::to_string(B) + " rows, expected " +
                std::to_string(global_batch_));
  const std::size_t b = B / static_cast<std::size_t>(size_), r0 = static_cast<std::size_t>(rank_) * b;
  return rows_of(g, r0, r0 + b);
}

bool DataParallel::any(bool local) const { return dist::any(local); }

double DataParallel::reduce(const std::vector<Parameter>& params, double local_loss, TokenStats& stats) {
  // Layout: every parameter's gradient (numel each), one has-gradient flag per parameter, then
  // loss * counted, counted, correct, rows, rows_exact. Counts stay exact in float up to 2^24.
  constexpr std::size_t kTail = 5;
  std::size_t n = 0;
  for (const auto& p : params) n += p.tensor.numel();
  const std::size_t flags = n, tail = n + params.size();
  buf_.resize(tail + kTail);  // allocates on the first step only
  const float w = static_cast<float>(stats.counted);  // undo this rank's 1/counted: sum, then divide by the total
  float* out = buf_.data();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& t = params[i].tensor;
    const std::size_t k = t.numel();
    if (t.has_grad()) {
      const float* g = t.grad().data();
      for (std::size_t j = 0; j < k; ++j) out[j] = g[j] * w;
    } else {
      std::fill(out, out + k, 0.0f);
    }
    buf_[flags + i] = t.has_grad() ? 1.0f : 0.0f;
    out += k;
  }
  float* st = buf_.data() + tail;
  st[0] = static_cast<float>(local_loss * double(stats.counted));
  st[1] = w;
  st[2] = static_cast<float>(stats.correct);
  st[3] = static_cast<float>(stats.rows);
  st[4] = static_cast<float>(stats.rows_exact);

  const auto t0 = std::chrono::steady_clock::now();
  dist::allreduce_sum(buf_.data(), buf_.size());
  if (reduces_++ > 0) allreduce_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const double total = st[1];
  const float inv = total > 0 ? static_cast<float>(1.0 / total) : 0.0f;
  const float* in = buf_.data();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& t = params[i].tensor;
    const std::size_t k = t.numel();
    if (buf_[flags + i] > 0) {
      float* g = grad_buffer(*t.impl()).data();  // materialises a zero gradient where this rank had none
      for (std::size_t j = 0; j < k; ++j) g[j] = in[j] * inv;
    }
    in += k;
  }
  stats.counted = static_cast<std::size_t>(st[1]);
  stats.correct = static_cast<std::size_t>(st[2]);
  stats.rows = static_cast<std::size_t>(st[3]);
  stats.rows_exact = static_cast<std::size_t>(st[4]);
  return total > 0 ? double(st[0]) / total : 0.0;
}

std::string data_parallel_summary(const DataParallel& dp) {
  char buf[256];
  const std::size_t n = dp.timed_reduces();
  std::snprintf(buf, sizeof buf, "data parallel: %d ranks x %zu rows; allreduce of %.2f MB per step: %.3f ms/step over %zu steps",
                dp.size(), dp.global_batch() / static_cast<std::size_t>(dp.size()), dp.buffer_bytes() / 1e6,
                n ? 1e3 * dp.allreduce_seconds() / double(n) : 0.0, n);
  return buf;
}

}  // namespace pelab
