#include "experiments/run/run.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "core/allocator.hpp"
#include "core/blas.hpp"
#include "core/parallel.hpp"
#include "core/simd.hpp"
#include "experiments/eval/eval_named.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/eval/evaluate_grid.hpp"
#include "experiments/run/provenance.hpp"
#include "experiments/run/trained_run.hpp"
#include "experiments/run/validation.hpp"
#include "training/checkpoint.hpp"
#include "training/data_parallel.hpp"
#include "training/distributed.hpp"
#include "training/eval_observer.hpp"
#include "training/fs.hpp"
#include "training/metrics_table.hpp"
#include "training/signals.hpp"
#include "training/trainer.hpp"

namespace fs = std::filesystem;

namespace pelab {

RunLock::RunLock(const std::string& run_dir, double wait_s) {
  const std::string path = run_dir + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create the lock file " + path + ": " + std::strerror(errno));
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (std::chrono::steady_clock::now() >= until) {
      std::string holder;
      try {
        holder = read_file(path);
      } catch (const Error&) {
      }
      ::close(fd_);
      fd_ = -1;
      throw Error("another pelab process" + (holder.empty() ? std::string() : " (pid " + holder + ")") +
                  " is already running in " + run_dir);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // the pid is informational: a run proceeds without it
  }
}
RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

std::vector<std::string> changed_settings(const std::string& dir, const std::string& wanted_toml) {
  const std::string path = dir + (fs::exists(dir + "/config.toml") ? "/config.toml" : "/cell.toml");
  std::string recorded;
  try {  // through this version's reader: a key added since, at its default, is no difference
    recorded = to_toml(parse_config(read_file(path), path).runs.at(0).config);
  } catch (const Error& e) {
    return {"its " + path + " cannot be read by this version of pelab: " + e.what()};
  }
  return setting_differences(recorded, wanted_toml);
}

std::string gemm_difference_hint(const std::vector<std::string>& differences) {
  const std::string key = "train.gemm = \"";
  for (const auto& d : differences) {
    if (d.rfind(key, 0) != 0) continue;
    const std::string recorded = d.substr(key.size(), d.find('"', key.size()) - key.size());
    return " To go on with the GEMM path it was trained with, add --set train.gemm=" + recorded +
           " (or name it in the config, [train] gemm).";
  }
  return "";
}

std::vector<std::size_t> beyond_lengths(const ExperimentConfig& cfg) {
  std::vector<std::size_t> above;
  if (cfg.eval.beyond_samples == 0) return above;
  for (std::size_t n : cfg.eval.lengths)
    if (n > cfg.train_len) above.push_back(n);
  std::sort(above.begin(), above.end());
  above.erase(std::unique(above.begin(), above.end()), above.end());
  if (above.size() <= kMaxBeyondLengths) return above;
  std::vector<std::size_t> picked;
  const std::size_t last = above.size() - 1, k = kMaxBeyondLengths - 1;
  for (std::size_t i = 0; i <= k; ++i) picked.push_back(above[(i * last + k / 2) / k]);  // rounded i * last / k
  return picked;
}

std::string config_table(const RunSpec& spec, std::size_t n_params) {
  const ExperimentConfig& cfg = spec.config;
  std::ostringstream os;
  auto row = [&](const std::string& k, const std::string& v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-22s %s\n", k.c_str(), v.c_str());
    os << buf;
  };
  const ModelConfig& m = spec.model;
  std::string enc = m.encoding;
  for (const auto& [k, v] : m.encoding_params) enc += " " + k + "=" + format_value(v);
  row("task", cfg.task + "  (train sizes " + std::to_string(cfg.min_len) + ".." + std::to_string(cfg.train_len) + ")");
  row("encoding", enc);
  row("model", "d_model " + std::to_string(m.d_model) + ", " + std::to_string(m.n_layers) + " layers, " +
                   std::to_string(m.n_heads) + " heads, d_ff " + std::to_string(m.d_ff ? m.d_ff : 4 * m.d_model) +
                   (m.causal ? ", causal" : ", bidirectional"));
  row("parameters", std::to_string(n_params));
  const TrainConfig& t = cfg.train;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s lr %.2g (%s, warmup %zu, min %.2g), wd %.2g, clip %.2g", t.optimizer.c_str(), t.lr,
                t.schedule.c_str(), t.warmup, t.min_lr, t.weight_decay, t.grad_clip);
  std::string opt = buf;
  if (auto it = t.optimizer_params.find(t.optimizer); it != t.optimizer_params.end())
    for (const auto& [k, v] : it->second) opt += ", " + k + " " + format_value(v);
  row("optimizer", opt);
  row("steps x batch", std::to_string(t.steps) + " x " + std::to_string(t.batch_size));
  row("seed / threads", std::to_string(t.seed) + " / " + std::to_string(t.threads));
  const PositionConfig ep = eval_positions(cfg);
  auto ids = [](PositionMode m, std::size_t max_position) {
    return std::string(position_mode_name(m)) +
           (m == PositionMode::contiguous ? "" : " in [0, " + std::to_string(max_position) + ")");
  };
  row("position ids", "train " + ids(t.positions, t.max_position) + ", eval " + ids(ep.mode, ep.max_position));
  row("blas", blas::blas_summary());
  row("simd", simd::summary());
  return os.str();
}

namespace {

// The metrics of one evaluation on one line: "loss 0.1234  token_acc 99.1%  exact_match 93.0%".
std::string metrics_line(const LengthResult& r) {
  std::string line;
  char buf[64];
  for (const auto& m : metric_table()) {
    const auto v = r.metric(m.name);
    if (!v) continue;
    if (m.percent) std::snprintf(buf, sizeof buf, "%s %.1f%%", m.name.c_str(), 100 * *v);
    else std::snprintf(buf, sizeof buf, "%s %.4f", m.name.c_str(), *v);
    line += (line.empty() ? "" : "  ") + std::string(buf);
  }
  return line;
}

MetricRecord eval_record(std::size_t step, const LengthResult& r, double time) {
  MetricRecord rec;
  rec.step = step;
  rec.split = "eval";
  rec.length = r.length;
  rec.metrics = r.metrics;
  rec.time = time;
  return rec;
}

// Never mix two configs in one run directory (a finished result is never overwritten). Keys that do not
// change results may change on resume (result_neutral_key: threads, logging, ...).
void check_same_config(const RunOptions& opt, const std::string& toml, const std::string& eval_path) {
  if (!fs::exists(opt.run_dir + "/config.toml") || !(fs::exists(eval_path) || latest_checkpoint(opt.run_dir))) return;
  const std::vector<std::string> diff = changed_settings(opt.run_dir, toml);
  if (diff.empty()) return;
  std::string keys;
  for (const auto& d : diff) keys += "\n  " + d;
  throw Error("run directory " + opt.run_dir + " holds results of a different configuration (its config.toml); "
              "choose another output directory." + gemm_difference_hint(diff) + " Differences:" + keys);
}

// A sweep directory (sweep.toml) is not a run directory: its cells would sit beside a run's files.
void check_not_sweep(const RunOptions& opt) {
  if (fs::exists(opt.run_dir + "/sweep.toml"))
    throw Error(opt.run_dir + " (" + opt.dir_source + ") is a sweep directory (it holds sweep.toml): train one of "
                "its cells with `pelab train CONFIG --cell K`, or choose another output directory");
}

// Whether the run directory holds a finished run (nothing to do); throws Error when it holds an
// unfinished one and we are not resuming.
bool already_finished(const RunOptions& opt, const std::string& eval_path) {
  if (fs::exists(eval_path)) {
    if (opt.console) std::printf("%s is already finished (eval.json exists); nothing to do\n", opt.run_dir.c_str());
    return true;
  }
  if (!opt.resume && latest_checkpoint(opt.run_dir))
    throw Error("run directory " + opt.run_dir + " already holds checkpoints of an unfinished run; "
                "resume it with --resume or choose another --out");
  return false;
}

void write_config(const RunOptions& opt, const std::string& toml, bool writer) {
  try {
    if (writer) write_file_atomic(opt.run_dir + "/config.toml", toml);  // after the model is built: a failure leaves none
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the run directory comes from " + opt.dir_source + ")");
  }
}

TrainerOptions trainer_options(const RunOptions& opt, DataParallel* dp) {
  TrainerOptions to;
  to.run_dir = opt.run_dir;
  to.resume = opt.resume;
  to.require_checkpoint = opt.require_checkpoint;
  to.console = opt.console;
  to.resume_command = opt.resume_command;
  to.data_parallel = dp;
  return to;
}

// The beyond_lengths, each on beyond_samples held-out examples drawn as the final evaluation draws its
// own (from eval.seed, the length and the batch index): the same examples at every evaluation. It draws
// from no training stream, so training is the same with it off.
std::vector<LengthMetrics> evaluate_beyond(Transformer& model, const Task& t, const ExperimentConfig& cfg,
                                           const EvalOptions& periodic) {
  std::vector<LengthMetrics> out;
  const std::vector<std::size_t> lengths = beyond_lengths(cfg);
  if (lengths.empty()) return out;
  memory::release_cache();  // as before the final evaluation: training's cached blocks do not stack on these
  EvalConfig small = cfg.eval;
  small.samples = std::min(cfg.eval.beyond_samples, cfg.eval.samples);  // as validation resolves it
  for (std::size_t n : lengths) {
    const LengthResult r = evaluate_length(model, t, small, eval_positions(cfg), n, cfg.min_len, cfg.train_len, periodic);
    LengthMetrics l;
    l.length = n;
    if (r.ok) l.samples = r.samples, l.metrics = r.metrics;
    out.push_back(l);
  }
  return out;
}

// "    beyond (64 examples each, 0.21 s), token_acc: 24 41.2%  32 20.3%  48 n/a": the headline metric
// at each length beyond training, for the log.
std::string beyond_line(const std::vector<LengthMetrics>& beyond, std::size_t samples, double seconds,
                        const MetricSpec& m) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "    beyond (%zu examples each, %.2f s), ", samples, seconds);
  std::string line = buf + m.name + ":";
  for (const LengthMetrics& l : beyond) {
    const auto it = l.metrics.find(m.name);
    if (it == l.metrics.end()) std::snprintf(buf, sizeof buf, "%zu n/a", l.length);
    else if (m.percent) std::snprintf(buf, sizeof buf, "%zu %.1f%%", l.length, 100 * it->second);
    else std::snprintf(buf, sizeof buf, "%zu %.4f", l.length, it->second);
    line += (&l == &beyond.front() ? " " : "  ") + std::string(buf);
  }
  return line;
}

// Periodic evaluation: in-distribution (at train_len) for the log and early stopping, and the lengths
// beyond training on a small sample ([eval] beyond_samples). `periodic` must outlive the trainer's run.
void set_periodic_evaluator(Trainer& trainer, Transformer& model, const Task& t, const ExperimentConfig& cfg,
                            const EvalOptions& periodic) {
  trainer.evaluator = [&trainer, &model, &t, &cfg, &periodic](std::size_t step, MetricsWriter& mw,
                                                             double time) -> std::optional<double> {
    const LengthResult r = evaluate_length(model, t, cfg.eval, eval_positions(cfg), cfg.train_len, cfg.min_len,
                                           cfg.train_len, periodic);
    MetricRecord rec = eval_record(step, r, time);
    const auto t0 = std::chrono::steady_clock::now();
    rec.beyond = evaluate_beyond(model, t, cfg, periodic);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    set_phase("training");
    mw.write(rec);
    trainer.log("  eval @ " + std::to_string(step) + " (length " + std::to_string(r.length) + "): " + metrics_line(r));
    if (!rec.beyond.empty())
      trainer.log(beyond_line(rec.beyond, std::min(cfg.eval.beyond_samples, cfg.eval.samples), seconds,
                              headline_metric(t.is_language_model(), !t.is_language_model())));
    if (EvalObserver& o = eval_observer(); o.on_eval && o.on_eval(step, to_json_line(rec))) o.stop = true;
    if (!needs_validation(cfg))
      return cfg.train.early_stop_metric.empty() ? std::nullopt : r.metric(cfg.train.early_stop_metric);
    const LengthResult v = evaluate_validation(model, t, cfg, periodic);  // budget competent watches this split
    MetricRecord vrec = eval_record(step, v, time);
    vrec.split = "validation";
    mw.write(vrec);
    trainer.log("  validation @ " + std::to_string(step) + " (length " + std::to_string(v.length) + "): " + metrics_line(v));
    if (cfg.train.early_stop_metric.empty()) return std::nullopt;
    return cfg.train.budget == "competent" ? v.metric(cfg.train.early_stop_metric) : r.metric(cfg.train.early_stop_metric);
  };
}

// The final evaluation at every eval length, timed; nullopt when interrupted (the checkpoint is kept,
// and a message says how to finish).
std::optional<EvalResult> final_evaluation(Transformer& model, const RunSpec& spec, const EvalBatches& batches,
                                           const RunOptions& opt, const TrainResult& tr) {
  memory::release_cache();  // training's cached blocks go back before the (possibly long) evaluation
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult er;
  EvalOptions final_eval;
  final_eval.batches = &batches;
  final_eval.progress = opt.console;
  final_eval.stoppable = true;
  try {
    er.results = evaluate_lengths(model, spec, final_eval);
    er.operand_grid = evaluate_grid(model, spec, final_eval);  // [eval] operand_grid (empty when none)
  } catch (const Interrupted& e) {
    const auto ck = latest_checkpoint(opt.run_dir);
    std::fprintf(stderr, "%s; the checkpoint %s (step %zu) is kept, no eval.json was written; finish with: %s\n",
                 e.what(), ck ? ck->c_str() : "?", tr.steps,
                 opt.resume_command.empty() ? "pelab train ... --resume" : opt.resume_command.c_str());
    return std::nullopt;
  }
  set_phase("writing the results");
  er.eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return er;
}

// The final evaluation's records into metrics.jsonl (with the validation split's, when the run has one, also
// into validation.json), then eval.json with what describes the run.
void write_results(EvalResult& er, const RunSpec& spec, const RunOptions& opt, const TrainResult& tr,
                   const Transformer& model, const std::string& eval_path, const std::optional<LengthResult>& val) {
  {
    MetricsWriter mw;
    mw.open(opt.run_dir + "/metrics.jsonl");
    for (const auto& r : er.results)
      if (r.ok) mw.write(eval_record(tr.steps, r, tr.seconds + er.eval_seconds));
    if (val && val->ok) {
      MetricRecord rec = eval_record(tr.steps, *val, tr.seconds + er.eval_seconds);
      rec.split = "validation";
      mw.write(rec);
    }
  }
  if (val) write_validation(opt.run_dir, spec.config, *spec.task, *val, tr.steps, status_name(tr.status));
  identify_run(er, spec);
  er.steps = tr.steps;
  er.status = status_name(tr.status);
  er.final_train_loss = tr.final_loss;
  er.train_seconds = tr.seconds;
  er.parameters = model.num_parameters();
  er.provenance = to_json(provenance(std::size_t(parallel::threads())));
  write_file_atomic(eval_path, to_json(er).dump(2) + "\n");
}

}  // namespace

int run_experiment(const RunSpec& spec, const RunOptions& opt) {
  const ExperimentConfig& cfg = spec.config;
  std::unique_ptr<DataParallel> dp;  // every rank checks alike below; only the writer writes
  if (opt.data_parallel && dist::size() > 1) dp = std::make_unique<DataParallel>(cfg.train.batch_size);
  const bool writer = !dp || dp->writer();
  // Before anything is written: what training and every eval length need, against the memory limit.
  set_phase("estimating memory");
  const EvalBatches batches = check_memory(spec, opt.memory, true);
  if (opt.console && writer)
    for (const auto& note : describe(batches, spec, opt.memory)) std::printf("note: %s\n", note.c_str());
  use_gemm_path(cfg);  // the rounding the config records; a conflicting PELAB_GEMM stops here, before any file
  parallel::set_threads(cfg.train.threads, "train.threads (or --threads)");  // before the run directory exists
  throw_if_stopped("estimating memory; nothing was written");  // a stop so far ends here, before any file
  set_phase("preparing the run directory");
  if (writer) make_directory(opt.run_dir, "run directory", opt.dir_source);
  const std::string eval_path = opt.run_dir + "/eval.json";
  const std::string toml = to_toml(cfg);
  check_not_sweep(opt);
  check_same_config(opt, toml, eval_path);
  std::optional<RunLock> lock;
  if (writer) lock.emplace(opt.run_dir);
  if (already_finished(opt, eval_path)) return kOk;
  const bool resuming = opt.resume && latest_checkpoint(opt.run_dir);
  if (resuming) check_data_record(opt.run_dir, *spec.task);  // the corpus it trained on, unchanged

  set_phase("building the model");
  Transformer model(spec.model);
  {
    Rng irng = init_rng(cfg.train.seed);
    InitOptions init = cfg.model.init_options();
    init.between_parameters = [] {  // a model of 100M parameters takes seconds to draw
      throw_if_stopped("building the model; nothing was written but the run directory's lock");
    };
    init_parameters(model, irng, init);
  }
  write_config(opt, toml, writer);
  if (writer && !resuming) write_data_record(opt.run_dir, *spec.task);
  if (opt.console) std::printf("%s\n%s", opt.run_dir.c_str(), config_table(spec, model.num_parameters()).c_str());

  const std::size_t bs = cfg.train.batch_size, lo = cfg.min_len, hi = cfg.train_len;
  const Task& t = *spec.task;
  // Alive through the final evaluation (its table goes to train.log too): check_memory counts its
  // gradients and optimizer state against the evaluation's limit.
  TrainConfig tc = cfg.train;
  tc.gate_threshold = gate_threshold(cfg, t);  // budget competent: the gate on early_stop_metric
  Trainer trainer(model, tc, [&t, bs, lo, hi](Rng& rng) { return t.sample(rng, bs, lo, hi); },
                  trainer_options(opt, dp.get()));
  trainer.checkpoint_extra["config_toml"] = toml;
  EvalOptions periodic;
  periodic.batches = &batches;
  set_periodic_evaluator(trainer, model, t, cfg, periodic);
  set_phase("training");
  const TrainResult tr = trainer.run();
  if (dp && dp->reduces())
    trainer.log(data_parallel_summary(*dp));
  if (tr.status == TrainResult::Status::interrupted) return kInterrupted;
  if (tr.status == TrainResult::Status::diverged) {
    if (writer) std::fprintf(stderr, "error: %s\n", tr.message.c_str());
    return kDiverged;
  }
  if (!writer) return kOk;  // rank 0 evaluates and writes eval.json

  std::optional<EvalResult> er = final_evaluation(model, spec, batches, opt, tr);
  if (!er) return kInterrupted;
  std::optional<LengthResult> val;
  if (needs_validation(cfg)) {  // the final model on the validation split ([protocol] select chooses on it)
    EvalOptions vo;
    vo.batches = &batches;
    model.set_training(false);
    val = evaluate_validation(model, t, cfg, vo);
  }
  write_results(*er, spec, opt, tr, model, eval_path, val);
  // The final evaluation to the console and train.log alike.
  if (opt.console) std::printf("\n");
  trainer.log("evaluation (" + cfg.task + ", trained on sizes up to " + std::to_string(cfg.train_len) + ")");
  std::istringstream table(format_results(er->results, t.is_language_model()));
  for (std::string line; std::getline(table, line);) trainer.log(line);
  return kOk;
}

}  // namespace pelab
