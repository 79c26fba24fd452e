#include "training/positions.hpp"

#include <algorithm>
#include <limits>

namespace pelab {

const char* position_mode_name(PositionMode m) {
  switch (m) {
    case PositionMode::contiguous: return "contiguous";
    case PositionMode::offset: return "offset";
    case PositionMode::randomized: return "randomized";
    case PositionMode::task: return "task";
    case PositionMode::task_offset: return "task_offset";
  }
  return "?";
}

const std::vector<std::string>& position_mode_names() {
  static const std::vector<std::string> names = {"contiguous", "offset", "randomized", "task", "task_offset"};
  return names;
}

bool is_task_mode(PositionMode m) { return m == PositionMode::task || m == PositionMode::task_offset; }

PositionMode parse_position_mode(const std::string& name) {
  for (PositionMode m : {PositionMode::contiguous, PositionMode::offset, PositionMode::randomized, PositionMode::task,
                         PositionMode::task_offset})
    if (name == position_mode_name(m)) return m;
  throw Error("unknown position mode '" + name + "'; expected one of: contiguous, offset, randomized, task, task_offset");
}

std::int64_t max_position_id(const PositionConfig& cfg, std::size_t T) {
  if (cfg.mode == PositionMode::contiguous || cfg.mode == PositionMode::task) return static_cast<std::int64_t>(T) - 1;
  return static_cast<std::int64_t>(cfg.max_position) - 1;
}

namespace {

// task / task_offset: keep the task's ids; task_offset shifts each row's nonzero ids by one draw.
void keep_task_positions(Batch& batch, const PositionConfig& cfg, Rng& rng) {
  const std::size_t B = batch.tokens.shape()[0], T = batch.tokens.shape()[1], M = cfg.max_position;
  if (batch.positions.shape() != batch.tokens.shape())
    throw Error(std::string("positions '") + position_mode_name(cfg.mode) + "': the batch has no position ids of its task");
  if (cfg.mode == PositionMode::task) return;
  const auto int32_limit = static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());
  if (M == 0 || M - 1 > int32_limit)
    throw Error("positions 'task_offset': max_position " + std::to_string(M) + " must be in [1, 2^31]");
  for (std::size_t b = 0; b < B; ++b) {
    std::int32_t* row = batch.positions.data() + b * T;
    const std::int32_t top = *std::max_element(row, row + T);
    if (top < 0 || std::size_t(top) >= M)
      throw Error("positions 'task_offset': the task's id " + std::to_string(top) + " is outside [0, max_position " +
                  std::to_string(M) + "); expected max_position > the largest id a task example uses");
    const auto s = static_cast<std::int32_t>(rng.below(M - std::size_t(top)));  // s in [0, M - 1 - top]
    for (std::size_t t = 0; t < T; ++t)
      if (row[t] != 0) row[t] += s;
  }
}

}  // namespace

void assign_positions(Batch& batch, const PositionConfig& cfg, Rng& rng) {
  if (is_task_mode(cfg.mode)) return keep_task_positions(batch, cfg, rng);
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
      default:
        break;  // the task modes returned above
    }
  }
}

}  // namespace pelab
