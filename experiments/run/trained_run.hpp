// A finished run loaded for inspection (`pelab predict`, `pelab probe run`): its config.toml resolved,
// the model rebuilt and its best usable checkpoint loaded, in eval mode.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "layers/transformer.hpp"

namespace pelab {

struct TrainedRun {
  std::string dir;
  RunSpec spec;
  std::unique_ptr<Transformer> model;
  std::string checkpoint;  // the directory loaded
};

// Throws Error (no config.toml, no usable checkpoint, a checkpoint that does not fit, a corpus changed since
// training: check_data_record). Checkpoint warnings (unverified files) go to stderr.
TrainedRun load_trained_run(const std::string& run_dir);
// The same with evaluation-time settings (`pelab eval --set`: checked by check_eval_settings, applied by
// load_eval_config, experiments/eval/eval_named.hpp) and, when `step` is given, the checkpoint of that
// step instead of the newest usable one (Error listing the steps there are when there is none).
TrainedRun load_trained_run(const std::string& run_dir, const std::vector<std::string>& eval_sets,
                            std::optional<std::size_t> step);

// The data a task read (Task::data_record: char_lm's corpus) kept with the run: RUN/corpus.json, written
// when training starts. Nothing for tasks that read no file.
void write_data_record(const std::string& run_dir, const Task& task);
// Before a run's weights are used again (predict, probe, eval, resume): throws Error when the file the task
// reads now is not the one the run was trained on (path, size, CRC32C or vocabulary), naming the file, the
// setting and both descriptions. A run written before corpus records (pelab 2026-11 and older) loads with a
// one-line note on stderr.
void check_data_record(const std::string& run_dir, const Task& task);
// check_data_record, then the checkpoint into `model`; for a run without a record, a weight-shape error
// says that the corpus may have changed.
void load_run_checkpoint(const std::string& run_dir, const std::string& checkpoint, Transformer& model,
                         const Task& task);

}  // namespace pelab
