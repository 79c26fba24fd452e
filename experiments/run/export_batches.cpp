#include "experiments/run/export_batches.hpp"

#include <algorithm>

#include "core/safetensors.hpp"
#include "experiments/tasks/task.hpp"
#include "training/positions.hpp"
#include "training/trainer.hpp"

namespace pelab {

std::vector<Batch> training_batches(const RunSpec& spec, std::size_t steps) {
  const TrainConfig& t = spec.config.train;
  Rng data = data_rng(t.seed), positions = position_rng(t.seed);
  std::vector<Batch> out;
  out.reserve(steps);
  for (std::size_t s = 0; s < steps; ++s) {
    Batch b = spec.task->sample(data, t.batch_size, spec.config.min_len, spec.config.train_len);
    assign_positions(b, {t.positions, t.max_position}, positions);
    out.push_back(std::move(b));
  }
  return out;
}

namespace {

// (S, B, T) of one field of every batch, right-padded with 0.
template <class A, class Get>
A stack(const std::vector<Batch>& bs, std::size_t B, std::size_t T, Get get) {
  A out = A::from_shape({bs.size(), B, T});
  std::fill(out.begin(), out.end(), 0);
  for (std::size_t s = 0; s < bs.size(); ++s) {
    const auto& a = get(bs[s]);
    const std::size_t t = bs[s].length();
    for (std::size_t b = 0; b < B; ++b)
      std::copy(a.data() + b * t, a.data() + (b + 1) * t, out.data() + (s * B + b) * T);
  }
  return out;
}

}  // namespace

void export_batches(const RunSpec& spec, std::size_t steps, const std::string& path) {
  const std::vector<Batch> bs = training_batches(spec, steps);
  const std::size_t B = spec.config.train.batch_size;
  std::size_t T = 0;
  for (const Batch& b : bs) T = std::max(T, b.length());
  SafeTensors st;
  st.ints["tokens"] = stack<IndexArray>(bs, B, T, [](const Batch& b) -> const IndexArray& { return b.tokens; });
  st.ints["targets"] = stack<IndexArray>(bs, B, T, [](const Batch& b) -> const IndexArray& { return b.targets; });
  st.ints["positions"] = stack<IndexArray>(bs, B, T, [](const Batch& b) -> const IndexArray& { return b.positions; });
  st.floats["mask"] = stack<Array>(bs, B, T, [](const Batch& b) -> const Array& { return b.mask; });
  if (!bs.empty() && bs.front().has_digit_index())
    st.ints["digit_index"] = stack<IndexArray>(bs, B, T, [](const Batch& b) -> const IndexArray& { return b.digit_index; });
  IndexArray lengths = IndexArray::from_shape({bs.size()});
  for (std::size_t s = 0; s < bs.size(); ++s) lengths(s) = static_cast<std::int32_t>(bs[s].length());
  st.ints["lengths"] = lengths;
  st.metadata = {{"format", "pelab-batches-1"},
                 {"steps", std::to_string(steps)},
                 {"batch_size", std::to_string(B)},
                 {"seed", std::to_string(spec.config.train.seed)},
                 {"blank_answer", !bs.empty() && bs.front().blank_answer ? "true" : "false"},
                 {"vocab", std::to_string(spec.model.vocab)},
                 {"train_seq_len", std::to_string(spec.model.train_seq_len)},
                 {"config", to_toml(spec.config)}};
  save_safetensors(path, st);
}

}  // namespace pelab
