// The decoder-only transformer: token embedding -> input-side positional encoding -> N pre-LN blocks
// -> final LayerNorm -> LM head. The token embedding is d_model wide unless the encoding asks for
// fewer columns (PositionalEncoding::token_width: concat fills the rest with a position vector). Parameter names match the PyTorch reference (tests/pytorch).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "layers/attention_scaling.hpp"
#include "layers/basic.hpp"
#include "layers/canon.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab {

// [loop]: depth recurrence (Fan et al., "Looped Transformers for Length Generalization", ICLR 2025,
// arXiv 2409.15647): the blocks [first, first + blocks) form a group applied N times with shared
// weights; before every application after the first, the group's input e (the embedded input when
// first = 0) is added to the state: x <- G(x + e). N = times (rule "fixed"), or N(T) =
// floor(per_token T) + offset for a forward of T tokens (rule "length"). docs/architecture.md#looped-depth.
struct LoopSettings {
  std::size_t first = 0;       // the group's first block
  std::size_t blocks = 0;      // blocks in the group; 0 = every block from `first` on
  std::size_t times = 1;       // rule "fixed": N at every length (1: no looping)
  std::string rule = "fixed";  // "fixed" | "length"
  double per_token = 1;        // rule "length": N(T) = floor(per_token T) + offset
  std::int64_t offset = 0;
  bool looped() const { return rule != "fixed" || times != 1; }
  std::size_t loops_at(std::size_t T) const;  // N for a forward of T tokens (>= 1 once checked)
  // [first, end) of the group in a model of n_layers blocks.
  std::size_t end(std::size_t n_layers) const { return blocks ? first + blocks : n_layers; }
  void check(std::size_t n_layers) const;  // Error "model: loop.<key> ..." when malformed
};

// The [model] section of a config: architecture and initialization, nothing derived from elsewhere.
struct ModelSettings {
  std::size_t d_model = 64, n_layers = 2, n_heads = 4;
  std::size_t d_ff = 0;               // MLP width; 0 = 4 * d_model
  Activation activation = Activation::gelu;
  real dropout = 0;                   // on embeddings, attention output and MLP output
  bool causal = true;                 // false: bidirectional attention
  bool tie_embeddings = false;        // LM head shares tok_emb.weight
  real ln_eps = real(1e-5);
  InitScheme init = InitScheme::gpt2;  // gpt2 | scaled | pytorch (layers/module.hpp)
  double init_std = 0.02;             // gpt2, scaled: Linear weights ~ normal(0, init_std); unused by pytorch
  double emb_init_std = 0.02;         // gpt2, scaled: token embeddings and learned position tables; unused by pytorch
  AttentionScalingSettings attention; // [attention]: temperature / log-length scaling (layers/attention_scaling.hpp)
  std::string qk_norm = "off";        // [attention] qk_norm: "on", "off" or a per-layer pattern (layers/qk_norm.hpp)
  CanonSettings canon;                // [canon]: Canon layers (layers/canon.hpp)
  LoopSettings loop;                  // [loop]: depth recurrence (shared weights, input injection)
  InitOptions init_options() const;   // for init_parameters
};

// Everything a Transformer is built from: the settings plus what the task and the encoding decide.
struct ModelConfig : ModelSettings {
  std::size_t vocab = 0;
  std::string encoding = "none";
  std::map<std::string, Value> encoding_params;  // as given; resolved against the encoding's spec
  // [encoding] layers: each layer's attention-level encoding, a pattern repeated over the layers
  // ("none,rope": NoPE in even layers, RoPE in odd ones); "" = `encoding` in every layer. Every name but
  // `encoding` takes its parameters from layer_encoding_params (as given, [encoding.<name>]).
  std::string layer_encodings;
  std::map<std::string, std::map<std::string, Value>> layer_encoding_params;
  // [encoding] heads: the attention-level encoding acts in heads 0..heads-1 only, the others are NoPE
  // (x-transformers' rotate_num_heads / alibi_num_heads); 0 = every head.
  std::size_t encoding_heads = 0;
  std::size_t train_seq_len = 0;      // the longest training sequence in tokens
  std::size_t max_position = 0;       // training position ids are < this; 0 = train_seq_len (contiguous ids)

  ModelDims dims() const;
  // dims() as the encoding `name` sees it: with the layers the layout gives it (ModelDims::layers).
  ModelDims dims_for(const std::string& name) const;
  std::size_t log_length_base() const;  // attention.log_length_base, or train_seq_len when 0
  // The n_layers encoding names of the layout (each `encoding` without one), and the distinct names
  // other than `encoding` in order of first use; throw Error naming encoding.layers when malformed.
  std::vector<std::string> layer_encoding_names() const;
  std::vector<std::string> extra_encoding_names() const;
  // The given parameters of a name in the layout.
  const std::map<std::string, Value>& params_of(const std::string& name) const;
  void check_encoding_heads() const;  // Error naming encoding.heads when it cannot be honoured
  // Throws Error on inconsistent settings (d_model % n_heads, encoding parameters vs head size...).
  void validate() const;
};

// Optional per-forward extras.
struct ForwardOptions {
  Rng* dropout_rng = nullptr;                 // required when training with dropout > 0 (and abacus's offset)
  const IndexArray* digit_index = nullptr;    // (B, T) Batch::digit_index, for an encoding that reads it (abacus)
  std::vector<Array>* attention_maps = nullptr;  // receives each layer's probabilities (B, H, T, T)
  // Called after each block; may throw to abandon the forward (evaluation stops there on a signal).
  std::function<void()> between_layers;
};

class SelfAttention : public Module {
 public:
  // L: the log-length base (attention_scaling.hpp), resolved; window: this layer's (0: none);
  // enc_heads: the heads the encoding acts in (0: all); chunk: this layer's chunk (0: none); tuning: it
  // applies [attention] temperature_tuning.
  SelfAttention(std::size_t d_model, std::size_t n_heads, bool causal, const AttentionScalingSettings& scaling = {},
                std::size_t L = 0, std::size_t window = 0, std::size_t enc_heads = 0, std::size_t chunk = 0,
                bool tuning = false);
  // x (B, T, C) -> (B, T, C)
  Tensor forward(const Tensor& x, PositionalEncoding& pe, const AttentionContext& ctx, Array* probs_out) const;
  Linear *qkv, *proj;
  Tensor log_scale;  // (H) learned temperature: logits * exp(log_scale[h]); undefined unless "learned"
  Tensor ssmax_s;    // (H) SSMax's s: logits * s[h] log(n); undefined unless "ssmax"
  Tensor q_norm, k_norm;  // (hs) QK-norm's gains (layers/qk_norm.hpp); undefined when off in this layer
  Canon* canon_b = nullptr;  // Canon B on the packed q, k, v (layers/canon.hpp); null when off
  real qk_norm_eps = 0;
  // Called by Block's constructor (after the existing parameters: checkpoints without them load unchanged).
  void add_qk_norm(std::size_t head_size, real eps);
  void add_canon_b(std::size_t d_model, const CanonSettings& s);
  std::size_t n_heads;
  bool causal;
  std::size_t window;  // sliding window (0: none)
  std::size_t chunk = 0;  // chunked local attention (0: none)
  bool tuning = false;    // Llama 4's temperature tuning (AttentionScalingSettings::temperature_tuning)
  std::size_t enc_heads;  // the encoding acts in heads [0, enc_heads) only; 0: every head
  // false: always split heads (the reference the packed path is tested against); true: attention on
  // the packed projection when the encoding allows it (PositionalEncoding::leaves_qk_alone).
  bool packed = true;
  AttentionScalingSettings scaling;
  std::size_t log_base;

 private:
  bool some_heads() const { return enc_heads > 0 && enc_heads < n_heads; }
  // The encoding's q, k and bias kept in heads [0, enc_heads) only (the others as without it).
  void encode_some_heads(Tensor& q, Tensor& k, PositionalEncoding& pe, const AttentionContext& ctx) const;
  Tensor bias_in_some_heads(const Tensor& bias) const;
  // q (B, H, T, hs) scaled as [attention] scaling says (q itself for "none").
  Tensor scaled_queries(const Tensor& q) const;
  Tensor attention_by_tiles(const Tensor& q, const Tensor& qs, const Tensor& k, const Tensor& v, AttentionOptions o,
                            PositionalEncoding& pe, const AttentionContext& ctx) const;
  mutable Tensor head_mask_;  // (1, H, 1, 1): 1 in the encoding's heads
  // q is scaled per head or per query row ([attention] scaling, temperature tuning at T tokens): the
  // packed path cannot.
  bool scales_queries(std::size_t T) const { return scaling.scaling != "none" || tuning_rows(T) != nullptr; }
  // Temperature tuning's row multipliers at T tokens, or null where it does not apply (this layer does
  // not tune, training without tuning_in_training, or every row's multiplier is 1).
  std::shared_ptr<const std::vector<real>> tuning_rows(std::size_t T) const;
  // QK-norm changes q and k per head: the packed paths cannot.
  bool normalizes_qk() const { return q_norm.defined(); }
  mutable std::shared_ptr<const std::vector<real>> rows_;  // query_row_scales for the last T
  mutable std::shared_ptr<const std::vector<real>> tuning_rows_;  // tuning_row_scales for the last T
};

class Block : public Module {
 public:
  // chunk, tuning: this layer's ([attention] chunk, temperature_tuning); qk_norm: it normalizes q and k
  // ([attention] qk_norm); Canon layers from cfg.canon.
  Block(const ModelConfig& cfg, std::size_t window = 0, std::size_t chunk = 0, bool tuning = false,
        bool qk_norm = false);
  Tensor forward(const Tensor& x, PositionalEncoding& pe, const AttentionContext& ctx,
                 const ForwardOptions& opt) const;
  LayerNorm *ln1, *ln2;
  SelfAttention* attn;
  MLP* mlp;
  Canon *canon_a = nullptr, *canon_c = nullptr, *canon_d = nullptr;  // layers/canon.hpp; null when off
  real dropout_p;

 private:
  // The MLP on ln2's output xn, Canon D on its hidden pre-activation; its hidden (B, T, F) copied into
  // hidden_out when given (layers/capture.hpp).
  Tensor mlp_forward(const Tensor& xn, Array* hidden_out) const;
};

class Transformer : public Module {
 public:
  explicit Transformer(const ModelConfig& cfg);
  // tokens, positions (B, T) -> logits (B, T, vocab)
  Tensor forward(const IndexArray& tokens, const IndexArray& positions, const ForwardOptions& opt = {});
  const ModelConfig& config() const { return cfg_; }
  // The model-wide encoding ([encoding] name: the input hooks, and the attention of every layer that
  // the layout does not give another); layer_encoding(i): the one layer i runs.
  PositionalEncoding& encoding() { return *pos_; }
  PositionalEncoding& layer_encoding(std::size_t i) { return *layer_pos_.at(i); }
  const PositionalEncoding& encoding() const { return *pos_; }
  // Whether the attention layers may take the packed path (SelfAttention::packed); tests turn it off.
  void set_packed_attention(bool on) {
    for (Block* b : blocks_) b->attn->packed = on;
  }

 private:
  void add_layer_encodings();
  // blocks_ over x (B, T, C), the [loop] group applied loop.loops_at(T) times with its input injected.
  Tensor run_blocks(Tensor x, const IndexArray& positions, bool shared, const ForwardOptions& opt);
  ModelConfig cfg_;
  Embedding* tok_emb_;
  PositionalEncoding* pos_;
  std::vector<PositionalEncoding*> extra_pos_;  // the layout's other encodings ("pos_<name>")
  std::vector<PositionalEncoding*> layer_pos_;  // (n_layers) the encoding each layer runs
  std::vector<Block*> blocks_;
  LayerNorm* ln_f_;
  Linear* head_ = nullptr;  // null when tied
};

}  // namespace pelab
