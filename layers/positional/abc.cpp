// Attention bias calibration, the second stage (Duan et al., arXiv 2310.11984, Section 5 step 3): a model
// retrained with fixed attention biases added to every layer's logits, the biases that `pelab abc` extracted
// from a first model that interpolates (abc_bias.hpp) and extended to any length. Head h adds
// bias_h(p_i - p_j): the file's value for each kept id difference, its `masked` value for every other one
// (the paper's -inf, finite so that a row with nothing kept is uniform rather than NaN). No parameters; a
// function of id differences only, so relative and defined at any length. Without a bias_file it adds
// nothing (the identity: NoPE), which is what the registry's property tests build.
#include <cmath>

#include "core/shape_only.hpp"
#include "layers/positional/abc_bias.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/pairwise.hpp"

namespace pelab {
namespace {

// One head as a dense table over the kept differences [lo, lo + values.size()), `masked` outside it.
struct HeadTable {
  std::int64_t lo = 0;
  std::vector<real> values;
  real masked = 0;
  real at(std::int64_t d) const {
    const std::int64_t k = d - lo;
    return k >= 0 && k < std::int64_t(values.size()) ? values[std::size_t(k)] : masked;
  }
};

HeadTable head_table(const AbcHead& h) {
  HeadTable t;
  t.masked = static_cast<real>(h.masked);
  if (h.kept.empty()) return t;
  t.lo = h.kept.begin()->first;
  t.values.assign(std::size_t(h.kept.rbegin()->first - t.lo + 1), t.masked);
  for (const auto& [d, v] : h.kept) t.values[std::size_t(d - t.lo)] = static_cast<real>(v);
  return t;
}

class Abc : public PositionalEncoding {
 public:
  explicit Abc(const AbcBias& bias) {
    for (const AbcHead& h : bias.heads) heads_.push_back(head_table(h));
  }
  bool leaves_qk_alone() const override { return true; }
  bool bias_by_query_rows() const override { return !heads_.empty(); }  // no file: NoPE's path exactly

  // (1 or B, H, Tq, Tk): bias[b, h, i, j] = bias_h(p_i - p_j); built once per new ids and shared by every
  // layer (the paper applies the one bias to all layers), or per query tile without a tape. None without a file.
  Tensor attention_bias(const Tensor&, const Tensor&, const AttentionContext& ctx) override {
    if (heads_.empty()) return Tensor();
    if (ctx.tile.active()) return Tensor(bias_of(pairwise_difference(ctx.positions, ctx.shared_positions, ctx.tile)));
    if (!seen_.same(ctx.positions)) {
      bias_ = Tensor(bias_of(pairwise_difference(ctx.positions, ctx.shared_positions)));  // a constant
      seen_.set(ctx.positions);
    }
    return bias_;
  }

 private:
  // d (rows, Tq, Tk) -> (rows, H, Tq, Tk)
  Array bias_of(const Array& d) const {
    const std::size_t rows = d.shape()[0], n = d.shape()[1] * d.shape()[2], H = heads_.size();
    Array bias(Shape{rows, H, d.shape()[1], d.shape()[2]});
    real* out = bias.data();
    for (std::size_t b = 0; b < (shape_only() ? 0 : rows); ++b)  // core/shape_only.hpp
      for (std::size_t h = 0; h < H; ++h) {
        const real* dist = d.data() + b * n;
        for (std::size_t k = 0; k < n; ++k) *out++ = heads_[h].at(std::llround(dist[k]));
      }
    return bias;
  }

  std::vector<HeadTable> heads_;
  Tensor bias_;
  SeenPositions seen_;
};

// The file, checked against the heads the encoding runs in; none when no bias_file is given.
AbcBias load_bias(const Params& p, const ModelDims& dims) {
  const std::string& path = p.get_string("bias_file");
  if (path.empty()) return AbcBias{};
  AbcBias b;
  try {
    b = read_abc_bias(path);
  } catch (const Error& e) {
    throw Error(std::string("bias_file: ") + e.what());  // names the key, so a config error points at its line
  }
  if (b.heads.size() != dims.n_heads)
    throw Error("bias_file " + path + " holds biases for " + std::to_string(b.heads.size()) +
                " heads, but the encoding runs in " + std::to_string(dims.n_heads) +
                " ([model] n_heads, or [encoding] heads); calibrate a model with as many heads");
  return b;
}

}  // namespace

PELAB_REGISTER_ENCODING(abc, encoding_spec("abc",
    "fixed attention biases calibrated from a model that interpolates, per head and id difference "
    "(Duan et al. 2023; `pelab abc` makes the file)")
    .relative()
    .params({string_param("bias_file", "",
        "the bias file `pelab abc` wrote (relative paths: the working directory); empty: no bias (NoPE)")})
    .validate([](const Params& p, const ModelDims& dims) { load_bias(p, dims); })
    .make([](const Params& p, const ModelDims& dims) { return std::make_unique<Abc>(load_bias(p, dims)); }));

}  // namespace pelab
