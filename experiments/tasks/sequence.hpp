// Shared machinery of the sequence tasks: examples `BOS x SEP y EOS` turned into padded next-token
// batches whose mask counts only the predictions of y and the final EOS. A task derives from
// SequenceTask and supplies how to generate (x, y) for a problem size n and how to name its symbols.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/tasks/task.hpp"

namespace pelab {

namespace seq {
// Special tokens every sequence task shares; task symbols start at kFirstSymbol.
constexpr std::int32_t kPad = 0, kBos = 1, kSep = 2, kEos = 3, kFirstSymbol = 4;

struct Example {
  std::vector<std::int32_t> x, y;
};

// Rows BOS x SEP y EOS: tokens = sequence[:-1] (PAD-padded), targets = sequence[1:] (-1-padded),
// mask = 1 on the y and EOS targets, answer_begin/answer_end their t range.
Batch assemble(const std::vector<Example>& examples);

// Recovers x and y of row b from a batch built by assemble (Error if the row is malformed).
Example decode(const Batch& batch, std::size_t b);

// Name of symbol i of an alphabet of `size` symbols: digits for <= 10, letters for <= 52, else "s<i>".
std::string symbol_name(std::size_t i, std::size_t size);

// Throws unless 1 <= min_len <= max_len and batch >= 1; `what` names the task.
void check_sample_args(const std::string& what, std::size_t batch, std::size_t min_len, std::size_t max_len);
}  // namespace seq

class SequenceTask : public Task {
 public:
  explicit SequenceTask(std::string name) : name_(std::move(name)) {}
  // One problem size per example, uniform in [min_len, max_len], drawn before its content.
  Batch sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const override;
  std::size_t sequence_length(std::size_t n) const override { return x_length(n) + y_length(n) + 2; }
  // "x: 3 1 4 | y: 3 1 4"
  std::string render(const Batch& batch, std::size_t b) const override;

 protected:
  virtual seq::Example generate(Rng& rng, std::size_t n) const = 0;
  virtual std::size_t x_length(std::size_t n) const = 0;
  virtual std::size_t y_length(std::size_t n) const = 0;
  // Display name of a task symbol (id >= kFirstSymbol and < vocab_size()).
  virtual std::string token_name(std::int32_t id) const = 0;
  // Rejects problem sizes the task cannot generate (called with max_len before sampling).
  virtual void check_size(std::size_t n) const {}
  const std::string& name() const { return name_; }

 private:
  std::string display(std::int32_t id) const;  // specials as <BOS> etc., else token_name
  std::string name_;
};

// copy / reverse / sort: x = n symbols drawn uniformly from an alphabet of `symbols`, y = f(x).
class SymbolTask : public SequenceTask {
 public:
  using Transform = std::vector<std::int32_t> (*)(std::vector<std::int32_t>);
  SymbolTask(std::string name, std::size_t symbols, Transform f)
      : SequenceTask(std::move(name)), symbols_(symbols), f_(f) {}
  std::size_t vocab_size() const override { return seq::kFirstSymbol + symbols_; }

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override;
  std::size_t x_length(std::size_t n) const override { return n; }
  std::size_t y_length(std::size_t n) const override { return n; }
  std::string token_name(std::int32_t id) const override {
    return seq::symbol_name(std::size_t(id - seq::kFirstSymbol), symbols_);
  }

 private:
  std::size_t symbols_;
  Transform f_;
};

// The `symbols` parameter of the SymbolTasks and the vocabulary paragraph of their format text.
ParamSpec symbols_param();
extern const char* const kSymbolVocabulary;

}  // namespace pelab
