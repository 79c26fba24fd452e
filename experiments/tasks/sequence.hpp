// Shared machinery of the sequence tasks: examples `[BOS] [P] x [SEP] y [EOS]` (SequenceFormat, task.hpp)
// turned into padded next-token batches whose mask counts only the predictions of y and, when scored,
// the final EOS. A task derives from SequenceTask and supplies how to generate (x, y) for a problem size
// n, how to name its symbols and which tokens can appear at each position of y (its chance level).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "experiments/tasks/task.hpp"

namespace pelab {

namespace seq {
// Special tokens every sequence task shares; task symbols start at kFirstSymbol. A task's prompt token
// (format prompt = true) is the id after its last symbol.
constexpr std::int32_t kPad = 0, kBos = 1, kSep = 2, kEos = 3, kFirstSymbol = 4;

struct Example {
  Example() = default;
  Example(std::vector<std::int32_t> x_, std::vector<std::int32_t> y_) : x(std::move(x_)), y(std::move(y_)) {}
  std::vector<std::int32_t> x, y;
  // Streams a task may supply, one entry per token of x and y, or empty (every example of a batch alike).
  // x_pos, y_pos: position ids (position coupling); <SEP> gets sep_pos, <BOS>, the prompt and <EOS> 0.
  std::vector<std::int32_t> x_pos, y_pos;
  std::int32_t sep_pos = 0;
  // x_digit, y_digit: each digit's 1-based index within its number, 0 elsewhere (Abacus); the specials 0.
  std::vector<std::int32_t> x_digit, y_digit;
};

// Rows [BOS] [P] x [SEP] y [EOS] as format `f` says (`prompt` is P's id, needed when f.prompt):
// tokens = sequence[:-1] (PAD-padded), targets = sequence[1:] (-1-padded), mask = 1 on the targets of y
// and, when f.eos is scored, of EOS; answer_begin/answer_end their t range (so with eos = "unscored" or
// "absent" the span ends at y's last target). positions = 0..T-1, or the examples' x_pos/y_pos (padding
// 0); digit_index from x_digit/y_digit (padding 0) when the examples have them, else empty.
// The blank output format (f.blank(), `blank` = the blank token's id): rows [BOS] [P] x [SEP] then
// `blanks` blank tokens (0: |y| of each row), targets y_j at the j-th blank, -1 (mask 0) at the blanks past
// y (the authors' padding, left out of loss and metrics); y_pos / y_digit go to the blanks, padding 0.
// Every row must then have the same length (no PAD for a non-causal model to read): Error otherwise.
Batch assemble(const std::vector<Example>& examples, const SequenceFormat& f = {}, std::int32_t prompt = -1,
               std::int32_t blank = -1, std::size_t blanks = 0);

// Recovers x and y of row b from a batch built by assemble with format `f` (Error if the row is malformed;
// `blank`: the blank token's id, needed when f.blank()).
Example decode(const Batch& batch, std::size_t b, const SequenceFormat& f = {}, std::int32_t blank = -1);

// Tokens fed for an example with |x| = x_len and |y| = y_len: the sequence's length minus one
// (teacher forced), or the whole sequence with y_len blanks (f.blank()).
std::size_t fed_length(std::size_t x_len, std::size_t y_len, const SequenceFormat& f);

// Name of symbol i of an alphabet of `size` symbols: digits for <= 10, letters for <= 52, else "s<i>".
std::string symbol_name(std::size_t i, std::size_t size);

// Throws unless 1 <= min_len <= max_len and batch >= 1; `what` names the task.
void check_sample_args(const std::string& what, std::size_t batch, std::size_t min_len, std::size_t max_len);
}  // namespace seq

class SequenceTask : public Task {
 public:
  // `prompt_word` names the task's prompt token ("Copy:"), placed before x when format.prompt.
  SequenceTask(std::string name, const SequenceFormat& format, std::string prompt_word)
      : name_(std::move(name)), format_(format), prompt_word_(std::move(prompt_word)) {}
  std::size_t vocab_size() const final {
    return base_vocab_size() + (format_.prompt ? 1 : 0) + (format_.blank() ? 1 : 0);
  }
  // One problem size per example, uniform in [min_len, max_len], drawn before its content. The blank format
  // draws one size per batch (as the authors' training loop draws one length per step: experiments/
  // training.py, length_curriculum.sample_sequence_length), so that its rows have one length.
  Batch sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const override;
  std::size_t sequence_length(std::size_t n) const override {
    return seq::fed_length(x_length(n), format_.blank() ? blank_length(n) : y_length(n), format_);
  }
  std::optional<Chance> chance(std::size_t n) const override;
  // The whole sequence with the counted targets in brackets: "<BOS> 3 1 4 <SEP> [3 1 4 <EOS>]".
  std::string render(const Batch& batch, std::size_t b) const override;
  const SequenceFormat& format() const { return format_; }
  std::int32_t prompt_id() const { return std::int32_t(base_vocab_size()); }
  // The blank token of the blank output format: the id after the prompt's place (the last id).
  std::int32_t blank_id() const { return std::int32_t(base_vocab_size() + (format_.prompt ? 1 : 0)); }
  const std::string& prompt_word() const { return prompt_word_; }
  std::string token_text(std::int32_t id) const override { return display(id); }
  // x in the task's notation -> the one-row batch [BOS] [P] x [SEP] y [EOS], the example from complete().
  Batch parse_input(const std::string& text) const override;

 protected:
  virtual std::size_t base_vocab_size() const = 0;  // specials and symbols, without the prompt token
  virtual seq::Example generate(Rng& rng, std::size_t n) const = 0;
  virtual std::size_t x_length(std::size_t n) const = 0;
  virtual std::size_t y_length(std::size_t n) const = 0;
  // Blanks of the blank output format at problem size n: the authors' output_length(n) (>= y_length(n);
  // the places past an example's y are padding, unscored).
  virtual std::size_t blank_length(std::size_t n) const { return y_length(n); }
  // For each position j of y at problem size n: how many distinct tokens y_j takes over all examples of
  // size n (y_length(n) entries, each >= 1). The chance level is computed from it.
  virtual std::vector<std::size_t> answer_support(std::size_t n) const = 0;
  // Display name of a task symbol (id >= kFirstSymbol and < base_vocab_size()).
  virtual std::string token_name(std::int32_t id) const = 0;
  // y for a typed x (parse_input); throws Error when x is not a valid input, saying what is expected.
  virtual std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const = 0;
  // The whole example for a typed x: {x, solve(x)}, unless the task rewrites x (index hints) or adds
  // streams (positions, digit indices) to it.
  virtual seq::Example complete(const std::vector<std::int32_t>& x) const {
    seq::Example e;
    e.x = x;
    e.y = solve(x);
    return e;
  }
  // Rejects problem sizes the task cannot generate (called with max_len before sampling).
  virtual void check_size(std::size_t n) const {}
  const std::string& name() const { return name_; }

 private:
  std::string display(std::int32_t id) const;  // specials as <BOS> etc., the prompt word, else token_name
  std::string render_blank(const Batch& batch, std::size_t b) const;
  // Blanks for a typed x of x_len tokens: blank_length of the size whose x is that long, else |y|.
  std::size_t typed_blanks(std::size_t x_len, std::size_t y_len) const;
  std::string name_;
  SequenceFormat format_;
  std::string prompt_word_;
};

// copy / reverse / sort: x = n symbols drawn uniformly from an alphabet of `symbols`, y = f(x).
class SymbolTask : public SequenceTask {
 public:
  using Transform = std::vector<std::int32_t> (*)(std::vector<std::int32_t>);
  SymbolTask(std::string name, const SequenceFormat& format, std::string prompt_word, std::size_t symbols,
             Transform f)
      : SequenceTask(std::move(name), format, std::move(prompt_word)), symbols_(symbols), f_(f) {}

 protected:
  std::size_t base_vocab_size() const override { return seq::kFirstSymbol + symbols_; }
  seq::Example generate(Rng& rng, std::size_t n) const override;
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override { return f_(x); }
  std::size_t x_length(std::size_t n) const override { return n; }
  std::size_t y_length(std::size_t n) const override { return n; }
  // Every y_j can be any symbol: copy and reverse move one uniform symbol there; sort can too (all equal).
  std::vector<std::size_t> answer_support(std::size_t n) const override { return std::vector<std::size_t>(n, symbols_); }
  std::string token_name(std::int32_t id) const override {
    return seq::symbol_name(std::size_t(id - seq::kFirstSymbol), symbols_);
  }

 private:
  std::size_t symbols_;
  Transform f_;
};

// The `symbols` parameter of the SymbolTasks and the vocabulary paragraph of their format text.
ParamSpec symbols_param(std::int64_t default_symbols = 10);
extern const char* const kSymbolVocabulary;
// The paragraph every sequence task's format text ends with: the [task] format keys.
extern const char* const kFormatKeys;

}  // namespace pelab
