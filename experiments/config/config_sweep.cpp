// Sweep expansion: the cartesian product of the [sweep] grid, each cell a resolved RunSpec.
#include <algorithm>
#include <cctype>

#include "experiments/config/config_schema.hpp"

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

bool listed(const std::vector<std::string>& keys, const std::string& k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

// [protocol] select names keys of the grid (or, in a cell's file, of its assignment), never the seed: the
// selection aggregates over seeds.
void check_selected_keys(const ExperimentConfig& cfg) {
  const std::vector<std::string> keys = selected_keys(cfg);
  if (keys.empty()) return;
  const std::string w = location(cfg, "protocol.select");
  std::vector<std::string> swept = cfg.sweep_order;
  for (const auto& [k, v] : cfg.cell.assignment) swept.push_back(k);
  if (swept.empty())
    fail(w, "[protocol] select = \"" + cfg.protocol.select + "\" chooses among the values of swept keys, but the "
            "config has no [sweep] grid; add the grid (e.g. \"train.lr\" = [3e-4, 1e-3, 3e-3]) or remove select");
  for (const auto& k : keys) {
    if (k == "train.seed")
      fail(w, "[protocol] select names train.seed: the selection aggregates over seeds; select the other keys");
    if (!listed(swept, k)) {
      std::string grid;
      for (const auto& s : swept) grid += (grid.empty() ? "" : ", ") + s;
      fail(w, "[protocol] select names '" + k + "', which the [sweep] grid does not sweep; swept: " + grid);
    }
  }
}

}  // namespace

std::vector<RunSpec> expand_sweep_cached(const ExperimentConfig& cfg, TaskCache& cache) {
  check_selected_keys(cfg);
  if (cfg.sweep.empty() && cfg.sweep_order.empty()) return {validate_config(cfg, cache)};
  const std::string where = location(cfg, "sweep");
  if (!cfg.cell.empty())
    fail(location(cfg, "cell"), "[cell] describes one cell of a grid, so the config cannot have a [sweep] grid too");
  if (cfg.sweep_order.size() != cfg.sweep.size())
    fail(where, "[sweep] sweep_order and sweep list different keys");
  // A swept key also given by --set: the cell's value would silently win over the command line.
  for (const auto& k : cfg.sweep_order) {
    auto it = cfg.locations.find(k);
    if (it == cfg.locations.end() || it->second.compare(0, 6, "--set ") != 0) continue;
    const auto sv = cfg.sweep.find(k);
    if (sv == cfg.sweep.end()) continue;
    std::string listed;
    for (const Value& v : sv->second) listed += (listed.empty() ? "" : ", ") + format_value(v);
    const Value given = get_setting(cfg, find_setting(k, it->second, ""));
    fail(it->second, "the [sweep] grid (" + location(cfg, "sweep." + k) + ") sets " + k + " in every cell, to one of " +
                         listed + ", so " + format_value(given) + " would be replaced without effect; to run " +
                         format_value(given) + " in the grid, narrow it instead: --set 'sweep." + k + "=[" +
                         format_value(given) + "]' (or drop this --set)");
  }
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

  std::vector<RunSpec> cells;
  std::map<std::string, std::string> dirs;  // dir name -> label, to catch collisions
  std::vector<std::size_t> idx(settings.size(), 0);
  for (std::size_t c = 0; c < total; ++c) {
    ExperimentConfig cell = cfg;
    cell.sweep.clear();
    cell.sweep_order.clear();
    cell.cell.index = c;
    std::string dir_name;
    for (std::size_t i = 0; i < settings.size(); ++i) {
      const std::string& k = cfg.sweep_order[i];
      const Value& v = (*values[i])[idx[i]];
      cell.cell.label += (i ? "," : "") + k + "=" + label_text(v);
      dir_name += (i ? "__" : "") + dir_safe(k + "=" + label_text(v));
    }
    const std::string label = cell.cell.label;
    RunSpec spec;
    try {
      for (std::size_t i = 0; i < settings.size(); ++i) {
        const std::string& k = cfg.sweep_order[i];
        const std::string w = location(cfg, "sweep." + k);
        apply_setting(cell, settings[i], (*values[i])[idx[i]], w, "[sweep]", k);
        cell.locations[k] = w;  // errors about a swept key point at the [sweep] line
        cell.cell.assignment.emplace_back(k, get_setting(cell, settings[i]));
      }
      spec = validate_config(std::move(cell), cache);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(e.what()) + " (sweep cell " + label + ")");
    }
    spec.dir_name = dir_name;
    auto [it, fresh] = dirs.emplace(dir_name, label);
    if (!fresh)
      fail(where, "[sweep] cells " + it->second + " and " + label + " get the same directory name " + dir_name);
    cells.push_back(std::move(spec));
    for (std::size_t i = settings.size(); i-- > 0;) {  // the last key varies fastest
      if (++idx[i] < values[i]->size()) break;
      idx[i] = 0;
    }
  }
  return cells;
}

}  // namespace config_detail

std::vector<std::string> selected_keys(const ExperimentConfig& cfg) {
  std::vector<std::string> keys;
  std::string k;
  for (const char ch : cfg.protocol.select + ",") {
    if (ch != ',') {
      if (ch != ' ') k += ch;
      continue;
    }
    if (!k.empty() && !config_detail::listed(keys, k)) keys.push_back(k);
    k.clear();
  }
  return keys;
}

std::vector<RunSpec> expand_sweep(const ExperimentConfig& cfg) {
  config_detail::TaskCache cache;
  return config_detail::expand_sweep_cached(cfg, cache);
}

}  // namespace pelab
