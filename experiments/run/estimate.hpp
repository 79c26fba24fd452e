// Time estimates for jobs that fit in memory but may run for hours (issue #38): a FLOP count from the
// model's shapes times a rate measured on this machine, the model and the thread count of the job; and
// progress lines for any job estimated over a threshold. Kept apart from the memory estimates
// (resources.hpp): the two answer different questions and change for different reasons.
//
// The count is the products' multiply-adds (x2), the part of a forward pass that grows with d_model and
// with the sequence: per layer the q/k/v, output and MLP products, attention's scores and weighted values
// over the keys each query sees, and the logits. Elementwise work and the encoding's own work are not
// counted: they are in the measured rate, which times forward passes of the real model at a shorter
// length. Estimates are meant within 3x of the real time.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace pelab {

struct ModelConfig;
class Transformer;

// FLOPs of one forward pass without a tape over `batch` rows of `tokens` tokens.
double forward_flops(const ModelConfig& m, std::size_t batch, std::size_t tokens);

// FLOPs of greedy decoding that starts from a prefix of `prefix` tokens and adds `steps` tokens, one
// forward pass over the whole prefix per token (pelab predict, continue_tokens).
double decoding_flops(const ModelConfig& m, std::size_t prefix, std::size_t steps);

// Forward FLOPs per second of `model` (tape off), from forward passes of one row of min(tokens, 512)
// tokens (ids 0, positions 0..T-1), repeated for about 0.05 s.
double measure_forward_rate(Transformer& model, std::size_t tokens);
// Whether a job of `flops` could reach progress_threshold(): false when even at 10 MFLOP/s (a tiny
// model, where overheads dominate) it would not, so the measurement is skipped.
bool worth_measuring(double flops);

// Jobs estimated over this many seconds print their estimate and progress: the environment variable
// PELAB_PROGRESS_AFTER (seconds, e.g. 0 in tests) when set, else 10. Throws Error on a value that is
// not a non-negative number.
double progress_threshold();

// "45 s", "12 min", "3.4 h", "2.1 days".
std::string format_duration(double seconds);

// The estimate and progress lines of one job, on stderr (stdout may be a JSON document). Silent when
// the estimate is under progress_threshold().
class JobProgress {
 public:
  // `what`: "decoding 3 rows of up to 1048576 tokens"; `flops` the job's total, `rate` FLOP/s (0: not
  // measured, nothing shown).
  JobProgress(const std::string& what, double flops, double rate);
  bool shown() const { return shown_; }
  double estimate_seconds() const { return estimate_; }
  // `flops` more done; prints "PHASE: 12% after 30 s, about 3.4 min left" at most every 5 s.
  void add(double flops, const std::string& phase);

 private:
  double flops_, estimate_, done_ = 0;
  bool shown_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace pelab
