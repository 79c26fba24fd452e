#include "experiments/tasks/stream.hpp"

#include <algorithm>
#include <sstream>

#include "experiments/tasks/sequence.hpp"  // seq::check_sample_args

namespace pelab {

namespace stream {

Batch assemble(const std::vector<Example>& examples) {
  std::size_t T = 0;
  for (const Example& e : examples) {
    if (e.targets.size() != e.tokens.size())
      throw Error("stream example: " + std::to_string(e.targets.size()) + " targets for " +
                  std::to_string(e.tokens.size()) + " tokens");
    T = std::max(T, e.tokens.size() + 1);
  }
  const std::size_t B = examples.size();
  Batch b;
  b.tokens = IndexArray(Shape{B, T});
  b.targets = IndexArray(Shape{B, T});
  b.positions = IndexArray(Shape{B, T});
  b.mask = Array(Shape{B, T});
  std::fill(b.tokens.begin(), b.tokens.end(), kPad);
  std::fill(b.targets.begin(), b.targets.end(), kUnscored);
  std::fill(b.mask.begin(), b.mask.end(), real(0));
  for (std::size_t r = 0; r < B; ++r) {
    const Example& e = examples[r];
    std::size_t first = T, last = 0;
    b.tokens(r, 0) = kBos;
    for (std::size_t i = 0; i < e.tokens.size(); ++i) {
      b.tokens(r, i + 1) = e.tokens[i];
      if (e.targets[i] == kUnscored) continue;
      b.targets(r, i + 1) = e.targets[i];
      b.mask(r, i + 1) = 1;
      first = std::min(first, i + 1), last = i + 1;
    }
    if (first == T) throw Error("stream example without a scored position");
    b.answer_begin.push_back(first);
    b.answer_end.push_back(last + 1);
    for (std::size_t t = 0; t < T; ++t) b.positions(r, t) = std::int32_t(t);
  }
  return b;
}

}  // namespace stream

Batch StreamTask::sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const {
  seq::check_sample_args("task '" + name_ + "'", batch, min_len, max_len);
  check_size(min_len);
  check_size(max_len);
  std::vector<stream::Example> ex;
  ex.reserve(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    const auto n = static_cast<std::size_t>(rng.range(std::int64_t(min_len), std::int64_t(max_len)));
    ex.push_back(generate(rng, n));
  }
  return stream::assemble(ex);
}

std::string StreamTask::token_text(std::int32_t id) const {
  if (id == stream::kPad) return "<PAD>";
  if (id == stream::kBos) return "<BOS>";
  if (id < stream::kFirstSymbol || std::size_t(id) >= vocab_size()) return "<" + std::to_string(id) + ">";
  return token_name(id);
}

std::string StreamTask::render(const Batch& batch, std::size_t b) const {
  std::string s;
  for (std::size_t t = 0; t < batch.length(); ++t) {
    const std::int32_t id = batch.tokens(b, t);
    if (id == stream::kPad) break;
    s += (t ? " " : "") + token_text(id);
    if (batch.mask(b, t) > 0) s += "[" + token_text(batch.targets(b, t)) + "]";
  }
  return s;
}

void refuse_format(const std::string& task, const SequenceFormat& f) {
  const SequenceFormat d;
  if (f == d) return;
  const std::string key = f.output != d.output ? "output" : f.bos != d.bos ? "bos" : f.eos != d.eos ? "eos"
                          : f.sep != d.sep     ? "sep"
                                               : "prompt";
  throw TaskFormatError(key, "[task] key '" + key + "' (" + describe(f) + ") sets the format of an x-then-y sequence "
                             "task, but task '" + task + "' scores positions of one stream (<BOS> then its tokens, "
                             "with no prompt, separator, EOS or blank answer). Leave bos, eos, sep, prompt and "
                             "output at their defaults or remove them");
}

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace pelab
