// Position ids as data: how the (B, T) ids of a batch are chosen. Tasks fill 0..T-1, or ids of their
// own (Task::supplies_positions: position coupling); the trainer ([train] positions) and evaluation
// ([eval] positions) then assign ids by mode, each from its own random stream, or keep the task's
// (task, task_offset), so tasks never know about the other modes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "training/batch.hpp"

namespace pelab {

enum class PositionMode {
  contiguous,  // 0..T-1 on every row; draws nothing from the RNG
  offset,      // per row s..s+T-1 with s uniform in [0, max_position - T]
  randomized,  // per row T distinct ids uniform from [0, max_position), sorted (Ruoss et al. 2023)
  task,        // the task's ids as it wrote them (position coupling at evaluation); draws nothing
  task_offset, // the task's ids, each nonzero one shifted by s per row, s uniform in
               // [0, max_position - 1 - the row's largest id]; 0 stays 0 (BOS, padding). Cho et al. 2024's
               // training (HanseulJo/position-coupling, src/data/addition.py: a random start per example;
               // src/tokenization/tokenization.py leaves BOS and padding at id 0)
};

struct PositionConfig {
  PositionMode mode = PositionMode::contiguous;
  std::size_t max_position = 0;  // ids are < max_position (offset, randomized); unused by contiguous
};

const char* position_mode_name(PositionMode m);
const std::vector<std::string>& position_mode_names();  // contiguous, offset, randomized, task, task_offset
bool is_task_mode(PositionMode m);  // task or task_offset: the ids come from the task
PositionMode parse_position_mode(const std::string& name);  // Error naming the allowed names

// The largest id a batch of length T can receive: T - 1 (contiguous; task: a task's own ids stay below
// its sequence length), max_position - 1 otherwise.
std::int64_t max_position_id(const PositionConfig& cfg, std::size_t T);

// Sets batch.positions (B, T), T = batch.length(), every row per cfg (padding positions included:
// they are masked out of the loss, and causal attention keeps them from earlier tokens). offset draws
// one number per row, randomized T per row (Floyd's sampling without replacement), task_offset one per
// row; contiguous and task none. Throws Error when max_position < T for offset/randomized, when a
// task's id reaches max_position (task_offset), or ids would not fit in int32.
void assign_positions(Batch& batch, const PositionConfig& cfg, Rng& rng);

}  // namespace pelab
