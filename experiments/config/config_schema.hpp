// Internal to the config loader: the declared keys of each section (type, range, how to read and
// write the ExperimentConfig field), the plugin subtables, and the shared error/location helpers.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/params/param_spec.hpp"
#include "experiments/config/config.hpp"

namespace pelab::config_detail {

struct Field {
  ParamSpec spec;                // key, type, default (= the struct's default), range, help
  std::string expected_text;     // replaces spec.allowed() in messages when set
  std::function<Value(const ExperimentConfig&)> get;
  std::function<void(ExperimentConfig&, const Value&)> set;  // `v` already checked and normalized
  std::string expected() const { return expected_text.empty() ? spec.allowed() : expected_text; }
};

struct Section {
  std::string name;
  std::vector<Field> fields;      // plain scalar keys
  std::vector<std::string> extra; // other keys the section accepts (eval.lengths, subtables...)
};

// model, encoding, task, train, eval, output: in the order to_toml writes them ([sweep] goes before
// output, [cell] after it).
const std::vector<Section>& schema();
const Section* find_section(const std::string& name);
const Field* find_field(const std::string& section, const std::string& key);
std::vector<std::string> section_names();  // including "sweep" and "cell"
std::vector<std::string> section_keys(const Section& s);  // fields then extras

// A section whose chosen plugin takes its own parameters from subtables [section.<name>], declared
// by the plugin's registry: encoding (name), task (name), train (optimizer).
struct PluginGroup {
  std::string section;    // "train"
  std::string selector;   // the key naming the chosen plugin: "optimizer"
  std::string noun;       // "optimizer"
  std::string example;    // a parameter path for messages: "train.adamw.beta1"
  bool keys_moved_here;   // its plugins' parameters were once keys of the section itself (say so)
  std::function<std::vector<std::string>()> names;                      // sorted
  std::function<const std::vector<ParamSpec>&(const std::string&)> params;  // Error for an unknown name
  std::function<ParamTables&(ExperimentConfig&)> tables;
};
const std::vector<PluginGroup>& plugin_groups();
const PluginGroup* find_group(const std::string& section);
const ParamTables& tables_of(const PluginGroup& g, const ExperimentConfig& cfg);
std::string chosen(const PluginGroup& g, const ExperimentConfig& cfg);  // e.g. cfg.train.optimizer
// The plugin of `g` that declares parameter `key` (for "it belongs in [train.adamw]"), if any.
std::optional<std::string> owner_of(const PluginGroup& g, const std::string& key);

// Checks `v` against `spec`; returns it normalized (integers widen to numbers) or nullopt when invalid.
std::optional<Value> check_value(const ParamSpec& spec, const Value& v);

// What a setting path ("train.lr", "encoding.rope.base", "train.adamw.beta1") refers to.
struct Setting {
  std::string section;               // "train", or "encoding.rope" for a parameter
  std::string key;                   // "lr", "base"
  const Field* field = nullptr;      // plain keys
  const ParamSpec* param = nullptr;  // plugin parameters
  const PluginGroup* group = nullptr;
  std::string owner;                 // the plugin a parameter belongs to
  std::string expected() const;
};
// Finds what `path` names, or throws ConfigError at `where`; `context` starts the message
// (e.g. "[sweep] key 'train.lerning_rate' names no setting: ").
Setting find_setting(const std::string& path, const std::string& where, const std::string& context);
// Checks `v` and stores it; throws ConfigError at `where` with `tag` and `key` naming it in the message
// ("[model]" and "n_heads", or "[sweep]" and "model.n_heads").
void apply_setting(ExperimentConfig& cfg, const Setting& s, const Value& v, const std::string& where,
                   const std::string& tag, const std::string& key);
Value get_setting(const ExperimentConfig& cfg, const Setting& s);

// Messages.
[[noreturn]] void fail(const std::string& where, const std::string& msg);  // throws "where: msg"
std::string join(const std::vector<std::string>& v, const std::string& sep = ", ");
std::string unknown_key_msg(const std::string& tag, const std::string& key, const std::vector<std::string>& keys);
// "[train] key 'beta1' moved to [train.adamw]; ..." for a plugin parameter written in its section, else "".
std::string misplaced_param_msg(const PluginGroup& g, const std::string& key);
// Where `path` was given (falling back to its section header, then the source file).
std::string location(const ExperimentConfig& cfg, const std::string& path);
// The first of `paths` that was given, else location(paths[0]).
std::string location_any(const ExperimentConfig& cfg, const std::vector<std::string>& paths);
bool given(const ExperimentConfig& cfg, const std::string& path);
void resolve_gemm(ExperimentConfig& cfg);  // [train] gemm (config_validate.cpp)

std::string toml_key(const std::string& k);  // bare when possible, else quoted
std::string activation_name(Activation a);

// The task's own ids against [train] / [eval] positions and the encodings (config_streams.cpp): Error at
// the line of a key involved when the pairing makes no sense.
void check_task_streams(const ExperimentConfig& cfg, const Task& task, const ModelConfig& m);
// Settings that would be accepted and do nothing, or something else than the config says
// (config_effect.cpp): Error at the line of a key involved. After ModelConfig::validate.
void check_settings_take_effect(const ExperimentConfig& cfg, const Task& task, const ModelConfig& m);
// [eval] operand_grid: a two-operand task, at most 10000 cells, each one the task can generate.
void check_operand_grid(const ExperimentConfig& cfg, const Task& task);
std::vector<std::size_t> operand_grid_lengths(const ExperimentConfig& cfg);  // the range's lengths

// Cross-key checks of one runnable config; resolves every plugin subtable (defaults filled in) and the
// default eval lengths, builds the task (through `cache`) and the model configuration.
struct TaskInfo {
  std::shared_ptr<const Task> task;
  std::set<std::size_t> checked_lengths;  // eval lengths the task is known to produce
};
using TaskCache = std::map<std::string, TaskInfo>;  // building a task may read a corpus: once per setting
RunSpec validate_config(ExperimentConfig cfg, TaskCache& cache);
std::vector<RunSpec> expand_sweep_cached(const ExperimentConfig& cfg, TaskCache& cache);

}  // namespace pelab::config_detail
