#include "layers/module.hpp"

#include <cmath>

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

Tensor Module::add_parameter(const std::string& name, const Shape& shape, ParamKind kind, std::size_t fan_in,
                             bool residual) {
  Tensor t = Tensor::zeros(shape, true);
  params_.push_back({name, t, kind, fan_in, residual, nullptr});
  return t;
}

Tensor Module::add_parameter(const std::string& name, const Shape& shape, ParamKind kind, Initializer init) {
  Tensor t = Tensor::zeros(shape, true);
  params_.push_back({name, t, kind, 0, false, std::move(init)});
  return t;
}

void Module::collect(const std::string& prefix, std::vector<Parameter>& out) const {
  for (const auto& p : params_) out.push_back({prefix + p.name, p.tensor, p.kind, p.fan_in, p.residual, p.init});
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

const char* init_scheme_name(InitScheme s) {
  switch (s) {
    case InitScheme::gpt2: return "gpt2";
    case InitScheme::pytorch: return "pytorch";
    case InitScheme::scaled: return "scaled";
  }
  return "?";
}

InitScheme parse_init_scheme(const std::string& name) {
  for (InitScheme s : {InitScheme::gpt2, InitScheme::pytorch, InitScheme::scaled})
    if (name == init_scheme_name(s)) return s;
  throw Error("unknown init scheme '" + name + "'; allowed: gpt2, pytorch, scaled");
}

namespace {

void fill_normal(real* d, std::size_t n, Rng& rng, double std) {
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<real>(rng.normal() * std);
}

void fill_uniform(real* d, std::size_t n, Rng& rng, double bound) {  // U(-bound, bound)
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<real>((2 * rng.uniform() - 1) * bound);
}

// PyTorch's fan-in: the Linear's input width, else (a weight of another module) the product of the dims
// after the first (torch.nn.init._calculate_fan_in_and_fan_out).
std::size_t fan_in_of(const Parameter& p) {
  if (p.fan_in) return p.fan_in;
  const Shape& s = p.tensor.shape();
  std::size_t f = 1;
  for (std::size_t i = 1; i < s.size(); ++i) f *= s[i];
  if (p.kind == ParamKind::bias || s.size() < 2 || f == 0)
    throw Error("init 'pytorch': parameter '" + p.name + "' (" + kind_name(p.kind) + ", shape " + shape_str(s) +
                ") has no fan-in; register it with add_parameter(..., fan_in)");
  return f;
}

}  // namespace

void init_parameters(const Module& m, Rng& rng, const InitOptions& o) {
  if (o.scheme == InitScheme::scaled && o.n_layers == 0) throw Error("init 'scaled': n_layers is 0");
  for (auto& p : m.parameters()) {
    if (o.between_parameters) o.between_parameters();
    if (p.init) {
      p.init(p.tensor.mutable_value(), rng);
      continue;
    }
    real* d = p.tensor.mutable_data();
    const std::size_t n = p.tensor.numel();
    switch (p.kind) {
      case ParamKind::weight:
        if (o.scheme == InitScheme::pytorch) fill_uniform(d, n, rng, 1 / std::sqrt(double(fan_in_of(p))));
        else if (o.scheme == InitScheme::scaled && p.residual) fill_normal(d, n, rng, o.std / std::sqrt(2.0 * double(o.n_layers)));
        else fill_normal(d, n, rng, o.std);
        break;
      case ParamKind::embedding:
        fill_normal(d, n, rng, o.scheme == InitScheme::pytorch ? 1.0 : o.emb_std);
        break;
      case ParamKind::bias:
        if (o.scheme == InitScheme::pytorch) fill_uniform(d, n, rng, 1 / std::sqrt(double(fan_in_of(p))));
        else std::fill(d, d + n, real(0));
        break;
      case ParamKind::norm_bias:
        std::fill(d, d + n, real(0));
        break;
      case ParamKind::norm_gain:
        std::fill(d, d + n, real(1));
        break;
    }
  }
}

void init_parameters(const Module& m, Rng& rng, double init_std, double emb_init_std) {
  InitOptions o;
  o.std = init_std;
  o.emb_std = emb_init_std;
  init_parameters(m, rng, o);
}

}  // namespace pelab
