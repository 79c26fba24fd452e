#include "layers/positional/auto_size.hpp"

#include <vector>

namespace pelab {

namespace {
struct Rule {
  std::string key;
  AutoSizeRule resolve;
};
std::map<std::string, std::vector<Rule>>& rules() {
  static std::map<std::string, std::vector<Rule>> r;
  return r;
}
}  // namespace

void register_auto_size(const std::string& encoding, const std::string& key, AutoSizeRule rule) {
  rules()[encoding].push_back({key, std::move(rule)});
}

std::map<std::string, Value> resolve_auto_sizes(const std::string& encoding, std::map<std::string, Value> given,
                                                const ModelDims& dims) {
  const auto it = rules().find(encoding);
  if (it == rules().end()) return given;
  const Params p = resolve_encoding_params(encoding, given, dims);
  for (const Rule& r : it->second) {
    if (p.get_int(r.key) != 0) continue;
    const std::optional<std::int64_t> size = r.resolve(p, dims);
    if (!size) continue;
    std::map<std::string, Value> with = given;
    with[r.key] = Value(*size);
    try {
      resolve_encoding_params(encoding, with, dims);
      given = std::move(with);
    } catch (const Error&) {  // out of the declared range: keep 0
    }
  }
  return given;
}

}  // namespace pelab
