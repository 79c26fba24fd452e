#include "experiments/run.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/blas.hpp"
#include "experiments/evaluate.hpp"
#include "training/checkpoint.hpp"
#include "training/fs.hpp"
#include "training/signals.hpp"
#include "training/trainer.hpp"

namespace fs = std::filesystem;

namespace pelab {

RunLock::RunLock(const std::string& run_dir) {
  const std::string path = run_dir + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd_ < 0) throw Error("cannot create lock file " + path);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw Error("another pelab process is already running in " + run_dir);
  }
}
RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

std::unique_ptr<Task> task_for(const ExperimentConfig& cfg) {
  TaskCommon common;
  common.min_len = cfg.min_len;
  common.train_len = cfg.train_len;
  auto it = cfg.task_params.find(cfg.task);
  return make_task(cfg.task, common, it == cfg.task_params.end() ? std::map<std::string, Value>{} : it->second);
}

ModelConfig model_config_for(const ExperimentConfig& cfg, const Task& task) {
  ModelConfig m = cfg.model;
  m.vocab = task.vocab_size();
  m.train_len = task.sequence_length(cfg.train_len);
  m.encoding = cfg.encoding;
  auto it = cfg.encoding_params.find(cfg.encoding);
  m.encoding_params = it == cfg.encoding_params.end() ? std::map<std::string, Value>{} : it->second;
  return m;
}

std::string config_table(const ExperimentConfig& cfg, std::size_t n_params) {
  std::ostringstream os;
  auto row = [&](const std::string& k, const std::string& v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-22s %s\n", k.c_str(), v.c_str());
    os << buf;
  };
  const ModelConfig& m = cfg.model;
  std::string enc = cfg.encoding;
  if (auto it = cfg.encoding_params.find(cfg.encoding); it != cfg.encoding_params.end())
    for (const auto& [k, v] : it->second) enc += " " + k + "=" + value_str(v);
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
  row("optimizer", buf);
  row("steps x batch", std::to_string(t.steps) + " x " + std::to_string(t.batch_size));
  row("seed / threads", std::to_string(t.seed) + " / " + std::to_string(t.threads));
  return os.str();
}

int run_experiment(const ExperimentConfig& cfg, const RunOptions& opt) {
  blas::set_num_threads(cfg.train.threads);
  fs::create_directories(opt.run_dir);
  const std::string eval_path = opt.run_dir + "/eval.json";
  const std::string toml = to_toml(cfg);
  // Never mix two configs in one run directory (a finished result is never overwritten).
  if (fs::exists(opt.run_dir + "/config.toml") && read_file(opt.run_dir + "/config.toml") != toml &&
      (fs::exists(eval_path) || latest_checkpoint(opt.run_dir)))
    throw Error("run directory " + opt.run_dir + " holds results of a different configuration (see its "
                "config.toml); choose another output directory");
  RunLock lock(opt.run_dir);
  if (fs::exists(eval_path)) {
    if (opt.console) std::printf("%s is already finished (eval.json exists); nothing to do\n", opt.run_dir.c_str());
    return kOk;
  }
  if (!opt.resume && latest_checkpoint(opt.run_dir))
    throw Error("run directory " + opt.run_dir + " already holds checkpoints of an unfinished run; "
                "resume it with --resume or choose another --out");
  write_file_atomic(opt.run_dir + "/config.toml", toml);

  auto task = task_for(cfg);
  const ModelConfig mcfg = model_config_for(cfg, *task);
  Transformer model(mcfg);
  {
    Rng irng = init_rng(cfg.train.seed);
    init_parameters(model, irng, cfg.model.init_std, cfg.model.emb_init_std);
  }
  if (opt.console) std::printf("%s\n%s", opt.run_dir.c_str(), config_table(cfg, model.num_parameters()).c_str());

  const std::size_t bs = cfg.train.batch_size, lo = cfg.min_len, hi = cfg.train_len;
  const Task& t = *task;
  TrainerOptions to;
  to.run_dir = opt.run_dir;
  to.resume = opt.resume;
  to.require_checkpoint = opt.require_checkpoint;
  to.console = opt.console;
  to.resume_command = opt.resume_command;
  Trainer trainer(model, cfg.train, [&t, bs, lo, hi](Rng& rng) { return t.sample(rng, bs, lo, hi); }, to);
  trainer.checkpoint_extra["config_toml"] = toml;
  // Periodic evaluation: in-distribution (at train_len) only, for the log and early stopping.
  trainer.evaluator = [&](std::size_t step, MetricsWriter& mw, double time) -> std::optional<double> {
    const LengthResult r = evaluate_length(model, t, cfg.eval, cfg.train_len, cfg.min_len, cfg.train_len);
    MetricRecord rec;
    rec.step = step;
    rec.split = "eval";
    rec.length = cfg.train_len;
    rec.loss = r.loss;
    rec.token_acc = r.token_acc;
    rec.exact_match = r.exact_match;
    rec.time = time;
    mw.write(rec);
    if (opt.console)
      std::printf("  eval @ %zu: loss %.4f  acc %.1f%%%s\n", step, r.loss, 100 * r.token_acc,
                  r.exact_match ? ("  exact " + std::to_string(100 * *r.exact_match).substr(0, 5) + "%").c_str() : "");
    const std::string& m = cfg.train.early_stop_metric;
    if (m == "loss") return r.loss;
    if (m == "token_acc") return r.token_acc;
    if (m == "exact_match") return r.exact_match;
    return std::nullopt;
  };
  const TrainResult tr = trainer.run();
  if (tr.status == TrainResult::Status::interrupted) return kInterrupted;
  if (tr.status == TrainResult::Status::diverged) {
    std::fprintf(stderr, "error: %s\n", tr.message.c_str());
    return kDiverged;
  }

  const auto t0 = std::chrono::steady_clock::now();
  const auto results = evaluate_lengths(model, t, cfg, eval_lengths(cfg, t));
  const double eval_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    MetricsWriter mw;
    mw.open(opt.run_dir + "/metrics.jsonl");
    for (const auto& r : results) {
      if (!r.ok) continue;
      MetricRecord rec;
      rec.step = tr.steps;
      rec.split = "eval";
      rec.length = r.length;
      rec.loss = r.loss;
      rec.token_acc = r.token_acc;
      rec.exact_match = r.exact_match;
      rec.time = tr.seconds + eval_s;
      mw.write(rec);
    }
  }
  nlohmann::ordered_json j;
  j["label"] = opt.label;
  nlohmann::ordered_json a = nlohmann::ordered_json::object();
  for (const auto& [k, v] : opt.assignment) {
    if (auto b = std::get_if<bool>(&v)) a[k] = *b;
    else if (auto i = std::get_if<std::int64_t>(&v)) a[k] = *i;
    else if (auto d = std::get_if<double>(&v)) a[k] = *d;
    else a[k] = std::get<std::string>(v);
  }
  j["assignment"] = a;
  j["encoding"] = cfg.encoding;
  j["task"] = cfg.task;
  j["is_lm"] = t.is_language_model();
  j["train_len"] = cfg.train_len;
  j["seed"] = cfg.train.seed;
  j["steps"] = tr.steps;
  j["status"] = status_name(tr.status);
  j["final_train_loss"] = tr.final_loss;
  j["train_seconds"] = tr.seconds;
  j["eval_seconds"] = eval_s;
  j["parameters"] = model.num_parameters();
  nlohmann::ordered_json rs = nlohmann::ordered_json::array();
  for (const auto& r : results) rs.push_back(to_json(r));
  j["results"] = rs;
  write_file_atomic(eval_path, j.dump(2) + "\n");
  if (opt.console) std::printf("\n%s\n%s", ("evaluation (" + cfg.task + ", trained on sizes up to " +
                                             std::to_string(cfg.train_len) + ")").c_str(),
                               format_results(results, t.is_language_model()).c_str());
  return kOk;
}

}  // namespace pelab
