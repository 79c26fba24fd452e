// A batch of next-token-prediction data, as tasks produce it and the trainer consumes it.
#pragma once

#include <cstring>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

// Padded on the right to the longest sequence. The model reads tokens[b, t] and must predict
// targets[b, t] where mask[b, t] > 0.
struct Batch {
  IndexArray tokens;   // (B, T) input ids
  IndexArray targets;  // (B, T) next-token ids (anything, e.g. -1, where mask is 0)
  IndexArray positions;  // (B, T) position ids: tasks fill 0..T-1, or their own ids (Task::supplies_positions:
                         // position coupling); training and evaluation reassign or keep them per
                         // [train] / [eval] positions (training/positions.hpp)
  // (B, T) each digit's 1-based index within its number, 0 on every other token (Abacus, McLeish et al.
  // 2024), or empty when the task supplies none (Task::supplies_digit_index). Read by encodings that
  // declare EncodingSpec::reads_digit_index; its random training offset is the encoding's (abacus.cpp).
  IndexArray digit_index;
  // A default IndexArray is a 0-d scalar of size 1, not empty: ask the rank.
  bool has_digit_index() const { return digit_index.dimension() == 2; }
  Array mask;          // (B, T) 1 where the target counts (y and EOS; every char for LM; the scored
                       // positions of a stream task: MQAR's queries, flip-flop's reads), else 0
  // Sequence and stream tasks: per row, the first and one-past-last t of its counted targets (exact
  // match = every counted target in it predicted). Empty for LM tasks.
  std::vector<std::size_t> answer_begin, answer_end;
  // The blank output format (experiments/tasks/format.hpp): tokens[b, t] in the answer span are blanks and
  // targets[b, t] is read at t itself, all in one pass; nothing is fed back (teacher forced: false).
  bool blank_answer = false;
  std::size_t batch() const { return tokens.shape()[0]; }
  std::size_t length() const { return tokens.shape()[1]; }
};

// Rows [from, to) of a batch, every field alike (evaluation slices, data-parallel shards).
inline Batch rows_of(const Batch& b, std::size_t from, std::size_t to) {
  if (from == 0 && to == b.batch()) return b;
  const std::size_t T = b.length(), n = to - from;
  Batch s;
  s.blank_answer = b.blank_answer;
  auto slice = [&](const auto& a, auto& out) {
    out.resize({n, T});
    std::memcpy(out.data(), a.data() + from * T, n * T * sizeof(*a.data()));
  };
  slice(b.tokens, s.tokens);
  slice(b.targets, s.targets);
  slice(b.positions, s.positions);
  slice(b.mask, s.mask);
  if (b.has_digit_index()) slice(b.digit_index, s.digit_index);
  if (!b.answer_begin.empty()) {
    s.answer_begin.assign(b.answer_begin.begin() + from, b.answer_begin.begin() + to);
    s.answer_end.assign(b.answer_end.begin() + from, b.answer_end.begin() + to);
  }
  return s;
}

}  // namespace pelab
