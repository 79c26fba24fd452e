// The optimizer registry: each optimizer (training/optimizers/, one file each) registers its name,
// summary and [train.<name>] parameters with PELAB_REGISTER_OPTIMIZER; configs, `pelab list` and the
// trainer ask it by name, as for encodings and tasks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/params/param_spec.hpp"
#include "core/params/registry.hpp"
#include "training/optimizer.hpp"

namespace pelab {

// What every optimizer takes from [train] itself.
struct OptimizerCommon {
  double weight_decay = 0.01;
  ParamGroupRule rule;
};

struct OptimizerSpec {
  std::string name;
  std::string summary;             // one line, shown by `pelab list`
  std::vector<ParamSpec> params;   // its [train.<name>] keys
  std::function<std::unique_ptr<Optimizer>(std::vector<Parameter>, const Params&, const OptimizerCommon&)> make;
  // State buffers it keeps per parameter, each the parameter's size (AdamW's m and v: 2), for the
  // memory estimate (experiments/run/resources.cpp).
  std::function<std::size_t(const Params&)> state_buffers;
};

class OptimizerRegistry : public NamedRegistry<OptimizerSpec> {
 public:
  static OptimizerRegistry& instance();

 private:
  OptimizerRegistry() : NamedRegistry("optimizer", "optimizers") {}
};

// Resolves `given` (the [train.<name>] keys set) against the optimizer's spec and builds it; throws
// Error on an unknown name (listing the known ones) or a bad parameter.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const std::map<std::string, Value>& given,
                                          const OptimizerCommon& common, std::vector<Parameter> params);

struct OptimizerRegistrar {
  explicit OptimizerRegistrar(OptimizerSpec spec) { OptimizerRegistry::instance().add(std::move(spec)); }
};

}  // namespace pelab

#define PELAB_REGISTER_OPTIMIZER(ident, ...) \
  static const ::pelab::OptimizerRegistrar pelab_optimizer_registrar_##ident(__VA_ARGS__)
