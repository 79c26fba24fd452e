#include <algorithm>

#include "experiments/tasks/task.hpp"

namespace pelab {

TaskRegistry& TaskRegistry::instance() {
  static TaskRegistry r;  // function-local: safe from static-initialization order
  return r;
}

void TaskRegistry::add(TaskSpec spec) {
  for (const auto& s : specs_)
    if (s.name == spec.name) throw Error("task '" + spec.name + "' registered twice");
  specs_.push_back(std::move(spec));
}

std::vector<std::string> TaskRegistry::names() const {
  std::vector<std::string> n;
  for (const auto& s : specs_) n.push_back(s.name);
  std::sort(n.begin(), n.end());
  return n;
}

const TaskSpec& TaskRegistry::get(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return s;
  const auto known = names();
  std::string msg = "unknown task '" + name + "'";
  if (auto n = nearest(name, known)) msg += " (did you mean '" + *n + "'?)";
  msg += "; known tasks: ";
  for (std::size_t i = 0; i < known.size(); ++i) msg += (i ? ", " : "") + known[i];
  throw Error(msg);
}

std::unique_ptr<Task> make_task(const std::string& name, const TaskCommon& common,
                                const std::map<std::string, Value>& given) {
  const TaskSpec& spec = TaskRegistry::instance().get(name);
  if (common.min_len < 1 || common.min_len > common.train_len)
    throw Error("task '" + name + "': min_len = " + std::to_string(common.min_len) + " and train_len = " +
                std::to_string(common.train_len) + " must satisfy 1 <= min_len <= train_len");
  const Params params = resolve_params(spec.params, given, "task '" + name + "'");
  return spec.make(common, params);
}

}  // namespace pelab
