// The declared keys of every config section and the helpers shared by loading, validation,
// writing and sweep expansion.
#include "experiments/config_schema.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab::config_detail {
namespace {

// Shortest decimal text of a float that reads back to the same float, as a double: 0.1f -> 0.1, so
// resolved configs show what the user wrote, not 0.10000000149011612.
double float_as_double(float f) {
  if (!std::isfinite(f)) return double(f);
  char buf[48];
  for (int p = 1; p <= 9; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, double(f));
    if (static_cast<float>(std::strtod(buf, nullptr)) == f) break;
  }
  return std::strtod(buf, nullptr);
}

template <class T>
ValueType type_of() {
  if constexpr (std::is_same_v<T, bool>) return ValueType::boolean;
  else if constexpr (std::is_integral_v<T>) return ValueType::integer;
  else if constexpr (std::is_floating_point_v<T>) return ValueType::number;
  else return ValueType::string;  // std::string, Activation
}

template <class T>
Value to_value(const T& x) {
  if constexpr (std::is_same_v<T, bool>) return Value(x);
  else if constexpr (std::is_integral_v<T>) return Value(static_cast<std::int64_t>(x));
  else if constexpr (std::is_same_v<T, float>) return Value(float_as_double(x));
  else if constexpr (std::is_floating_point_v<T>) return Value(static_cast<double>(x));
  else if constexpr (std::is_same_v<T, Activation>) return Value(activation_name(x));
  else return Value(x);
}

template <class T>
void from_value(const Value& v, T& x) {
  if constexpr (std::is_same_v<T, bool>) x = std::get<bool>(v);
  else if constexpr (std::is_integral_v<T>) x = static_cast<T>(std::get<std::int64_t>(v));
  else if constexpr (std::is_floating_point_v<T>) x = static_cast<T>(std::get<double>(v));
  else if constexpr (std::is_same_v<T, Activation>) x = parse_activation(std::get<std::string>(v));
  else x = std::get<std::string>(v);
}

template <class T>
Field make_field(std::string key, std::optional<double> lo, std::optional<double> hi, std::string help,
                 std::function<Value(const ExperimentConfig&)> get,
                 std::function<void(ExperimentConfig&, const Value&)> set) {
  Field f;
  f.spec.key = std::move(key);
  f.spec.type = type_of<T>();
  f.spec.default_value = get(ExperimentConfig{});
  f.spec.min = lo;
  f.spec.max = hi;
  f.spec.help = std::move(help);
  f.get = std::move(get);
  f.set = std::move(set);
  return f;
}

Field choices(Field f, std::vector<std::string> c) {
  f.spec.choices = std::move(c);
  return f;
}

Field half_open(Field f) {  // [min, max)
  f.max_exclusive = true;
  std::string lo = f.spec.min ? format_number(*f.spec.min) : "-inf";
  if (lo.size() > 2 && lo.compare(lo.size() - 2, 2, ".0") == 0) lo.resize(lo.size() - 2);
  std::string hi = format_number(*f.spec.max);
  if (hi.size() > 2 && hi.compare(hi.size() - 2, 2, ".0") == 0) hi.resize(hi.size() - 2);
  f.expected_text = "a number in [" + lo + ", " + hi + ")";
  return f;
}

constexpr std::nullopt_t none = std::nullopt;

#define PELAB_FIELD(key, expr, lo, hi, help)                                                      \
  make_field<std::decay_t<decltype(std::declval<ExperimentConfig&>().expr)>>(                    \
      key, lo, hi, help, [](const ExperimentConfig& c) { return to_value(c.expr); },             \
      [](ExperimentConfig& c, const Value& v) { from_value(v, c.expr); })

std::vector<Section> build_schema() {
  std::vector<Section> s;
  s.push_back({"model",
               {PELAB_FIELD("d_model", model.d_model, 1.0, 65536.0, "residual stream width"),
                PELAB_FIELD("n_layers", model.n_layers, 1.0, 1024.0, "transformer blocks"),
                PELAB_FIELD("n_heads", model.n_heads, 1.0, 4096.0, "attention heads (must divide d_model)"),
                PELAB_FIELD("d_ff", model.d_ff, 0.0, 1e6, "MLP width; 0 = 4 * d_model"),
                choices(PELAB_FIELD("activation", model.activation, none, none, "MLP activation"),
                        {"gelu", "gelu_tanh", "relu"}),
                half_open(PELAB_FIELD("dropout", model.dropout, 0.0, 1.0, "embedding/attention/MLP dropout")),
                PELAB_FIELD("causal", model.causal, none, none, "false: bidirectional attention"),
                PELAB_FIELD("tie_embeddings", model.tie_embeddings, none, none, "LM head shares the embedding"),
                PELAB_FIELD("ln_eps", model.ln_eps, 1e-12, 1.0, "LayerNorm epsilon"),
                PELAB_FIELD("init_std", model.init_std, 0.0, 10.0, "std of the normal init of Linear weights"),
                PELAB_FIELD("emb_init_std", model.emb_init_std, 0.0, 10.0,
                            "std of the normal init of token embeddings and learned position tables")},
               {}});
  s.push_back({"encoding",
               {PELAB_FIELD("name", encoding, none, none, "positional encoding (see `pelab list`)")},
               {"[encoding.<name>] subtables"}});
  s.push_back({"task",
               {PELAB_FIELD("name", task, none, none, "task (see `pelab list`)"),
                PELAB_FIELD("min_len", min_len, 1.0, 1e6, "smallest training problem size"),
                PELAB_FIELD("train_len", train_len, 1.0, 1e6, "largest training problem size / LM context")},
               {"[task.<name>] subtables"}});
  Field early = choices(PELAB_FIELD("early_stop_metric", train.early_stop_metric, none, none,
                                    "stop early on this in-distribution metric"),
                        {"", "token_acc", "exact_match", "loss"});
  early.expected_text = "one of: \"\" (off), token_acc, exact_match, loss";
  s.push_back({"train",
               {PELAB_FIELD("steps", train.steps, 1.0, 1e9, "optimizer steps"),
                PELAB_FIELD("batch_size", train.batch_size, 1.0, 1e6, "examples per step"),
                choices(PELAB_FIELD("optimizer", train.optimizer, none, none, "optimizer"), {"adamw", "sgd"}),
                PELAB_FIELD("lr", train.lr, 0.0, 10.0, "peak learning rate"),
                PELAB_FIELD("min_lr", train.min_lr, 0.0, 10.0, "floor of the decay schedules"),
                choices(PELAB_FIELD("schedule", train.schedule, none, none, "learning-rate schedule"),
                        {"constant", "cosine", "linear"}),
                PELAB_FIELD("warmup", train.warmup, 0.0, 1e9, "linear warmup steps"),
                PELAB_FIELD("weight_decay", train.weight_decay, 0.0, 10.0, "decoupled weight decay"),
                PELAB_FIELD("decay_norm_and_bias", train.decay_norm_and_bias, none, none, "decay LayerNorm/bias"),
                PELAB_FIELD("decay_embeddings", train.decay_embeddings, none, none, "decay embeddings"),
                half_open(PELAB_FIELD("beta1", train.beta1, 0.0, 1.0, "Adam beta1")),
                half_open(PELAB_FIELD("beta2", train.beta2, 0.0, 1.0, "Adam beta2")),
                PELAB_FIELD("eps", train.eps, 1e-30, 1.0, "Adam epsilon"),
                half_open(PELAB_FIELD("momentum", train.momentum, 0.0, 1.0, "SGD momentum")),
                PELAB_FIELD("grad_clip", train.grad_clip, 0.0, 1e9, "global gradient-norm clip; 0 = off"),
                PELAB_FIELD("seed", train.seed, 0.0, none, "initialization and data seed"),
                PELAB_FIELD("log_every", train.log_every, 1.0, 1e9, "steps between log lines"),
                PELAB_FIELD("eval_every", train.eval_every, 0.0, 1e9, "steps between evaluations; 0 = end"),
                PELAB_FIELD("checkpoint_every", train.checkpoint_every, 0.0, 1e9, "steps between checkpoints"),
                PELAB_FIELD("keep_checkpoints", train.keep_checkpoints, 1.0, 1e6, "checkpoints kept"),
                early,
                PELAB_FIELD("early_stop_target", train.early_stop_target, none, none, "early-stop threshold"),
                PELAB_FIELD("threads", train.threads, 1.0, 1024.0, "OpenBLAS threads")},
               {}});
  s.push_back({"eval",
               {PELAB_FIELD("samples", eval.samples, 1.0, 1e9, "held-out examples per length"),
                PELAB_FIELD("batch_size", eval.batch_size, 1.0, 1e6, "evaluation batch size"),
                PELAB_FIELD("seed", eval.seed, 0.0, none, "seed of the held-out sets")},
               {"lengths"}});
  s.push_back({"output", {PELAB_FIELD("dir", output_dir, none, none, "run or sweep directory")}, {}});
  return s;
}

#undef PELAB_FIELD

}  // namespace

const std::vector<Section>& schema() {
  static const std::vector<Section> s = build_schema();
  return s;
}

const Section* find_section(const std::string& name) {
  for (const auto& s : schema())
    if (s.name == name) return &s;
  return nullptr;
}

const Field* find_field(const std::string& section, const std::string& key) {
  const Section* s = find_section(section);
  if (!s) return nullptr;
  for (const auto& f : s->fields)
    if (f.spec.key == key) return &f;
  return nullptr;
}

std::vector<std::string> section_names() {
  std::vector<std::string> n;
  for (const auto& s : schema()) n.push_back(s.name);
  n.insert(n.end() - 1, "sweep");
  return n;
}

std::vector<std::string> section_keys(const Section& s) {
  std::vector<std::string> k;
  for (const auto& f : s.fields) k.push_back(f.spec.key);
  k.insert(k.end(), s.extra.begin(), s.extra.end());
  return k;
}

std::optional<Value> check_value(const ParamSpec& spec, const Value& v, bool max_exclusive) {
  Value out;
  try {
    out = resolve_params({spec}, {{spec.key, v}}, spec.key).values().at(spec.key);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (max_exclusive && spec.max) {
    const double x = std::holds_alternative<double>(out) ? std::get<double>(out)
                                                         : double(std::get<std::int64_t>(out));
    if (x >= *spec.max) return std::nullopt;
  }
  return out;
}

std::string Setting::expected() const { return field ? field->expected() : param->allowed(); }

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
  const auto dot2 = rest.find('.');
  if ((sec == "encoding" || sec == "task") && dot2 != std::string::npos) {
    Setting st;
    st.owner = rest.substr(0, dot2);
    st.key = rest.substr(dot2 + 1);
    st.section = sec + "." + st.owner;
    st.task_param = sec == "task";
    const std::vector<ParamSpec>* params = nullptr;
    try {
      params = st.task_param ? &TaskRegistry::instance().get(st.owner).params
                             : &EncodingRegistry::instance().get(st.owner).params;
    } catch (const Error& e) {
      fail(where, context + "[" + st.section + "]: " + e.what());
    }
    std::vector<std::string> keys;
    for (const auto& p : *params) {
      keys.push_back(p.key);
      if (p.key == st.key) st.param = &p;
    }
    if (!st.param) fail(where, context + unknown_key_msg("[" + st.section + "]", st.key, keys));
    return st;
  }
  Setting st;
  st.section = sec;
  st.key = rest;
  st.field = find_field(sec, rest);
  if (st.field) return st;
  const auto& extra = s->extra;
  if (std::find(extra.begin(), extra.end(), rest) != extra.end())
    fail(where, context + "[" + sec + "] key '" + rest + "' is a list and cannot be swept");
  std::vector<std::string> keys;
  for (const auto& f : s->fields) keys.push_back(f.spec.key);
  std::string msg = unknown_key_msg("[" + sec + "]", rest, keys);
  if (sec == "encoding" || sec == "task")
    msg += "; parameters are named " + sec + ".<name>.<key>, e.g. " +
           (sec == "encoding" ? "\"encoding.rope.base\"" : "\"task.addition.reverse_digits\"");
  fail(where, context + msg);
}

void apply_setting(ExperimentConfig& cfg, const Setting& s, const Value& v, const std::string& where,
                   const std::string& tag, const std::string& key) {
  const ParamSpec& spec = s.field ? s.field->spec : *s.param;
  const auto norm = check_value(spec, v, s.field && s.field->max_exclusive);
  if (!norm) fail(where, tag + " key '" + key + "' has value " + value_str(v) + "; expected " + s.expected());
  if (s.field) s.field->set(cfg, *norm);
  else (s.task_param ? cfg.task_params : cfg.encoding_params)[s.owner][s.key] = *norm;
}

Value get_setting(const ExperimentConfig& cfg, const Setting& s) {
  if (s.field) return s.field->get(cfg);
  const auto& all = s.task_param ? cfg.task_params : cfg.encoding_params;
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

std::string format_number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  const double a = std::fabs(x);
  const bool fixed = a == 0 || (a >= 1e-5 && a < 1e15);  // 10000.0 and 0.0001 rather than 1e+04, 1e-04
  for (int p = fixed ? 0 : 1; p <= (fixed ? 40 : 17); ++p) {
    std::snprintf(buf, sizeof buf, fixed ? "%.*f" : "%.*g", p, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";  // TOML floats need '.' or an exponent
  return s;
}

std::string toml_key(const std::string& k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  return bare ? k : toml_value(Value(k));
}

std::string toml_value(const Value& v) {
  if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto d = std::get_if<double>(&v)) return format_number(*d);
  std::string out = "\"";
  for (unsigned char c : std::get<std::string>(v)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

std::string plain_value(const Value& v) {
  if (auto s = std::get_if<std::string>(&v)) return *s;
  return toml_value(v);
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::relu: return "relu";
  }
  return "?";
}

}  // namespace pelab::config_detail
