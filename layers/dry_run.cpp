#include "layers/dry_run.hpp"

#include <algorithm>

#include "core/ops/cross_entropy.hpp"
#include "core/tape.hpp"
#include "layers/transformer.hpp"

namespace pelab {

DryRunResult dry_run(const ModelConfig& m, const DryRunShape& s) {
  const std::size_t B = s.batch, T = s.tokens;
  // The data, real and outside the scope (a batch's ids are data): tokens and targets 0 (never read),
  // position ids, and digit indices 0 for an encoding that reads them.
  // Per rows (randomized or offset ids): row 0 holds 0..T-1, the others T sorted ids spread over the
  // whole training range [0, max_position), as random ids nearly are: the widest distances a table by
  // distance (Transformer-XL's) or a bucket range may take, and never past a learned table's rows.
  // They are made in a ShapeOnly scope of their own: integer blocks there are real but mapped for the
  // purpose and unmapped when dropped, so an estimate at 10^7 tokens (gigabytes of ids at the eval batch)
  // neither leaves them in the caching allocator's free lists nor counts them in the model's trace.
  const std::size_t top = std::max(m.max_position ? m.max_position : m.train_seq_len, T);
  IndexArray zeros, positions;
  {
    ShapeOnly ids;
    zeros = IndexArray(Shape{B, T}, 0);
    positions = IndexArray(Shape{B, T});
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t t = 0; t < T; ++t)
        positions(b, t) = std::int32_t(s.shared_positions || b == 0 || T < 2 ? t : t * (top - 1) / (T - 1));
  }
  if (s.training && Tape::current().size() > 0)
    throw Error("dry_run: the thread's tape holds " + std::to_string(Tape::current().size()) +
                " nodes; a training dry run's backward would consume them (run it before any forward)");
  DryRunResult r;
  ShapeOnly scope;
  {
    Transformer model(m);
    r.parameters = model.num_parameters();
    model.set_training(s.training);
    Rng rng(0);  // dropout and abacus's offset draw nothing in a dry run; the stream is the run's own
    ForwardOptions fo;
    fo.dropout_rng = &rng;
    fo.digit_index = &zeros;
    std::vector<Array> maps;
    if (s.attention_maps) fo.attention_maps = &maps;
    const std::int64_t last = T ? *std::max_element(positions.begin(), positions.end()) : 0;
    if (model.encoding().unsupported(last)) {
      // Ids the encoding cannot represent: evaluation reports the length as n/a and runs nothing
      // (experiments/eval/evaluate.cpp ids_unsupported); the model alone is the estimate.
    } else if (s.training) {
      cross_entropy(model.forward(zeros, positions, fo), zeros).backward();
    } else {
      NoGrad ng;
      model.forward(zeros, positions, fo);
    }
  }
  r.summary = scope.trace().summary();
  return r;
}

std::size_t dry_parameter_count(const ModelConfig& m) {
  ShapeOnly scope;
  return Transformer(m).num_parameters();
}

}  // namespace pelab
