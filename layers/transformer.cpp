#include "layers/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/allocator.hpp"
#include "core/ops/attention.hpp"
#include "core/ops/dropout.hpp"
#include "core/ops/elementwise.hpp"
#include "core/ops/heads.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/query_scale.hpp"
#include "core/ops/rotary.hpp"
#include "core/ops/shape.hpp"
#include "core/ops/unary.hpp"
#include "core/tape.hpp"
#include "layers/capture.hpp"
#include "layers/qk_norm.hpp"
#include "layers/positional/variant.hpp"

namespace pelab {

ForwardCapture*& forward_capture() {
  thread_local ForwardCapture* capture = nullptr;
  return capture;
}

namespace {
// Where layer `l` records (layers/capture.hpp), or null: no capture, or one of the embeddings only.
LayerCapture* layer_capture(std::size_t l) {
  ForwardCapture* c = forward_capture();
  return c && c->layers_too ? &c->layers.at(l) : nullptr;
}

// q, k, v (B, H, T, hs) of a packed projection (B, T, 3C), copied off the tape into `cap`.
void capture_qkv(const Tensor& packed, std::size_t n_heads, LayerCapture& cap) {
  const NoGrad off_tape;
  cap.q = split_heads(packed, n_heads, 3, 0).value();
  cap.k = split_heads(packed, n_heads, 3, 1).value();
  cap.v = split_heads(packed, n_heads, 3, 2).value();
}
}  // namespace

InitOptions ModelSettings::init_options() const {
  InitOptions o;
  o.scheme = init;
  o.std = init_std;
  o.emb_std = emb_init_std;
  o.n_layers = n_layers;
  return o;
}

std::size_t LoopSettings::loops_at(std::size_t T) const {
  if (rule == "fixed") return times;
  const double n = std::floor(per_token * double(T)) + double(offset);
  return n < 1 ? 0 : std::size_t(n);
}

// N(T) is nondecreasing in T (per_token >= 0), so N(1) >= 1 is N(T) >= 1 at every length.
void LoopSettings::check(std::size_t n_layers) const {
  auto fail = [](const std::string& m) { throw Error("model: loop." + m); };
  if (rule != "fixed" && rule != "length") fail("rule '" + rule + "' is not one of: fixed, length");
  if (times == 0) fail("times = 0: the group must run at least once; expected times >= 1 (1 = no looping)");
  if (first >= n_layers)
    fail("first = " + std::to_string(first) + " is past the last block (model.n_layers = " + std::to_string(n_layers) +
         "); expected 0.." + std::to_string(n_layers - 1));
  if (end(n_layers) > n_layers)
    fail("blocks = " + std::to_string(blocks) + " from first = " + std::to_string(first) + " runs past model.n_layers = " +
         std::to_string(n_layers) + "; expected 1.." + std::to_string(n_layers - first) + ", or 0 for every block from first on");
  if (rule == "fixed") {
    if (per_token != 1 || offset != 0)
      fail(std::string(per_token != 1 ? "per_token" : "offset") + " applies to rule = \"length\" only; with rule = "
           "\"fixed\" the group runs loop.times times at every length");
    return;
  }
  if (times != 1) fail("times = " + std::to_string(times) + " applies to rule = \"fixed\" only; rule = \"length\" "
                       "takes N(T) = floor(per_token T) + offset");
  if (!(per_token >= 0) || !std::isfinite(per_token)) fail("per_token must be a finite number >= 0");
  if (loops_at(1) == 0)
    fail("offset = " + std::to_string(offset) + " with per_token = " + format_value(Value(per_token)) +
         ": rule = \"length\" gives N(T) = floor(per_token T) + offset < 1 at T = 1 token, and every length must "
         "loop at least once; expected floor(per_token) + offset >= 1");
}

ModelDims ModelConfig::dims() const {
  ModelDims d;
  d.vocab = vocab;
  d.d_model = d_model;
  d.n_heads = n_heads;
  d.head_dim = n_heads ? d_model / n_heads : 0;
  d.n_layers = n_layers;
  d.train_seq_len = train_seq_len;
  d.max_position = max_position ? max_position : train_seq_len;
  d.causal = causal;
  d.tie_embeddings = tie_embeddings;
  return d;
}

ModelDims ModelConfig::dims_for(const std::string& name) const {
  ModelDims d = dims();
  if (layer_encodings.empty()) return d;
  const std::vector<std::string> names = layer_encoding_names();
  for (std::size_t l = 0; l < names.size(); ++l)
    if (names[l] == name) d.layers.push_back(l);
  d.every_layer = d.layers.size() == n_layers;
  if (d.every_layer) d.layers.clear();
  return d;
}

void ModelConfig::validate() const {
  auto fail = [](const std::string& m) { throw Error("model: " + m); };
  if (vocab == 0) fail("vocab is 0 (the task sets it)");
  if (d_model == 0 || n_layers == 0 || n_heads == 0) fail("d_model, n_layers and n_heads must be positive");
  if (d_model % n_heads != 0)
    fail("d_model " + std::to_string(d_model) + " is not divisible by n_heads " + std::to_string(n_heads));
  if (dropout < 0 || dropout >= 1) fail("dropout must be in [0, 1)");
  loop.check(n_layers);
  resolve_encoding_params(encoding, encoding_params, dims_for(encoding));  // throws on bad encoding settings
  for (const std::string& name : extra_encoding_names()) resolve_encoding_params(name, params_of(name), dims_for(name));
  const auto& names = attention_scaling_names();
  if (std::find(names.begin(), names.end(), attention.scaling) == names.end())
    fail("attention.scaling '" + attention.scaling + "' is not one of: none, fixed, log_length, learned, ssmax");
  const std::vector<std::size_t> windows = layer_windows(attention.window, n_layers);
  layer_qk_norms(qk_norm, n_layers);  // throws on a malformed pattern
  check_canon_settings(canon);
  check_encoding_heads();
  if (!causal && std::any_of(windows.begin(), windows.end(), [](std::size_t w) { return w > 0; }))
    fail("attention.window \"" + attention.window + "\" needs causal attention (model.causal = true)");
  const std::vector<std::size_t> chunks = layer_chunks(attention.chunk, n_layers);
  if (!causal && std::any_of(chunks.begin(), chunks.end(), [](std::size_t c) { return c > 0; }))
    fail("attention.chunk \"" + attention.chunk + "\" needs causal attention (model.causal = true)");
  layer_tuning(attention.temperature_tuning, n_layers);
  if (!(attention.tuning_floor_scale >= 1))
    fail("attention.tuning_floor_scale = " + format_value(Value(attention.tuning_floor_scale)) +
         " must be at least 1 (Llama 4: 8192)");
  if (!(attention.temperature > 0)) fail("attention.temperature must be positive");
  if (attention.scaling == "none" && attention.temperature != 1)
    fail("attention.temperature = " + format_value(Value(attention.temperature)) +
         " has no effect with attention.scaling = \"none\"; use scaling = \"fixed\" (or log_length, learned)");
  if (attention.scaling == "log_length" && log_length_base() < 2)
    fail("attention.scaling = \"log_length\" needs a base length L >= 2 (log_length_base, or the training length); got " +
         std::to_string(log_length_base()));
}

std::size_t ModelConfig::log_length_base() const {
  return attention.log_length_base ? attention.log_length_base : train_seq_len;
}

std::vector<std::string> ModelConfig::layer_encoding_names() const {
  if (layer_encodings.empty()) return std::vector<std::string>(n_layers, encoding);
  const std::string what = "encoding.layers \"" + layer_encodings + "\"";
  std::vector<std::string> pattern;
  std::stringstream in(layer_encodings);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    const EncodingSpec* spec = nullptr;
    try {
      spec = &EncodingRegistry::instance().get(encoding_base_name(item));  // a variant "rope.global" too
    } catch (const Error& e) {
      throw Error("model: " + what + ": " + e.what());
    }
    if (spec->input_level && item != encoding)
      throw Error("model: " + what + ": '" + item + "' acts on the token embeddings, not in a layer; make it "
                  "[encoding] name (model-wide) and list attention-level encodings here");
    pattern.push_back(item);
  }
  if (pattern.empty() || n_layers % pattern.size() != 0)
    throw Error("model: " + what + " has " + std::to_string(pattern.size()) + " entries for " +
                std::to_string(n_layers) + " layers; expected a pattern whose length divides model.n_layers");
  std::vector<std::string> out(n_layers);
  for (std::size_t i = 0; i < n_layers; ++i) out[i] = pattern[i % pattern.size()];
  return out;
}

// [encoding] heads within 1..n_heads, and only for encodings that can act per head: relative keys and
// values (Shaw) are one table for every head, and a normalizer replaces every head's softmax.
void ModelConfig::check_encoding_heads() const {
  if (encoding_heads == 0) return;
  if (encoding_heads > n_heads)
    throw Error("model: encoding.heads = " + std::to_string(encoding_heads) + " exceeds model.n_heads = " +
                std::to_string(n_heads) + "; expected 1..n_heads, or 0 for every head");
  std::vector<std::string> names = extra_encoding_names();
  names.push_back(encoding);
  for (const std::string& name : names) {
    const EncodingSpec& spec = EncodingRegistry::instance().get(name);
    if (spec.relative_kv || spec.replaces_softmax)
      throw Error("model: encoding.heads = " + std::to_string(encoding_heads) + " cannot restrict '" + name +
                  "' to some heads: " + (spec.replaces_softmax ? "it replaces the softmax of every head" :
                                          "its relative keys and values are one table for every head") +
                  "; use encoding.heads = 0");
  }
}

std::vector<std::string> ModelConfig::extra_encoding_names() const {
  std::vector<std::string> extra;
  for (const std::string& n : layer_encoding_names())
    if (n != encoding && std::find(extra.begin(), extra.end(), n) == extra.end()) extra.push_back(n);
  return extra;
}

const std::map<std::string, Value>& ModelConfig::params_of(const std::string& name) const {
  static const std::map<std::string, Value> none;
  if (name == encoding) return encoding_params;
  const auto it = layer_encoding_params.find(name);
  return it == layer_encoding_params.end() ? none : it->second;
}

SelfAttention::SelfAttention(std::size_t d, std::size_t h, bool c, const AttentionScalingSettings& sc, std::size_t L,
                             std::size_t window, std::size_t enc_heads, std::size_t chunk, bool tuning)
    : n_heads(h), causal(c), window(window), chunk(chunk), tuning(tuning), enc_heads(enc_heads), scaling(sc),
      log_base(L) {
  qkv = &add_module("qkv", std::make_unique<Linear>(d, 3 * d));
  proj = &add_module("proj", std::make_unique<Linear>(d, d, true, /*residual=*/true));
  if (sc.scaling == "learned") {
    const double w0 = -std::log(sc.temperature);
    log_scale = add_parameter("log_scale", {h}, ParamKind::bias, [w0](Array& v, Rng&) { v.fill(real(w0)); });
  }
  if (sc.scaling == "ssmax") {  // s log(L) = 1 / temperature at the training length (attention_scaling.hpp)
    const double s0 = 1.0 / (std::log(double(std::max<std::size_t>(L, 2))) * sc.temperature);
    ssmax_s = add_parameter("ssmax_s", {h}, ParamKind::bias, [s0](Array& v, Rng&) { v.fill(real(s0)); });
  }
}

void SelfAttention::add_qk_norm(std::size_t hs, real eps) {
  qk_norm_eps = eps;
  q_norm = add_parameter("q_norm.weight", {hs}, ParamKind::norm_gain);
  k_norm = add_parameter("k_norm.weight", {hs}, ParamKind::norm_gain);
}

void SelfAttention::add_canon_b(std::size_t d, const CanonSettings& s) {
  canon_b = &add_module("canon_b", std::make_unique<Canon>(3 * d, s.kernel, s.residual));
}

Tensor SelfAttention::forward(const Tensor& x, PositionalEncoding& pe, const AttentionContext& ctx,
                              Array* probs_out) const {
  Tensor qkv_out = qkv->forward(x);  // (B, T, 3C)
  if (canon_b) qkv_out = canon_b->forward(qkv_out);  // Canon B: before QK-norm and the encoding
  AttentionOptions o;
  o.causal = causal;
  o.window = window;
  o.chunk = chunk;
  o.probs_out = probs_out;
  pe.choose_normalizer(o);
  // Captured (layers/capture.hpp): the path training takes, its weights through probs_out and q, k, v
  // copied off the tape from whatever tensor holds them.
  LayerCapture* cap = layer_capture(ctx.layer);
  if (cap && !probs_out) o.probs_out = &cap->weights;
  const auto keep = [&](const Tensor& out) {
    if (cap && probs_out) cap->weights = *probs_out;
    return out;
  };
  // Without a tape, an encoding that gives its bias by query rows gets asked tile by tile.
  const bool tiles = !o.probs_out && x.size(1) > kBiasQueryTile && pe.bias_by_query_rows() &&
                     !Tape::current().should_record({&qkv_out});
  if (packed && pe.leaves_qk_alone() && !scales_queries(x.size(1)) && !normalizes_qk() && !tiles) {
    // q, k, v read in place from the projection, heads merged in place: no split or merge copies.
    o.bias = bias_in_some_heads(pe.attention_bias(Tensor(), Tensor(), ctx));  // such an encoding does not read q, k
    o.rel = pe.relative_kv(ctx);
    if (cap) capture_qkv(qkv_out, n_heads, *cap);
    return keep(proj->forward(attention_packed(qkv_out, n_heads, o)));  // (B, T, C)
  }
  if (packed && !some_heads() && !scales_queries(x.size(1)) && !normalizes_qk() && !tiles) {
    if (const auto r = pe.rotary_qk(ctx)) {  // a rotation only (RoPE, HoPE, xPos): q, k rotated in place
      const Tensor rotated = rotary_qkv(qkv_out, n_heads, r->q, r->k, r->layout);  // (B, T, 3C)
      if (cap) capture_qkv(rotated, n_heads, *cap);
      return keep(proj->forward(attention_packed(rotated, n_heads, o)));
    }
  }
  Tensor q = split_heads(qkv_out, n_heads, 3, 0), k = split_heads(qkv_out, n_heads, 3, 1);  // (B, H, T, hs)
  const Tensor v = split_heads(qkv_out, n_heads, 3, 2);
  if (normalizes_qk()) {  // normalize, then the encoding rotates (layers/qk_norm.hpp)
    q = rms_norm_last(q, q_norm, qk_norm_eps);
    k = rms_norm_last(k, k_norm, qk_norm_eps);
  }
  encode_some_heads(q, k, pe, ctx);
  if (cap) cap->q = q.value(), cap->k = k.value(), cap->v = v.value();
  if (tiles) return proj->forward(merge_heads(attention_by_tiles(q, scaled_queries(q), k, v, o, pe, ctx)));
  o.bias = bias_in_some_heads(pe.attention_bias(q, k, ctx));  // (B or 1, H or 1, T, T) or undefined
  o.rel = pe.relative_kv(ctx);
  // Temperature / log-length scaling: after the encoding (CoPE's gates read the unscaled q).
  return keep(proj->forward(merge_heads(attention(scaled_queries(q), k, v, o))));  // (B, T, C)
}

Tensor SelfAttention::scaled_queries(const Tensor& q) const {
  const std::size_t T = q.size(2);
  const auto tune = tuning_rows(T);  // Llama 4's temperature tuning, on top of [attention] scaling
  const auto tuned = [&tune](const Tensor& x) { return tune ? scale_queries(x, Tensor(), tune) : x; };
  if (log_scale.defined()) return tuned(scale_queries(q, pelab::exp(log_scale), nullptr));
  if (scaling.scaling == "none") return tuned(q);
  // ssmax: s[h] (learned) times log n per row
  if (!rows_ || rows_->size() != T) rows_ = query_row_scales(scaling, T, causal, log_base, window, chunk);
  return tuned(scale_queries(q, ssmax_s, rows_));
}

std::shared_ptr<const std::vector<real>> SelfAttention::tuning_rows(std::size_t T) const {
  if (!tuning || (training() && !scaling.tuning_in_training)) return nullptr;
  if (!tuning_rows_ || tuning_rows_->size() != T) tuning_rows_ = tuning_row_scales(scaling, T);
  return tuning_rows_ && tuning_rows_->size() == T ? tuning_rows_ : nullptr;
}

// Queries [i0, i1) at a time against every key (causal: query_offset i0 masks the later ones), with the
// encoding's bias for just those rows (PositionalEncoding::bias_by_query_rows): no (T, T) bias or table
// of the encoding exists. Every full tile asks for buffers of one size, which the caching allocator
// hands back tile after tile (a tile against keys [0, i1) only would leave one size class per tile).
// q unscaled (what the bias may read), qs scaled (what the logits use). (B, H, T, hv)
Tensor SelfAttention::attention_by_tiles(const Tensor& q, const Tensor& qs, const Tensor& k, const Tensor& v,
                                         AttentionOptions o, PositionalEncoding& pe,
                                         const AttentionContext& ctx) const {
  const std::size_t T = q.size(2), n = std::min(T, kBiasQueryTile);
  std::vector<Tensor> outs;
  for (std::size_t i0 = 0; i0 < T; i0 += n) {
    // The last tile moves back to stay full (its first rows computed twice, kept once): every tile asks
    // for buffers of the same sizes.
    const std::size_t from = std::min(i0, T - n), i1 = std::min(T, i0 + n);
    AttentionContext tile = ctx;
    tile.tile = {from, from + n, T};
    o.bias = bias_in_some_heads(pe.attention_bias(slice(q, 2, from, from + n), k, tile));  // (.., n, T)
    o.rel = pe.relative_kv(tile);  // Shaw: the tile's bucket rows (1 or B, n, T)
    o.query_offset = std::ptrdiff_t(from);
    const Tensor out = attention(slice(qs, 2, from, from + n), k, v, o);  // (B, H, n, hv)
    outs.push_back(from < i0 ? slice(out, 2, i0 - from, i1 - from) : out);
    o.bias = Tensor(), o.rel = RelativeKV();  // freed before the next tile's are built: one tile's at a time
  }
  return concat(outs, 2);
}

void SelfAttention::encode_some_heads(Tensor& q, Tensor& k, PositionalEncoding& pe, const AttentionContext& ctx) const {
  if (!some_heads()) return pe.encode_qk(q, k, ctx);
  const Tensor q0 = q, k0 = k;
  pe.encode_qk(q, k, ctx);
  if (q.impl() == q0.impl() && k.impl() == k0.impl()) return;  // encode_qk did nothing
  const std::size_t n = enc_heads, H = n_heads;
  if (q.size(3) != q0.size(3))
    throw Error("encoding.heads = " + std::to_string(n) + ": the encoding changes the head width (" +
                std::to_string(q0.size(3)) + " -> " + std::to_string(q.size(3)) + "), so it cannot act in some heads only");
  q = concat({slice(q, 1, 0, n), slice(q0, 1, n, H)}, 1);  // (B, H, T, hs)
  k = concat({slice(k, 1, 0, n), slice(k0, 1, n, H)}, 1);
}

Tensor SelfAttention::bias_in_some_heads(const Tensor& bias) const {
  if (!bias.defined() || !some_heads()) return bias;
  if (!head_mask_.defined()) {
    Array m(Shape{1, n_heads, 1, 1});
    for (std::size_t h = 0; h < n_heads; ++h) m(0, h, 0, 0) = real(h < enc_heads);
    head_mask_ = Tensor(std::move(m));
  }
  return mul(bias, head_mask_);  // (B or 1, H, T, T)
}

Block::Block(const ModelConfig& cfg, std::size_t window, std::size_t chunk, bool tuning, bool qk_norm)
    : dropout_p(cfg.dropout) {
  ln1 = &add_module("ln1", std::make_unique<LayerNorm>(cfg.d_model, cfg.ln_eps));
  attn = &add_module("attn", std::make_unique<SelfAttention>(cfg.d_model, cfg.n_heads, cfg.causal, cfg.attention,
                                                            cfg.log_length_base(), window, cfg.encoding_heads,
                                                            chunk, tuning));
  ln2 = &add_module("ln2", std::make_unique<LayerNorm>(cfg.d_model, cfg.ln_eps));
  const std::size_t F = cfg.d_ff ? cfg.d_ff : 4 * cfg.d_model;
  mlp = &add_module("mlp", std::make_unique<MLP>(cfg.d_model, F, cfg.activation));
  // Optional modules after the existing ones: a checkpoint without them keeps its parameter order.
  if (qk_norm) attn->add_qk_norm(cfg.d_model / cfg.n_heads, cfg.ln_eps);
  const CanonSettings& k = cfg.canon;
  if (k.has('B')) attn->add_canon_b(cfg.d_model, k);
  if (k.has('A')) canon_a = &add_module("canon_a", std::make_unique<Canon>(cfg.d_model, k.kernel, k.residual));
  if (k.has('C')) canon_c = &add_module("canon_c", std::make_unique<Canon>(cfg.d_model, k.kernel, k.residual));
  if (k.has('D')) canon_d = &add_module("canon_d", std::make_unique<Canon>(F, k.kernel, k.residual));
}

// mlp.forward(xn) as MLP::forward computes it (the same ops) unless Canon D sits between the hidden
// projection and the activation; the hidden (B, T, F) after the activation kept when asked.
Tensor Block::mlp_forward(const Tensor& xn, Array* hidden_out) const {
  if (!canon_d && !hidden_out) return mlp->forward(xn);
  const Tensor &w = mlp->fc->weight, &b = mlp->fc->bias;
  const Tensor hidden = canon_d ? activate(canon_d->forward(mlp->fc->forward(xn)), mlp->act)
                        : mlp->act == Activation::gelu ? linear_gelu(xn, w, b)
                                                      : activate(mlp->fc->forward(xn), mlp->act);
  if (hidden_out) *hidden_out = array_copy(hidden.value());
  return mlp->proj->forward(hidden);
}

// Pre-LN: x + attn(canon_a(ln1(x))), then h + mlp(canon_c(ln2(h))), each Canon when present.
Tensor Block::forward(const Tensor& x, PositionalEncoding& pe, const AttentionContext& ctx,
                      const ForwardOptions& opt) const {
  Array* probs = opt.attention_maps ? &(*opt.attention_maps)[ctx.layer] : nullptr;
  Tensor xn = ln1->forward(x);  // (B, T, C)
  if (canon_a) xn = canon_a->forward(xn);  // what the attention, and an encoding reading its input, see
  AttentionContext layer_ctx = ctx;
  layer_ctx.input = &xn;
  layer_ctx.window = attn->window;
  LayerCapture* cap = layer_capture(ctx.layer);
  if (cap) cap->residual = x.value();
  Tensor a = attn->forward(xn, pe, layer_ctx, probs);
  if (dropout_p > 0 && training()) a = pelab::dropout(a, dropout_p, *opt.dropout_rng, true);
  if (cap) cap->attention = a.value();
  Tensor h = add(x, a);
  Tensor hn = ln2->forward(h);
  if (canon_c) hn = canon_c->forward(hn);
  Tensor m = mlp_forward(hn, cap ? &cap->mlp_hidden : nullptr);
  if (dropout_p > 0 && training()) m = pelab::dropout(m, dropout_p, *opt.dropout_rng, true);
  return add(h, m);
}

Transformer::Transformer(const ModelConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  const ModelDims dims = cfg_.dims_for(cfg_.encoding);
  // The encoding is built first (it decides the token width) but registered second: parameter order
  // (checkpoints, the init stream) stays tok_emb, pos, blocks.
  const Params ep = resolve_encoding_params(cfg_.encoding, cfg_.encoding_params, dims);
  std::unique_ptr<PositionalEncoding> pos = make_encoding(cfg_.encoding, ep, dims);
  const std::size_t width = pos->token_width(cfg_.d_model);
  if (cfg_.tie_embeddings && width != cfg_.d_model)  // encodings refuse this at load; a last guard
    throw Error("model: tie_embeddings needs d_model-wide token embeddings; encoding '" + cfg_.encoding +
                "' makes them " + std::to_string(width) + " wide");
  tok_emb_ = &add_module("tok_emb", std::make_unique<Embedding>(cfg_.vocab, width));
  pos_ = &add_module("pos", std::move(pos));
  add_layer_encodings();
  const std::vector<std::size_t> windows = layer_windows(cfg_.attention.window, cfg_.n_layers);
  const std::vector<std::size_t> chunks = layer_chunks(cfg_.attention.chunk, cfg_.n_layers);
  const std::vector<bool> tuning = layer_tuning(cfg_.attention.temperature_tuning, cfg_.n_layers);
  const std::vector<bool> qk_norms = layer_qk_norms(cfg_.qk_norm, cfg_.n_layers);
  for (std::size_t i = 0; i < cfg_.n_layers; ++i)
    blocks_.push_back(&add_module("blocks." + std::to_string(i),
                                  std::make_unique<Block>(cfg_, windows[i], chunks[i], tuning[i], qk_norms[i])));
  ln_f_ = &add_module("ln_f", std::make_unique<LayerNorm>(cfg_.d_model, cfg_.ln_eps));
  if (!cfg_.tie_embeddings) head_ = &add_module("head", std::make_unique<Linear>(cfg_.d_model, cfg_.vocab, false));
}

// The layout's other encodings, registered after "pos" as "pos_<name>" (names never collide with
// "pos.<param>"), and each layer's encoding.
void Transformer::add_layer_encodings() {
  const std::vector<std::string> extra = cfg_.extra_encoding_names();
  for (const std::string& name : extra) {
    const ModelDims dims = cfg_.dims_for(name);
    const Params p = resolve_encoding_params(name, cfg_.params_of(name), dims);
    extra_pos_.push_back(&add_module("pos_" + name, make_encoding(name, p, dims)));
  }
  for (const std::string& name : cfg_.layer_encoding_names()) {
    const auto it = std::find(extra.begin(), extra.end(), name);
    layer_pos_.push_back(it == extra.end() ? pos_ : extra_pos_[std::size_t(it - extra.begin())]);
  }
}

Tensor Transformer::forward(const IndexArray& tokens, const IndexArray& positions, const ForwardOptions& opt) {
  if (tokens.dimension() != 2 || positions.shape() != tokens.shape())
    throw Error("Transformer::forward: tokens and positions must both be (B, T); got " +
                shape_str(Shape(tokens.shape().begin(), tokens.shape().end())) + " and " +
                shape_str(Shape(positions.shape().begin(), positions.shape().end())));
  if (cfg_.dropout > 0 && training() && !opt.dropout_rng)
    throw Error("Transformer::forward: dropout > 0 in training mode needs ForwardOptions::dropout_rng");
  // A step of the caching allocator's reuse rule (core/allocator.hpp): this forward, and its backward.
  memory::begin_step();
  if (opt.attention_maps) opt.attention_maps->assign(cfg_.n_layers, Array());
  pos_->begin_forward(positions);
  for (PositionalEncoding* e : extra_pos_) e->begin_forward(positions);
  const InputContext input{positions, opt.digit_index, training() ? opt.dropout_rng : nullptr};
  ForwardCapture* cap = forward_capture();
  Tensor emb = tok_emb_->forward(tokens);  // (B, T, C_tok)
  if (cap) {
    if (cap->layers_too) cap->layers.assign(cfg_.n_layers, LayerCapture());
    if (emb.requires_grad()) emb.retain_grad();
    cap->embeddings = emb;
  }
  Tensor x = pos_->encode_input_context(emb, input);  // (B, T, C)
  if (cfg_.dropout > 0 && training()) x = pelab::dropout(x, cfg_.dropout, *opt.dropout_rng, true);
  x = run_blocks(x, positions, rows_share_positions(positions), opt);
  if (cap && cap->layers_too) cap->final_residual = x.value();
  x = ln_f_->forward(x);
  return head_ ? head_->forward(x) : linear(x, tok_emb_->weight);  // (B, T, V)
}

// The blocks in order, the [loop] group [first, end) applied N = loops_at(T) times: each application
// after the first runs on x + e, e the group's input (Fan et al. 2025: input injection). The
// weights are the group's own every time: the tape sums their gradients over the applications. An
// applied block sees its own index as ctx.layer (its encoding, window, captures; attention maps keep
// the last application's).
Tensor Transformer::run_blocks(Tensor x, const IndexArray& positions, bool shared, const ForwardOptions& opt) {
  const LoopSettings& loop = cfg_.loop;
  const std::size_t first = loop.first, end = loop.end(blocks_.size()), n = loop.loops_at(positions.shape()[1]);
  if (n == 0) throw Error("Transformer::forward: loop rule gives 0 loops at T = " + std::to_string(positions.shape()[1]));
  const auto apply = [&](std::size_t i) {
    x = blocks_[i]->forward(x, *layer_pos_[i], {positions, i, shared}, opt);  // (B, T, C)
    if (opt.between_layers) opt.between_layers();
  };
  for (std::size_t i = 0; i < first; ++i) apply(i);
  const Tensor e = x;  // (B, T, C) the group's input, injected at every loop
  for (std::size_t r = 0; r < n; ++r) {
    if (r > 0) x = add(x, e);
    for (std::size_t i = first; i < end; ++i) apply(i);
  }
  for (std::size_t i = end; i < blocks_.size(); ++i) apply(i);
  return x;
}

}  // namespace pelab
