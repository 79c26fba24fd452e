#include "core/ops/attention_dims.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/ops/common.hpp"

namespace pelab::detail {

namespace {

constexpr const char* kOp = kAttentionOp;

std::string index_shape_str(const IndexArray& a) { return shape_str(Shape(a.shape().begin(), a.shape().end())); }

// The relative terms: tables (R, hs), the index table (B or 1, Tq, Tk), and the range of buckets the
// visible pairs use (the GEMMs span only those). Masked pairs are never read, so never checked.
void check_relative(const RelativeKV& rel, bool causal, AttnDims& d, const std::string& shapes) {
  const Tensor& key = rel.key;
  const Tensor& value = rel.value;
  if (!rel.defined()) {
    require(rel.index == nullptr, kOp, "relative index table given without a key or value table" + shapes);
    return;
  }
  require(rel.index != nullptr, kOp, "relative key/value tables given without an index table" + shapes);
  std::size_t R = 0;
  for (const Tensor* t : {&key, &value}) {
    if (!t->defined()) continue;
    const char* name = t == &key ? "relative key table" : "relative value table";
    const Shape& s = t->shape();
    const std::size_t width = t == &key ? d.hs : d.hv;
    require(s.size() == 2 && s[0] > 0 && s[1] == width, kOp,
            std::string(name) + " " + shape_str(s) + " must be (R, hs) with R > 0, hs = " + std::to_string(width) +
                shapes);
    if (R != 0 && s[0] != R)  // both defined here
      throw Error(std::string(kOp) + ": relative key and value tables differ in size (" + shape_str(key.shape()) +
                  ", " + shape_str(value.shape()) + ")");
    R = s[0];
  }
  const IndexArray& idx = *rel.index;
  const auto& is = idx.shape();
  require(idx.dimension() == 3 && (is[0] == 1 || is[0] == d.B) && is[1] == d.Tq && is[2] == d.Tk, kOp,
          "relative index table " + index_shape_str(idx) + " must be (B or 1, Tq, Tk) = (" + std::to_string(d.B) +
              " or 1, " + std::to_string(d.Tq) + ", " + std::to_string(d.Tk) + ")" + shapes);
  d.rel_rows = is[0];
  require(R <= std::size_t(std::numeric_limits<std::int32_t>::max()), kOp, "too many relative buckets");
  const std::int32_t r = static_cast<std::int32_t>(R);
  std::int32_t lo = std::numeric_limits<std::int32_t>::max(), hi = -1;
  const std::size_t off = d.key_offset;
  if (shape_only()) {  // no values: the range its builder noted from the ids (core/shape_only.hpp)
    const memory::IndexFacts* f = memory::index_facts(idx.data());
    require(f != nullptr, kOp, "a shape-only run needs the relative index table's range (build it with "
                               "pairwise_index, layers/positional/pairwise.hpp)");
    const memory::ValueRange v = causal ? f->causal : f->all;
    require(v.hi < v.lo || (v.lo >= 0 && v.hi < r), kOp, "relative index table out of range [0, " + std::to_string(R) + ")");
    if (v.hi >= v.lo) d.rel_lo = v.lo, d.rel_buckets = static_cast<std::size_t>(v.hi - v.lo + 1);
    return;
  }
  for (std::size_t b = 0; b < d.rel_rows; ++b)
    for (std::size_t i = 0; i < d.Tq; ++i) {
      const std::int32_t* row = idx.data() + (b * d.Tq + i) * d.Tk;
      for (std::size_t j = 0, n = causal ? i + off + 1 : d.Tk; j < n; ++j) {
        const std::int32_t x = row[j];
        if (x < 0 || x >= r)
          throw Error(std::string(kOp) + ": relative index table entry (" + std::to_string(b) + ", " +
                      std::to_string(i) + ", " + std::to_string(j) + ") is " + std::to_string(x) +
                      ", outside [0, " + std::to_string(R) + ")");
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    }
  if (hi >= 0) {
    d.rel_lo = lo;
    d.rel_buckets = static_cast<std::size_t>(hi - lo + 1);
  }
}

}  // namespace

namespace {

// The options' checks, once the dimensions are known.
void check_options(const AttentionOptions& opt, AttnDims& d, const std::string& shapes) {
  require(d.Tk > 0 && d.hs > 0, kOp, "need at least one key and a non-empty head size" + shapes);
  require(!opt.causal || d.Tq <= d.Tk, kOp,
          "causal attention needs Tq <= Tk (query i sees keys j <= i + Tk - Tq)" + shapes);
  d.key_offset = opt.query_offset < 0 ? d.Tk - d.Tq : std::size_t(opt.query_offset);
  require(!opt.causal || d.key_offset + d.Tq <= d.Tk, kOp,
          "query_offset " + std::to_string(opt.query_offset) + " puts the last query past the " +
              std::to_string(d.Tk) + " keys" + shapes);
  if (opt.bias.defined()) {
    const Shape& bs = opt.bias.shape();
    require(bs.size() == 4 && (bs[0] == d.B || bs[0] == 1) && (bs[1] == d.H || bs[1] == 1) && bs[2] == d.Tq &&
                bs[3] == d.Tk,
            kOp,
            "bias " + shape_str(bs) + " must be (B or 1, H or 1, Tq, Tk) = (" + std::to_string(d.B) + " or 1, " +
                std::to_string(d.H) + " or 1, " + std::to_string(d.Tq) + ", " + std::to_string(d.Tk) + ")" + shapes);
    d.bias_batch = bs[0];
    d.bias_heads = bs[1];
  }
  require(opt.causal || opt.normalizer == Normalizer::softmax, kOp,
          "stick-breaking attention is causal only (it breaks the stick from the nearest key back)" + shapes);
  require(opt.causal || opt.window == 0, kOp, "a sliding window needs causal attention" + shapes);
  require(opt.causal || opt.chunk == 0, kOp, "chunked attention needs causal attention" + shapes);
  require(opt.head_scale.empty() || opt.head_scale.size() == d.H, kOp,
          "head_scale has " + std::to_string(opt.head_scale.size()) + " entries for " + std::to_string(d.H) +
              " heads" + shapes);
  check_relative(opt.rel, opt.causal, d, shapes);
}

}  // namespace

AttnDims attention_dims(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  require_defined(q, kOp, "q");
  require_defined(k, kOp, "k");
  require_defined(v, kOp, "v");
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const std::string shapes = " (q " + shape_str(qs) + ", k " + shape_str(ks) + ", v " + shape_str(vs) + ")";
  require(qs.size() == 4 && ks.size() == 4 && vs.size() == 4, kOp, "q, k and v must be 4-D (B, H, T, hs)" + shapes);
  require(qs[0] == ks[0] && qs[1] == ks[1] && qs[3] == ks[3], kOp, "q and k differ in batch, heads or head size" + shapes);
  require(ks[0] == vs[0] && ks[1] == vs[1] && ks[2] == vs[2] && vs[3] > 0, kOp,
          "k and v must agree in batch, heads and keys (v's head size may differ)" + shapes);
  AttnDims d;
  d.B = qs[0];
  d.H = qs[1];
  d.Tq = qs[2];
  d.Tk = ks[2];
  d.hs = qs[3];
  d.hv = vs[3];
  check_options(opt, d, shapes);
  return d;
}

AttnDims attention_packed_dims(const Tensor& qkv, std::size_t n_heads, const AttentionOptions& opt) {
  require_defined(qkv, kOp, "qkv");
  const Shape& s = qkv.shape();
  const std::string shapes = " (qkv " + shape_str(s) + ", " + std::to_string(n_heads) + " heads)";
  require(s.size() == 3 && n_heads > 0 && s[2] % (3 * n_heads) == 0, kOp,
          "packed q, k, v must be (B, T, 3 C) with C divisible by the heads" + shapes);
  AttnDims d;
  d.B = s[0];
  d.H = n_heads;
  d.Tq = d.Tk = s[1];
  d.hs = d.hv = s[2] / (3 * n_heads);
  check_options(opt, d, shapes);
  return d;
}

}  // namespace pelab::detail
