#include "experiments/tasks/sequence.hpp"

#include <algorithm>

#include "layers/positional/encoding.hpp"  // default_positions

namespace pelab {
namespace seq {

Batch assemble(const std::vector<Example>& examples) {
  const std::size_t B = examples.size();
  std::size_t T = 0;  // tokens fed = |x| + |y| + 2 (the sequence minus its last EOS)
  for (const auto& e : examples) T = std::max(T, e.x.size() + e.y.size() + 2);
  Batch out;
  out.tokens = IndexArray(Shape{B, T});
  out.targets = IndexArray(Shape{B, T});
  out.mask = Array(Shape{B, T});
  out.positions = default_positions(B, T);
  std::fill(out.tokens.begin(), out.tokens.end(), kPad);
  std::fill(out.targets.begin(), out.targets.end(), -1);
  std::fill(out.mask.begin(), out.mask.end(), real(0));
  out.answer_begin.resize(B);
  out.answer_end.resize(B);
  std::vector<std::int32_t> s;
  for (std::size_t b = 0; b < B; ++b) {
    const Example& e = examples[b];
    s.clear();
    s.push_back(kBos);
    s.insert(s.end(), e.x.begin(), e.x.end());
    s.push_back(kSep);
    s.insert(s.end(), e.y.begin(), e.y.end());
    s.push_back(kEos);
    std::int32_t* tok = out.tokens.data() + b * T;
    std::int32_t* tgt = out.targets.data() + b * T;
    real* m = out.mask.data() + b * T;
    const std::size_t L = s.size() - 1;
    for (std::size_t t = 0; t < L; ++t) tok[t] = s[t], tgt[t] = s[t + 1];
    // Target t is sequence[t + 1]: y starts at sequence index |x| + 2, so its first target is t = |x| + 1.
    out.answer_begin[b] = e.x.size() + 1;
    out.answer_end[b] = L;
    for (std::size_t t = out.answer_begin[b]; t < L; ++t) m[t] = 1;
  }
  return out;
}

Example decode(const Batch& batch, std::size_t b) {
  if (b >= batch.batch()) throw Error("row " + std::to_string(b) + " out of range for a batch of " +
                                      std::to_string(batch.batch()));
  if (batch.answer_end.size() != batch.batch() || batch.answer_begin.size() != batch.batch())
    throw Error("batch has no answer ranges: not a sequence-task batch");
  const std::size_t T = batch.length(), L = batch.answer_end[b], a = batch.answer_begin[b];
  if (L == 0 || L > T || a == 0 || a > L) throw Error("malformed sequence-task batch row " + std::to_string(b));
  const std::int32_t* tok = batch.tokens.data() + b * T;
  const std::int32_t* tgt = batch.targets.data() + b * T;
  Example e;
  e.x.assign(tok + 1, tok + a);   // tokens[a] is SEP
  e.y.assign(tgt + a, tgt + L - 1);  // targets[L - 1] is EOS
  return e;
}

std::string symbol_name(std::size_t i, std::size_t size) {
  if (size <= 10) return std::string(1, char('0' + i));
  if (size <= 52) return std::string(1, i < 26 ? char('a' + i) : char('A' + (i - 26)));
  return "s" + std::to_string(i);
}

void check_sample_args(const std::string& what, std::size_t batch, std::size_t min_len, std::size_t max_len) {
  if (batch == 0) throw Error(what + ": batch size must be at least 1");
  if (min_len < 1 || min_len > max_len)
    throw Error(what + ": problem sizes [" + std::to_string(min_len) + ", " + std::to_string(max_len) +
                "] must satisfy 1 <= min_len <= max_len");
}

}  // namespace seq

Batch SequenceTask::sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const {
  seq::check_sample_args("task '" + name_ + "'", batch, min_len, max_len);
  check_size(max_len);
  std::vector<seq::Example> ex;
  ex.reserve(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    const auto n = static_cast<std::size_t>(rng.range(std::int64_t(min_len), std::int64_t(max_len)));
    ex.push_back(generate(rng, n));
  }
  return seq::assemble(ex);
}

std::string SequenceTask::display(std::int32_t id) const {
  switch (id) {
    case seq::kPad: return "<PAD>";
    case seq::kBos: return "<BOS>";
    case seq::kSep: return "<SEP>";
    case seq::kEos: return "<EOS>";
  }
  if (id < 0 || std::size_t(id) >= vocab_size()) return "<?" + std::to_string(id) + ">";
  return token_name(id);
}

std::string SequenceTask::render(const Batch& batch, std::size_t b) const {
  const seq::Example e = seq::decode(batch, b);
  std::string s = "x:";
  for (auto id : e.x) s += " " + display(id);
  s += " | y:";
  for (auto id : e.y) s += " " + display(id);
  return s;
}

seq::Example SymbolTask::generate(Rng& rng, std::size_t n) const {
  seq::Example e;
  e.x.resize(n);
  for (auto& v : e.x) v = seq::kFirstSymbol + std::int32_t(rng.below(symbols_));
  e.y = f_(e.x);
  return e;
}

ParamSpec symbols_param() {
  return {"symbols", ValueType::integer, Value(std::int64_t(10)), 2.0, 100.0, {}, "alphabet size of x"};
}

const char* const kSymbolVocabulary =
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, then the `symbols` symbols as ids 4.. (shown as digits\n"
    "0-9 for up to 10 symbols, letters a-z A-Z for up to 52, else s0 s1 ...).\n";

}  // namespace pelab
