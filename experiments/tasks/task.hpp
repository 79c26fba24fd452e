// Tasks: on-the-fly data generators, deterministic given an Rng. Each task is one file in
// experiments/tasks/ that registers itself with PELAB_REGISTER_TASK; configs ask for it by name.
//
// Sequence tasks produce `BOS x SEP y EOS` sequences; the loss (and accuracy) counts only the
// predictions of y and EOS. Language-model tasks predict every next character.
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
#include "training/batch.hpp"  // Batch: what a task produces

namespace pelab {

// Settings every task shares ([task] in the config); task-specific ones come from its own spec.
struct TaskCommon {
  std::size_t min_len = 1;     // problem sizes drawn uniformly from [min_len, train_len]
  std::size_t train_len = 16;  // sequence tasks: the problem size n (e.g. digits to copy); LM: context chars
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::size_t vocab_size() const = 0;
  virtual bool is_language_model() const { return false; }
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
};

struct TaskSpec {
  std::string name;
  std::string summary;      // one line for `pelab list`
  std::string format;       // vocabulary and sequence format, shown by `pelab show-task`
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Task>(const TaskCommon&, const Params&)> make;  // throws Error on bad settings
};

class TaskRegistry : public NamedRegistry<TaskSpec> {
 public:
  static TaskRegistry& instance();

 private:
  TaskRegistry() : NamedRegistry("task", "tasks") {}
};

std::unique_ptr<Task> make_task(const std::string& name, const TaskCommon& common,
                                const std::map<std::string, Value>& given);

struct TaskRegistrar {
  explicit TaskRegistrar(TaskSpec spec) { TaskRegistry::instance().add(std::move(spec)); }
};

}  // namespace pelab

#define PELAB_REGISTER_TASK(ident, ...) \
  static const ::pelab::TaskRegistrar pelab_task_registrar_##ident(__VA_ARGS__)
