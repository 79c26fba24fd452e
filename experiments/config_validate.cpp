// Cross-key checks of a runnable config, pointing at the line of one of the keys involved; fills the
// fields derived from the task and the encoding.
#include <algorithm>

#include "experiments/config_schema.hpp"
#include "experiments/evaluate.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab::config_detail {
namespace {

std::string num(std::size_t x) { return std::to_string(x); }

// The location of the given key among `paths` whose name the message mentions (e.g. "fraction"),
// else of the first given one, else of `fallback`.
std::string blame(const ExperimentConfig& cfg, const std::string& msg, const std::vector<std::string>& paths,
                  const std::string& fallback) {
  for (const auto& p : paths)
    if (given(cfg, p) && msg.find(p.substr(p.rfind('.') + 1)) != std::string::npos) return cfg.locations.at(p);
  for (const auto& p : paths)
    if (given(cfg, p)) return cfg.locations.at(p);
  return location(cfg, fallback);
}

std::string strip_prefix(std::string msg, const std::string& prefix) {
  if (msg.compare(0, prefix.size(), prefix) == 0) msg.erase(0, prefix.size());
  return msg;
}

std::vector<std::string> param_paths(const ExperimentConfig& cfg, const std::string& prefix) {
  std::vector<std::string> v;
  for (const auto& [path, where] : cfg.locations)
    if (path.compare(0, prefix.size(), prefix) == 0 && path.size() > prefix.size()) v.push_back(path);
  return v;
}

// Every [encoding.<name>] / [task.<name>] subtable: a known name, valid keys; stored fully resolved.
template <class Registry>
void resolve_subtables(ExperimentConfig& cfg, std::map<std::string, std::map<std::string, Value>>& all,
                       const std::string& sec, Registry& registry) {
  for (auto& [name, params] : all) {
    const std::string where = location(cfg, sec + "." + name);
    try {
      params = resolve_params(registry.get(name).params, params, "[" + sec + "." + name + "]").values();
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      fail(where, e.what());
    }
  }
}

TaskInfo& task_info(const ExperimentConfig& cfg, TaskCache& cache) {
  const auto& params = cfg.task_params.at(cfg.task);
  std::string key = cfg.task + "|" + num(cfg.min_len) + "|" + num(cfg.train_len);
  for (const auto& [k, v] : params) key += "|" + k + "=" + toml_value(v);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  TaskInfo info;
  try {
    TaskCommon common;
    common.min_len = cfg.min_len;
    common.train_len = cfg.train_len;
    info.task = make_task(cfg.task, common, params);
  } catch (const Error& e) {
    const std::string msg = strip_prefix(e.what(), "task '" + cfg.task + "': ");
    auto paths = param_paths(cfg, "task." + cfg.task + ".");
    paths.insert(paths.end(), {"task.min_len", "task.train_len", "task.name"});
    fail(blame(cfg, msg, paths, "task"), "[task." + cfg.task + "] " + msg);
  }
  return cache[key] = std::move(info);
}

// Evaluation must not fail after training: every eval length has to be one the task can produce.
void check_eval_lengths(const ExperimentConfig& cfg, TaskInfo& info) {
  for (std::size_t n : cfg.eval.lengths) {
    if (info.checked_lengths.count(n)) continue;
    try {
      info.task->eval_batch(cfg.eval.seed, 1, n);
    } catch (const Error& e) {
      const bool explicit_lengths = given(cfg, "eval.lengths");  // else the defaults derive from train_len
      fail(explicit_lengths ? location(cfg, "eval.lengths") : location_any(cfg, {"task.train_len", "task.name", "eval"}),
           "[eval] length " + num(n) + " is not possible for task '" + cfg.task +
               "': " + strip_prefix(e.what(), "task '" + cfg.task + "': ") +
               (explicit_lengths ? "" : " (a default eval length, derived from train_len; set [eval] lengths)"));
    }
    info.checked_lengths.insert(n);
  }
}

}  // namespace

void validate_config(ExperimentConfig& cfg, TaskCache& cache) {
  if (cfg.min_len > cfg.train_len)
    fail(location_any(cfg, {"task.min_len", "task.train_len"}),
         "[task] min_len " + num(cfg.min_len) + " is greater than train_len " + num(cfg.train_len) +
             "; expected min_len <= train_len");
  const TrainConfig& t = cfg.train;
  if (t.min_lr > t.lr)
    fail(location_any(cfg, {"train.min_lr", "train.lr"}), "[train] min_lr " + format_number(t.min_lr) +
                                                               " is greater than lr " + format_number(t.lr) +
                                                               "; expected min_lr <= lr");
  if (t.warmup > t.steps)
    fail(location_any(cfg, {"train.warmup", "train.steps"}),
         "[train] warmup " + num(t.warmup) + " is longer than steps " + num(t.steps) + "; expected warmup <= steps");
  if (cfg.output_dir.empty()) fail(location(cfg, "output.dir"), "[output] key 'dir' is empty; expected a directory");
  for (std::size_t n : cfg.eval.lengths)
    if (n == 0) fail(location(cfg, "eval.lengths"), "[eval] key 'lengths' contains 0; expected positive integers");

  // Names first, so an unknown name is reported as such rather than as an unknown subtable.
  try {
    TaskRegistry::instance().get(cfg.task);
  } catch (const Error& e) {
    fail(location(cfg, "task.name"), std::string("[task] key 'name': ") + e.what());
  }
  try {
    EncodingRegistry::instance().get(cfg.encoding);
  } catch (const Error& e) {
    fail(location(cfg, "encoding.name"), std::string("[encoding] key 'name': ") + e.what());
  }
  cfg.task_params[cfg.task];
  cfg.encoding_params[cfg.encoding];
  resolve_subtables(cfg, cfg.task_params, "task", TaskRegistry::instance());
  resolve_subtables(cfg, cfg.encoding_params, "encoding", EncodingRegistry::instance());

  TaskInfo& info = task_info(cfg, cache);
  const Task& task = *info.task;
  ModelConfig& m = cfg.model;
  m.vocab = task.vocab_size();
  m.train_len = task.sequence_length(cfg.train_len);
  m.encoding = cfg.encoding;
  m.encoding_params = cfg.encoding_params.at(cfg.encoding);
  if (m.d_model % m.n_heads != 0)
    fail(location_any(cfg, {"model.d_model", "model.n_heads"}),
         "[model] d_model " + num(m.d_model) + " is not divisible by n_heads " + num(m.n_heads) +
             "; expected d_model to be a multiple of n_heads");
  try {
    resolve_encoding_params(cfg.encoding, m.encoding_params, m.dims());
  } catch (const Error& e) {
    const std::string msg = strip_prefix(e.what(), "encoding '" + cfg.encoding + "': ");
    auto paths = param_paths(cfg, "encoding." + cfg.encoding + ".");
    paths.insert(paths.end(), {"encoding.name", "model.n_heads", "model.d_model"});
    fail(blame(cfg, msg, paths, "encoding"), "[encoding." + cfg.encoding + "] " + msg);
  }
  try {
    m.validate();  // whatever the model checks beyond the above
  } catch (const Error& e) {
    fail(location(cfg, "model"), "[model] " + strip_prefix(e.what(), "model: "));
  }

  cfg.eval.lengths = eval_lengths(cfg, task);  // fills the defaults when none are given
  check_eval_lengths(cfg, info);
}

}  // namespace pelab::config_detail
