#include "layers/memory_cost.hpp"

#include <algorithm>

#include "core/allocator.hpp"
#include "core/tensor.hpp"

namespace pelab {

namespace {
void put(std::map<std::size_t, double>& m, double numel, double count) {
  if (numel > 0 && count > 0) m[reserved_bytes(numel)] += count;
}
}  // namespace

std::size_t reserved_bytes(double numel) {
  const double bytes = numel * double(sizeof(real));
  if (bytes >= 1e18) return std::size_t(1e18);  // beyond any machine: no need to round
  return memory::size_class(static_cast<std::size_t>(bytes));
}

ForwardCost& ForwardCost::hold(double numel, double count) { return put(held, numel, count), *this; }
ForwardCost& ForwardCost::add_scratch(double numel, double count) { return put(scratch, numel, count), *this; }
ForwardCost& ForwardCost::add_backward(double numel, double count) { return put(backward, numel, count), *this; }
ForwardCost& ForwardCost::saved(bool training, double numel, double count) {
  return training ? hold(numel, count) : add_scratch(numel, count);
}

ForwardCost& ForwardCost::then(const ForwardCost& next) {
  for (const auto& [cls, n] : next.held) held[cls] += n;
  for (const auto& [cls, n] : next.scratch) scratch[cls] = std::max(scratch[cls], n);
  for (const auto& [cls, n] : next.backward) backward[cls] = std::max(backward[cls], n);
  untracked += next.untracked;
  return *this;
}

ForwardCost ForwardCost::repeated(std::size_t n) const {
  ForwardCost c = *this;
  for (auto& [cls, k] : c.held) k *= double(n);
  c.untracked *= double(n);
  if (n == 0) c.scratch.clear(), c.backward.clear();
  return c;
}

double ForwardCost::bytes() const {
  std::map<std::size_t, double> live = held;
  for (const auto& [cls, n] : scratch) live[cls] += n;
  for (const auto& [cls, n] : backward) {
    const auto s = scratch.find(cls);
    const double reused = s == scratch.end() ? 0 : s->second;
    if (n > reused) live[cls] += n - reused;
  }
  double total = 0;
  for (const auto& [cls, n] : live) total += double(cls) * n;
  return total;
}

}  // namespace pelab
