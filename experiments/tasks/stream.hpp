// Stream tasks: one token sequence scored at many of its positions, rather than an answer y after x
// (sequence.hpp). MQAR scores its query keys, flip-flop its reads, state tracking every position: the
// model reads tokens[t] and must predict targets[t] wherever it is set, in one teacher-forced pass. The
// target of a position need not be the next token (MQAR's value, state tracking's running product are
// never fed). Batch::mask marks the scored positions (training/batch.hpp); the answer span runs from the
// first to the last of them, so exact match = every scored position of the row right.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/tasks/task.hpp"

namespace pelab {

namespace stream {
// Ids every stream task shares; task symbols start at kFirstSymbol. Rows start with <BOS> (an attention
// sink for encodings without positions; the source protocols have none) and are PAD-padded on the right.
constexpr std::int32_t kPad = 0, kBos = 1, kFirstSymbol = 2;
constexpr std::int32_t kUnscored = -1;

struct Example {
  std::vector<std::int32_t> tokens;   // without <BOS>
  std::vector<std::int32_t> targets;  // one per token: what is predicted reading it, or kUnscored
};

// Rows <BOS> tokens: targets shifted with the tokens (the <BOS> and padding unscored), mask 1 where a
// target is set, positions 0..T-1, answer span [first, last + 1) of the scored positions (Error for an
// example with none, or whose targets do not match its tokens).
Batch assemble(const std::vector<Example>& examples);
}  // namespace stream

class StreamTask : public Task {
 public:
  explicit StreamTask(std::string name) : name_(std::move(name)) {}
  // One problem size per example, uniform in [min_len, max_len], drawn before its content.
  Batch sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const override;
  std::size_t sequence_length(std::size_t n) const override { return 1 + tokens_length(n); }
  // The row with each scored token's target in brackets after it: "<BOS> w 1 i 0 r[1] 1".
  std::string render(const Batch& batch, std::size_t b) const override;
  std::string token_text(std::int32_t id) const override;
  const std::string& name() const { return name_; }

 protected:
  virtual stream::Example generate(Rng& rng, std::size_t n) const = 0;
  virtual std::size_t tokens_length(std::size_t n) const = 0;  // |tokens| at problem size n
  virtual std::string token_name(std::int32_t id) const = 0;   // id >= kFirstSymbol
  // Rejects problem sizes the task cannot generate (Error naming what is allowed); called with the
  // smallest and the largest size before sampling.
  virtual void check_size(std::size_t n) const {}

 private:
  std::string name_;
};

// Stream tasks have no <SEP>, prompt or <EOS>: a [task] format key other than the default is refused
// (TaskFormatError naming the key, reported at its file:line). Called by their factories.
void refuse_format(const std::string& task, const SequenceFormat& f);

// "depth = 0.5 must be ..." messages: a number as a config would write it.
std::string number_text(double v);

}  // namespace pelab
