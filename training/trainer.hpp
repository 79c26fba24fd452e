// The training loop: batches -> forward -> masked cross-entropy -> backward -> clip -> optimizer step,
// with periodic logging, evaluation, early stopping, atomic checkpoints, bit-identical resume,
// clean stop on Ctrl-C / SIGTERM and a stop (without touching checkpoints) on non-finite values.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.hpp"
#include "layers/transformer.hpp"
#include "training/batch.hpp"
#include "training/metrics.hpp"
#include "training/train_config.hpp"

namespace spdlog {
class logger;
}

namespace pelab {

class DataParallel;

struct TrainerOptions {
  std::string run_dir;          // metrics.jsonl, train.log and checkpoints/ go here
  bool resume = false;          // continue from the newest usable checkpoint in run_dir (see choose_checkpoint)
  bool require_checkpoint = false;  // with resume: no usable checkpoint is an Error (else a run_dir without
                                    // any checkpoint starts at step 0; damaged ones are always an Error)
  bool console = true;          // print progress to stdout
  std::string resume_command;   // printed when interrupted ("pelab train ... --resume")
  DataParallel* data_parallel = nullptr;  // set: train across MPI ranks (training/data_parallel.hpp);
                                          // only its rank 0 writes run_dir, and resume needs the same ranks
};

struct TrainResult {
  enum class Status { finished, early_stopped, interrupted, diverged };
  Status status = Status::finished;
  std::size_t steps = 0;        // optimizer steps done in total
  double final_loss = 0;        // mean training loss over the last log interval
  double seconds = 0;           // training time, accumulated across resumes
  std::string message;
};
const char* status_name(TrainResult::Status s);

class Trainer {
 public:
  // Draws one training batch from the data RNG (the trainer owns and checkpoints that RNG). The
  // trainer then assigns its position ids per cfg.positions from its own position RNG.
  using BatchSource = std::function<Batch(Rng&)>;
  // Runs an evaluation at `step`, writing its records; returns the in-distribution value of the
  // early-stop metric (if one is configured).
  using Evaluator = std::function<std::optional<double>(std::size_t step, MetricsWriter& metrics, double time)>;

  Trainer(Transformer& model, const TrainConfig& cfg, BatchSource source, TrainerOptions opt);
  ~Trainer();

  Evaluator evaluator;               // optional
  nlohmann::json checkpoint_extra;   // stored in every checkpoint's state.json (e.g. resolved config)

  TrainResult run();
  // A line for the console (when enabled) and train.log (once run() has opened it), e.g. evaluations.
  void log(const std::string& line);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The plateau of budget "competent" (training/train_config.hpp): more than k evaluations in `history`
// (oldest first), and the best of the last k improves on the best of those before them by at most eps
// (higher is better, or lower when lower_is_better). E.g. k 3, eps 0.01: 0.5 0.9 0.905 0.9 0.902 has
// plateaued (0.905 - 0.9 <= 0.01); 0.5 0.9 0.92 0.9 0.9 has not.
bool plateaued(const std::vector<double>& history, std::size_t k, double eps, bool lower_is_better);

// Random streams derived from the training seed, so init, data, dropout and position ids never share state.
inline Rng init_rng(std::uint64_t seed) { return Rng(seed, 1); }
inline Rng data_rng(std::uint64_t seed) { return Rng(seed, 2); }
inline Rng dropout_rng(std::uint64_t seed) { return Rng(seed, 3); }
inline Rng position_rng(std::uint64_t seed) { return Rng(seed, 4); }

}  // namespace pelab
