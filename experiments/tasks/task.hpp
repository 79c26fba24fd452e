// Tasks: on-the-fly data generators, deterministic given an Rng. Each task is one file in
// experiments/tasks/ that registers itself with PELAB_REGISTER_TASK; configs ask for it by name.
//
// Sequence tasks produce `BOS x SEP y EOS` sequences by default; the loss (and accuracy) counts only the
// predictions of y and EOS. SequenceFormat (format.hpp) changes which of the specials are there and
// whether EOS is scored. Language-model tasks predict every next character. Stream tasks (stream.hpp:
// MQAR, flip-flop, state tracking) score chosen positions of one sequence, each with a target of its own.
// All three meet in Batch's mask (training/batch.hpp): the loss, token accuracy and exact match count
// the targets where it is set, wherever they are.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "core/params/param_spec.hpp"
#include "core/params/registry.hpp"
#include "experiments/tasks/format.hpp"  // SequenceFormat
#include "training/batch.hpp"  // Batch: what a task produces

namespace pelab {

// Settings every task shares ([task] in the config); task-specific ones come from its own spec.
struct TaskCommon {
  std::size_t min_len = 1;     // problem sizes drawn uniformly from [min_len, train_len]
  std::size_t train_len = 16;  // sequence tasks: the problem size n (e.g. digits to copy); LM: context chars
  SequenceFormat format;       // sequence tasks only; a language model rejects anything but the default
};

// Chance level of a sequence task at problem size n: the expected token accuracy and exact match of a
// guesser that knows the format and, for each counted target, the set of tokens that can appear there
// over all examples of size n (its support), and guesses uniformly from that set, independently per
// target. Target j is then right with probability 1 / |support_j| whatever the data distribution, so
//     token_acc   = (1 / m) * sum_j 1 / |support_j|     (m counted targets per example)
//     exact_match = prod_j 1 / |support_j|
// A scored EOS has support {<EOS>} and counts as one always-right target. E.g. copy with 10 symbols:
// token_acc = (n / 10 + 1) / (n + 1) with a scored EOS, 1 / 10 without; exact_match = 10^-n.
struct Chance {
  double token_acc = 0, exact_match = 0;
};

// What a task reads besides its settings (char_lm: a text file), described so that a run records it at
// training time (RUN/corpus.json) and refuses to reinterpret a changed file later (experiments/run/trained_run.hpp).
struct DataRecord {
  std::string key;         // the setting that names it: "task.char_lm.path"
  std::string path;        // the file read (as found: relative paths may resolve in the source tree)
  std::uint64_t bytes = 0;
  std::string crc32c;      // of the whole file (training/checksum.hpp)
  std::string vocabulary;  // the symbols in id order, escaped as token_text writes them
  std::size_t symbols = 0;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::size_t vocab_size() const = 0;
  virtual bool is_language_model() const { return false; }
  // Sequence tasks: the chance level at problem size n (see Chance); language models: none.
  virtual std::optional<Chance> chance(std::size_t n) const { return std::nullopt; }
  // A batch of `batch` examples with problem sizes drawn from [min_len, max_len].
  virtual Batch sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const = 0;
  // Sequence length (tokens) of an example of problem size n: evaluation sizes position tables from it.
  virtual std::size_t sequence_length(std::size_t n) const = 0;
  // Held-out evaluation data at problem size n, deterministic in `seed` (LM: windows from the held-out
  // split; sequence tasks: fresh samples of exactly size n).
  virtual Batch eval_batch(std::uint64_t seed, std::size_t batch, std::size_t n) const {
    Rng rng(seed);
    return sample(rng, batch, n, n);
  }
  // Human-readable rendering of row b of a batch (for `pelab show-task` and logs).
  virtual std::string render(const Batch& batch, std::size_t b) const = 0;
  // How one token is written in render's notation ("<SEP>", "3", "a"; a byte for a language model).
  virtual std::string token_text(std::int32_t id) const { return "<" + std::to_string(id) + ">"; }
  // Input typed in the task's notation, as a one-row batch (`pelab predict --input`). Sequence tasks:
  // x ("3 1 4"; single-character names may run together: "314+27"), the task computing y; language
  // models: the text as tokens, each target the next character (the last one unknown: -1, mask 0).
  // Bad input throws Error naming the token and what is allowed.
  virtual Batch parse_input(const std::string& text) const {
    throw Error("this task does not read typed input");
  }
  // Why the task cannot lay its examples out in the blank output format (format.hpp: every example of a
  // size needs one x length), or nothing when it can.
  virtual std::optional<std::string> blank_unsupported() const { return std::nullopt; }
  // The data file the task was built from, when it reads one (see DataRecord).
  virtual std::optional<DataRecord> data_record() const { return std::nullopt; }
  // Its batches carry position ids of its own (Batch::positions, e.g. position coupling), to be kept by
  // [train] / [eval] positions = "task" or "task_offset"; other tasks fill 0..T-1.
  virtual bool supplies_positions() const { return false; }
  // Its batches carry Batch::digit_index (each digit's index within its number), for Abacus.
  virtual bool supplies_digit_index() const { return false; }
  // Two-operand tasks (addition, multiplication): held-out data with operand lengths (len_a, len_b),
  // for [eval] operand_grid; true when the task has them.
  virtual bool has_operands() const { return false; }
  // Deterministic in `seed` like eval_batch; Error naming what is allowed for lengths it cannot make.
  virtual Batch eval_batch_operands(std::uint64_t seed, std::size_t batch, std::size_t len_a, std::size_t len_b) const {
    throw Error("this task has no operands: [eval] operand_grid needs a two-operand task (addition)");
  }
  // Sequence length (tokens) of an example with those operand lengths.
  virtual std::size_t operand_sequence_length(std::size_t len_a, std::size_t len_b) const { return 0; }
};

struct TaskSpec {
  std::string name;
  std::string summary;      // one line for `pelab list`
  std::string format;       // vocabulary and sequence format, shown by `pelab show-task`
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Task>(const TaskCommon&, const Params&)> make;  // throws Error on bad settings
  // Parameters that shape only the data, not the vocabulary or the model (flip_flop.p_ignore,
  // passkey.depth): a trained run can be evaluated at other values, each a named evaluation
  // (`pelab eval RUN --set task.NAME.KEY=VALUE --name NAME`, experiments/eval/eval_named.hpp).
  std::vector<std::string> eval_params = {};
};

class TaskRegistry : public NamedRegistry<TaskSpec> {
 public:
  static TaskRegistry& instance();

 private:
  TaskRegistry() : NamedRegistry("task", "tasks") {}
};

// Builds a task. A language model given a non-default common.format throws TaskFormatError.
std::unique_ptr<Task> make_task(const std::string& name, const TaskCommon& common,
                                const std::map<std::string, Value>& given);

// A format key ([task] bos, eos, sep, prompt or output) set for a task it does not apply to.
struct TaskFormatError : Error {
  TaskFormatError(const std::string& key, const std::string& msg) : Error(msg), key(key) {}
  std::string key;  // "eos"
};

struct TaskRegistrar {
  explicit TaskRegistrar(TaskSpec spec) { TaskRegistry::instance().add(std::move(spec)); }
};

}  // namespace pelab

#define PELAB_REGISTER_TASK(ident, ...) \
  static const ::pelab::TaskRegistrar pelab_task_registrar_##ident(__VA_ARGS__)
