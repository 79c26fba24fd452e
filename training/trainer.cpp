#include "training/trainer.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "core/blas.hpp"
#include "core/ops/cross_entropy.hpp"
#include "core/tape.hpp"
#include "training/checkpoint.hpp"
#include "training/data_parallel.hpp"
#include "training/eval_observer.hpp"
#include "training/metrics_table.hpp"
#include "training/optimizer_registry.hpp"
#include "training/schedule.hpp"
#include "training/signals.hpp"

namespace pelab {

const char* status_name(TrainResult::Status s) {
  switch (s) {
    case TrainResult::Status::finished: return "finished";
    case TrainResult::Status::early_stopped: return "early_stopped";
    case TrainResult::Status::interrupted: return "interrupted";
    case TrainResult::Status::diverged: return "diverged";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;

std::string format_duration(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  return buf;
}

nlohmann::json rng_json(const Rng& r) {
  const auto& s = r.state();
  return nlohmann::json::array({s[0], s[1], s[2], s[3]});
}
void rng_from_json(Rng& r, const nlohmann::json& j) {
  Rng::State s{};
  for (std::size_t i = 0; i < 4; ++i) s[i] = j.at(i).get<std::uint64_t>();
  r.set_state(s);
}

}  // namespace

bool plateaued(const std::vector<double>& history, std::size_t k, double eps, bool lower_is_better) {
  if (k == 0 || history.size() <= k) return false;
  const auto split = history.end() - static_cast<std::ptrdiff_t>(k);
  const auto best = [lower_is_better](auto from, auto to) {
    return lower_is_better ? *std::min_element(from, to) : *std::max_element(from, to);
  };
  const double before = best(history.begin(), split), recent = best(split, history.end());
  return (lower_is_better ? before - recent : recent - before) <= eps;
}

// The log line's accumulators over one log interval.
struct Interval {
  double loss = 0, norm = 0;
  std::size_t steps = 0, tokens = 0;
  TokenStats stats;
  Clock::time_point start = Clock::now();
};

struct Trainer::Impl {
  Transformer& model;
  TrainConfig cfg;
  BatchSource source;
  TrainerOptions opt;
  std::vector<Parameter> params;
  std::unique_ptr<Optimizer> optimizer;
  Rng data, dropout, positions;
  std::shared_ptr<spdlog::logger> log;
  MetricsWriter metrics;
  bool tty = false;
  // The run in progress (run()).
  DataParallel* dp = nullptr;
  bool writer = true;      // data parallel: rank 0 alone writes the run directory
  std::size_t ranks = 1;
  std::size_t step = 0, start_step = 0;
  double time_before = 0;  // seconds trained before this process (resume)
  Clock::time_point t0;
  ScheduleConfig sched;
  std::string last_ckpt;
  Interval interval;
  const nlohmann::json* checkpoint_extra = nullptr;
  const Evaluator* evaluator = nullptr;
  std::vector<double> history;  // budget competent: early_stop_metric at each evaluation (checkpointed)

  Impl(Transformer& m, const TrainConfig& c, BatchSource s, TrainerOptions o)
      : model(m), cfg(c), source(std::move(s)), opt(std::move(o)), params(m.parameters()),
        data(data_rng(c.seed)), dropout(dropout_rng(c.seed)), positions(position_rng(c.seed)) {
    OptimizerCommon common;
    common.weight_decay = cfg.weight_decay;
    common.rule.decay_norm_and_bias = cfg.decay_norm_and_bias;
    common.rule.decay_embeddings = cfg.decay_embeddings;
    auto given = cfg.optimizer_params.find(cfg.optimizer);
    optimizer = make_optimizer(cfg.optimizer, given == cfg.optimizer_params.end() ? std::map<std::string, Value>{}
                                                                                   : given->second,
                               common, params);
    tty = opt.console && ::isatty(STDOUT_FILENO);
  }

  void say(const std::string& line) {
    if (opt.console) {
      if (tty) std::printf("\r\033[K");
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
    if (log) log->info(line);
  }

  double elapsed() const { return time_before + std::chrono::duration<double>(Clock::now() - t0).count(); }

  void start();
  void open_log();
  void resume_from(const CheckpointChoice& ck);
  void checkpoint(std::size_t at);
  std::optional<double> evaluate(std::size_t at);
  bool train_step(TrainResult& res);
  void log_interval(TrainResult& res, double lr);
  bool evaluate_and_checkpoint();
  bool competent(double v);
  std::string last_good_checkpoint() const {
    return last_ckpt.empty() ? "No checkpoint was written by this run." : "The last good checkpoint is " + last_ckpt;
  }
};

Trainer::Trainer(Transformer& model, const TrainConfig& cfg, BatchSource source, TrainerOptions opt)
    : impl_(std::make_unique<Impl>(model, cfg, std::move(source), std::move(opt))) {}
Trainer::~Trainer() = default;

void Trainer::log(const std::string& line) { impl_->say(line); }

// Resume choice, train.log, the checkpoint's state, metrics.jsonl: everything before the first step.
void Trainer::Impl::start() {
  dp = opt.data_parallel;
  writer = !dp || dp->writer();
  ranks = dp ? static_cast<std::size_t>(dp->size()) : 1;
  // Resume: pick the checkpoint before touching the run directory. Falling back past damaged
  // checkpoints to step 0 would silently discard training, so that is an error even when a missing
  // checkpoint is allowed.
  CheckpointChoice ck;
  if (opt.resume) {
    ck = choose_checkpoint(opt.run_dir, true);
    if (!ck.path && (opt.require_checkpoint || !ck.skipped.empty()))
      throw Error(no_usable_checkpoint(opt.run_dir, ck) +
                  (ck.skipped.empty() ? "; to start a new run, leave out --resume (or use --resume-or-start)"
                                      : "\nmove or delete those checkpoint directories to start over"));
  }
  if (writer) open_log();
  step = 0;
  time_before = 0;
  if (opt.resume) resume_from(ck);
  if (writer)
    metrics.open(opt.run_dir + "/metrics.jsonl", step > 0 || opt.resume ? std::optional<std::size_t>(step)
                                                                        : std::optional<std::size_t>(0));
  sched = ScheduleConfig{cfg.schedule, cfg.lr, cfg.min_lr, cfg.warmup, cfg.steps};
  t0 = Clock::now();
  start_step = step;
  interval = Interval();
}

void Trainer::Impl::open_log() {
  std::filesystem::create_directories(opt.run_dir);
  log = std::make_shared<spdlog::logger>("train",
                                         std::make_shared<spdlog::sinks::basic_file_sink_mt>(opt.run_dir + "/train.log"));
  log->set_pattern("[%Y-%m-%d %H:%M:%S.%e] %v");
  log->flush_on(spdlog::level::info);
  log->info("blas: " + blas::blas_summary());  // the kernel decides the float rounding: part of the result
}

void Trainer::Impl::resume_from(const CheckpointChoice& ck) {
  for (const auto& note : checkpoint_notes(ck)) say("warning: " + note);
  if (!ck.path) {
    say("no checkpoint in " + opt.run_dir + "/checkpoints yet: starting from step 0");
    return;
  }
  const CheckpointState st = load_checkpoint(*ck.path, model, optimizer.get());
  step = st.step;
  // The gradient's summation order depends on the ranks: bit-identical resume needs the same number.
  if (const std::size_t saved = st.extra.value("data_parallel_ranks", std::size_t(1)); saved != ranks)
    throw Error("checkpoint " + *ck.path + " was trained on " + std::to_string(saved) + " MPI rank(s), this run "
                "has " + std::to_string(ranks) + ": resume it with the same number (mpirun -np " +
                std::to_string(saved) + (saved == 1 ? ", or without mpirun)" : ")"));
  try {
    rng_from_json(data, st.extra.at("rng_data"));
    rng_from_json(dropout, st.extra.at("rng_dropout"));
    // Checkpoints from before position modes have none: they trained with contiguous ids, which draw nothing.
    if (st.extra.contains("rng_positions")) rng_from_json(positions, st.extra.at("rng_positions"));
    time_before = st.extra.value("seconds", 0.0);
    if (cfg.budget == "competent") history = st.extra.value("eval_history", std::vector<double>{});
  } catch (const nlohmann::json::exception& e) {
    throw Error("checkpoint " + *ck.path + "/state.json: \"extra\" lacks the trainer's state (rng_data, "
                "rng_dropout, seconds): " + e.what());
  }
  say("resumed from " + *ck.path + " at step " + std::to_string(step));
}

void Trainer::Impl::checkpoint(std::size_t at) {
  CheckpointState st;
  st.step = at;
  st.extra = *checkpoint_extra;
  st.extra["rng_data"] = rng_json(data);
  st.extra["rng_dropout"] = rng_json(dropout);
  st.extra["rng_positions"] = rng_json(positions);
  st.extra["seconds"] = elapsed();
  if (ranks > 1) st.extra["data_parallel_ranks"] = ranks;
  if (cfg.budget == "competent") st.extra["eval_history"] = history;  // the plateau spans a resume
  if (!writer) return;
  last_ckpt = save_checkpoint(opt.run_dir, model, *optimizer, st, cfg.keep_checkpoints);
  log->info("checkpoint " + last_ckpt);
}

std::optional<double> Trainer::Impl::evaluate(std::size_t at) {
  if (!*evaluator || !writer) return std::nullopt;
  const bool was_training = model.training();
  model.set_training(false);
  auto v = (*evaluator)(at, metrics, elapsed());
  model.set_training(was_training);
  return v;
}

// One optimizer step. False when a value is not finite: res says so, and nothing was updated.
bool Trainer::Impl::train_step(TrainResult& res) {
  Batch batch = source(data);
  assign_positions(batch, {cfg.positions, cfg.max_position}, positions);
  if (dp) batch = dp->shard(batch);  // this rank's rows of the global batch
  ForwardOptions fo;
  fo.dropout_rng = &dropout;
  if (batch.has_digit_index()) fo.digit_index = &batch.digit_index;  // Abacus's stream (Batch::digit_index)
  Tensor logits = model.forward(batch.tokens, batch.positions, fo);
  Tensor loss = cross_entropy(logits, batch.targets, &batch.mask);
  double loss_v = loss.item();
  if (!std::isfinite(loss_v) && !dp) {  // data parallel: decided on the global loss below, by every rank alike
    Tape::current().clear();
    res.status = TrainResult::Status::diverged;
    res.message = "step " + std::to_string(step + 1) + ": the loss is " + std::to_string(loss_v) + "; stopping. " +
                  last_good_checkpoint();
    return false;
  }
  TokenStats st = token_stats(logits.value(), batch);
  loss.backward();
  if (dp) loss_v = dp->reduce(params, loss_v, st);  // global gradient, loss and stats on every rank
  const double norm = clip_grad_norm(params, cfg.grad_clip);
  if (!std::isfinite(norm) || !std::isfinite(loss_v)) {
    model.zero_grad();
    res.status = TrainResult::Status::diverged;
    res.message = "step " + std::to_string(step + 1) + ": the " +
                  (std::isfinite(loss_v) ? "gradient norm is " + std::to_string(norm)
                                         : "loss is " + std::to_string(loss_v)) +
                  "; stopping. " + last_good_checkpoint();
    return false;
  }
  const double lr = lr_at(sched, step);
  optimizer->step(lr);
  model.zero_grad();
  ++step;

  interval.loss += loss_v;
  interval.norm += norm;
  ++interval.steps;
  interval.tokens += batch.batch() * batch.length() * ranks;
  interval.stats.add(st);
  res.final_loss = loss_v;
  log_interval(res, lr);
  return true;
}

// The log line and metrics.jsonl record when a log interval ends; else the console's progress line.
void Trainer::Impl::log_interval(TrainResult& res, double lr) {
  const bool log_now = cfg.log_every && (step % cfg.log_every == 0 || step == cfg.steps);
  if (!log_now) {
    if (tty) {
      std::printf("\r\033[Kstep %zu/%zu  loss %.4f", step, cfg.steps, res.final_loss);
      std::fflush(stdout);
    }
    return;
  }
  Interval& iv = interval;
  const double dt = std::chrono::duration<double>(Clock::now() - iv.start).count();
  const double tps = dt > 0 ? iv.tokens / dt : 0;
  const double spent = elapsed() - time_before;
  const double eta = step > start_step ? spent / double(step - start_step) * double(cfg.steps - step) : 0;
  const double mean_loss = iv.loss / iv.steps, acc = iv.stats.token_acc();
  MetricRecord r;
  r.step = step;
  r.metrics = compute_training_metrics(iv.stats, mean_loss);
  r.lr = lr;
  r.grad_norm = iv.norm / iv.steps;
  r.tokens_per_s = tps;
  r.time = elapsed();
  if (writer) metrics.write(r);
  res.final_loss = mean_loss;
  char line[256];
  std::snprintf(line, sizeof line, "step %6zu/%zu  loss %.4f  acc %5.1f%%  lr %.2e  |g| %.3f  %7.0f tok/s  ETA %s",
                step, cfg.steps, mean_loss, 100 * acc, lr, *r.grad_norm, tps, format_duration(eta).c_str());
  say(line);
  interval = Interval();
}

// Budget "competent" at an evaluation whose early_stop_metric is v: true once the gate is passed and the
// metric has plateaued (plateaued above); one log line either way.
bool Trainer::Impl::competent(double v) {
  history.push_back(v);
  const MetricSpec& m = find_metric(cfg.early_stop_metric);
  const double gate = cfg.gate_threshold.value_or(cfg.early_stop_target);
  const bool passed = reaches(m, v, gate), flat = plateaued(history, cfg.plateau_evals, cfg.plateau_eps, m.lower_is_better);
  char line[256];
  std::snprintf(line, sizeof line, "  budget competent @ %zu: %s %.4f, gate %.4f %s, %s", step, m.name.c_str(), v, gate,
                passed ? "passed" : "not passed", flat ? "plateaued" : "not plateaued");
  say(line);
  if (passed && flat)
    say("competent at step " + std::to_string(step) + ": the gate is passed and " + m.name + " has not improved by more than " +
        std::to_string(cfg.plateau_eps) + " over the last " + std::to_string(cfg.plateau_evals) + " evaluations");
  return passed && flat;
}

// The periodic evaluation (early stop) and checkpoint after a step; true when the run stops early.
bool Trainer::Impl::evaluate_and_checkpoint() {
  bool stop_early = false;
  const bool eval_now = cfg.eval_every && step % cfg.eval_every == 0 && step < cfg.steps;
  if (eval_now) {
    if (auto v = evaluate(step); v && cfg.budget == "competent") {
      stop_early = competent(*v);
    } else if (v && !cfg.early_stop_metric.empty()) {
      stop_early = reaches(find_metric(cfg.early_stop_metric), *v, cfg.early_stop_target);
      if (stop_early)
        say("early stop at step " + std::to_string(step) + ": " + cfg.early_stop_metric + " = " + std::to_string(*v));
    }
  }
  if (eval_now && eval_observer().stop) {  // the Python module's on_eval asked to stop (eval_observer.hpp)
    eval_observer().stop = false;
    stop_early = true;
    say("stopped at step " + std::to_string(step) + " by the on_eval callback");
  }
  if (dp && eval_now) stop_early = dp->any(stop_early);
  if (cfg.checkpoint_every && step % cfg.checkpoint_every == 0 && step < cfg.steps && !stop_early) checkpoint(step);
  return stop_early;
}

TrainResult Trainer::run() {
  Impl& s = *impl_;
  s.checkpoint_extra = &checkpoint_extra;
  s.evaluator = &evaluator;
  s.start();
  TrainResult res;
  s.model.set_training(true);
  while (s.step < s.cfg.steps) {
    if (s.dp ? s.dp->any(stop_requested()) : stop_requested()) {  // every rank stops at the same step
      s.checkpoint(s.step);
      res.status = TrainResult::Status::interrupted;
      res.message = "interrupted at step " + std::to_string(s.step) + "; checkpoint " + s.last_ckpt +
                    (s.opt.resume_command.empty() ? "" : "; resume with: " + s.opt.resume_command);
      break;
    }
    if (!s.train_step(res)) break;
    if (s.evaluate_and_checkpoint()) {
      res.status = TrainResult::Status::early_stopped;
      break;
    }
  }
  // The final evaluation over all lengths is the caller's (it writes eval.json).
  if (res.status == TrainResult::Status::finished || res.status == TrainResult::Status::early_stopped)
    s.checkpoint(s.step);
  if (res.status == TrainResult::Status::diverged || res.status == TrainResult::Status::interrupted) s.say(res.message);
  res.steps = s.step;
  res.seconds = s.elapsed();
  return res;
}

}  // namespace pelab
