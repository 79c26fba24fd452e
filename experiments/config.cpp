// Reading a config: TOML text -> ExperimentConfig, remembering where every key came from so that
// each error points at its line. Overrides ("--set section.key=value") are applied to the TOML tree
// before reading, so they get exactly the same checks as the file.
#include "experiments/config.hpp"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <toml++/toml.h>

#include "experiments/config_schema.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"

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
  if (auto v = scalar_of(n)) return value_str(*v);
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

    toml::table doc;
    bool as_string = false;
    try {
      doc = toml::parse("v = " + text, w);
      if (doc.size() != 1) fail(w, "the value must be a single TOML value");
    } catch (const toml::parse_error& e) {
      // Bare words (--set encoding.name=rope) are strings; anything that looks like TOML must parse.
      if (std::string("[{\"'").find(text[0]) != std::string::npos)
        fail(w, "value is not valid TOML: " + std::string(e.description()) +
                    (text[0] == '[' ? " (quote strings inside arrays: [\"none\", \"rope\"])" : ""));
      as_string = true;
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
    if (as_string) t->insert_or_assign(parts.back(), text);
    else doc.get("v")->visit([&](const auto& x) { t->insert_or_assign(parts.back(), x); });
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
      const Field* f = find_field(sec, e.key);
      if (!f && (sec == "encoding" || sec == "task")) {
        read_subtable(sec, e, w);
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

  // [encoding.<name>] / [task.<name>]: parameters of one encoding or task, checked against its spec.
  void read_subtable(const std::string& sec, const Entry& e, const std::string& w) {
    const bool enc = sec == "encoding";
    const std::string what = enc ? "encoding" : "task";
    const auto names = enc ? EncodingRegistry::instance().names() : TaskRegistry::instance().names();
    if (!e.node->is_table()) {
      // A parameter written directly under [encoding] / [task]: say which subtable it belongs in.
      for (const auto& n : names) {
        const auto& params = enc ? EncodingRegistry::instance().get(n).params : TaskRegistry::instance().get(n).params;
        for (const auto& p : params)
          if (p.key == e.key)
            fail(w, "[" + sec + "] unknown key '" + e.key + "'; parameters of " + std::string(enc ? "an " : "a ") + what +
                        " go in its own subtable, e.g. [" + sec + "." + n + "] " + e.key + " = ...");
      }
      fail(w, unknown_key_msg("[" + sec + "]", e.key, section_keys(*find_section(sec))));
    }
    if (std::find(names.begin(), names.end(), e.key) == names.end()) {
      std::string msg = "[" + sec + "] unknown " + what + " subtable [" + sec + "." + e.key + "]";
      if (auto n = nearest(e.key, names)) msg += " (did you mean [" + sec + "." + *n + "]?)";
      fail(w, msg + "; known " + what + "s: " + join(names));
    }
    (enc ? cfg_.encoding_params : cfg_.task_params)[e.key];  // present even when empty
    for (const auto& p : ordered(*e.node->as_table(), sec + "." + e.key)) {
      const std::string path = sec + "." + e.key + "." + p.key, pw = where(path, p.line);
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
        if (st.field && st.field->spec.key == "name") check_name(st.section, norm, w, tag);
        if (std::find(values.begin(), values.end(), norm) != values.end())
          fail(w, tag + " lists " + value_str(norm) + " twice");
        values.push_back(norm);
      }
      cfg_.sweep[e.key] = values;
      cfg_.sweep_order.push_back(e.key);
    }
  }

  static void check_name(const std::string& section, const Value& v, const std::string& w, const std::string& tag) {
    const std::string& name = std::get<std::string>(v);
    try {
      if (section == "encoding") EncodingRegistry::instance().get(name);
      else TaskRegistry::instance().get(name);
    } catch (const Error& e) {
      fail(w, tag + " has value " + value_str(v) + ": " + e.what());
    }
  }

  std::string name_;
  toml::table root_;
  std::map<std::string, std::string> set_at_;  // path -> "--set ..." for values given by overrides
  std::map<std::string, std::size_t> added_;   // paths created by overrides, in order
  ExperimentConfig cfg_;
};

}  // namespace

ExperimentConfig parse_config(const std::string& text, const std::string& name,
                              const std::vector<std::string>& overrides) {
  ExperimentConfig cfg = Reader(name).read(text, overrides);
  TaskCache cache;
  // A grid is checked cell by cell (the base alone need not be runnable, e.g. when n_heads is swept).
  if (cfg.sweep.empty()) validate_config(cfg, cache);
  else expand_sweep_cached(cfg, cache);
  return cfg;
}

ExperimentConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw ConfigError(path + ": config file not found");
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path + ": is a directory, not a config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the config file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": cannot read the config file");
  return parse_config(ss.str(), path, overrides);
}

}  // namespace pelab
