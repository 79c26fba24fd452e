// Data-parallel training over the ranks of an MPI job (training/distributed.hpp).
//
// Every rank draws the same global batch from the same seeded streams (data, position ids), keeps its
// own contiguous block of rows (shard), runs forward and backward on it, and then one allreduce over a
// single flat buffer sums, across ranks: every gradient weighted by the rank's counted targets, those
// counts, the loss and the token statistics. Dividing by the global count gives every rank the gradient
// of the mean loss over the whole global batch, the same as one process training that batch up to
// summation order, so every rank then takes the same clip and optimizer step. Dropout masks are drawn
// per rank for its own rows, so with dropout > 0 the run differs from a single process (but two runs
// with the same number of ranks are still bit-identical).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "layers/module.hpp"
#include "training/batch.hpp"
#include "training/metrics.hpp"

namespace pelab {

class DataParallel {
 public:
  // Throws Error unless global_batch divides by the number of ranks.
  explicit DataParallel(std::size_t global_batch);
  // Rank `rank` of `size` without asking MPI: for tests of the batch split (reduce() still reduces
  // over the real process group).
  DataParallel(std::size_t global_batch, int rank, int size);

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool writer() const { return rank_ == 0; }
  std::size_t global_batch() const { return global_batch_; }  // only rank 0 writes the run directory

  // Rows [rank * B/N, (rank + 1) * B/N) of the global batch (B, T): every field sliced alike.
  Batch shard(const Batch& global) const;

  // After backward on this rank's shard: one allreduce of the flat buffer; afterwards every
  // parameter's gradient is the global-batch gradient (identical on every rank), stats holds the
  // global counts, and the return value is the global mean loss. local_loss is the mean over this
  // rank's counted targets (stats.counted of them). A parameter with a gradient on any rank has one
  // on every rank afterwards.
  double reduce(const std::vector<Parameter>& params, double local_loss, TokenStats& stats);

  bool any(bool local) const;  // logical or over the ranks (stop and early-stop decisions)

  // Time in the allreduce, summed over the reduce() calls after the first (which also sets up MPI's
  // connections), and the number of those calls.
  double allreduce_seconds() const { return allreduce_seconds_; }
  std::size_t timed_reduces() const { return reduces_ > 0 ? reduces_ - 1 : 0; }
  std::size_t reduces() const { return reduces_; }
  std::size_t buffer_bytes() const { return buf_.size() * sizeof(float); }

 private:
  int rank_ = 0, size_ = 1;
  std::size_t global_batch_;
  std::vector<float> buf_;  // kept between steps: no allocation per step
  double allreduce_seconds_ = 0;
  std::size_t reduces_ = 0;
};

// "data parallel: 2 ranks x 8 rows; allreduce of 1.2 MB per step: 0.41 ms/step over 99 steps" (train.log).
std::string data_parallel_summary(const DataParallel& dp);

}  // namespace pelab
