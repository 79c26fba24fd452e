// The config as TOML: every key (defaults filled in), in schema order. Two configs are the same
// experiment exactly when these texts are equal.
#include <sstream>

#include "experiments/config/config_schema.hpp"

namespace pelab {

using namespace config_detail;

namespace {

void write_cell(std::ostream& os, const CellInfo& cell) {
  os << "\n[cell]\n";
  if (cell.index) os << "index = " << *cell.index << "\n";
  os << "label = " << format_value(Value(cell.label)) << "\n";
  os << "\n[cell.assignment]\n";
  for (const auto& [k, v] : cell.assignment) os << toml_key(k) << " = " << format_value(v) << "\n";
}

}  // namespace

std::string to_toml(const ExperimentConfig& cfg) {
  std::ostringstream os;
  // No file name or date in here: the text depends on the settings only, so runs can compare it.
  os << "# Resolved configuration: every setting, defaults included.\n";
  for (const auto& s : schema()) {
    if (s.name == "output" && !cfg.sweep_order.empty()) {
      os << "\n[sweep]\n";
      for (const auto& k : cfg.sweep_order) {
        os << toml_key(k) << " = [";
        const auto it = cfg.sweep.find(k);
        if (it != cfg.sweep.end())
          for (std::size_t i = 0; i < it->second.size(); ++i) os << (i ? ", " : "") << format_value(it->second[i]);
        os << "]\n";
      }
    }
    os << "\n[" << s.name << "]\n";
    if (s.name == "eval") {
      os << "lengths = [";
      for (std::size_t i = 0; i < cfg.eval.lengths.size(); ++i) os << (i ? ", " : "") << cfg.eval.lengths[i];
      os << "]\n";
    }
    for (const auto& f : s.fields) os << toml_key(f.spec.key) << " = " << format_value(f.get(cfg)) << "\n";
    if (const PluginGroup* g = find_group(s.name))
      for (const auto& [name, params] : tables_of(*g, cfg)) {
        os << "\n[" << s.name << "." << toml_key(name) << "]\n";
        for (const auto& [k, v] : params) os << toml_key(k) << " = " << format_value(v) << "\n";
      }
  }
  if (!cfg.cell.empty()) write_cell(os, cfg.cell);
  return os.str();
}

}  // namespace pelab
