#include "core/ops/common.hpp"

namespace pelab::detail {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t nd = std::max(a.size(), b.size());
  Shape out(nd, 1);
  for (std::size_t i = 0; i < nd; ++i) {
    const std::size_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const std::size_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                  " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const Shape& in, const Shape& out) {
  Shape s(out.size(), 0);
  std::size_t stride = 1;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::size_t d_in = in.size() - 1 - k, d_out = out.size() - 1 - k;
    s[d_out] = in[d_in] == 1 ? 0 : stride;
    stride *= in[d_in];
  }
  return s;
}

}  // namespace pelab::detail
