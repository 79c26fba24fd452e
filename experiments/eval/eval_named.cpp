#include "experiments/eval/eval_named.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "core/parallel.hpp"
#include "experiments/run/provenance.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/attention_scaling.hpp"
#include "training/fs.hpp"

namespace pelab {

namespace {
std::string key_of(const std::string& kv) { return kv.substr(0, kv.find('=')); }
std::string value_of(const std::string& kv) {
  const auto eq = kv.find('=');
  std::string v = eq == std::string::npos ? "" : kv.substr(eq + 1);
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return v;
}
bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
}  // namespace

void check_eval_settings(const std::vector<std::string>& sets, const ExperimentConfig& trained) {
  for (const auto& kv : sets) {
    const std::string key = key_of(kv);
    const std::string where = "--set " + kv + ": ";
    if (kv.find('=') == std::string::npos) throw Error(where + "expected KEY=VALUE");
    if (starts_with(key, "eval.")) continue;
    if (key == "encoding.name")
      throw Error(where + "key 'encoding.name' cannot change at evaluation (the checkpoint holds a '" + trained.encoding +
                  "' model); evaluation may set eval.*, encoding." + trained.encoding + ".* and attention.*");
    if (starts_with(key, "encoding.")) {
      const std::string rest = key.substr(9);
      const std::string enc = rest.substr(0, rest.find('.'));
      if (enc != trained.encoding)
        throw Error(where + "key '" + key + "' does not apply: this run uses encoding '" + trained.encoding +
                    "', so only encoding." + trained.encoding + ".* settings can change at evaluation" +
                    (enc == "rope" ? " (RoPE scaling needs a model trained with rope)" : ""));
      continue;
    }
    if (starts_with(key, "attention.")) {
      // learned temperatures and SSMax's s are trained parameters: the checkpoint has them or not.
      const std::string& was = trained.model.attention.scaling;
      const bool was_learned = was == "learned";
      const std::string now = value_of(kv);
      if (key == "attention.scaling" && now != was && (learned_scaling(was) || learned_scaling(now)))
        throw Error(where + "key 'attention.scaling' cannot " +
                    (learned_scaling(was) ? "leave \"" + was + "\"" : "become \"" + now + "\"") + " at evaluation: " +
                    (was == "ssmax" || now == "ssmax" ? "SSMax's s_h are" : "learned temperatures are") +
                    " trained parameters (the run was trained with \"" + was + "\")");
      if (key == "attention.qk_norm" && now != trained.model.qk_norm)  // QK-norm's gains (layers/qk_norm.hpp)
        throw Error(where + "key 'attention.qk_norm' cannot change at evaluation: QK-norm's gains are trained "
                    "parameters (the run was trained with \"" + trained.model.qk_norm + "\")");
      if (key == "attention.temperature" && was_learned)
        throw Error(where + "key 'attention.temperature' only initializes learned temperatures; it cannot change "
                    "a trained run's");
      continue;
    }
    // [loop]: how often the blocks run, no parameter of its own (the test-time steps of looped depth)
    if (starts_with(key, "loop.")) continue;
    // A task parameter that shapes only the data (TaskSpec::eval_params: flip_flop.p_ignore, passkey.depth).
    const auto& eval_params = TaskRegistry::instance().get(trained.task).eval_params;
    const std::string task_prefix = "task." + trained.task + ".";
    if (starts_with(key, task_prefix) &&
        std::count(eval_params.begin(), eval_params.end(), key.substr(task_prefix.size())) > 0)
      continue;
    std::string task_keys;
    for (const auto& p : eval_params) task_keys += ", " + task_prefix + p;
    throw Error(where + "key '" + key + "' is not an evaluation setting; `pelab eval --set` accepts eval.*, encoding." +
                trained.encoding + ".*, attention.*, loop.*" + task_keys + " (retrain to change training settings)");
  }
}

RunSpec load_eval_config(const std::string& run_dir, const std::vector<std::string>& sets) {
  const std::string path = run_dir + "/config.toml";
  const std::string text = read_file(path);
  // Drop the lines '"KEY" = ...' of [cell.assignment] (the last table config_write writes) for each KEY set.
  const auto at = text.find("\n[cell.assignment]\n");
  if (at == std::string::npos || sets.empty()) return parse_config(text, path, sets).runs.at(0);
  std::string out = text.substr(0, at + 1);
  std::istringstream in(text.substr(at + 1));
  for (std::string line; std::getline(in, line);) {
    bool drop = false;
    for (const auto& kv : sets) drop = drop || starts_with(line, "\"" + key_of(kv) + "\" =");
    if (!drop) out += line + "\n";
  }
  return parse_config(out, path, sets).runs.at(0);
}

void check_eval_name(const std::string& name) {
  bool ok = !name.empty() && name[0] != '.';
  for (char c : name)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  if (!ok) throw Error("--name '" + name + "': expected letters, digits, '_', '-' or '.' (not starting with '.')");
  if (name == "trained")
    throw Error("--name trained: 'trained' is the name the report gives the training's own evaluation (eval.json); "
                "choose another");
}

std::string write_named_eval(const std::string& run_dir, const std::string& name, const std::vector<std::string>& sets,
                             const RunSpec& spec, const std::vector<LengthResult>& results,
                             const std::vector<LengthResult>& grid, double eval_seconds) {
  EvalResult er;
  const std::string trained = run_dir + "/eval.json";
  if (std::filesystem::exists(trained)) {
    er = read_eval_result(trained);
  } else {  // not finished training: identify it from the config
    identify_run(er, spec);
    er.status = "unfinished";
  }
  er.results = results;
  er.operand_grid = grid;  // this evaluation's cells: never the training's, which eval.json keeps
  er.eval_seconds = eval_seconds;
  er.eval_name = name;
  er.eval_settings = sets;
  er.provenance = to_json(provenance(std::size_t(parallel::threads())));  // this evaluation's, not training's
  const std::string path = named_eval_path(run_dir, name);
  write_file_atomic(path, to_json(er).dump(2) + "\n");
  return path;
}

void identify_run(EvalResult& er, const RunSpec& spec) {
  const ExperimentConfig& cfg = spec.config;
  er.cell = cfg.cell.index;
  er.label = cfg.cell.label;
  er.assignment = cfg.cell.assignment;
  er.encoding = cfg.encoding;
  er.task = cfg.task;
  er.is_lm = spec.task->is_language_model();
  er.train_len = cfg.train_len;
  er.seed = cfg.train.seed;
}

std::string named_eval_path(const std::string& run_dir, const std::string& name) {
  return run_dir + "/eval-" + name + ".json";
}

std::string named_eval_of(const std::string& f) {
  const std::string pre = "eval-", post = ".json";
  if (f.size() <= pre.size() + post.size() || !starts_with(f, pre) || f.compare(f.size() - post.size(), post.size(), post) != 0)
    return "";
  return f.substr(pre.size(), f.size() - pre.size() - post.size());
}

}  // namespace pelab
