#include "training/positions.hpp"

#include <algorithm>
#include <limits>

namespace pelab {

const char* position_mode_name(PositionMode m) {
  switch (m) {
    case PositionMode::contiguous: return "contiguous";
    case PositionMode::offset: return "offset";
    case PositionMode::randomized: return "randomized";
  }
  return "?";
}

const std::vector<std::string>& position_mode_names() {
  static const std::vector<std::string> names = {"contiguous", "offset", "randomized"};
  return names;
}

PositionMode parse_position_mode(const std::string& name) {
  for (PositionMode m : {PositionMode::contiguous, PositionMode::offset, PositionMode::randomized})
    if (name == position_mode_name(m)) return m;
  throw Error("unknown position mode '" + name + "'; expected one of: contiguous, offset, randomized");
}

std::int64_t max_position_id(const PositionConfig& cfg, std::size_t T) {
  if (cfg.mode == PositionMode::contiguous) return static_cast<std::int64_t>(T) - 1;
  return static_cast<std::int64_t>(cfg.max_position) - 1;
}

void assign_positions(Batch& batch, const PositionConfig& cfg, Rng& rng) {
  const std::size_t B = batch.tokens.shape()[0], T = batch.tokens.shape()[1];
  const std::size_t M = cfg.max_position;
  const auto int32_limit = static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());
  if (cfg.mode != PositionMode::contiguous) {
    if (M < T)
      throw Error(std::string("positions '") + position_mode_name(cfg.mode) + "': max_position " +
                  std::to_string(M) + " is smaller than the batch length " + std::to_string(T) +
                  "; ids are drawn from [0, max_position)");
    if (M - 1 > int32_limit) throw Error("positions: max_position " + std::to_string(M) + " exceeds int32 ids");
  } else if (T > int32_limit) {
    throw Error("positions: a batch of length " + std::to_string(T) + " exceeds int32 ids");
  }
  if (batch.positions.shape() != batch.tokens.shape()) batch.positions = IndexArray(Shape{B, T});
  std::int32_t* out = batch.positions.data();
  std::vector<std::int32_t> chosen;
  for (std::size_t b = 0; b < B; ++b) {
    std::int32_t* row = out + b * T;
    switch (cfg.mode) {
      case PositionMode::contiguous:
        for (std::size_t t = 0; t < T; ++t) row[t] = static_cast<std::int32_t>(t);
        break;
      case PositionMode::offset: {
        const auto s = static_cast<std::int64_t>(rng.below(M - T + 1));
        for (std::size_t t = 0; t < T; ++t) row[t] = static_cast<std::int32_t>(s + std::int64_t(t));
        break;
      }
      case PositionMode::randomized: {
        // Floyd's algorithm: a uniform T-subset of [0, M) with exactly T draws, kept sorted as it grows
        // (every j added is larger than all ids chosen before it).
        chosen.clear();
        for (std::size_t j = M - T; j < M; ++j) {
          const auto t = static_cast<std::int32_t>(rng.below(j + 1));
          auto at = std::lower_bound(chosen.begin(), chosen.end(), t);
          if (at != chosen.end() && *at == t) chosen.push_back(static_cast<std::int32_t>(j));
          else chosen.insert(at, t);
        }
        std::copy(chosen.begin(), chosen.end(), row);
        break;
      }
    }
  }
}

}  // namespace pelab
