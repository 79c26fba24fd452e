// Experiment configuration: TOML files with sections model, encoding, task, train, eval, sweep, output.
//
//   [model]     d_model, n_layers, n_heads, d_ff, activation, dropout, causal, tie_embeddings, ln_eps, init_std
//   [encoding]  name = "rope"; per-encoding parameters in subtables: [encoding.rope] base = 10000
//   [task]      name, min_len, train_len; per-task parameters in subtables: [task.addition] ...
//   [train]     steps, batch_size, optimizer, lr, min_lr, schedule, warmup, weight_decay, ... seed, threads
//   [eval]      lengths, samples, batch_size, clamp-free reporting
//   [sweep]     "section.key" = [values...] grid (e.g. "encoding.name" = ["none", "rope"])
//   [output]    dir
// Every key is declared (type, default, range) in config.cpp; unknown keys, wrong types and
// out-of-range values are errors with file:line, the key and what is allowed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "layers/param_spec.hpp"
#include "layers/transformer.hpp"
#include "training/train_config.hpp"  // TrainConfig

namespace pelab {

// A bad config file, override or sweep: the message starts with "file:line:" (or "--set ...:").
struct ConfigError : Error {
  using Error::Error;
};

struct EvalConfig {
  std::vector<std::size_t> lengths;  // problem sizes (sequence tasks) or context lengths (LM); empty = defaults
  std::size_t samples = 256;         // held-out examples per length
  std::size_t batch_size = 64;
  std::uint64_t seed = 12345;        // held-out sets are fixed by this seed, not the training seed
};

struct ExperimentConfig {
  std::string source;                // file it was loaded from ("" for built in code)
  ModelConfig model;                 // vocab and train_len are filled from the task
  std::string encoding = "none";     // = model.encoding
  std::map<std::string, std::map<std::string, Value>> encoding_params;  // per encoding name, as given
  std::string task = "copy";
  std::size_t min_len = 1, train_len = 16;
  std::map<std::string, std::map<std::string, Value>> task_params;      // per task name, as given
  TrainConfig train;
  EvalConfig eval;
  std::map<std::string, std::vector<Value>> sweep;  // "section.key" -> values, in file order of keys
  std::vector<std::string> sweep_order;            // the keys of `sweep` in file order
  std::string output_dir = "runs";
  // Where each given setting came from, for messages: "section.key" (also "encoding.rope.base",
  // "sweep.train.seed", and section names for their headers) -> "file:line" or "--set ...".
  std::map<std::string, std::string> locations;
};

// Equal in every setting; `source` and `locations` (where settings came from) are ignored.
bool same_settings(const ExperimentConfig& a, const ExperimentConfig& b);

// Loads and validates a config file; `overrides` are "section.key=value" strings (values parsed as TOML).
// Throws ConfigError (an Error) whose message starts with "file:line:".
ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// Parses from a string (tests); `name` stands in for the file name in messages.
ExperimentConfig parse_config(const std::string& text, const std::string& name,
                              const std::vector<std::string>& overrides = {});

// The fully resolved config as TOML (every key, defaults filled in), written into each run directory;
// loading it back gives an equal config.
std::string to_toml(const ExperimentConfig& cfg);

// One cell of a sweep: the config with the grid values applied, plus a short label like
// "encoding.name=rope,train.seed=1" and a directory-safe name.
struct SweepCell {
  ExperimentConfig config;
  std::vector<std::pair<std::string, Value>> assignment;
  std::string label, dir_name;
};
// The cartesian product of the [sweep] grid in file order of its keys, the last key varying fastest
// (one cell with empty label and dir_name when there is no grid). Each cell is fully validated and
// has its sweep cleared; an invalid combination throws ConfigError naming the cell.
std::vector<SweepCell> expand_sweep(const ExperimentConfig& cfg);

}  // namespace pelab
