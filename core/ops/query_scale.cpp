#include "core/ops/query_scale.hpp"

#include "core/ops/common.hpp"

namespace pelab {

Tensor scale_queries(const Tensor& q, const Tensor& head, std::shared_ptr<const std::vector<real>> rows) {
  const char* op = "scale_queries";
  detail::require_defined(q, op, "q");
  detail::require(q.ndim() == 4, op, "q must be (B, H, T, hs), got " + shape_str(q.shape()));
  const std::size_t B = q.size(0), H = q.size(1), T = q.size(2), hs = q.size(3);
  const bool has_head = head.defined();
  detail::require(!has_head || (head.ndim() == 1 && head.size(0) == H), op,
                  "head scales must be (" + std::to_string(H) + "), got " + (has_head ? shape_str(head.shape()) : ""));
  detail::require(!rows || rows->size() == T, op,
                  "row scales have " + std::to_string(rows ? rows->size() : 0) + " entries for T = " + std::to_string(T));
  Tensor out = detail::empty(q.shape());
  {
    const real* pq = q.data();
    const real* ph = has_head ? head.data() : nullptr;
    const real* pr = rows ? rows->data() : nullptr;
    real* po = out.mutable_data();
    for (std::size_t b = 0, nb = shape_only() ? 0 : B; b < nb; ++b)  // core/shape_only.hpp
      for (std::size_t h = 0; h < H; ++h) {
        const real hsc = ph ? ph[h] : real(1);
        for (std::size_t t = 0; t < T; ++t) {
          const real c = hsc * (pr ? pr[t] : real(1));
          const std::size_t o = ((b * H + h) * T + t) * hs;
          for (std::size_t i = 0; i < hs; ++i) po[o + i] = pq[o + i] * c;
        }
      }
  }
  Tape& tape = Tape::current();
  if (!tape.should_record({&q, &head})) return out;
  const bool g_head = has_head && head.requires_grad();
  auto backward = [B, H, T, hs, rows](const BackwardCtx& c) {
    const real* pg = c.grad_out().data();
    const real* pq = c.saved(0);  // only when the head scales need a gradient
    const real* ph = c.saved(1);
    const real* pr = rows ? rows->data() : nullptr;
    real* dq = c.grad(0);
    real* dh = c.grad(1);
    for (std::size_t b = 0, nb = shape_only() ? 0 : B; b < nb; ++b)
      for (std::size_t h = 0; h < H; ++h) {
        const real hsc = ph ? ph[h] : real(1);
        real acc = 0;
        for (std::size_t t = 0; t < T; ++t) {
          const real r = pr ? pr[t] : real(1);
          const std::size_t o = ((b * H + h) * T + t) * hs;
          if (dq)
            for (std::size_t i = 0; i < hs; ++i) dq[o + i] += pg[o + i] * hsc * r;
          if (dh) {
            real s = 0;
            for (std::size_t i = 0; i < hs; ++i) s += pg[o + i] * pq[o + i];
            acc += s * r;
          }
        }
        if (dh) dh[h] += acc;
      }
  };
  tape.record(op, out, {q, head}, {g_head ? q : Tensor(), has_head ? head : Tensor()}, std::move(backward));
  return out;
}

}  // namespace pelab
