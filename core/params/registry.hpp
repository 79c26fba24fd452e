// A registry of named specs (encodings, tasks): each plugin file adds its spec from a static
// initializer; lookups by name explain unknown names with the nearest known one and the full list.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "core/params/param_spec.hpp"

namespace pelab {

template <class Spec>
class NamedRegistry {
 public:
  // `noun` names one entry in messages ("positional encoding"), `plural` the list ("encodings").
  NamedRegistry(std::string noun, std::string plural) : noun_(std::move(noun)), plural_(std::move(plural)) {}

  void add(Spec spec) {
    for (const auto& s : specs_)
      if (s.name == spec.name) throw Error(noun_ + " '" + spec.name + "' registered twice");
    specs_.push_back(std::move(spec));
  }

  // Drops `name` (a test's own entry, registered for its duration); references to it dangle.
  void remove(const std::string& name) {
    specs_.erase(std::remove_if(specs_.begin(), specs_.end(), [&](const Spec& s) { return s.name == name; }),
                 specs_.end());
  }

  std::vector<std::string> names() const {  // sorted
    std::vector<std::string> n;
    for (const auto& s : specs_) n.push_back(s.name);
    std::sort(n.begin(), n.end());
    return n;
  }

  const Spec& get(const std::string& name) const {  // Error: did you mean, and the known names
    for (const auto& s : specs_)
      if (s.name == name) return s;
    const auto known = names();
    std::string msg = "unknown " + noun_ + " '" + name + "'";
    if (auto n = nearest(name, known)) msg += " (did you mean '" + *n + "'?)";
    msg += "; known " + plural_ + ": ";
    for (std::size_t i = 0; i < known.size(); ++i) msg += (i ? ", " : "") + known[i];
    throw Error(msg);
  }

 private:
  std::string noun_, plural_;
  std::vector<Spec> specs_;
};

}  // namespace pelab
