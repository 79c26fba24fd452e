#include "training/optimizer.hpp"

#include <cmath>
#include <set>

#include "core/tape.hpp"

namespace pelab {

bool decays(const Parameter& p, const ParamGroupRule& rule) {
  switch (p.kind) {
    case ParamKind::weight: return true;
    case ParamKind::embedding: return rule.decay_embeddings;
    case ParamKind::bias:
    case ParamKind::norm_gain:
    case ParamKind::norm_bias: return rule.decay_norm_and_bias;
  }
  return false;
}

namespace optimizer_detail {

std::vector<bool> decay_mask(const std::vector<Parameter>& params, const ParamGroupRule& rule) {
  std::vector<bool> d;
  d.reserve(params.size());
  for (const auto& p : params) d.push_back(decays(p, rule));
  return d;
}

void check_range(double v, double lo, double hi, bool hi_open, const std::string& what) {
  if (!std::isfinite(v) || v < lo || (hi_open ? v >= hi : v > hi))
    throw Error("optimizer: " + what + " = " + std::to_string(v) + " is out of range; allowed: [" +
                std::to_string(lo) + ", " + std::to_string(hi) + (hi_open ? ")" : "]"));
}

}  // namespace optimizer_detail

namespace {

std::uint64_t parse_count(const std::string& s, const std::string& key) {
  bool ok = !s.empty() && s.size() <= 20;
  for (char c : s) ok = ok && c >= '0' && c <= '9';
  if (ok) {
    try {
      return std::stoull(s);
    } catch (const std::exception&) {
    }
  }
  throw Error("optimizer state: metadata '" + key + "' = '" + s + "' is not a non-negative integer");
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

}  // namespace

// ---------------------------------------------------------------- Optimizer

Optimizer::Optimizer(std::vector<Parameter> params) : params_(std::move(params)), t_(params_.size(), 0) {
  std::set<std::string> seen;
  std::set<const TensorImpl*> tensors;  // a shared tensor under two names would be updated twice
  for (const auto& p : params_) {
    if (!p.tensor.defined()) throw Error("optimizer: parameter '" + p.name + "' has no tensor");
    if (!seen.insert(p.name).second || !tensors.insert(p.tensor.impl()).second)
      throw Error("optimizer: parameter '" + p.name + "' listed twice");
  }
}

void Optimizer::add_buffers(const std::string& name) {
  buffer_names_.push_back(name);
  std::vector<Array> bufs;
  bufs.reserve(params_.size());
  for (const auto& p : params_) bufs.push_back(Array(xt::zeros<real>(p.tensor.shape())));
  buffers_.push_back(std::move(bufs));
}

void Optimizer::zero_grad() {
  for (auto& p : params_) p.tensor.zero_grad();
}

void Optimizer::state_to(SafeTensors& st) const {
  const std::string k = kind();
  st.metadata["optimizer"] = k;
  st.metadata[k + ".steps"] = std::to_string(steps_);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    st.metadata[k + ".t." + params_[i].name] = std::to_string(t_[i]);
    for (std::size_t b = 0; b < buffer_names_.size(); ++b)
      st.floats[k + "." + buffer_names_[b] + "." + params_[i].name] = buffers_[b][i];
  }
}

void Optimizer::state_from(const SafeTensors& st) {
  const std::string k = kind();
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = st.metadata.find(key);
    if (it == st.metadata.end()) throw Error("optimizer state: missing metadata '" + key + "'");
    return it->second;
  };
  if (meta("optimizer") != k)
    throw Error("optimizer state: it was saved by optimizer '" + meta("optimizer") + "' but this optimizer is '" + k +
                "'");
  const std::size_t steps = parse_count(meta(k + ".steps"), k + ".steps");

  // Validate everything first so a bad file leaves the optimizer untouched.
  std::set<std::string> expected;
  std::vector<std::uint64_t> t(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const std::string tkey = k + ".t." + params_[i].name;
    t[i] = parse_count(meta(tkey), tkey);
    for (const auto& b : buffer_names_) {
      const std::string key = k + "." + b + "." + params_[i].name;
      expected.insert(key);
      auto it = st.floats.find(key);
      if (it == st.floats.end()) throw Error("optimizer state: missing tensor '" + key + "'");
      if (it->second.shape() != params_[i].tensor.shape())
        throw Error("optimizer state: tensor '" + key + "' has shape " + shape_str(it->second.shape()) +
                    " but parameter '" + params_[i].name + "' has shape " + shape_str(params_[i].tensor.shape()));
    }
  }
  for (const auto& [key, a] : st.floats)
    if (!expected.count(key))
      throw Error("optimizer state: unexpected tensor '" + key + "' (shape " + shape_str(a.shape()) +
                  "): no such parameter or buffer in this '" + k + "' optimizer");
  for (const auto& [key, a] : st.ints)
    throw Error("optimizer state: unexpected integer tensor '" + key + "' (shape " + shape_str(a.shape()) + ")");
  const std::string tprefix = k + ".t.";
  std::set<std::string> names;
  for (const auto& p : params_) names.insert(p.name);
  for (const auto& [key, v] : st.metadata)
    if (starts_with(key, tprefix) && !names.count(key.substr(tprefix.size())))
      throw Error("optimizer state: unexpected metadata '" + key + "': no such parameter");

  for (std::size_t i = 0; i < params_.size(); ++i)
    for (std::size_t b = 0; b < buffer_names_.size(); ++b) {
      const Array& src = st.floats.at(k + "." + buffer_names_[b] + "." + params_[i].name);
      std::copy(src.data(), src.data() + src.size(), buffers_[b][i].data());  // keeps the allocation
    }
  t_ = std::move(t);
  steps_ = steps;
}

// ---------------------------------------------------------------- clipping

double clip_grad_norm(const std::vector<Parameter>& params, double max_norm) {
  double sq = 0;
  for (const auto& p : params) {
    if (!p.tensor.has_grad()) continue;
    const real* g = p.tensor.grad().data();
    const std::size_t n = p.tensor.numel();
    for (std::size_t j = 0; j < n; ++j) sq += double(g[j]) * double(g[j]);
  }
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && std::isfinite(norm) && norm > max_norm) {
    const real coef = real(max_norm / (norm + 1e-6));
    for (const auto& p : params) {
      if (!p.tensor.has_grad()) continue;
      Array& g = grad_buffer(*p.tensor.impl());
      real* d = g.data();
      for (std::size_t j = 0; j < g.size(); ++j) d[j] *= coef;
    }
  }
  return norm;
}

bool all_finite_grads(const std::vector<Parameter>& params) {
  for (const auto& p : params) {
    if (!p.tensor.has_grad()) continue;
    const real* g = p.tensor.grad().data();
    const std::size_t n = p.tensor.numel();
    for (std::size_t j = 0; j < n; ++j)
      if (!std::isfinite(g[j])) return false;
  }
  return true;
}

}  // namespace pelab
