#include "layers/module.hpp"

#include "core/params/param_spec.hpp"

namespace pelab {

const char* kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::weight: return "weight";
    case ParamKind::embedding: return "embedding";
    case ParamKind::bias: return "bias";
    case ParamKind::norm_gain: return "norm_gain";
    case ParamKind::norm_bias: return "norm_bias";
  }
  return "?";
}

Tensor Module::add_parameter(const std::string& name, const Shape& shape, ParamKind kind, Initializer init) {
  Tensor t = Tensor::zeros(shape, true);
  params_.push_back({name, t, kind, std::move(init)});
  return t;
}

void Module::collect(const std::string& prefix, std::vector<Parameter>& out) const {
  for (const auto& p : params_) out.push_back({prefix + p.name, p.tensor, p.kind, p.init});
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

std::vector<Parameter> Module::parameters() const {
  std::vector<Parameter> out;
  collect("", out);
  return out;
}

std::size_t Module::num_parameters() const {
  std::size_t n = 0;
  for (const auto& p : parameters()) n += p.tensor.numel();
  return n;
}

Tensor Module::parameter(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& p : parameters()) {
    if (p.name == name) return p.tensor;
    names.push_back(p.name);
  }
  std::string msg = "no parameter named '" + name + "'";
  if (auto n = nearest(name, names)) msg += " (did you mean '" + *n + "'?)";
  throw Error(msg);
}

void Module::set_training(bool on) {
  training_ = on;
  for (auto& c : children_) c.second->set_training(on);
}

void Module::zero_grad() {
  for (auto& p : parameters()) p.tensor.zero_grad();
}

void init_parameters(const Module& m, Rng& rng, double init_std, double emb_init_std) {
  for (auto& p : m.parameters()) {
    if (p.init) {
      p.init(p.tensor.mutable_value(), rng);
      continue;
    }
    real* d = p.tensor.mutable_data();
    const std::size_t n = p.tensor.numel();
    switch (p.kind) {
      case ParamKind::weight:
        for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<real>(rng.normal() * init_std);
        break;
      case ParamKind::embedding:
        for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<real>(rng.normal() * emb_init_std);
        break;
      case ParamKind::bias:
      case ParamKind::norm_bias:
        std::fill(d, d + n, real(0));
        break;
      case ParamKind::norm_gain:
        std::fill(d, d + n, real(1));
        break;
    }
  }
}

}  // namespace pelab
