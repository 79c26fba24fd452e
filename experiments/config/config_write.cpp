// The config as TOML: every key (defaults filled in), in schema order. Two configs are the same
// experiment exactly when these texts are equal.
#include <map>
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
  os << kResolvedHeader;
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
      // A range is written as given, not as the lengths it expands to (lengths = [] beside it).
      const auto& r = cfg.eval.length_range;
      const std::vector<std::size_t> none, &ls = r.empty() ? cfg.eval.lengths : none;
      os << "lengths = [";
      for (std::size_t i = 0; i < ls.size(); ++i) os << (i ? ", " : "") << ls[i];
      os << "]\n";
      if (!r.empty()) os << "length_range = [" << r[0] << ", " << r[1] << ", " << r[2] << "]\n";
      if (const auto& g = cfg.eval.operand_grid; !g.empty())
        os << "operand_grid = [" << g[0] << ", " << g[1] << ", " << g[2] << "]\n";
    }
    for (const auto& f : s.fields) os << toml_key(f.spec.key) << " = " << format_value(f.get(cfg)) << "\n";
    if (const PluginGroup* g = find_group(s.name))
      for (const auto& [name, params] : tables_of(*g, cfg)) {
        // An encoding variant "rope.global" is the subtable [encoding.rope.global] (config.cpp reads it).
        const auto dot = s.name == "encoding" ? name.find('.') : std::string::npos;
        os << "\n[" << s.name << "." << toml_key(name.substr(0, dot));
        if (dot != std::string::npos) os << "." << toml_key(name.substr(dot + 1));
        os << "]\n";
        for (const auto& [k, v] : params) os << toml_key(k) << " = " << format_value(v) << "\n";
      }
  }
  if (!cfg.cell.empty()) write_cell(os, cfg.cell);
  return os.str();
}

bool result_neutral_key(const std::string& key) {
  static const char* const kNeutral[] = {"output.dir",       "cell.index",           "train.threads",
                                         "train.log_every",  "train.checkpoint_every", "train.keep_checkpoints",
                                         "probe.run",        "probe.samples"};
  for (const char* k : kNeutral)
    if (key == k) return true;
  return false;
}

namespace {

// "section.key" -> value text of a to_toml text (one key per line, [section] headers, # comments).
std::map<std::string, std::string> toml_values(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    out[section + "." + line.substr(0, eq)] = line.substr(eq + 3);
  }
  return out;
}

}  // namespace

std::vector<std::string> setting_differences(const std::string& recorded, const std::string& wanted) {
  const auto a = toml_values(recorded), b = toml_values(wanted);
  std::map<std::string, std::pair<std::string, std::string>> diff;
  for (const auto& [k, v] : a)
    if (auto it = b.find(k); it == b.end() || it->second != v) diff[k] = {v, it == b.end() ? "(absent)" : it->second};
  for (const auto& [k, v] : b)
    if (!a.count(k)) diff[k] = {"(absent)", v};
  std::vector<std::string> out;
  for (const auto& [k, v] : diff)
    if (!result_neutral_key(k)) out.push_back(k + " = " + v.first + " (recorded), " + v.second + " (now)");
  return out;
}

}  // namespace pelab
