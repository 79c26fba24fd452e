// A forward's insides, recorded for inspection from Python (pelab.Model.activations, python/insides.cpp).
// Off by default (forward_capture() is null): then nothing is recorded. On, every layer takes the path it
// takes without a capture (training's, on a tape: the same ops, the same bits) and records what it
// computed: q, k and v copied off the tape from the tensor that holds them (the projection itself on the
// packed path attention_packed, the rotated projection on rotary_qkv, the split heads otherwise), the
// weights through AttentionOptions::probs_out (which keeps P whole where training would recompute it
// block by block: the same arithmetic), the MLP as MLP::forward's two ops with its hidden kept. Without a
// tape, the query-tile path (PositionalEncoding::bias_by_query_rows) is left for the whole-P one.
#pragma once

#include <vector>

#include "core/tensor.hpp"

namespace pelab {

struct LayerCapture {
  Array residual;    // (B, T, C) the block's input: the residual stream before the layer
  Array q, k;        // (B, H, T, hs) after the encoding (and [encoding] heads), before [attention] scaling
  Array v;           // (B, H, T, hv)
  Array weights;     // (B, H, T, T) attention weights after the normalizer (softmax or stick-breaking)
  Array attention;   // (B, T, C) the attention's output (after proj), added to the residual
  Array mlp_hidden;  // (B, T, F) the MLP's hidden after its activation
};

struct ForwardCapture {
  bool layers_too = true;  // false: the embeddings only, every path of the layers as without a capture
  Tensor embeddings;     // (B, T, C_tok) the token embeddings; retain_grad: their gradient after backward
  std::vector<LayerCapture> layers;
  Array final_residual;  // (B, T, C) after the last block, before ln_f
};

// The capture of this thread's forward passes, or null (the default). Set it for one forward, then
// reset it: forward_capture() = &c; ...; forward_capture() = nullptr.
ForwardCapture*& forward_capture();

}  // namespace pelab
