// Helpers of the task tests (test_tasks.cpp, test_task_formats.cpp): building a task with a format,
// and every format.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "experiments/tasks/sequence.hpp"

namespace pelab::test {

using TaskParams = std::map<std::string, Value>;

inline std::unique_ptr<Task> make_seq_task(const std::string& name, const TaskParams& p, std::size_t min_len,
                                           std::size_t train_len, const SequenceFormat& f) {
  TaskCommon c;
  c.min_len = min_len;
  c.train_len = train_len;
  c.format = f;
  return make_task(name, c, p);
}

inline const SequenceTask& as_seq(const Task& t) { return dynamic_cast<const SequenceTask&>(t); }

inline SequenceFormat fmt(bool bos, EosMode eos, bool sep, bool prompt) {
  SequenceFormat f;
  f.bos = bos, f.eos = eos, f.sep = sep, f.prompt = prompt;
  return f;
}

// All 24 formats: bos x eos x sep x prompt.
inline std::vector<SequenceFormat> all_formats() {
  std::vector<SequenceFormat> v;
  for (bool bos : {true, false})
    for (EosMode eos : {EosMode::scored, EosMode::unscored, EosMode::absent})
      for (bool sep : {true, false})
        for (bool prompt : {false, true}) v.push_back(fmt(bos, eos, sep, prompt));
  return v;
}

}  // namespace pelab::test
