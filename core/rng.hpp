// The engine's one random number generator: xoshiro256** seeded through splitmix64.
// Init, dropout and data generation all take an Rng explicitly: there is no global random state,
// so the same seed gives the same bits on every run. The state is four words, saved in checkpoints.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace pelab {

class Rng {
 public:
  using State = std::array<std::uint64_t, 4>;

  explicit Rng(std::uint64_t seed = 0) { reseed(seed); }
  // An independent stream derived from (seed, stream): e.g. stream 1 for init, 2 for data.
  Rng(std::uint64_t seed, std::uint64_t stream);

  void reseed(std::uint64_t seed);
  std::uint64_t next_u64();
  double uniform();                       // [0, 1), 53 random bits
  double normal();                        // standard normal (Box-Muller, no cached spare)
  std::uint64_t below(std::uint64_t n);   // uniform integer in [0, n), unbiased; n > 0
  std::int64_t range(std::int64_t lo, std::int64_t hi);  // uniform integer in [lo, hi]

  const State& state() const { return s_; }
  void set_state(const State& s) { s_ = s; }

 private:
  State s_{};
};

}  // namespace pelab
