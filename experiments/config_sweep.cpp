// Sweep expansion: the cartesian product of the [sweep] grid, each cell a validated config.
#include <cctype>

#include "experiments/config_schema.hpp"

namespace pelab {
namespace config_detail {
namespace {

// Only [A-Za-z0-9._=-] and single '_' survive, so "__" can separate the parts unambiguously.
std::string dir_safe(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    const bool ok = std::isalnum(c) || c == '.' || c == '_' || c == '=' || c == '-';
    if (c == '_' && !out.empty() && out.back() == '_') continue;
    out += ok && c < 0x80 ? char(c) : '-';
  }
  return out;
}

}  // namespace

std::vector<SweepCell> expand_sweep_cached(const ExperimentConfig& cfg, TaskCache& cache) {
  if (cfg.sweep.empty() && cfg.sweep_order.empty()) {
    SweepCell cell{cfg, {}, "", ""};
    validate_config(cell.config, cache);
    return {cell};
  }
  const std::string where = location(cfg, "sweep");
  if (cfg.sweep_order.size() != cfg.sweep.size())
    fail(where, "[sweep] sweep_order and sweep list different keys");
  std::vector<Setting> settings;
  std::vector<const std::vector<Value>*> values;
  std::size_t total = 1;
  for (const auto& k : cfg.sweep_order) {
    const auto it = cfg.sweep.find(k);
    if (it == cfg.sweep.end()) fail(where, "[sweep] sweep_order lists '" + k + "', which the grid lacks");
    const std::string w = location(cfg, "sweep." + k);
    settings.push_back(find_setting(k, w, "[sweep] key '" + k + "' names no setting: "));
    if (it->second.empty()) fail(w, "[sweep] key '" + k + "' has no values; expected a non-empty array");
    values.push_back(&it->second);
    total *= it->second.size();
    if (total > 100000) fail(where, "[sweep] the grid has more than 100000 cells");
  }

  std::vector<SweepCell> cells;
  std::map<std::string, std::string> dirs;  // dir name -> label, to catch collisions
  std::vector<std::size_t> idx(settings.size(), 0);
  for (std::size_t c = 0; c < total; ++c) {
    SweepCell cell{cfg, {}, "", ""};
    cell.config.sweep.clear();
    cell.config.sweep_order.clear();
    for (std::size_t i = 0; i < settings.size(); ++i) {
      const std::string& k = cfg.sweep_order[i];
      const Value& v = (*values[i])[idx[i]];
      cell.label += (i ? "," : "") + k + "=" + plain_value(v);
      cell.dir_name += (i ? "__" : "") + dir_safe(k + "=" + plain_value(v));
    }
    try {
      for (std::size_t i = 0; i < settings.size(); ++i) {
        const std::string& k = cfg.sweep_order[i];
        const std::string w = location(cfg, "sweep." + k);
        apply_setting(cell.config, settings[i], (*values[i])[idx[i]], w, "[sweep]", k);
        cell.config.locations[k] = w;  // errors about a swept key point at the [sweep] line
        cell.assignment.emplace_back(k, get_setting(cell.config, settings[i]));
      }
      validate_config(cell.config, cache);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(e.what()) + " (sweep cell " + cell.label + ")");
    }
    auto [it, fresh] = dirs.emplace(cell.dir_name, cell.label);
    if (!fresh)
      fail(where, "[sweep] cells " + it->second + " and " + cell.label + " get the same directory name " +
                      cell.dir_name);
    cells.push_back(std::move(cell));
    for (std::size_t i = settings.size(); i-- > 0;) {  // the last key varies fastest
      if (++idx[i] < values[i]->size()) break;
      idx[i] = 0;
    }
  }
  return cells;
}

}  // namespace config_detail

std::vector<SweepCell> expand_sweep(const ExperimentConfig& cfg) {
  config_detail::TaskCache cache;
  return config_detail::expand_sweep_cached(cfg, cache);
}

}  // namespace pelab
