#include "experiments/tasks/task.hpp"

namespace pelab {

TaskRegistry& TaskRegistry::instance() {
  static TaskRegistry r;  // function-local: safe from static-initialization order
  return r;
}

namespace {

// The first format key that differs from the default, for the language-model message.
std::string first_changed_key(const SequenceFormat& f) {
  const SequenceFormat d;
  if (f.output != d.output) return "output";
  if (f.bos != d.bos) return "bos";
  if (f.eos != d.eos) return "eos";
  if (f.sep != d.sep) return "sep";
  return "prompt";
}

}  // namespace

std::unique_ptr<Task> make_task(const std::string& name, const TaskCommon& common,
                                const std::map<std::string, Value>& given) {
  const TaskSpec& spec = TaskRegistry::instance().get(name);
  if (common.min_len < 1 || common.min_len > common.train_len)
    throw Error("task '" + name + "': min_len = " + std::to_string(common.min_len) + " and train_len = " +
                std::to_string(common.train_len) + " must satisfy 1 <= min_len <= train_len");
  const Params params = resolve_params(spec.params, given, "task '" + name + "'");
  auto task = spec.make(common, params);
  if (task->is_language_model() && common.format != SequenceFormat{}) {
    const std::string key = first_changed_key(common.format);
    throw TaskFormatError(key, "[task] key '" + key + "' (" + describe(common.format) + ") sets the format of a "
                               "sequence task, but task '" + name + "' is a language model: it predicts every "
                               "next character, with no BOS, prompt, separator, EOS or blank answer. Leave bos, eos, "
                               "sep, prompt and output at their defaults (true, \"scored\", true, false, "
                               "\"teacher_forced\") or remove them");
  }
  if (common.format.blank()) {
    if (common.format.eos != EosMode::absent)
      throw TaskFormatError("eos", "[task] eos = \"" + std::string(eos_mode_name(common.format.eos)) +
                                       "\" with output = \"blank\": the blank format predicts y at |y| blanks, "
                                       "with no <EOS> to read or predict; expected eos = \"absent\" (its default "
                                       "with output = \"blank\"; remove the key)");
    if (auto why = task->blank_unsupported())
      throw TaskFormatError("output", "[task] output = \"blank\" is not possible for task '" + name + "': " + *why +
                                          "; expected output = \"teacher_forced\", or task settings whose x has one "
                                          "length per problem size");
  }
  return task;
}

}  // namespace pelab
