// Settings by path ("train.lr", "encoding.rope.base"): finding, checking, storing and reading them,
// and the messages and locations every config error is built from.
#include <algorithm>
#include <utility>

#include "experiments/config/config_schema.hpp"

namespace pelab::config_detail {

std::optional<Value> check_value(const ParamSpec& spec, const Value& v) {
  try {
    return resolve_params({spec}, {{spec.key, v}}, spec.key).values().at(spec.key);
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string Setting::expected() const { return field ? field->expected() : param->allowed(); }

namespace {

// [section.<owner>] key: a parameter of one of the section's plugins.
Setting find_param(const PluginGroup& g, const std::string& owner, const std::string& key, const std::string& where,
                   const std::string& context) {
  Setting st;
  st.owner = owner;
  st.key = key;
  st.section = g.section + "." + owner;
  st.group = &g;
  const std::vector<ParamSpec>* params = nullptr;
  try {
    params = &g.params(owner);
  } catch (const Error& e) {
    fail(where, context + "[" + st.section + "]: " + e.what());
  }
  std::vector<std::string> keys;
  for (const auto& p : *params) {
    keys.push_back(p.key);
    if (p.key == key) st.param = &p;
  }
  if (!st.param) fail(where, context + unknown_key_msg("[" + st.section + "]", key, keys));
  return st;
}

}  // namespace

Setting find_setting(const std::string& path, const std::string& where, const std::string& context) {
  const auto dot = path.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == path.size())
    fail(where, context + "expected \"section.key\", e.g. \"train.seed\" or \"encoding.rope.base\"");
  const std::string sec = path.substr(0, dot), rest = path.substr(dot + 1);
  const Section* s = find_section(sec);
  if (!s) {
    std::string msg = context + "unknown section [" + sec + "]";
    if (auto n = nearest(sec, section_names())) msg += " (did you mean [" + *n + "]?)";
    fail(where, msg + "; sections: " + join(section_names()));
  }
  if (sec == "output") fail(where, context + "[output] cannot be swept (each cell gets its own directory)");
  const PluginGroup* g = find_group(sec);
  const auto dot2 = rest.find('.');
  // An encoding variant's parameter: "encoding.rope.global.base" (owner "rope.global").
  const auto dot3 = dot2 == std::string::npos ? dot2 : rest.find('.', dot2 + 1);
  if (g && sec == "encoding" && dot3 != std::string::npos)
    return find_param(*g, rest.substr(0, dot3), rest.substr(dot3 + 1), where, context);
  if (g && dot2 != std::string::npos) return find_param(*g, rest.substr(0, dot2), rest.substr(dot2 + 1), where, context);
  Setting st;
  st.section = sec;
  st.key = rest;
  st.field = find_field(sec, rest);
  if (st.field) return st;
  const auto& extra = s->extra;
  if (std::find(extra.begin(), extra.end(), rest) != extra.end())
    fail(where, context + "[" + sec + "] key '" + rest + "' is a list and cannot be swept");
  if (g) {
    const std::string moved = misplaced_param_msg(*g, rest);
    if (!moved.empty()) fail(where, context + moved);
  }
  std::vector<std::string> keys;
  for (const auto& f : s->fields) keys.push_back(f.spec.key);
  std::string msg = unknown_key_msg("[" + sec + "]", rest, keys);
  if (g) msg += "; parameters are named " + sec + ".<name>.<key>, e.g. \"" + g->example + "\"";
  fail(where, context + msg);
}

void apply_setting(ExperimentConfig& cfg, const Setting& s, const Value& v, const std::string& where,
                   const std::string& tag, const std::string& key) {
  const ParamSpec& spec = s.field ? s.field->spec : *s.param;
  const auto norm = check_value(spec, v);
  if (!norm) fail(where, tag + " key '" + key + "' has value " + format_value(v) + "; expected " + s.expected());
  if (s.field) s.field->set(cfg, *norm);
  else s.group->tables(cfg)[s.owner][s.key] = *norm;
}

Value get_setting(const ExperimentConfig& cfg, const Setting& s) {
  if (s.field) return s.field->get(cfg);
  const ParamTables& all = tables_of(*s.group, cfg);
  auto it = all.find(s.owner);
  if (it != all.end()) {
    auto jt = it->second.find(s.key);
    if (jt != it->second.end()) return jt->second;
  }
  return s.param->default_value;
}

void fail(const std::string& where, const std::string& msg) { throw ConfigError(where + ": " + msg); }

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

namespace {
// Spelled-out names people write for short keys, so "lerning_rate" still suggests 'lr'.
std::optional<std::string> suggest(const std::string& key, const std::vector<std::string>& keys) {
  if (auto n = nearest(key, keys)) return n;
  static const std::vector<std::pair<std::string, std::string>> aliases = {
      {"learning_rate", "lr"},      {"min_learning_rate", "min_lr"}, {"warmup_steps", "warmup"},
      {"max_steps", "steps"},       {"iterations", "steps"},         {"clip", "grad_clip"},
      {"max_grad_norm", "grad_clip"}, {"wd", "weight_decay"},         {"layers", "n_layers"},
      {"num_layers", "n_layers"},   {"heads", "n_heads"},            {"num_heads", "n_heads"},
      {"hidden_size", "d_model"},   {"dim", "d_model"},              {"ffn_dim", "d_ff"},
      {"seq_len", "train_len"},     {"max_len", "train_len"},        {"num_threads", "threads"},
      {"epsilon", "eps"},           {"directory", "dir"},            {"path", "dir"}};
  std::vector<std::string> names;
  for (const auto& [alias, canonical] : aliases)
    if (std::find(keys.begin(), keys.end(), canonical) != keys.end()) names.push_back(alias);
  if (auto n = nearest(key, names))
    for (const auto& [alias, canonical] : aliases)
      if (alias == *n) return canonical;
  return std::nullopt;
}
}  // namespace

std::string unknown_key_msg(const std::string& tag, const std::string& key, const std::vector<std::string>& keys) {
  std::string msg = tag + " unknown key '" + key + "'";
  if (auto n = suggest(key, keys)) msg += " (did you mean '" + *n + "'?)";
  if (keys.empty()) return msg + "; it takes no parameters";
  return msg + "; allowed keys: " + join(keys);
}

std::string misplaced_param_msg(const PluginGroup& g, const std::string& key) {
  const auto owner = owner_of(g, key);
  if (!owner) return "";
  const std::string sub = "[" + g.section + "." + *owner + "]";
  if (g.keys_moved_here)
    return "[" + g.section + "] key '" + key + "' moved to " + sub + ": each " + g.noun +
           "'s parameters go in its own subtable; write " + sub + " " + key + " = ...";
  return "[" + g.section + "] unknown key '" + key + "'; parameters of " + (std::string("aeiou").find(g.noun[0]) != std::string::npos ? "an " : "a ") +
         g.noun + " go in its own subtable, e.g. " + sub + " " + key + " = ...";
}

bool given(const ExperimentConfig& cfg, const std::string& path) { return cfg.locations.count(path) > 0; }

std::string location(const ExperimentConfig& cfg, const std::string& path) {
  for (std::string p = path;;) {
    auto it = cfg.locations.find(p);
    if (it != cfg.locations.end()) return it->second;
    const auto d = p.rfind('.');
    if (d == std::string::npos) break;
    p.resize(d);
  }
  return cfg.source.empty() ? "<config>" : cfg.source;
}

std::string location_any(const ExperimentConfig& cfg, const std::vector<std::string>& paths) {
  // The most recent change is the likeliest culprit: a key this sweep cell sets, then an override.
  for (const auto& p : paths)
    if (given(cfg, p) && cfg.sweep.empty() && given(cfg, "sweep." + p)) return cfg.locations.at(p);
  for (const auto& p : paths)
    if (given(cfg, p) && cfg.locations.at(p).compare(0, 6, "--set ") == 0) return cfg.locations.at(p);
  for (const auto& p : paths)
    if (given(cfg, p)) return cfg.locations.at(p);
  return location(cfg, paths.at(0));
}

std::string toml_key(const std::string& k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  return bare ? k : format_value(Value(k));
}

}  // namespace pelab::config_detail
