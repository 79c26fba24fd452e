// Cross-key checks of settings that would be accepted and then do nothing, or something other than the
// config says: an encoding that runs in no layer, a DAPE base's parameters, heads of an input-level
// encoding, index-hint settings without hints, an Abacus table too small for the training digits. Each
// is an error at the line of a key involved (issue #38).
#include <algorithm>

#include "core/rng.hpp"
#include "experiments/config/config_schema.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/canon.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/variant.hpp"

namespace pelab::config_detail {
namespace {

std::string num(std::size_t x) { return std::to_string(x); }

// A sweep that assigns `key` shares the other settings between its cells: a setting that matters in
// some cells only is then no mistake (as [encoding.rope] scaling under a sweep over encoding.name).
bool swept(const ExperimentConfig& cfg, const std::string& key) {
  return std::any_of(cfg.cell.assignment.begin(), cfg.cell.assignment.end(),
                     [&](const auto& a) { return a.first == key; });
}

std::vector<std::string> in_play(const ModelConfig& m) {
  std::vector<std::string> v = m.extra_encoding_names();
  v.push_back(m.encoding);
  return v;
}

bool input_level(const std::string& name) {
  return EncodingRegistry::instance().get(encoding_base_name(name)).input_level;
}

// [encoding] name must run somewhere: with a layers pattern that never names it, the model runs other
// encodings while the run is labelled, grouped and plotted as `name`. "none" names no encoding (the
// hybrid configs' base) and an input-level encoding runs on the embeddings whatever the layers.
void check_name_runs(const ExperimentConfig& cfg, const ModelConfig& m) {
  if (m.layer_encodings.empty() || m.encoding == "none" || input_level(m.encoding)) return;
  const std::vector<std::string> names = m.layer_encoding_names();
  if (std::find(names.begin(), names.end(), m.encoding) != names.end()) return;
  fail(location_any(cfg, {"encoding.layers", "encoding.name"}),
       "[encoding] name = \"" + m.encoding + "\" runs in no layer: layers = \"" + m.layer_encodings +
           "\" gives every layer another encoding, so the run would be labelled " + m.encoding +
           " without using it; expected name to be one of the layers' encodings (" + join(m.extra_encoding_names()) +
           "), \"none\", or an input-level encoding");
}

// An encoding variant's subtable ([encoding.rope.global]) whose variant runs in no layer would be written
// to config.toml and do nothing, unless a sweep over the layout or the encoding shares the table.
void check_variants_run(const ExperimentConfig& cfg, const ModelConfig& m) {
  if (swept(cfg, "encoding.layers") || swept(cfg, "encoding.name")) return;
  const std::vector<std::string> names = in_play(m);
  for (const auto& [name, params] : cfg.encoding_params) {
    if (name.find('.') == std::string::npos || std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string where = location(cfg, "encoding." + name);
    for (const auto& [path, at] : cfg.locations)
      if (path.rfind("encoding." + name + ".", 0) == 0) where = at;
    fail(where, "[encoding." + name + "] sets the variant " + name + ", which runs in no layer: [encoding] layers = \"" +
                    m.layer_encodings + "\"; name it in layers (e.g. \"" + encoding_base_name(name) + "," + name +
                    "\"), or remove the subtable");
  }
}

// DAPE builds its static bias (kerple or alibi) at the base's defaults (layers/positional/dape.cpp): a
// [encoding.<base>] setting would be written to config.toml and ignored, unless the base runs in a layer
// of its own or a sweep over the encoding shares the table.
void check_dape_base(const ExperimentConfig& cfg, const ModelConfig& m) {
  const std::vector<std::string> names = in_play(m);
  if (std::find(names.begin(), names.end(), "dape") == names.end() || swept(cfg, "encoding.name")) return;
  const std::string base = std::get<std::string>(cfg.encoding_params.at("dape").at("base"));
  if (std::find(names.begin(), names.end(), base) != names.end() || !cfg.encoding_params.count(base)) return;
  for (const ParamSpec& p : EncodingRegistry::instance().get(base).params) {
    const std::string path = "encoding." + base + "." + p.key;
    if (given(cfg, path) && cfg.encoding_params.at(base).at(p.key) != p.default_value)
      fail(location(cfg, path), "[encoding." + base + "] key '" + p.key + "' = " +
                                    format_value(cfg.encoding_params.at(base).at(p.key)) +
                                    " has no effect: DAPE builds its " + base + " bias at " + base +
                                    "'s defaults (" + p.key + " = " + format_value(p.default_value) +
                                    "); remove it, or use encoding " + base + " itself");
  }
}

// [encoding] heads restricts an attention-level encoding to some heads; NoPE and the input-level
// encodings (learned, sinusoidal, ...) have none to restrict, and PoPE's q and k are twice as wide as
// the other heads' (SelfAttention::encode_some_heads refused it only at the first forward pass).
void check_heads_apply(const ExperimentConfig& cfg, const ModelConfig& m) {
  if (m.encoding_heads == 0) return;
  const std::vector<std::string> names = in_play(m);
  if (std::find(names.begin(), names.end(), "pope") != names.end())
    fail(location(cfg, "encoding.heads"),
         "[encoding] heads = " + num(m.encoding_heads) + " cannot restrict 'pope' to some heads: it doubles q and "
         "k's head width; expected heads = 0");
  if (swept(cfg, "encoding.name") || swept(cfg, "encoding.layers")) return;
  if (std::any_of(names.begin(), names.end(), [](const std::string& n) { return n != "none" && !input_level(n); }))
    return;
  fail(location(cfg, "encoding.heads"),
       "[encoding] heads = " + num(m.encoding_heads) + " has no effect: encoding '" + m.encoding + "' " +
           (m.encoding == "none" ? "adds nothing to any head" : "acts on the token embeddings, not in the heads") +
           "; expected heads = 0, or an attention-level encoding (rope, alibi, ...)");
}

// [canon] kernel and residual shape Canon layers; without points there are none.
void check_canon_applies(const ExperimentConfig& cfg) {
  if (!cfg.model.canon.points.empty() || swept(cfg, "canon.points")) return;
  const CanonSettings defaults;  // a config pelab wrote lists them: not a setting the user made
  const bool set[] = {cfg.model.canon.kernel != defaults.kernel, cfg.model.canon.residual != defaults.residual};
  int i = 0;
  for (const char* key : {"canon.kernel", "canon.residual"})
    if (set[i++] && given(cfg, key))
      fail(location(cfg, key), "[canon] key '" + std::string(key + 6) + "' has no effect without Canon layers; "
           "remove it, or set points (a subset of \"ABCD\")");
}

// Addition's hint_symbols sizes the index hints; without index_hints it changes nothing.
void check_hint_symbols(const ExperimentConfig& cfg) {
  if (cfg.task != "addition" || !given(cfg, "task.addition.hint_symbols") || swept(cfg, "task.addition.index_hints"))
    return;
  if (cfg.task_params.at("addition").at("index_hints") == Value(true)) return;
  fail(location(cfg, "task.addition.hint_symbols"),
       "[task.addition] key 'hint_symbols' has no effect without index hints; remove it, or set index_hints = true");
}

// SSMax starts s_h at 1 / (log L temperature): L = 1 gives log L = 0.
void check_ssmax_base(const ExperimentConfig& cfg, const ModelConfig& m) {
  if (m.attention.scaling != "ssmax" || m.log_length_base() >= 2) return;
  fail(location_any(cfg, {"attention.log_length_base", "attention.scaling"}),
       "[attention] scaling = \"ssmax\" needs a base length L >= 2 (log_length_base, or the training length): it "
       "starts s at 1 / (log L temperature), and log 1 = 0; got " + num(m.log_length_base()));
}

// Abacus's table must hold every training digit index plus the largest offset (max_k): checked here,
// not at the first batch that reaches it. The largest index comes with the longest training size; a
// batch of 64 examples there has it (an answer one digit longer than its operands needs a carry out, a
// chance of about 1/2 per example).
void check_abacus_rows(const ExperimentConfig& cfg, const Task& task, const ModelConfig& m) {
  if (m.encoding != "abacus" || !task.supplies_digit_index()) return;  // input level: never in a layers pattern
  const auto& p = cfg.encoding_params.at("abacus");  // resolved: every key
  const auto size = std::size_t(std::get<std::int64_t>(p.at("size")));
  if (size == 0) return;  // auto: the longest training sequence + max_k + 1
  Rng rng(cfg.train.seed);
  const Batch b = task.sample(rng, 64, cfg.train_len, cfg.train_len);
  const std::int64_t top = b.digit_index.size() ? *std::max_element(b.digit_index.begin(), b.digit_index.end()) : 0;
  const auto max_k = std::size_t(std::get<std::int64_t>(p.at("max_k")));
  const std::size_t need = std::size_t(top) + max_k + 1;
  if (size >= need) return;
  fail(location_any(cfg, {"encoding.abacus.size", "encoding.abacus.max_k"}),
       "[encoding.abacus] size = " + num(size) + " rows is too small: training reaches digit index " + num(top) +
           " (task.train_len " + num(cfg.train_len) + ") shifted by up to max_k = " + num(max_k) +
           ", and row 0 is the non-digits; expected size >= " + num(need) + ", or 0 (auto)");
}

// "0,2," or "rope,none,": a trailing comma the list readers would skip.
void check_no_trailing_comma(const ExperimentConfig& cfg, const std::string& path, const std::string& text) {
  if (text.empty() || text.back() != ',') return;
  fail(location(cfg, path), "[" + path.substr(0, path.find('.')) + "] key '" + path.substr(path.find('.') + 1) +
                                "' = \"" + text + "\" ends with ','; expected a comma-separated list without an empty item");
}

}  // namespace

void check_settings_take_effect(const ExperimentConfig& cfg, const Task& task, const ModelConfig& m) {
  // A config pelab wrote (config.toml, cell.toml) lists every parameter, defaults included, and describes
  // a run already made or a cell checked when its sweep was: evaluating or resuming it needs no new refusal.
  if (cfg.recorded) return;
  check_no_trailing_comma(cfg, "attention.window", cfg.model.attention.window);
  check_no_trailing_comma(cfg, "attention.chunk", cfg.model.attention.chunk);
  check_no_trailing_comma(cfg, "attention.temperature_tuning", cfg.model.attention.temperature_tuning);
  check_no_trailing_comma(cfg, "encoding.layers", cfg.encoding_layers);
  check_name_runs(cfg, m);
  check_dape_base(cfg, m);
  check_variants_run(cfg, m);
  check_heads_apply(cfg, m);
  check_hint_symbols(cfg);
  check_canon_applies(cfg);
  check_ssmax_base(cfg, m);
  check_abacus_rows(cfg, task, m);
}

}  // namespace pelab::config_detail
