// Internal to the config loader: the declared keys of each section (type, range, how to read and
// write the ExperimentConfig field), value formatting, and the shared error/location helpers.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "experiments/config.hpp"

namespace pelab {
class Task;
}

namespace pelab::config_detail {

struct Field {
  ParamSpec spec;                // key, type, default (= the struct's default), range, help
  std::string expected_text;     // replaces spec.allowed() in messages when set
  bool max_exclusive = false;    // the range is [min, max) rather than [min, max]
  std::function<Value(const ExperimentConfig&)> get;
  std::function<void(ExperimentConfig&, const Value&)> set;  // `v` already checked and normalized
  std::string expected() const { return expected_text.empty() ? spec.allowed() : expected_text; }
};

struct Section {
  std::string name;
  std::vector<Field> fields;      // plain scalar keys
  std::vector<std::string> extra; // other keys the section accepts (eval.lengths, subtables...)
};

// model, encoding, task, train, eval, output: in the order to_toml writes them ([sweep] goes before output).
const std::vector<Section>& schema();
const Section* find_section(const std::string& name);
const Field* find_field(const std::string& section, const std::string& key);
std::vector<std::string> section_names();  // including "sweep"
std::vector<std::string> section_keys(const Section& s);  // fields then extras

// Checks `v` against `spec`; returns it normalized (integers widen to numbers) or nullopt when invalid.
std::optional<Value> check_value(const ParamSpec& spec, const Value& v, bool max_exclusive = false);

// What a setting path ("train.lr", "encoding.rope.base", "task.addition.reverse_digits") refers to.
struct Setting {
  std::string section;             // "train", or "encoding.rope" for a parameter
  std::string key;                 // "lr", "base"
  const Field* field = nullptr;    // plain keys
  const ParamSpec* param = nullptr;  // encoding / task parameters
  std::string owner;               // the encoding or task a parameter belongs to
  bool task_param = false;
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
// Where `path` was given (falling back to its section header, then the source file).
std::string location(const ExperimentConfig& cfg, const std::string& path);
// The first of `paths` that was given, else location(paths[0]).
std::string location_any(const ExperimentConfig& cfg, const std::vector<std::string>& paths);
bool given(const ExperimentConfig& cfg, const std::string& path);

// Formatting.
std::string format_number(double x);       // shortest text that reads back to x; always a TOML float
std::string toml_value(const Value& v);    // a TOML literal
std::string toml_key(const std::string& k);  // bare when possible, else quoted
std::string plain_value(const Value& v);   // for labels: strings unquoted
std::string activation_name(Activation a);

// Cross-key checks of one runnable config; fills the derived fields (model vocab, train_len and
// encoding from the task and encoding), resolves every encoding/task subtable (defaults filled in)
// and fills the default eval lengths when none are given.
struct TaskInfo {
  std::shared_ptr<const Task> task;
  std::set<std::size_t> checked_lengths;  // eval lengths the task is known to produce
};
using TaskCache = std::map<std::string, TaskInfo>;  // building a task may read a corpus: once per setting
void validate_config(ExperimentConfig& cfg, TaskCache& cache);
std::vector<SweepCell> expand_sweep_cached(const ExperimentConfig& cfg, TaskCache& cache);

}  // namespace pelab::config_detail
