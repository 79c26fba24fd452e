// Experiment configuration: TOML files with sections model, encoding, attention, task, train, eval,
// sweep, output and cell.
//
//   [model]     d_model, n_layers, n_heads, d_ff, activation, dropout, causal, tie_embeddings, ln_eps, init,
//               init_std, emb_init_std
//   [encoding]  name = "rope"; per-encoding parameters in subtables: [encoding.rope] base = 10000
//   [attention] scaling, temperature, log_length_clamp, log_length_base (layers/attention_scaling.hpp;
//               stored in ModelSettings::attention)
//   [task]      name, min_len, train_len (problem sizes), the sequence format: bos, eos, sep, prompt, output;
//               per-task parameters in subtables: [task.addition] ...
//   [train]     steps, batch_size, optimizer, lr, min_lr, schedule, warmup, weight_decay, ... seed,
//               positions, max_position, threads;
//               per-optimizer parameters in subtables: [train.adamw] beta1 = 0.9, [train.sgd] momentum = 0.9
//   [eval]      lengths or length_range, samples, batch_size, seed, positions
//   [sweep]     "section.key" = [values...] grid (e.g. "encoding.name" = ["none", "rope"])
//   [protocol]  select, metric, validation_samples: settings chosen per group on a validation split
//   [output]    dir
//   [cell]      written by `pelab sweep` into each cell's file: index, label, [cell.assignment]
// Every key is declared (type, default, range) in config_schema.cpp; unknown keys, wrong types and
// out-of-range values are errors with file:line, the key and what is allowed.
//
// Reading a file gives a LoadedConfig: the settings as written and one RunSpec per run they define,
// each resolved once (task built, model configured). Everything downstream uses the RunSpec.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/params/value.hpp"
#include "experiments/tasks/format.hpp"  // SequenceFormat
#include "layers/transformer.hpp"
#include "training/train_config.hpp"  // TrainConfig

namespace pelab {

class Task;

// A bad config file, override or sweep: the message starts with "file:line:" (or "--set ...:").
struct ConfigError : Error {
  using Error::Error;
};

// Subtables of plugin parameters: name (e.g. "rope") -> key -> value.
using ParamTables = std::map<std::string, std::map<std::string, Value>>;

// The most lengths one [eval] length_range may expand to.
constexpr std::size_t kMaxRangeLengths = 100000;

struct EvalConfig {
  std::vector<std::size_t> lengths;  // problem sizes (sequence tasks) or context lengths (LM); empty = defaults
  // [eval] length_range = [from, to] or [from, to, step]: every length from, from + step, ... up to to
  // (Delétang et al. 2023 evaluate 1..500). Empty = not given; validation expands it into `lengths`.
  std::vector<std::size_t> length_range;
  // [eval] operand_grid = [from, to] or [from, to, step]: two-operand tasks (addition) are also evaluated at
  // every (len a, len b) of range x range (McLeish et al. 2024's and Cho et al. 2024's heatmaps), into
  // eval.json's "operand_grid". Empty = none.
  std::vector<std::size_t> operand_grid;
  std::size_t samples = 256;         // held-out examples per length
  // Every held-out evaluation during training ([train] eval_every) also evaluates the eval lengths above
  // train_len (beyond_lengths in experiments/run/run.hpp) on this many examples each, into metrics.jsonl's
  // "beyond"; 0 = off. Validation resolves it to min(beyond_samples, samples): a cheap look at
  // extrapolation over training, never more than the final evaluation.
  std::size_t beyond_samples = 64;
  std::size_t batch_size = 64;
  std::uint64_t seed = 12345;        // held-out sets are fixed by this seed, not the training seed
  // Position ids at evaluation: "train" (the training mode) or a mode of training/positions.hpp; offset
  // and randomized ids come from their own stream seeded like the held-out sets (fixed per length).
  std::string positions = "train";
};

// [probe]: trained-model probes (`pelab probe run`) of every finished cell of a sweep (experiments/probe/probe.hpp).
struct ProbeSettings {
  bool run = false;          // `pelab sweep` probes each finished cell before the report (as with --probe)
  std::size_t samples = 32;  // held-out samples per length
};

// [protocol]: settings chosen per group of a sweep from its grid on an in-distribution validation split
// (experiments/run/selection.hpp; docs/usage.md, "Protocol: selection on a validation split").
struct ProtocolSettings {
  std::string select;                  // swept keys chosen per group, comma-separated ("train.lr"); "" = none
  std::string metric;                  // the validation metric; "" = the task's headline metric
  std::size_t validation_samples = 0;  // validation examples at train_len; 0 = eval.samples
};

// Which cell of a sweep grid a config is ([cell]); empty for a plain run.
struct CellInfo {
  std::optional<std::size_t> index;  // position in the grid, 0-based, the last swept key varying fastest
  std::string label;                 // "encoding.name=rope,train.seed=1"
  std::vector<std::pair<std::string, Value>> assignment;  // the swept keys and their values, in grid order
  bool empty() const { return !index && label.empty() && assignment.empty(); }
};

// Every setting once, as written (defaults filled in); nothing derived.
struct ExperimentConfig {
  std::string source;                // file it was loaded from ("" for built in code)
  // The text began with kResolvedHeader: a config.toml, cell.toml or sweep.toml pelab wrote (to_toml).
  // A key such a text lacks was added since; it resolves to what the run did then ([train] gemm).
  bool recorded = false;
  ModelSettings model;
  std::string encoding = "none";
  std::string encoding_layers;       // [encoding] layers: each layer's encoding, a repeating pattern ("" = name)
  std::size_t encoding_heads = 0;    // [encoding] heads: the encoding acts in the first N heads (0 = all)
  ParamTables encoding_params;       // [encoding.<name>]
  std::string task = "copy";
  std::size_t min_len = 1, train_len = 16;  // training problem sizes (sequence tasks) / LM context
  SequenceFormat format;             // [task] bos, eos, sep, prompt, output (sequence tasks)
  ParamTables task_params;           // [task.<name>]
  TrainConfig train;                 // with [train.<optimizer>] in train.optimizer_params
  EvalConfig eval;
  ProbeSettings probe;
  ProtocolSettings protocol;
  std::map<std::string, std::vector<Value>> sweep;  // "section.key" -> values
  std::vector<std::string> sweep_order;            // the keys of `sweep` in file order
  std::string output_dir = "runs";
  CellInfo cell;
  // Where each given setting came from, for messages: "section.key" (also "encoding.rope.base",
  // "sweep.train.seed", and section names for their headers) -> "file:line" or "--set ...".
  std::map<std::string, std::string> locations;
};

// One runnable experiment, resolved once by validation: training, evaluation, sweeps and the report
// all use it rather than rebuilding anything.
struct RunSpec {
  ExperimentConfig config;           // no grid; every subtable resolved, default eval lengths filled in
  std::shared_ptr<const Task> task;  // built from config (a corpus is read once per distinct setting)
  ModelConfig model;                 // config.model plus vocab and train_seq_len from the task, the encoding
  std::string dir_name;              // a sweep cell's directory ("" for a plain run)
};

// A config file read and checked: the settings as written (with the [sweep] grid) and every run they
// define, each resolved: the grid's cells in order, or the one run when there is no grid.
struct LoadedConfig {
  ExperimentConfig config;
  std::vector<RunSpec> runs;
  // Settings accepted but without effect, e.g. "--set encoding.rope.base=5 has no effect: the run uses
  // encoding \"alibi\"": for the console (the run goes ahead).
  std::vector<std::string> warnings;
};

// Loads, validates and resolves a config file; `overrides` are "section.key=value" strings (values
// parsed as TOML, bare words as strings). Throws ConfigError whose message starts with "file:line:".
// An override of a key the [sweep] grid sets is an error naming both values (the grid would replace
// it in every cell without a word); to change the grid, override it: --set 'sweep.encoding.name=["alibi"]'.
// An override of a plugin parameter no run uses (encoding.rope.base on an ALiBi run) is a warning.
// Only a regular file of at most kMaxConfigBytes is read; one that sets no key is a warning.
LoadedConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});
constexpr std::size_t kMaxConfigBytes = 4 << 20;
// Parses from a string (tests); `name` stands in for the file name in messages.
LoadedConfig parse_config(const std::string& text, const std::string& name,
                          const std::vector<std::string>& overrides = {});

// The config as TOML, every key written (defaults included): what each run directory keeps as
// config.toml and each sweep cell as cell.toml. Loading it back gives the same text, so two configs
// are the same experiment exactly when their to_toml texts are equal.
std::string to_toml(const ExperimentConfig& cfg);
constexpr const char* kResolvedHeader = "# Resolved configuration: every setting, defaults included.\n";

// Switches this process to the run's GEMM path ([train] gemm, core/blas.hpp) before a model is built.
// Throws Error when the environment variable PELAB_GEMM names the other path (check_gemm_env, which a
// sweep runs for every cell before it writes anything): the run would round differently from what its
// config records.
void use_gemm_path(const ExperimentConfig& cfg);
void check_gemm_env(const ExperimentConfig& cfg);

// Keys that do not change a run's results (docs/usage.md, "Run directories"): where it is written
// (output.dir), its position in a grid (cell.index), threads (results do not depend on them:
// docs/performance.md, "Threads"), logging and checkpoint cadence (resume is bit-identical) and probes.
bool result_neutral_key(const std::string& key);
// The result-relevant keys whose values differ between two to_toml texts, each as
// "model.d_model = 16 (recorded), 32 (now)"; a key only one text has is shown with "(absent)".
std::vector<std::string> setting_differences(const std::string& recorded, const std::string& wanted);

// The cartesian product of the [sweep] grid in file order of its keys, the last key varying fastest
// (the config itself when there is no grid). Each cell is validated and resolved, has its grid cleared
// and its [cell] set: index, a label like "encoding.name=rope,train.seed=1" and the assignment; its
// dir_name is directory-safe. An invalid combination throws ConfigError naming the cell.
std::vector<RunSpec> expand_sweep(const ExperimentConfig& cfg);
// [protocol] select split at its commas (spaces trimmed): the swept keys chosen per group; empty when off.
std::vector<std::string> selected_keys(const ExperimentConfig& cfg);

}  // namespace pelab
