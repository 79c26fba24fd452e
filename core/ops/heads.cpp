#include "core/ops/heads.hpp"

#include <algorithm>

#include "core/ops/common.hpp"

namespace pelab {

Tensor split_heads(const Tensor& x, std::size_t H, std::size_t n_chunks, std::size_t index) {
  const char* op = "split_heads";
  detail::require_defined(x, op, "x");
  detail::require(x.ndim() == 3, op, "input must be (B, T, n*C), got " + shape_str(x.shape()));
  detail::require(H > 0 && n_chunks > 0 && index < n_chunks, op,
                  "bad heads/chunks/index " + std::to_string(H) + "/" + std::to_string(n_chunks) + "/" +
                      std::to_string(index));
  const std::size_t B = x.size(0), T = x.size(1), W = x.size(2);
  detail::require(W % (n_chunks * H) == 0, op,
                  "last dim of " + shape_str(x.shape()) + " is not divisible by " + std::to_string(n_chunks) +
                      " chunks x " + std::to_string(H) + " heads");
  const std::size_t C = W / n_chunks, hs = C / H;
  Tensor out = detail::empty({B, H, T, hs});
  const real* px = x.data();
  real* po = out.mutable_data();
  detail::for_rows(B, T * C, [&](std::size_t b0, std::size_t b1) {  // copies: the same bits in any pieces
    for (std::size_t b = b0; b < b1; ++b)
      for (std::size_t t = 0; t < T; ++t) {
        const real* row = px + (b * T + t) * W + index * C;
        for (std::size_t h = 0; h < H; ++h) std::copy(row + h * hs, row + (h + 1) * hs, po + ((b * H + h) * T + t) * hs);
      }
  });
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {}, [B, T, W, H, C, hs, index](const BackwardCtx& c) {
      real* gx = c.grad(0);
      const real* pg = c.grad_out().data();
      detail::for_rows(B, T * C, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b)
          for (std::size_t t = 0; t < T; ++t) {
            real* row = gx + (b * T + t) * W + index * C;
            for (std::size_t h = 0; h < H; ++h) {
              const real* src = pg + ((b * H + h) * T + t) * hs;
              for (std::size_t i = 0; i < hs; ++i) row[h * hs + i] += src[i];
            }
          }
      });
    });
  }
  return out;
}

Tensor merge_heads(const Tensor& x) {
  const char* op = "merge_heads";
  detail::require_defined(x, op, "x");
  detail::require(x.ndim() == 4, op, "input must be (B, H, T, hs), got " + shape_str(x.shape()));
  const std::size_t B = x.size(0), H = x.size(1), T = x.size(2), hs = x.size(3), C = H * hs;
  Tensor out = detail::empty({B, T, C});
  const real* px = x.data();
  real* po = out.mutable_data();
  detail::for_rows(B, T * C, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b)
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t t = 0; t < T; ++t) {
          const real* src = px + ((b * H + h) * T + t) * hs;
          std::copy(src, src + hs, po + (b * T + t) * C + h * hs);
        }
  });
  Tape& tape = Tape::current();
  if (tape.should_record({&x})) {
    tape.record(op, out, {x}, {}, [B, H, T, hs, C](const BackwardCtx& c) {
      bool fresh = false;
      real* gx = c.grad_write(0, fresh);  // every element written
      const real* pg = c.grad_out().data();
      detail::for_rows(B, T * C, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t b = b0; b < b1; ++b)
          for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t) {
              const real* src = pg + (b * T + t) * C + h * hs;
              real* dst = gx + ((b * H + h) * T + t) * hs;
              if (fresh) std::copy(src, src + hs, dst);
              else for (std::size_t i = 0; i < hs; ++i) dst[i] += src[i];
            }
      });
    });
  }
  return out;
}

}  // namespace pelab
