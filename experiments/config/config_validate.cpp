// Cross-key checks of a runnable config, pointing at the line of one of the keys involved; resolves
// it into a RunSpec (task built, model configured).
#include <algorithm>
#include <cstdlib>

#include "core/blas.hpp"
#include "experiments/config/config_schema.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/positional/auto_size.hpp"
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

// Every plugin subtable ([encoding.<name>], [task.<name>], [train.<name>]) and the chosen plugin's:
// a known name, valid keys; stored fully resolved.
void resolve_subtables(ExperimentConfig& cfg, const PluginGroup& g) {
  const std::string name = chosen(g, cfg);
  try {
    g.params(name);  // names first, so an unknown name is reported as such rather than as a subtable
  } catch (const Error& e) {
    fail(location(cfg, g.section + "." + g.selector), "[" + g.section + "] key '" + g.selector + "': " + e.what());
  }
  ParamTables& all = g.tables(cfg);
  all[name];
  for (auto& [owner, params] : all) {
    const std::string where = location(cfg, g.section + "." + owner);
    try {
      params = resolve_params(g.params(owner), params, "[" + g.section + "." + owner + "]").values();
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      fail(where, e.what());
    }
  }
}

// [cell.assignment] must agree with the settings (a cell file edited by hand would mislabel its results).
void check_cell(const ExperimentConfig& cfg) {
  for (const auto& [key, v] : cfg.cell.assignment) {
    const std::string w = location(cfg, "cell.assignment." + key);
    const Value actual = get_setting(cfg, find_setting(key, w, "[cell.assignment] "));
    if (actual != v)
      fail(w, "[cell.assignment] '" + key + "' = " + format_value(v) + " but the config sets it to " +
                  format_value(actual));
  }
}

TaskInfo& task_info(const ExperimentConfig& cfg, TaskCache& cache) {
  const auto& params = cfg.task_params.at(cfg.task);
  std::string key = cfg.task + "|" + num(cfg.min_len) + "|" + num(cfg.train_len) + "|" + describe(cfg.format);
  for (const auto& [k, v] : params) key += "|" + k + "=" + format_value(v);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  TaskInfo info;
  try {
    TaskCommon common;
    common.min_len = cfg.min_len;
    common.train_len = cfg.train_len;
    common.format = cfg.format;
    info.task = make_task(cfg.task, common, params);
  } catch (const TaskFormatError& e) {  // a format key set for a language model
    fail(location_any(cfg, {"task." + e.key, "task.name"}), e.what());
  } catch (const Error& e) {
    const std::string msg = strip_prefix(e.what(), "task '" + cfg.task + "': ");
    auto paths = param_paths(cfg, "task." + cfg.task + ".");
    paths.insert(paths.end(), {"task.min_len", "task.train_len", "task.name"});
    fail(blame(cfg, msg, paths, "task"), "[task." + cfg.task + "] " + msg);
  }
  return cache[key] = std::move(info);
}

// Why the task cannot generate problem size n, or "" when it can (one example sampled).
std::string cannot_generate(const ExperimentConfig& cfg, const Task& task, std::size_t n) {
  try {
    task.eval_batch(cfg.eval.seed, 1, n);
  } catch (const Error& e) {
    return strip_prefix(e.what(), "task '" + cfg.task + "': ");
  }
  return "";
}

// Evaluation must not fail after training: every eval length has to be one the task can produce.
// A range names its first impossible length and the allowed ones. Every task's limit on a size is a
// bound (a smallest or largest size: Task::eval_batch's errors, SequenceTask::check_size, char_lm's
// held-out split), so a range is checked at its two ends and, when the last fails, bisected for the
// first that does: sampling each of 1..100000 took 30 s (issue #38).
void check_eval_lengths(const ExperimentConfig& cfg, TaskInfo& info) {
  const auto& r = cfg.eval.length_range;
  const std::vector<std::size_t>& all = cfg.eval.lengths;
  if (!r.empty() && !all.empty()) {
    std::string why = cannot_generate(cfg, *info.task, all.front());
    std::size_t n = all.front();
    if (why.empty() && !(why = cannot_generate(cfg, *info.task, all.back())).empty()) {
      std::size_t ok = 0, bad = all.size() - 1;  // indices: all[ok] can be generated, all[bad] cannot
      while (bad - ok > 1) {
        const std::size_t mid = ok + (bad - ok) / 2;
        std::string w = cannot_generate(cfg, *info.task, all[mid]);
        if (w.empty()) ok = mid;
        else bad = mid, why = std::move(w);
      }
      n = all[bad];
    }
    if (why.empty()) return;
    fail(location(cfg, "eval.length_range"),
         "[eval] length_range [" + num(r[0]) + ", " + num(r[1]) + ", " + num(r[2]) + "] includes length " + num(n) +
             ", which task '" + cfg.task + "' cannot generate: " + why + "; expected a range of lengths the task can generate");
  }
  for (std::size_t n : all) {
    if (info.checked_lengths.count(n)) continue;
    const std::string why = cannot_generate(cfg, *info.task, n);
    const bool explicit_lengths = given(cfg, "eval.lengths");  // else the defaults derive from train_len
    if (!why.empty())
      fail(explicit_lengths ? location(cfg, "eval.lengths") : location_any(cfg, {"task.train_len", "task.name", "eval"}),
           "[eval] length " + num(n) + " is not possible for task '" + cfg.task + "': " + why +
               (explicit_lengths ? "" : " (a default eval length, derived from train_len; set [eval] lengths)"));
    info.checked_lengths.insert(n);
  }
}

// [eval] lengths and length_range are two forms of one setting: at most one may be given.
void check_length_forms(const ExperimentConfig& cfg) {
  if (cfg.eval.length_range.empty() || cfg.eval.lengths.empty()) return;
  fail(location(cfg, "eval.length_range"),
       "[eval] keys 'lengths' (" + location(cfg, "eval.lengths") +
           ") and 'length_range' are both set; expected one of them (lengths = [] beside a range is fine; "
           "pelab eval's --lengths and --length-range replace both)");
}

// [train] max_position: 0 resolves to the longest sequence the run trains or evaluates on, so every
// mode can draw ids for every length; an explicit value must hold the training sequences, and the eval
// sequences when evaluation draws offset/randomized ids. Sets the model's training position range.
void resolve_positions(ExperimentConfig& cfg, const Task& task, ModelConfig& m) {
  const std::size_t train_T = task.sequence_length(cfg.train_len);
  std::size_t eval_T = 0, eval_n = 0;
  for (std::size_t n : cfg.eval.lengths)
    if (task.sequence_length(n) > eval_T) eval_T = task.sequence_length(n), eval_n = n;
  if (const auto g = operand_grid_lengths(cfg); !g.empty() && task.operand_sequence_length(g.back(), g.back()) > eval_T)
    eval_T = task.operand_sequence_length(g.back(), g.back()), eval_n = g.back();  // the grid's longest
  TrainConfig& t = cfg.train;
  if (t.max_position == 0) t.max_position = std::max(train_T, eval_T);
  if (t.max_position < train_T)
    fail(location_any(cfg, {"train.max_position", "task.train_len"}),
         "[train] max_position " + num(t.max_position) + " is smaller than the longest training sequence, " +
             num(train_T) + " tokens (task.train_len " + num(cfg.train_len) + "); expected max_position >= " +
             num(train_T) + ", or 0 (auto)");
  const PositionConfig ep = eval_positions(cfg);
  // A task's own ids (task) stay below its sequence length, as contiguous ids do.
  if (ep.mode != PositionMode::contiguous && ep.mode != PositionMode::task && t.max_position < eval_T)
    fail(location_any(cfg, {"train.max_position", "eval.positions",
                            cfg.eval.length_range.empty() ? "eval.lengths" : "eval.length_range", "train.positions"}),
         "[train] max_position " + num(t.max_position) + " is smaller than the longest eval sequence, " +
             num(eval_T) + " tokens (eval length " + num(eval_n) + "), and evaluation draws " +
             position_mode_name(ep.mode) + " ids from [0, max_position) ([eval] positions = \"" +
             cfg.eval.positions + "\"); expected max_position >= " + num(eval_T) + ", or 0 (auto)");
  m.max_position = t.positions == PositionMode::contiguous || t.positions == PositionMode::task ? 0 : t.max_position;
}

// Encoding sizes given as 0 ("the ids training uses": binary's bits, a learned table's rows) written as
// the values the model uses, so that config.toml describes the run; the model is the same either way, and a
// config.toml with 0 (older runs) loads to the same values. A size the [sweep] grid assigns stays as given
// ([cell.assignment] must match it).
void record_auto_sizes(ExperimentConfig& cfg, ModelConfig& m) {
  std::map<std::string, Value> resolved = resolve_auto_sizes(cfg.encoding, m.encoding_params, m.dims());
  for (const auto& [key, v] : cfg.cell.assignment)
    if (key.rfind("encoding." + cfg.encoding + ".", 0) == 0) {
      const std::string k = key.substr(cfg.encoding.size() + 10);
      if (resolved.count(k)) resolved[k] = m.encoding_params.at(k);
    }
  m.encoding_params = resolved;
  cfg.encoding_params[cfg.encoding] = std::move(resolved);
}

// [eval] beyond_samples resolves to at most samples, the value config.toml records. Not an error: a
// run's recorded value must still load under `pelab eval RUN --samples 16`.
void resolve_beyond_samples(ExperimentConfig& cfg) {
  cfg.eval.beyond_samples = std::min(cfg.eval.beyond_samples, cfg.eval.samples);
}

// [train] budget's requirements (training/train_config.hpp): competent watches early_stop_metric at the
// periodic evaluations; fixed ignores it, so a metric given beside it would be a silent no-op.
void check_budget(const ExperimentConfig& cfg) {
  const TrainConfig& t = cfg.train;
  const std::string w = location(cfg, "train.budget");
  if (t.budget == "competent" && t.early_stop_metric.empty())
    fail(w, "[train] budget = \"competent\" needs early_stop_metric (the metric whose gate and plateau it watches), "
            "e.g. early_stop_metric = \"exact_match\"");
  if (t.budget == "competent" && t.eval_every == 0)
    fail(location_any(cfg, {"train.eval_every", "train.budget"}),
         "[train] budget = \"competent\" decides at the periodic evaluations, but eval_every = 0; expected eval_every > 0");
  if (t.budget == "fixed" && !t.early_stop_metric.empty())
    fail(location_any(cfg, {"train.early_stop_metric", "train.budget"}),
         "[train] budget = \"fixed\" trains every step, so early_stop_metric = \"" + t.early_stop_metric +
             "\" would do nothing; remove it, or use budget \"first_fit\" or \"competent\"");
}

}  // namespace

// [train] gemm not given resolves to the process's default path (PELAB_GEMM, else libxsmm when built), or
// to openblas in a config pelab recorded before the key existed: the only path there was. Done once, when
// the file is read (parse_config), so that a sweep's base config, its cells and sweep.toml agree. libxsmm given
// to a build without it is an error rather than a silent switch of rounding.
void resolve_gemm(ExperimentConfig& cfg) {
  std::string& g = cfg.train.gemm;
  if (!given(cfg, "train.gemm")) {
    if (g.empty()) g = cfg.recorded ? "openblas" : blas::gemm_path_key(blas::default_gemm_path());
    return;
  }
  if (g == "libxsmm" && !blas::gemm_path_available(blas::GemmPath::libxsmm))
    fail(location(cfg, "train.gemm"),
         "[train] gemm = \"libxsmm\": this build has no libxsmm (configured with -DPELAB_LIBXSMM=OFF, or not "
         "x86-64); " + std::string(cfg.recorded ? "the run was trained on libxsmm's GEMMs, so resume or evaluate it "
                                                  "with a build that has libxsmm (OpenBLAS's would round differently)"
                                                : "allowed here: \"openblas\""));
}

RunSpec validate_config(ExperimentConfig cfg, TaskCache& cache) {
  if (cfg.min_len > cfg.train_len)
    fail(location_any(cfg, {"task.min_len", "task.train_len"}),
         "[task] min_len " + num(cfg.min_len) + " is greater than train_len " + num(cfg.train_len) +
             "; expected min_len <= train_len");
  const TrainConfig& t = cfg.train;
  if (t.min_lr > t.lr)
    fail(location_any(cfg, {"train.min_lr", "train.lr"}), "[train] min_lr " + format_value(t.min_lr) +
                                                               " is greater than lr " + format_value(t.lr) +
                                                               "; expected min_lr <= lr");
  if (t.warmup > t.steps)
    fail(location_any(cfg, {"train.warmup", "train.steps"}),
         "[train] warmup " + num(t.warmup) + " is longer than steps " + num(t.steps) + "; expected warmup <= steps");
  if (cfg.output_dir.empty()) fail(location(cfg, "output.dir"), "[output] key 'dir' is empty; expected a directory");
  for (std::size_t n : cfg.eval.lengths)
    if (n == 0) fail(location(cfg, "eval.lengths"), "[eval] key 'lengths' contains 0; expected positive integers");
  check_length_forms(cfg);
  resolve_beyond_samples(cfg);
  resolve_gemm(cfg);
  for (const auto& g : plugin_groups()) resolve_subtables(cfg, g);
  check_cell(cfg);
  check_budget(cfg);

  // The blank output format has no <EOS> (experiments/tasks/format.hpp): eos resolves to "absent" unless
  // given, and a given one is checked by make_task.
  if (cfg.format.blank() && !given(cfg, "task.eos")) cfg.format.eos = EosMode::absent;
  TaskInfo& info = task_info(cfg, cache);
  RunSpec spec;
  spec.task = info.task;
  ModelConfig& m = spec.model;
  static_cast<ModelSettings&>(m) = cfg.model;
  m.vocab = spec.task->vocab_size();
  m.train_seq_len = spec.task->sequence_length(cfg.train_len);
  m.encoding = cfg.encoding;
  m.encoding_params = cfg.encoding_params.at(cfg.encoding);
  m.layer_encodings = cfg.encoding_layers;
  m.encoding_heads = cfg.encoding_heads;
  for (const auto& [name, params] : cfg.encoding_params)
    if (name != cfg.encoding) m.layer_encoding_params[name] = params;
  if (m.d_model % m.n_heads != 0)
    fail(location_any(cfg, {"model.d_model", "model.n_heads"}),
         "[model] d_model " + num(m.d_model) + " is not divisible by n_heads " + num(m.n_heads) +
             "; expected d_model to be a multiple of n_heads");
  try {
    m.layer_encoding_names();  // a malformed layout (a bad variant name: rope.Global) at encoding.layers' line
  } catch (const Error& e) {
    fail(location_any(cfg, {"encoding.layers", "encoding.name"}), "[encoding] " + strip_prefix(e.what(), "model: "));
  }
  try {
    resolve_encoding_params(cfg.encoding, m.encoding_params, m.dims_for(cfg.encoding));
  } catch (const Error& e) {
    const std::string msg = strip_prefix(e.what(), "encoding '" + cfg.encoding + "': ");
    auto paths = param_paths(cfg, "encoding." + cfg.encoding + ".");
    paths.insert(paths.end(), {"model.tie_embeddings", "encoding.name", "model.n_heads", "model.d_model", "model.causal"});
    fail(blame(cfg, msg, paths, "encoding"), "[encoding." + cfg.encoding + "] " + msg);
  }
  // RoPE length extension set in [encoding.rope] while another encoding runs, and not because a sweep over
  // encoding.name shares the subtable: it would silently do nothing.
  if (cfg.encoding != "rope" && cfg.encoding_params.count("rope") && cfg.encoding_params.at("rope").count("scaling") &&
      cfg.encoding_params.at("rope").at("scaling") != Value(std::string("none")) &&
      std::none_of(cfg.cell.assignment.begin(), cfg.cell.assignment.end(),
                   [](const auto& a) { return a.first == "encoding.name"; }))
    fail(given(cfg, "encoding.rope.scaling") ? cfg.locations.at("encoding.rope.scaling") : location(cfg, "encoding.name"),
         "[encoding.rope] key 'scaling' = " + format_value(cfg.encoding_params.at("rope").at("scaling")) +
             " applies to RoPE only, but [encoding] name = \"" + cfg.encoding + "\"; remove it, or use encoding rope");
  try {
    m.validate();  // whatever the model checks beyond the above
  } catch (const Error& e) {
    const std::string msg = strip_prefix(e.what(), "model: ");
    if (msg.compare(0, 10, "attention.") == 0)
      fail(blame(cfg, msg, {"attention.temperature_tuning", "attention.tuning_floor_scale", "attention.chunk",
                            "attention.temperature", "attention.log_length_base", "attention.scaling", "attention.window",
                            "attention.qk_norm"},
                 "attention"),
           "[attention] " + msg);
    if (msg.compare(0, 5, "loop.") == 0)
      fail(location(cfg, "loop." + msg.substr(5, msg.find_first_of(" =", 5) - 5)), "[loop] " + msg.substr(5));
    if (msg.compare(0, 16, "encoding.layers ") == 0 || msg.compare(0, 15, "encoding.heads ") == 0 ||
        msg.find("encoding '") == 0)
      fail(blame(cfg, msg, {"encoding.layers", "encoding.heads", "encoding.name"}, "encoding"), "[encoding] " + msg);
    if (msg.compare(0, 6, "canon.") == 0)
      fail(blame(cfg, msg, {"canon.points", "canon.kernel"}, "canon"), "[canon] " + msg);
    fail(location(cfg, "model"), "[model] " + msg);
  }

  cfg.eval.lengths = eval_lengths(cfg, *spec.task);  // fills the defaults when none are given
  check_eval_lengths(cfg, info);
  check_task_streams(cfg, *spec.task, m);
  check_settings_take_effect(cfg, *spec.task, m);
  check_operand_grid(cfg, *spec.task);
  resolve_positions(cfg, *spec.task, m);
  record_auto_sizes(cfg, m);
  spec.config = std::move(cfg);
  return spec;
}

}  // namespace pelab::config_detail

namespace pelab {

namespace {

// The config's value read as PELAB_GEMM's (resolve_gemm has refused libxsmm where it is missing).
blas::GemmPath path_of(const ExperimentConfig& cfg) {
  if (cfg.train.gemm.empty()) return blas::default_gemm_path();  // a config built in code, never validated
  return blas::gemm_path_from(cfg.train.gemm.c_str());
}

}  // namespace

void check_gemm_env(const ExperimentConfig& cfg) {
  const char* env = std::getenv("PELAB_GEMM");
  if (!env || !*env || blas::gemm_path_from(env) == path_of(cfg)) return;
  const std::string key = blas::gemm_path_key(path_of(cfg));
  throw Error("the environment variable PELAB_GEMM = '" + std::string(env) + "' disagrees with the run's [train] gemm = \"" +
              key + "\"" +
              (config_detail::given(cfg, "train.gemm") ? " (" + cfg.locations.at("train.gemm") + ")"
               : cfg.recorded                          ? " (recorded before the key existed, when every GEMM was OpenBLAS's)"
                                                       : "") +
              ": the two paths round differently. Unset PELAB_GEMM, or for a new run set the config's key "
              "(--set train.gemm=" + env + ")");
}

void use_gemm_path(const ExperimentConfig& cfg) {
  check_gemm_env(cfg);
  blas::set_gemm_path(path_of(cfg));
}

}  // namespace pelab
