#include "core/rng.hpp"

#include <cmath>

#include "core/tensor.hpp"

namespace pelab {

namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
inline std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t x = seed;
  const std::uint64_t mixed = splitmix64(x) ^ (stream * 0xD6E8FEB86659FD93ull + 0x632BE59BD9B4E019ull);
  reseed(mixed);
}

void Rng::reseed(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& w : s_) w = splitmix64(x);
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  double u1 = uniform();
  while (u1 <= 0.0) u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::uint64_t Rng::below(std::uint64_t n) {
  if (n == 0) throw Error("Rng::below(0): empty range");
  const std::uint64_t limit = ~std::uint64_t(0) - (~std::uint64_t(0) % n);  // reject the biased tail
  std::uint64_t x;
  do x = next_u64();
  while (x >= limit);
  return x % n;
}

std::int64_t Rng::range(std::int64_t lo, std::int64_t hi) {
  if (hi < lo) throw Error("Rng::range: empty range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return lo + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(hi - lo) + 1));
}

}  // namespace pelab
