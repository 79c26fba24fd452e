// The positional-encoding interface and its registry.
//
// An encoding may act in any of four places; each hook defaults to "do nothing":
//   1. encode_input   on the token embeddings (add, multiply, concatenate-and-project a position vector);
//   2. encode_qk      on q and k per head after projection (rotations: RoPE, xPos);
//   3. attention_bias an additive logit bias (B or 1, H or 1, Tq, Tk) (ALiBi, T5, Shaw, FIRE);
//   4. logit_scale    per-head logit scales replacing 1/sqrt(hs) (temperature, log-length scaling).
// Positions are explicit (B, T) ids, not an implicit 0..T-1, so offsets, randomized or scaled positions
// need no change here. Each encoding is one file in layers/positional/ that registers itself with
// PELAB_REGISTER_ENCODING; the model asks the registry by name.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "layers/module.hpp"
#include "core/params/param_spec.hpp"
#include "core/params/registry.hpp"

namespace pelab {

// The model's shape as an encoding sees it.
struct ModelDims {
  std::size_t vocab = 0, d_model = 0, n_heads = 0, head_dim = 0, n_layers = 0;
  std::size_t train_seq_len = 0;  // the longest training sequence in tokens (tables size from it)
};

class PositionalEncoding : public Module {
 public:
  // Called once per forward pass before the first layer (e.g. to build rotation tables once).
  virtual void begin_forward(const IndexArray& positions) {}
  // 1. x (B, T, C) token embeddings -> (B, T, C).
  virtual Tensor encode_input(const Tensor& x, const IndexArray& positions) { return x; }
  // 2. q, k (B, H, T, hs), replaced in place by their encoded versions.
  virtual void encode_qk(Tensor& q, Tensor& k, const IndexArray& positions, std::size_t layer) {}
  // 3. additive attention-logit bias (B or 1, H or 1, Tq, Tk), or an undefined Tensor for none.
  virtual Tensor attention_bias(const IndexArray& positions, std::size_t layer) { return Tensor(); }
  // 4. per-head logit scales (size H), or empty for the default 1/sqrt(hs).
  virtual std::vector<real> logit_scale(const IndexArray& positions, std::size_t layer) { return {}; }
  // True when encode_qk does nothing (and nothing else here reads q or k): the model then runs the
  // attention straight on the fused q/k/v projection without splitting heads (a speed-up only,
  // core/ops/attention.hpp attention_packed). The default, false, is right for every encoding.
  virtual bool leaves_qk_alone() const { return false; }
  // Why this encoding cannot represent position ids up to max_position, or nullopt if it can.
  // Evaluation reports such lengths as "n/a" with this reason instead of failing.
  virtual std::optional<std::string> unsupported(std::int64_t max_position) const { return std::nullopt; }
};

struct EncodingSpec {
  std::string name;
  std::string summary;  // one line, shown by `pelab list`
  std::vector<ParamSpec> params;
  // Cross-checks against the model at config-load time (e.g. RoPE needs an even rotated dim); throws Error.
  std::function<void(const Params&, const ModelDims&)> validate;
  std::function<std::unique_ptr<PositionalEncoding>(const Params&, const ModelDims&)> make;
};

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
};

// Positions 0..T-1 (plus an offset) for every row: the usual case.
IndexArray default_positions(std::size_t batch, std::size_t T, std::int32_t offset = 0);

}  // namespace pelab

#define PELAB_REGISTER_ENCODING(ident, ...) \
  static const ::pelab::EncodingRegistrar pelab_encoding_registrar_##ident(__VA_ARGS__)
