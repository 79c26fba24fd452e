#include "training/optimizer_registry.hpp"

namespace pelab {

OptimizerRegistry& OptimizerRegistry::instance() {
  static OptimizerRegistry r;
  return r;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const std::map<std::string, Value>& given,
                                          const OptimizerCommon& common, std::vector<Parameter> params) {
  const OptimizerSpec& spec = OptimizerRegistry::instance().get(name);
  return spec.make(std::move(params), resolve_params(spec.params, given, "optimizer '" + name + "'"), common);
}

}  // namespace pelab
