// The positional-encoding interface and its registry: the page to read before writing an encoding.
//
// Each encoding is one file in layers/positional/ that registers itself with PELAB_REGISTER_ENCODING
// (encoding_spec below: name, summary, then by name whether it is relative, parameters, an optional
// load-time check, a factory, and what it reads); configs, sweeps, `pelab list` and the
// property tests (tests/layers/test_positional.cpp) find it by name.
//
// Positions are data: every forward pass gets explicit (B, T) position ids. They are 0..T-1 in the
// usual case, but training and evaluation may give each row its own ids (an offset start, or sorted
// random ids from a larger range: training/positions.hpp). So an encoding must work with any ids per
// row: bounds such as a learned table's size are reported through unsupported(), and pairwise
// quantities are functions of the two ids p_i, p_j, never of the indices i, j.
//
// The hooks, in the order the model calls them (each defaults to "do nothing"):
//   begin_forward   once per forward pass, before anything else: build what depends on the positions
//                   only (rotation tables, distance or bucket tables) here, once, and share it across
//                   layers; keep it while the same positions come back.
//   encode_input    on the token embeddings x (B, T, C) (add, multiply, concatenate a position vector:
//                   sinusoidal, learned, concat; or run a recurrence over them: recurrent). An encoding
//                   that concatenates asks for narrower token embeddings with token_width().
//   then in every attention layer, with an AttentionContext:
//   encode_qk       on q and k (B, H, T, hs) per head after projection (rotations: RoPE, xPos).
//   attention_bias  an additive logit bias, (B or 1, H or 1, Tq, Tk): ALiBi, T5, Kerple, FIRE (which give
//                   it by query tiles without a tape: bias_by_query_rows, ctx.tile). Use a
//                   batch dim of 1 when ctx.shared_positions (every row has the same ids): one bias for
//                   the batch, B times less work; a head dim of 1 shares the bias across heads. It gets
//                   q and k (after encode_qk) for content-dependent encodings (CoPE); most ignore them.
//                   It may require grad (learned biases); the attention backward sums it over the dims
//                   it broadcasts along.
//   relative_kv     relative key/value embeddings inside the attention (Shaw et al. 2018): per (query,
//                   key) pair a bucket index into tables a^K, a^V (R, hs); the fused attention adds
//                   q_i . a^K[idx_ij] to the logits and sum_j P_ij a^V[idx_ij] to the output without
//                   materialising (B, H, T, T, hs) (core/ops/attention.hpp).
//   choose_normalizer  how the layer's logits become weights (core/ops/attention.hpp Normalizer):
//                   softmax unless the encoding says otherwise (stick_breaking).
// Content-dependent encodings read the layer's input: ctx.input is the attention's input x (B, T, C)
// (after the block's LayerNorm), so attention_bias may project it with the encoding's own trainable
// weights (FoX's forget gates: layers/positional/fox.cpp) and the gradient flows back through x.
//
// Layouts ([encoding] layers, [attention] window): each layer may run another attention-level encoding
// (a pattern such as "none,rope" repeated over the layers) and a sliding window (ctx.window). The model
// builds one instance per encoding name: `name`'s is "pos", every other's "pos_<name>", and each sees
// only its own layers (ctx.layer stays the model's layer index). Input-level encodings
// (EncodingSpec::input_level: learned, sinusoidal, the history ones) act on the embeddings once and
// stay model-wide.
// The logits of one head are then  s (q_i . k_j + q_i . a^K[idx_ij]) + bias_ij, causal-masked, with
// s = 1/sqrt(hs) times the temperature or log-length scaling of [attention] (layers/attention_scaling.hpp),
// the one place for logit scales (an encoding has no hook for them).
//
// Trainable tensors made with add_parameter are saved in checkpoints under "pos.<name>" and initialized
// by their ParamKind (layers/module.hpp) unless given an initializer. An encoding also declares whether
// it is relative (EncodingSpec::relative): shifting every position id by the same constant leaves the
// logits unchanged. The property tests check that claim both ways, causality under every position
// mode, and that two rows with different ids give the results of two one-row batches; a PyTorch
// twin in tests/pytorch/pelab_ref.py with a fixture in gen_fixtures.py is required for every encoding.
//
// Memory: nothing is declared. The estimate runs the model's own code shape-only (layers/dry_run.hpp), so an
// encoding's hooks must allocate under core/shape_only.hpp as they do in a real run and skip their kernels;
// tests/layers/test_shape_only_registry.cpp checks every registered encoding's trace against a real forward.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ops/attention.hpp"  // RelativeKV
#include "core/ops/rotary.hpp"     // RotaryTables
#include "core/rng.hpp"
#include "layers/module.hpp"
#include "core/params/param_spec.hpp"
#include "core/params/registry.hpp"

namespace pelab {

// The model's shape as an encoding sees it.
struct ModelDims {
  std::size_t vocab = 0, d_model = 0, n_heads = 0, head_dim = 0, n_layers = 0;
  std::size_t train_seq_len = 0;  // the longest training sequence in tokens
  std::size_t max_position = 0;   // training position ids are < this (train_seq_len for contiguous ids,
                                  // [train] max_position for offset/randomized): tables size from it
  bool causal = true;             // false: bidirectional attention (e.g. T5's two-sided buckets)
  bool tie_embeddings = false;    // the LM head reuses the token table: it must then be d_model wide
  // The layers this encoding runs in (ascending) when an [encoding] layers layout gives some to other
  // encodings; every_layer otherwise. An encoding with per-layer parameters makes them for these layers
  // only, named by the layer's own index, so no parameter exists that no layer reads.
  bool every_layer = true;
  std::vector<std::size_t> layers;  // when !every_layer; may be empty ([encoding] name not in the layout)
  bool runs_in(std::size_t layer) const;
  std::size_t layers_run() const;  // how many layers it runs in
  // Per-layer tables (one per layer, or one `shared` by the layers): whether slot l is made (a layer
  // the encoding runs in; the shared slot 0 if it runs in any), and how many are.
  bool makes_table(std::size_t l, bool shared) const { return shared ? l == 0 && layers_run() > 0 : runs_in(l); }
  std::size_t table_count(bool shared) const { return layers_run() == 0 ? 0 : shared ? 1 : layers_run(); }
};

// Query rows [begin, end) against keys [0, keys) of one attention layer: the tile a tape-free forward asks
// a bias for (PositionalEncoding::bias_by_query_rows). Inactive (end = 0): every query, every key.
struct QueryTile {
  std::size_t begin = 0, end = 0, keys = 0;
  bool active() const { return end > 0; }
};

// PositionalEncoding::rotary_qk: q's and k's rotation tables (one table twice for RoPE), and the pairing.
struct RotaryQK {
  std::shared_ptr<const RotaryTables> q, k;
  RotaryLayout layout = RotaryLayout::interleaved;
};

// What an encoding sees inside one attention layer.
struct AttentionContext {
  const IndexArray& positions;  // (B, T) ids of this batch
  std::size_t layer;            // 0-based
  bool shared_positions;        // every row has the same ids: a bias may be (1, H or 1, Tq, Tk)
  const Tensor* input = nullptr;  // the attention's input x (B, T, C), for content-dependent encodings
  std::size_t window = 0;         // this layer's sliding window (0: none; the attention applies it)
  QueryTile tile = {};            // active: attention_bias gives rows [begin, end) x keys [0, keys) only
};

// What an encoding's input hook sees: the position ids and the streams a task may supply beside them.
struct InputContext {
  const IndexArray& positions;              // (B, T) ids of this batch
  const IndexArray* digit_index = nullptr;  // (B, T) each digit's index in its number, 0 elsewhere
                                            // (Batch::digit_index); null when the task supplies none
  Rng* rng = nullptr;  // the forward's training randomness (ForwardOptions::dropout_rng): a random
                       // training offset (abacus) draws from it, checkpointed with the trainer; null at evaluation
};

class PositionalEncoding : public Module {
 public:
  // Once per forward pass before the first layer.
  virtual void begin_forward(const IndexArray& positions) {}
  // x (B, T, C') token embeddings -> (B, T, C), C' = token_width(C).
  virtual Tensor encode_input(const Tensor& x, const IndexArray& positions) { return x; }
  // The model calls this one: encode_input with the ids, unless the encoding reads the other streams (abacus).
  virtual Tensor encode_input_context(const Tensor& x, const InputContext& ctx) { return encode_input(x, ctx.positions); }
  // The token embedding width this encoding wants for a model of width d_model: d_model, unless it
  // makes up the rest itself (concat: d_model - d_pos, the position vector filling the other d_pos).
  virtual std::size_t token_width(std::size_t d_model) const { return d_model; }
  // q, k (B, H, T, hs), replaced in place by their encoded versions.
  virtual void encode_qk(Tensor& q, Tensor& k, const AttentionContext& ctx) {}
  // Additive attention-logit bias (B or 1, H or 1, Tq, Tk), or an undefined Tensor for none.
  virtual Tensor attention_bias(const Tensor& q, const Tensor& k, const AttentionContext& ctx) { return Tensor(); }
  // True when attention_bias honours ctx.tile: (B or 1, H or 1, end - begin, keys) for those rows, from
  // the position ids alone (q and k are the tile's), and relative_kv too (an index (B or 1, end - begin,
  // keys)). A forward without a tape then asks for the bias
  // tile by tile (layers/transformer.cpp), so neither the bias nor a (T, T) table of it ever exists and
  // evaluation memory grows with T, not T^2. The full bias is then built lazily in attention_bias, not in
  // begin_forward. tests/layers/test_streaming_forward.cpp checks every encoding either way.
  virtual bool bias_by_query_rows() const { return false; }
  // Relative key/value embeddings inside the attention; none by default.
  virtual RelativeKV relative_kv(const AttentionContext& ctx) { return RelativeKV(); }
  // Sets o.normalizer (and its options) when the encoding replaces the softmax; softmax by default.
  virtual void choose_normalizer(AttentionOptions& o) const {}
  // True when the model may run this encoding's attention straight on the fused q/k/v projection,
  // without splitting heads (a speed-up only: core/ops/attention.hpp attention_packed, which takes the
  // bias and relative_kv as usual). Only if encode_qk does nothing AND attention_bias
  // does not read q or k (it is then called with undefined q, k). The default, false, is right for
  // every encoding; tests/layers/test_fast_paths.cpp checks every encoding that says true.
  virtual bool leaves_qk_alone() const { return false; }
  // When encode_qk is exactly q = rotary(q, tables.q), k = rotary(k, tables.k) in every head and the
  // encoding adds nothing else to the attention (no bias, no relative_kv, no normalizer): those tables.
  // The model then rotates the fused projection in one op (core/ops/rotary.hpp rotary_qkv) and runs
  // attention_packed on it, instead of splitting heads (a speed-up only, the same bits). nullopt by
  // default; tests/layers/test_fast_paths.cpp checks every encoding that gives tables.
  virtual std::optional<RotaryQK> rotary_qk(const AttentionContext& ctx) { return std::nullopt; }
  // Why this encoding cannot represent position ids up to max_position, or nullopt if it can.
  // Evaluation reports such lengths as "n/a" with this reason instead of failing.
  virtual std::optional<std::string> unsupported(std::int64_t max_position) const { return std::nullopt; }
  // Why it cannot read digit indices up to max_index (InputContext::digit_index), or nullopt: evaluation
  // reports such lengths as "n/a" too (abacus past its table).
  virtual std::optional<std::string> unsupported_digits(std::int64_t max_index) const { return std::nullopt; }
};

// True when every row of positions (B, T) holds the same ids (always for B = 1).
bool rows_share_positions(const IndexArray& positions);

// Query rows per bias tile of a tape-free forward (bias_by_query_rows): 128 keeps FIRE's (rows, T, hidden)
// hidden layer at 256 MB at T = 16384 with hidden 32, and the copies of each tile's keys small.
constexpr std::size_t kBiasQueryTile = 128;

struct EncodingSpec {
  std::string name;
  std::string summary;  // one line, shown by `pelab list`
  // Shifting every position id by the same constant leaves the logits unchanged (tested both ways).
  bool relative = false;
  std::vector<ParamSpec> params;
  // Cross-checks against the model at config-load time (e.g. RoPE needs an even rotated dim); throws Error.
  std::function<void(const Params&, const ModelDims&)> validate;
  std::function<std::unique_ptr<PositionalEncoding>(const Params&, const ModelDims&)> make;
  // Its relative_kv is one table for every head (Shaw): it cannot act in some heads only ([encoding] heads).
  bool relative_kv = false;
  // Its normalize() replaces the softmax of every head (stick-breaking): not in some heads only either.
  bool replaces_softmax = false;
  // It acts on the token embeddings only (begin_forward, encode_input, token_width): model-wide, never
  // a layer of an [encoding] layers pattern.
  bool input_level = false;
  // It reads InputContext::digit_index: configs pair it with a task that supplies the stream
  // (Task::supplies_digit_index), and it reads no position ids.
  bool reads_digit_index = false;
  // Its hooks read the position ids. false (FoX, PaTH, NoPE, ...): a task's own ids (position coupling)
  // would change nothing, so configs refuse that pairing (experiments/config/config_streams.cpp).
  bool reads_position_ids = true;
};

// A registration with every field named, as parameters are (number_param(...).in(lo, hi)):
//   PELAB_REGISTER_ENCODING(alibi, encoding_spec("alibi", "linear distance penalty on attention logits")
//       .relative()
//       .params({number_param("slope_scale", 1.0, "multiplies every head's slope").in(0.0, 100.0)})
//       .make([](const Params& p, const ModelDims& dims) { return std::make_unique<Alibi>(...); }));
// A field not named keeps EncodingSpec's default: not relative, no parameters, no check, attention-level,
// no digit indices, position ids read, softmax kept, no relative keys or values.
class EncodingSpecBuilder {
 public:
  EncodingSpecBuilder(std::string name, std::string summary) {
    spec_.name = std::move(name);
    spec_.summary = std::move(summary);
  }
  EncodingSpecBuilder& relative(bool yes = true) { spec_.relative = yes; return *this; }
  EncodingSpecBuilder& params(std::vector<ParamSpec> p) { spec_.params = std::move(p); return *this; }
  EncodingSpecBuilder& validate(decltype(EncodingSpec::validate) f) { spec_.validate = std::move(f); return *this; }
  EncodingSpecBuilder& make(decltype(EncodingSpec::make) f) { spec_.make = std::move(f); return *this; }
  EncodingSpecBuilder& relative_kv(bool yes = true) { spec_.relative_kv = yes; return *this; }
  EncodingSpecBuilder& replaces_softmax(bool yes = true) { spec_.replaces_softmax = yes; return *this; }
  EncodingSpecBuilder& input_level(bool yes = true) { spec_.input_level = yes; return *this; }
  EncodingSpecBuilder& reads_digit_index(bool yes = true) { spec_.reads_digit_index = yes; return *this; }
  EncodingSpecBuilder& reads_position_ids(bool yes) { spec_.reads_position_ids = yes; return *this; }
  const EncodingSpec& spec() const { return spec_; }

 private:
  EncodingSpec spec_;
};
inline EncodingSpecBuilder encoding_spec(std::string name, std::string summary) {
  return EncodingSpecBuilder(std::move(name), std::move(summary));
}

class EncodingRegistry : public NamedRegistry<EncodingSpec> {
 public:
  static EncodingRegistry& instance();

 private:
  EncodingRegistry() : NamedRegistry("positional encoding", "encodings") {}
};

// Resolves user-given parameters against the spec, validates them against the model, builds the encoding.
Params resolve_encoding_params(const std::string& name, const std::map<std::string, Value>& given,
                               const ModelDims& dims);
std::unique_ptr<PositionalEncoding> make_encoding(const std::string& name, const Params& params,
                                                  const ModelDims& dims);

struct EncodingRegistrar {
  explicit EncodingRegistrar(EncodingSpec spec) { EncodingRegistry::instance().add(std::move(spec)); }
  explicit EncodingRegistrar(const EncodingSpecBuilder& b) : EncodingRegistrar(b.spec()) {}
};

// Positions 0..T-1 (plus an offset) for every row: the usual case.
IndexArray default_positions(std::size_t batch, std::size_t T, std::int32_t offset = 0);

}  // namespace pelab

#define PELAB_REGISTER_ENCODING(ident, ...) \
  static const ::pelab::EncodingRegistrar pelab_encoding_registrar_##ident(__VA_ARGS__)
