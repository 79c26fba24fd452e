// Reading a config: TOML text -> ExperimentConfig, remembering where every key came from so that
// each error points at its line, then validating and resolving every run it defines. Overrides
// ("--set section.key=value") are applied to the TOML tree before reading, so they get exactly the
// same checks as the file.
#include "experiments/config/config.hpp"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <toml++/toml.h>

#include "experiments/config/config_schema.hpp"
#include "layers/positional/variant.hpp"

namespace pelab {
namespace {

using namespace config_detail;

std::optional<Value> scalar_of(const toml::node& n) {
  if (auto v = n.as_boolean()) return Value(v->get());
  if (auto v = n.as_integer()) return Value(static_cast<std::int64_t>(v->get()));
  if (auto v = n.as_floating_point()) return Value(v->get());
  if (auto v = n.as_string()) return Value(v->get());
  return std::nullopt;
}

std::string node_text(const toml::node& n) {
  if (auto v = scalar_of(n)) return format_value(*v);
  std::ostringstream os;
  n.visit([&](const auto& x) { os << x; });
  std::string s = os.str();
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

struct Entry {
  std::string key;
  const toml::node* node;
  std::size_t line;
};

class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  ExperimentConfig read(const std::string& text, const std::vector<std::string>& overrides) {
    try {
      root_ = toml::parse(text, name_);
    } catch (const toml::parse_error& e) {
      const auto& b = e.source().begin;
      throw ConfigError(name_ + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) +
                        ": TOML syntax error: " + std::string(e.description()));
    }
    for (const auto& o : overrides) apply_override(o);
    cfg_.source = name_;
    for (const auto& e : ordered(root_, "")) read_top(e);
    if (!given(cfg_, "output.dir")) {
      const std::string stem = std::filesystem::path(name_).stem().string();
      cfg_.output_dir = stem.empty() ? "runs" : "runs/" + stem;
    }
    return cfg_;
  }

 private:
  // Keys of a table in file order (toml++ sorts them); keys added by overrides come last.
  std::vector<Entry> ordered(const toml::table& t, const std::string& prefix) const {
    std::vector<std::pair<std::tuple<std::size_t, std::size_t, std::size_t>, Entry>> v;
    for (auto&& [k, node] : t) {
      const std::string key(k.str());
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      auto a = added_.find(path);
      const auto& src = k.source().begin.line ? k.source() : node.source();
      auto pos = a != added_.end() ? std::make_tuple(std::size_t(SIZE_MAX), a->second, std::size_t(0))
                                   : std::make_tuple(std::size_t(src.begin.line), std::size_t(src.begin.column),
                                                     std::size_t(0));
      v.push_back({pos, Entry{key, &node, src.begin.line}});
    }
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Entry> out;
    for (auto& p : v) out.push_back(p.second);
    return out;
  }

  // Where `path` was given; records it in the config for later (cross-key) messages.
  std::string where(const std::string& path, std::size_t line) {
    auto it = set_at_.find(path);
    std::string w = it != set_at_.end() ? it->second : line ? name_ + ":" + std::to_string(line) : name_;
    cfg_.locations[path] = w;
    return w;
  }

  void apply_override(const std::string& o) {
    const std::string w = "--set " + o;
    const auto eq = o.find('=');
    const std::string path = trim(o.substr(0, eq == std::string::npos ? 0 : eq));
    if (eq == std::string::npos || path.empty() || path.find('.') == std::string::npos)
      fail(w, "expected section.key=value, e.g. --set train.lr=1e-3 or --set encoding.name=rope");
    const std::string text = trim(o.substr(eq + 1));
    if (text.empty()) fail(w, "missing value after '='");
    std::vector<std::string> parts;
    const auto dot = path.find('.');
    if (path.substr(0, dot) == "sweep") {
      parts = {"sweep", path.substr(dot + 1)};  // sweep keys are themselves dotted
    } else {
      std::stringstream ss(path);
      for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    }
    for (const auto& p : parts)
      if (p.empty()) fail(w, "empty key in '" + path + "'");

    ValueText value;
    try {
      value = parse_value_text(text);
    } catch (const Error& e) {
      fail(w, e.what());
    }
    toml::table* t = &root_;
    std::string prefix;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      prefix = prefix.empty() ? parts[i] : prefix + "." + parts[i];
      if (!t->contains(parts[i])) {
        t->insert(parts[i], toml::table{});
        added_.emplace(prefix, added_.size());
        set_at_[prefix] = w;
      }
      toml::node* n = t->get(parts[i]);
      if (!n->is_table()) fail(w, "'" + prefix + "' is a value, not a section or subtable, in " + name_);
      t = n->as_table();
    }
    const std::string full = prefix.empty() ? parts.back() : prefix + "." + parts.back();
    if (!t->contains(parts.back())) added_.emplace(full, added_.size());
    set_at_[full] = w;
    if (!value.array) {
      std::visit([&](const auto& x) { t->insert_or_assign(parts.back(), x); }, value.values[0]);
      return;
    }
    toml::array a;
    for (const Value& v : value.values) std::visit([&](const auto& x) { a.push_back(x); }, v);
    t->insert_or_assign(parts.back(), std::move(a));
  }

  void read_top(const Entry& e) {
    const std::string w = where(e.key, e.line);
    const auto names = section_names();
    if (std::find(names.begin(), names.end(), e.key) == names.end()) {
      std::string msg;
      if (e.node->is_table()) {
        msg = "unknown section [" + e.key + "]";
        if (auto n = nearest(e.key, names)) msg += " (did you mean [" + *n + "]?)";
      } else {
        msg = "key '" + e.key + "' is outside any section";
        for (const auto& s : schema())
          if (find_field(s.name, e.key)) {
            msg += " (did you mean [" + s.name + "] " + e.key + "?)";
            break;
          }
      }
      fail(w, msg + "; sections: " + join(names));
    }
    if (!e.node->is_table())
      fail(w, "[" + e.key + "] must be a table (a line [" + e.key + "] followed by its keys), not " +
                  node_text(*e.node));
    const toml::table& t = *e.node->as_table();
    if (e.key == "sweep") read_sweep(t);
    else if (e.key == "cell") read_cell(t);
    else read_section(e.key, t);
  }

  void read_section(const std::string& sec, const toml::table& t) {
    const Section& s = *find_section(sec);
    const std::string tag = "[" + sec + "]";
    for (const auto& e : ordered(t, sec)) {
      const std::string path = sec + "." + e.key, w = where(path, e.line);
      if (sec == "eval" && e.key == "lengths") {
        read_lengths(*e.node, w);
        continue;
      }
      if (sec == "eval" && (e.key == "length_range" || e.key == "operand_grid")) {
        (e.key == "length_range" ? cfg_.eval.length_range : cfg_.eval.operand_grid) = read_range(e.key, *e.node, w);
        continue;
      }
      const Field* f = find_field(sec, e.key);
      if (const PluginGroup* g = find_group(sec); !f && g) {
        read_subtable(*g, e, w);
        continue;
      }
      if (!f) fail(w, unknown_key_msg(tag, e.key, section_keys(s)));
      auto v = scalar_of(*e.node);
      if (!v) fail(w, tag + " key '" + e.key + "' has value " + node_text(*e.node) + "; expected " + f->expected());
      Setting st;
      st.section = sec;
      st.key = e.key;
      st.field = f;
      apply_setting(cfg_, st, *v, w, tag, e.key);
    }
  }

  // [encoding.<name>] / [task.<name>] / [train.<optimizer>]: parameters of one plugin, checked against its spec.
  void read_subtable(const PluginGroup& g, const Entry& e, const std::string& w) {
    const std::string& sec = g.section;
    const auto names = g.names();
    if (!e.node->is_table()) {
      // A parameter written directly under [encoding] / [train]: say which subtable it belongs in.
      const std::string moved = misplaced_param_msg(g, e.key);
      if (!moved.empty()) fail(w, moved);
      fail(w, unknown_key_msg("[" + sec + "]", e.key, section_keys(*find_section(sec))));
    }
    if (std::find(names.begin(), names.end(), e.key) == names.end()) {
      std::string msg = "[" + sec + "] unknown " + g.noun + " subtable [" + sec + "." + e.key + "]";
      if (auto n = nearest(e.key, names)) msg += " (did you mean [" + sec + "." + *n + "]?)";
      fail(w, msg + "; known " + g.noun + "s: " + join(names));
    }
    read_params(g, e.key, *e.node->as_table());
  }

  // The parameters of `owner` ("rope", or a variant "rope.global"); a subtable inside an encoding's
  // table is a variant of it ([encoding.rope.global]: layers/positional/encoding.hpp).
  void read_params(const PluginGroup& g, const std::string& owner, const toml::table& table) {
    const std::string& sec = g.section;
    g.tables(cfg_)[owner];  // present even when empty
    for (const auto& p : ordered(table, sec + "." + owner)) {
      const std::string path = sec + "." + owner + "." + p.key, pw = where(path, p.line);
      if (p.node->is_table() && sec == "encoding" && owner.find('.') == std::string::npos) {
        try {
          encoding_base_name(owner + "." + p.key);
        } catch (const Error& err) {
          fail(pw, "[" + path + "]: " + err.what());
        }
        read_params(g, owner + "." + p.key, *p.node->as_table());
        continue;
      }
      const Setting st = find_setting(path, pw, "");
      const std::string tag = "[" + st.section + "]";
      auto v = scalar_of(*p.node);
      if (!v) fail(pw, tag + " key '" + p.key + "' has value " + node_text(*p.node) + "; expected " + st.expected());
      apply_setting(cfg_, st, *v, pw, tag, p.key);
    }
  }

  void read_lengths(const toml::node& n, const std::string& w) {
    auto bad = [&] {
      fail(w, "[eval] key 'lengths' has value " + node_text(n) +
                  "; expected an array of positive integers, e.g. [8, 16, 32] ([] = defaults)");
    };
    const toml::array* a = n.as_array();
    if (!a) bad();
    std::vector<std::size_t> out;
    for (const auto& x : *a) {
      const auto* i = x.as_integer();
      if (!i || i->get() < 1 || i->get() > 10000000) bad();
      out.push_back(static_cast<std::size_t>(i->get()));
    }
    cfg_.eval.lengths = out;
  }

  // [from, to] or [from, to, step], each a positive integer, from <= to; [] = not given.
  std::vector<std::size_t> read_range(const std::string& key, const toml::node& n, const std::string& w) {
    const std::string head = "[eval] key '" + key + "' has value " + node_text(n) + "; ";
    auto bad = [&] {
      fail(w, head + "expected [from, to] or [from, to, step] of positive integers, e.g. [1, 500] ([] = not given)");
    };
    const toml::array* a = n.as_array();
    if (!a || a->size() == 1 || a->size() > 3) bad();
    std::vector<std::size_t> out;
    for (const auto& x : *a) {
      const auto* i = x.as_integer();
      if (!i || i->get() < 1 || i->get() > 10000000) bad();
      out.push_back(static_cast<std::size_t>(i->get()));
    }
    if (out.size() == 2) out.push_back(1);
    if (!out.empty() && out[0] > out[1])
      fail(w, head + "the range is empty (from " + std::to_string(out[0]) + " > to " + std::to_string(out[1]) +
                  "); expected from <= to");
    if (!out.empty() && (out[1] - out[0]) / out[2] >= kMaxRangeLengths)
      fail(w, head + "that is " + std::to_string((out[1] - out[0]) / out[2] + 1) + " lengths; expected at most " +
                  std::to_string(kMaxRangeLengths) + " (a larger step)");
    return out;
  }

  void read_sweep(const toml::table& t) {
    for (const auto& e : ordered(t, "sweep")) {
      const std::string w = where("sweep." + e.key, e.line), tag = "[sweep] key '" + e.key + "'";
      const Setting st = find_setting(e.key, w, tag + " names no setting: ");
      const toml::array* a = e.node->as_array();
      if (!a || a->empty())
        fail(w, tag + " has value " + node_text(*e.node) + "; expected a non-empty array of values, e.g. [0, 1, 2]");
      std::vector<Value> values;
      for (const auto& x : *a) {
        auto v = scalar_of(x);
        if (!v) fail(w, tag + " has value " + node_text(x) + " in its list; expected " + st.expected());
        ExperimentConfig scratch;
        apply_setting(scratch, st, *v, w, "[sweep]", e.key);
        const Value norm = get_setting(scratch, st);
        if (const PluginGroup* g = find_group(st.section); st.field && g && g->selector == st.key)
          check_name(*g, norm, w, tag);
        if (std::find(values.begin(), values.end(), norm) != values.end())
          fail(w, tag + " lists " + format_value(norm) + " twice");
        values.push_back(norm);
      }
      cfg_.sweep[e.key] = values;
      cfg_.sweep_order.push_back(e.key);
    }
  }

  static void check_name(const PluginGroup& g, const Value& v, const std::string& w, const std::string& tag) {
    try {
      g.params(std::get<std::string>(v));
    } catch (const Error& e) {
      fail(w, tag + " has value " + format_value(v) + ": " + e.what());
    }
  }

  // [cell] index, label and [cell.assignment] "section.key" = value: which sweep cell this file is.
  void read_cell(const toml::table& t) {
    for (const auto& e : ordered(t, "cell")) {
      const std::string w = where("cell." + e.key, e.line);
      if (e.key == "assignment" && e.node->is_table()) {
        for (const auto& a : ordered(*e.node->as_table(), "cell.assignment")) {
          const std::string aw = where("cell.assignment." + a.key, a.line);
          const Setting st = find_setting(a.key, aw, "[cell.assignment] key '" + a.key + "' names no setting: ");
          auto v = scalar_of(*a.node);
          if (!v) fail(aw, "[cell.assignment] key '" + a.key + "' has value " + node_text(*a.node) + "; expected " +
                               st.expected());
          ExperimentConfig scratch;
          apply_setting(scratch, st, *v, aw, "[cell.assignment]", a.key);
          cfg_.cell.assignment.emplace_back(a.key, get_setting(scratch, st));
        }
      } else if (e.key == "index" && e.node->as_integer() && e.node->as_integer()->get() >= 0) {
        cfg_.cell.index = static_cast<std::size_t>(e.node->as_integer()->get());
      } else if (e.key == "label" && e.node->as_string()) {
        cfg_.cell.label = e.node->as_string()->get();
      } else {
        fail(w, std::string("[cell] key '") + e.key + "' has value " + node_text(*e.node) +
                    "; [cell] (written by `pelab sweep`) takes index = an integer >= 0, label = a string and "
                    "a subtable [cell.assignment] of swept \"section.key\" = value");
      }
    }
  }

  std::string name_;
  toml::table root_;
  std::map<std::string, std::string> set_at_;  // path -> "--set ..." for values given by overrides
  std::map<std::string, std::size_t> added_;   // paths created by overrides, in order
  ExperimentConfig cfg_;
};

// "--set encoding.rope.base=5" when no run uses encoding rope: accepted (a sweep may use it in
// some cells), but it changes nothing, so say so.
std::vector<std::string> unused_overrides(const LoadedConfig& lc) {
  std::vector<std::string> out;
  for (const auto& [path, where] : lc.config.locations) {
    if (where.compare(0, 6, "--set ") != 0) continue;
    const auto d1 = path.find('.'), d2 = path.find('.', d1 == std::string::npos ? d1 : d1 + 1);
    if (d1 == std::string::npos || d2 == std::string::npos) continue;  // section.owner.key only
    const PluginGroup* g = find_group(path.substr(0, d1));
    if (!g) continue;
    const std::string owner = path.substr(d1 + 1, d2 - d1 - 1);
    std::vector<std::string> used;
    for (const RunSpec& r : lc.runs) {
      const std::string c = chosen(*g, r.config);
      if (std::find(used.begin(), used.end(), c) == used.end()) used.push_back(c);
    }
    if (std::find(used.begin(), used.end(), owner) != used.end()) continue;
    std::string uses;
    for (const auto& u : used) uses += (uses.empty() ? "" : ", ") + format_value(Value(u));
    const std::string sel = g->section + "." + g->selector;
    out.push_back(where + " has no effect: " + (lc.runs.size() == 1 ? "the run uses " : "the runs use ") + g->noun +
                  " " + uses + " (" + sel + (given(lc.config, sel) ? " at " + location(lc.config, sel) : " by default") +
                  "), not \"" + owner + "\"");
  }
  return out;
}

}  // namespace

LoadedConfig parse_config(const std::string& text, const std::string& name, const std::vector<std::string>& overrides) {
  LoadedConfig out;
  out.config = Reader(name).read(text, overrides);
  out.config.recorded = text.rfind(kResolvedHeader, 0) == 0;
  config_detail::resolve_gemm(out.config);
  TaskCache cache;
  // A grid is checked cell by cell (the base alone need not be runnable, e.g. when n_heads is swept).
  out.runs = expand_sweep_cached(out.config, cache);
  out.warnings = unused_overrides(out);
  return out;
}

namespace {

// Whether a config text sets anything: a line that is neither blank nor a comment.
bool sets_any_key(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t\r");
    if (first != std::string::npos && line[first] != '#' && line[first] != '[') return true;
  }
  return false;
}

}  // namespace

LoadedConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) throw ConfigError(path + ": config file not found");
  if (std::filesystem::is_directory(st)) throw ConfigError(path + ": is a directory, not a config file");
  // A device or a FIFO (/dev/zero, /dev/stdin) would be read forever: only regular files, and small ones.
  if (!std::filesystem::is_regular_file(st))
    throw ConfigError(path + ": is not a regular file (a device, FIFO or socket); give a TOML config file");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxConfigBytes)
    throw ConfigError(path + ": is " + std::to_string(size) + " bytes; a config file may have at most " +
                      std::to_string(kMaxConfigBytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the config file");
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(&text[0], std::streamsize(text.size()));
  if (in.bad()) throw ConfigError(path + ": cannot read the config file");
  text.resize(std::size_t(in.gcount()));
  if (text.size() > kMaxConfigBytes)  // it grew while we read
    throw ConfigError(path + ": has more than " + std::to_string(kMaxConfigBytes) + " bytes, the most a config file may have");
  LoadedConfig out = parse_config(text, path, overrides);
  if (!sets_any_key(text) && overrides.empty())
    out.warnings.insert(out.warnings.begin(), path + " sets no key: every setting is its default (`pelab list` and "
                        "docs/usage.md list them)");
  return out;
}

}  // namespace pelab
