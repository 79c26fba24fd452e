#include "training/trainer.hpp"

#include <unistd.h>

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
};

Trainer::Trainer(Transformer& model, const TrainConfig& cfg, BatchSource source, TrainerOptions opt)
    : impl_(std::make_unique<Impl>(model, cfg, std::move(source), std::move(opt))) {}
Trainer::~Trainer() = default;

void Trainer::log(const std::string& line) { impl_->say(line); }

TrainResult Trainer::run() {
  Impl& s = *impl_;
  const TrainConfig& cfg = s.cfg;
  // Resume: pick the checkpoint before touching the run directory. Falling back past damaged
  // checkpoints to step 0 would silently discard training, so that is an error even when a missing
  // checkpoint is allowed.
  CheckpointChoice ck;
  if (s.opt.resume) {
    ck = choose_checkpoint(s.opt.run_dir, true);
    if (!ck.path && (s.opt.require_checkpoint || !ck.skipped.empty()))
      throw Error(no_usable_checkpoint(s.opt.run_dir, ck) +
                  (ck.skipped.empty() ? "; to start a new run, leave out --resume (or use --resume-or-start)"
                                      : "\nmove or delete those checkpoint directories to start over"));
  }
  std::filesystem::create_directories(s.opt.run_dir);
  s.log = std::make_shared<spdlog::logger>(
      "train", std::make_shared<spdlog::sinks::basic_file_sink_mt>(s.opt.run_dir + "/train.log"));
  s.log->set_pattern("[%Y-%m-%d %H:%M:%S.%e] %v");
  s.log->flush_on(spdlog::level::info);
  s.log->info("blas: " + blas::blas_summary());  // the kernel decides the float rounding: part of the result

  TrainResult res;
  std::size_t step = 0;
  double time_before = 0;  // seconds trained before this process (resume)
  if (s.opt.resume) {
    for (const auto& note : checkpoint_notes(ck)) s.say("warning: " + note);
    if (ck.path) {
      const CheckpointState st = load_checkpoint(*ck.path, s.model, s.optimizer.get());
      step = st.step;
      try {
        rng_from_json(s.data, st.extra.at("rng_data"));
        rng_from_json(s.dropout, st.extra.at("rng_dropout"));
        // Checkpoints from before position modes have none: they trained with contiguous ids, which draw nothing.
        if (st.extra.contains("rng_positions")) rng_from_json(s.positions, st.extra.at("rng_positions"));
        time_before = st.extra.value("seconds", 0.0);
      } catch (const nlohmann::json::exception& e) {
        throw Error("checkpoint " + *ck.path + "/state.json: \"extra\" lacks the trainer's state (rng_data, "
                    "rng_dropout, seconds): " + e.what());
      }
      s.say("resumed from " + *ck.path + " at step " + std::to_string(step));
    } else {
      s.say("no checkpoint in " + s.opt.run_dir + "/checkpoints yet: starting from step 0");
    }
  }
  s.metrics.open(s.opt.run_dir + "/metrics.jsonl", step > 0 || s.opt.resume ? std::optional<std::size_t>(step)
                                                                            : std::optional<std::size_t>(0));
  const ScheduleConfig sched{cfg.schedule, cfg.lr, cfg.min_lr, cfg.warmup, cfg.steps};
  const auto t0 = Clock::now();
  auto elapsed = [&] { return time_before + std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::string last_ckpt;

  auto checkpoint = [&](std::size_t at) {
    CheckpointState st;
    st.step = at;
    st.extra = checkpoint_extra;
    st.extra["rng_data"] = rng_json(s.data);
    st.extra["rng_dropout"] = rng_json(s.dropout);
    st.extra["rng_positions"] = rng_json(s.positions);
    st.extra["seconds"] = elapsed();
    last_ckpt = save_checkpoint(s.opt.run_dir, s.model, *s.optimizer, st, cfg.keep_checkpoints);
    s.log->info("checkpoint " + last_ckpt);
  };
  auto evaluate = [&](std::size_t at) -> std::optional<double> {
    if (!evaluator) return std::nullopt;
    const bool was_training = s.model.training();
    s.model.set_training(false);
    auto v = evaluator(at, s.metrics, elapsed());
    s.model.set_training(was_training);
    return v;
  };

  // Interval accumulators for the log line.
  double iv_loss = 0, iv_norm = 0;
  std::size_t iv_steps = 0, iv_tokens = 0;
  TokenStats iv_stats;
  auto iv_start = Clock::now();
  const std::size_t start_step = step;
  s.model.set_training(true);

  while (step < cfg.steps) {
    if (stop_requested()) {
      checkpoint(step);
      res.status = TrainResult::Status::interrupted;
      res.message = "interrupted at step " + std::to_string(step) + "; checkpoint " + last_ckpt +
                    (s.opt.resume_command.empty() ? "" : "; resume with: " + s.opt.resume_command);
      break;
    }
    Batch batch = s.source(s.data);
    assign_positions(batch, {cfg.positions, cfg.max_position}, s.positions);
    ForwardOptions fo;
    fo.dropout_rng = &s.dropout;
    Tensor logits = s.model.forward(batch.tokens, batch.positions, fo);
    Tensor loss = cross_entropy(logits, batch.targets, &batch.mask);
    const double loss_v = loss.item();
    if (!std::isfinite(loss_v)) {
      Tape::current().clear();
      res.status = TrainResult::Status::diverged;
      res.message = "step " + std::to_string(step + 1) + ": the loss is " + std::to_string(loss_v) +
                    "; stopping. " + (last_ckpt.empty() ? "No checkpoint was written by this run."
                                                          : "The last good checkpoint is " + last_ckpt);
      break;
    }
    TokenStats st = token_stats(logits.value(), batch);
    loss.backward();
    const double norm = clip_grad_norm(s.params, cfg.grad_clip);
    if (!std::isfinite(norm)) {
      s.model.zero_grad();
      res.status = TrainResult::Status::diverged;
      res.message = "step " + std::to_string(step + 1) + ": the gradient norm is " + std::to_string(norm) +
                    "; stopping. " + (last_ckpt.empty() ? "No checkpoint was written by this run."
                                                          : "The last good checkpoint is " + last_ckpt);
      break;
    }
    const double lr = lr_at(sched, step);
    s.optimizer->step(lr);
    s.model.zero_grad();
    ++step;

    iv_loss += loss_v;
    iv_norm += norm;
    ++iv_steps;
    iv_tokens += batch.batch() * batch.length();
    iv_stats.add(st);
    res.final_loss = loss_v;

    const bool log_now = cfg.log_every && (step % cfg.log_every == 0 || step == cfg.steps);
    if (log_now) {
      const double dt = std::chrono::duration<double>(Clock::now() - iv_start).count();
      const double tps = dt > 0 ? iv_tokens / dt : 0;
      const double spent = elapsed() - time_before;
      const double eta = step > start_step ? spent / double(step - start_step) * double(cfg.steps - step) : 0;
      const double mean_loss = iv_loss / iv_steps, acc = iv_stats.token_acc();
      MetricRecord r;
      r.step = step;
      r.metrics = {{"loss", mean_loss}, {"token_acc", acc}};
      if (iv_stats.rows) r.metrics["exact_match"] = iv_stats.exact_match();
      r.lr = lr;
      r.grad_norm = iv_norm / iv_steps;
      r.tokens_per_s = tps;
      r.time = elapsed();
      s.metrics.write(r);
      res.final_loss = mean_loss;
      char line[256];
      std::snprintf(line, sizeof line,
                    "step %6zu/%zu  loss %.4f  acc %5.1f%%  lr %.2e  |g| %.3f  %7.0f tok/s  ETA %s", step,
                    cfg.steps, mean_loss, 100 * acc, lr, *r.grad_norm, tps, format_duration(eta).c_str());
      s.say(line);
      iv_loss = iv_norm = 0;
      iv_steps = iv_tokens = 0;
      iv_stats = TokenStats();
      iv_start = Clock::now();
    } else if (s.tty) {
      std::printf("\r\033[Kstep %zu/%zu  loss %.4f", step, cfg.steps, loss_v);
      std::fflush(stdout);
    }

    bool stop_early = false;
    if (cfg.eval_every && step % cfg.eval_every == 0 && step < cfg.steps) {
      if (auto v = evaluate(step); v && !cfg.early_stop_metric.empty()) {
        stop_early = reaches(find_metric(cfg.early_stop_metric), *v, cfg.early_stop_target);
        if (stop_early) s.say("early stop at step " + std::to_string(step) + ": " + cfg.early_stop_metric + " = " +
                              std::to_string(*v));
      }
    }
    if (cfg.checkpoint_every && step % cfg.checkpoint_every == 0 && step < cfg.steps && !stop_early) checkpoint(step);
    if (stop_early) {
      res.status = TrainResult::Status::early_stopped;
      break;
    }
  }
  // The final evaluation over all lengths is the caller's (it writes eval.json).
  if (res.status == TrainResult::Status::finished || res.status == TrainResult::Status::early_stopped) checkpoint(step);
  if (res.status == TrainResult::Status::diverged) s.say(res.message);
  if (res.status == TrainResult::Status::interrupted) s.say(res.message);
  res.steps = step;
  res.seconds = elapsed();
  return res;
}

}  // namespace pelab
