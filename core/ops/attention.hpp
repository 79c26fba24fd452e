// Fused scaled-dot-product attention core: per-(batch, head) GEMMs with the softmax in between.
// Kept as an op (docs/architecture.md, the op set): a composite would keep the logits and the (B, H, Tq, Tk)
// weights twice.
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

// Relative key/value embeddings inside attention (Shaw et al. 2018), shared by the heads. Each
// (query i, key j) pair has a bucket idx_ij in [0, R) (Shaw: the clipped distance j - i, shifted
// to be >= 0); its embeddings a^K[idx_ij] and a^V[idx_ij] join the key and the value:
//   logits_ij = scale_h (q_i . k_j + q_i . a^K[idx_ij]) + bias_ij,   out_i = sum_j P_ij (v_j + a^V[idx_ij]).
// The index table is immutable and shared (not copied) by every layer, head and tape node that uses
// it: build it once per forward (or keep it while the positions do not change). A table by value
// would be copied into every layer's node (T^2 ints each, every step); a plain pointer could dangle
// before backward runs.
struct RelativeKV {
  std::shared_ptr<const IndexArray> index;  // (B or 1, Tq, Tk); only pairs a query sees are read
  Tensor key;                               // (R, hs) a^K, or undefined (no key term)
  Tensor value;                             // (R, hs) a^V, or undefined (no value term)
  bool defined() const { return key.defined() || value.defined(); }
};

// How a row of logits becomes attention weights.
//   softmax         the usual one
//   stick_breaking  Tan et al. 2025: A_ij = sigmoid(z_ij) prod_{j<k<i}(1 - sigmoid(z_ik)), nearest key
//                   first; causal only; weights sum to at most 1 (core/ops/stick_breaking.hpp)
enum class Normalizer { softmax, stick_breaking };

struct AttentionOptions {
  bool causal = true;
  Normalizer normalizer = Normalizer::softmax;
  bool attend_current = false;    // stick_breaking: a query sees its own key too (the reference: no)
  std::size_t window = 0;         // > 0: a causal query sees only its `window` nearest keys (sliding window)
  // > 0: chunked local attention (Llama 4's iRoPE local layers): the query at key row r sees only keys
  // [floor(r / chunk) chunk, r], its own chunk of `chunk` rows; not a sliding window. With a window too,
  // the nearer of the two first keys wins. A chunk >= Tk is full causal attention.
  std::size_t chunk = 0;
  // Causal: query i sits at key row query_offset + i and sees keys j <= query_offset + i; < 0 means
  // Tk - Tq (the queries are the last Tq rows). A tile of queries [i0, i1) against all T keys: i0.
  std::ptrdiff_t query_offset = -1;
  Tensor bias;                    // optional additive logit bias (B or 1, H or 1, Tq, Tk); may require grad
  RelativeKV rel;                 // optional relative keys and/or values
  real scale = real(-1);          // logit scale; < 0 means default 1/sqrt(hv), v's head size
  std::vector<real> head_scale;   // optional per-head scales (size H); overrides `scale` when non-empty
  Array* probs_out = nullptr;     // optional: receives the attention probabilities (B, H, Tq, Tk) (for plots)
};

// Without a tape (and without probs_out) the forward streams query rows in tiles of this many rows with
// a (tile, Tk) scratch per thread instead of keeping (B, H, Tq, Tk): evaluation memory grows with T, not
// T^2. A constant, so results are reproducible (they agree with the taped forward to float rounding).
constexpr std::size_t kAttentionQueryTile = 64;

// With a tape, each layer's probabilities (B, H, Tq, Tk) are kept for backward up to this many bytes; a
// larger attention (long contexts) keeps none: its forward computes the same blocks into one (Tq, Tk)
// scratch per thread, and backward recomputes each (batch, head) block's from the saved q, k and bias
// with the same calls, so the gradients are the same bits, for one more q k^T GEMM and normalization per
// block. Relative keys/values (Shaw) and a requested probs_out keep theirs.
constexpr std::size_t kKeepProbsBytes = std::size_t(64) << 20;
// Whether a recorded attention of these sizes keeps its probabilities (see kKeepProbsBytes).
bool attention_keeps_probs(std::size_t B, std::size_t H, std::size_t Tq, std::size_t Tk, bool relative);
namespace detail {
// Tests only: the threshold in bytes (kKeepProbsBytes by default; 0 recomputes every attention).
void set_keep_probs_bytes(std::size_t bytes);
}  // namespace detail

// q (B, H, Tq, hs), k (B, H, Tk, hs) and v (B, H, Tk, hv) -> (B, H, Tq, hv); hv = hs but where an
// encoding widens q and k (PoPE's cosine and sine parts: hs = 2 hv).
// logits = scale_h * (q k^T + q a^K[idx]) + bias; causal: query i sees keys j <= i + (Tk - Tq) (or
// i + query_offset), and with
// a window only the last `window` of them, with a chunk only those of its own chunk (others get probability 0); the normalizer over the keys (softmax
// or stick-breaking) gives P; out = P v + sum_j P_ij a^V[idx_ij]. Backward gives q, k, v,
// bias (summed over the dims it is broadcast along: batch and/or heads) and a^K, a^V. The relative
// terms never materialise (B, H, Tq, Tk, hs): per (batch, head) one GEMM q a^K^T (Tq, R) and a gather
// into the logits, and a scatter of P into buckets (Tq, R) and one GEMM with a^V; the GEMMs span only
// the buckets the visible pairs use. In the float build, probabilities below e^-86 times the row's
// largest are exactly 0 (a vectorized exp; no denormals). Shape mismatches, causal with Tq > Tk or
// query_offset + Tq > Tk (which would leave rows empty) and a visible pair's bucket outside [0, R) throw Error naming
// "attention".
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt = {});

// The same attention reading q, k and v straight from the fused projection qkv (B, T, 3C) (q = columns
// [0, C), k = [C, 2C), v = [2C, 3C), head h = columns [h hs, (h + 1) hs) of each, C = n_heads hs) and
// writing the heads merged, (B, T, C): merge_heads(attention(split_heads(qkv, H, 3, 0), split_heads(...,
// 1), split_heads(..., 2), opt)) without the split and merge copies (the GEMMs take the row strides),
// and backward writes qkv's gradient directly. Same options; Tq = Tk = T.
Tensor attention_packed(const Tensor& qkv, std::size_t n_heads, const AttentionOptions& opt = {});

}  // namespace pelab
