// The shape-only trial's sub-graph (issue #40; core/shape_only.hpp): one pre-LN attention layer with
// ALiBi's bias and a GELU MLP, forward and (training) backward, built from the converted ops. The fused
// attention (core/ops/attention.cpp) is not converted, so the attention here is spelled out in ops:
// softmax(q k^T / sqrt(hs) + bias) v. The same function runs for real and shape-only: only the scope
// around it differs, which is the point of the design.
#pragma once

#include <cmath>
#include <memory>

#include "core/ops/elementwise.hpp"
#include "core/ops/heads.hpp"
#include "core/ops/matmul.hpp"
#include "core/ops/reduce.hpp"
#include "core/ops/softmax.hpp"
#include "core/rng.hpp"
#include "core/shape_only.hpp"
#include "core/tape.hpp"
#include "layers/basic.hpp"
#include "layers/positional/encoding.hpp"

namespace pelab::test {

struct TrialShape {
  std::size_t B = 2, T = 8, C = 16, H = 2, F = 64;
  bool train = true;
  bool shared_positions = true;  // ALiBi's bias (1, H, T, T); otherwise (B, H, T, T)
};

struct TrialBlock {
  explicit TrialBlock(const TrialShape& s)
      : H(s.H), ln1(s.C), qkv(s.C, 3 * s.C), proj(s.C, s.C, true, true), ln2(s.C), mlp(s.C, s.F, Activation::gelu) {
    ModelDims d;
    d.vocab = 8, d.d_model = s.C, d.n_heads = s.H, d.head_dim = s.C / s.H, d.n_layers = 1;
    d.train_seq_len = d.max_position = s.T;
    enc = make_encoding("alibi", resolve_encoding_params("alibi", {}, d), d);
  }
  // x (B, T, C) -> (B, T, C)
  Tensor forward(const Tensor& x, const IndexArray& positions, bool shared) const {
    const Tensor qkv_out = qkv.forward(ln1.forward(x));  // (B, T, 3C)
    const Tensor q = split_heads(qkv_out, H, 3, 0), k = split_heads(qkv_out, H, 3, 1);
    const Tensor v = split_heads(qkv_out, H, 3, 2);  // (B, H, T, hs)
    const real scale = real(1) / std::sqrt(real(q.size(3)));
    const AttentionContext ctx{positions, 0, shared};
    const Tensor bias = enc->attention_bias(q, k, ctx);  // (1 or B, H, T, T)
    const Tensor p = softmax(add(mul_scalar(matmul(q, k, false, true), scale), bias));
    const Tensor y = add(x, proj.forward(merge_heads(matmul(p, v))));
    return add(y, mlp.forward(ln2.forward(y)));
  }
  std::vector<Tensor> parameters() const {
    return {ln1.weight, ln1.bias, qkv.weight, qkv.bias, proj.weight, proj.bias, ln2.weight, ln2.bias,
            mlp.fc->weight, mlp.fc->bias, mlp.proj->weight, mlp.proj->bias};
  }

  std::size_t H;
  LayerNorm ln1;
  Linear qkv, proj;
  LayerNorm ln2;
  MLP mlp;
  std::unique_ptr<PositionalEncoding> enc;
};

struct TrialResult {
  memory::Trace trace;
  // Real runs: every parameter's gradient (training) or the output, copied outside the allocator.
  std::vector<std::vector<real>> values;
};

// Builds the block, (real runs: fills its parameters and input from `seed`), runs forward and, when
// training, mean(out).backward(), then drops everything. The trace covers all of it. A dry run draws
// nothing and reads no value.
inline TrialResult run_trial(const TrialShape& s, bool dry, std::uint64_t seed = 1) {
  TrialResult r;
  Tape::current().clear();  // what an earlier test left recorded would be released inside the trace
  std::unique_ptr<ShapeOnly> shape_scope;
  std::unique_ptr<memory::TraceScope> real_scope;
  if (dry) shape_scope = std::make_unique<ShapeOnly>();
  else real_scope = std::make_unique<memory::TraceScope>();
  {
    TrialBlock block(s);
    Tensor x = Tensor::zeros({s.B, s.T, s.C}, s.train);
    if (!dry) {
      Rng rng(seed);
      for (Tensor p : block.parameters())
        for (real& v : p.mutable_value()) v = real(rng.normal() * 0.3);
      for (real& v : x.mutable_value()) v = real(rng.normal());
    }
    IndexArray positions(Shape{s.B, s.T});
    for (std::size_t b = 0; b < s.B; ++b)
      for (std::size_t t = 0; t < s.T; ++t) positions(b, t) = std::int32_t(t + (s.shared_positions ? 0 : b));
    if (s.train) {
      const Tensor loss = mean(block.forward(x, positions, s.shared_positions));
      loss.backward();
      if (!dry)
        for (const Tensor& p : block.parameters()) r.values.emplace_back(p.grad().begin(), p.grad().end());
    } else {
      NoGrad ng;
      const Tensor out = block.forward(x, positions, s.shared_positions);
      if (!dry) r.values.emplace_back(out.value().begin(), out.value().end());
    }
  }
  r.trace = dry ? shape_scope->trace() : real_scope->trace();
  return r;
}

}  // namespace pelab::test
