#include "experiments/tasks/task.hpp"

namespace pelab {

TaskRegistry& TaskRegistry::instance() {
  static TaskRegistry r;  // function-local: safe from static-initialization order
  return r;
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
