// What the tasks of the Chomsky-hierarchy suite share (Delétang et al., "Neural Networks and the
// Chomsky Hierarchy", ICLR 2023; used again by Ruoss et al., "Randomized Positional Encodings Boost
// Length Generalization of Transformers", ACL 2023). Each task follows the generator of the authors'
// code, github.com/google-deepmind/neural_networks_chomsky_hierarchy, tasks/{regular,dcf,cs}/*.py:
// the problem size n is the length of their input string, and y is their output. Where their output is
// a number padded to a fixed length after a termination token (binary_addition, binary_multiplication,
// stack_manipulation), y is the number and the terminator "|" only: their accuracy mask ignores the
// padding, so pelab never asks for it.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "experiments/tasks/sequence.hpp"

namespace pelab::chomsky {

// A sequence task over a fixed list of symbol names: names[i] is task id kFirstSymbol + i.
class NamedSymbolTask : public SequenceTask {
 public:
  NamedSymbolTask(std::string name, const SequenceFormat& f, std::string prompt, std::vector<std::string> names)
      : SequenceTask(std::move(name), f, std::move(prompt)), names_(std::move(names)) {}

 protected:
  std::size_t base_vocab_size() const override { return seq::kFirstSymbol + names_.size(); }
  std::string token_name(std::int32_t id) const override { return names_.at(std::size_t(id - seq::kFirstSymbol)); }
  std::size_t x_length(std::size_t n) const override { return n; }
  static std::int32_t id(std::size_t symbol) { return seq::kFirstSymbol + std::int32_t(symbol); }
  static std::size_t symbol(std::int32_t id) { return std::size_t(id - seq::kFirstSymbol); }
  // Throws unless every token of a typed x is one of the first `count` symbols.
  void expect_symbols(const std::vector<std::int32_t>& x, std::size_t count, const std::string& what) const;

 private:
  std::vector<std::string> names_;
};

// n bits drawn uniformly, least significant first: the number they spell is uniform in [0, 2^n).
std::vector<int> random_bits(Rng& rng, std::size_t n);
// A number uniform in [1, 2^n - 1] as n bits, least significant first (the authors' random.randint(1, 2**n - 1)).
std::vector<int> random_nonzero_bits(Rng& rng, std::size_t n);

// The operands of binary_addition and binary_multiplication (tasks/cs/binary_addition.py): for n >= 3,
// a op b in n tokens, |a| uniform in [1, n-2], |b| = n - 1 - |a|, each uniform in [1, 2^len - 1] with
// exactly len bits, least significant first, op = symbol 2; for n <= 2 one number of n bits uniform in
// [0, 2^n - 2] (numpy's randint excludes its high end) in `a`, `b` empty. Bits are symbols 0 and 1.
seq::Example binary_operands(Rng& rng, std::size_t n, std::vector<int>& a, std::vector<int>& b);

// Reads a typed x of those tasks: bits, or bits op bits (symbol 2, named `op`); true when two numbers.
bool parse_binary_operands(const std::vector<std::int32_t>& x, const std::string& op, std::vector<int>& a,
                           std::vector<int>& b);
// The task ids of `bits` (symbols 0 and 1) followed by the terminator symbol `end`.
std::vector<std::int32_t> terminated(const std::vector<int>& bits, std::size_t end);

// Arithmetic on numbers written as bits, least significant first, without leading (trailing) zeros in
// the results; any length (the authors use Python's big integers).
std::vector<int> add_bits(const std::vector<int>& a, const std::vector<int>& b);
std::vector<int> multiply_bits(const std::vector<int>& a, const std::vector<int>& b);
std::vector<int> isqrt_bits(const std::vector<int>& a);  // floor of the square root
std::vector<int> trimmed(std::vector<int> a);             // without high zeros; "0" stays one bit

// A random arithmetic expression of exactly `length` characters over the digits 0..modulus-1, + and -
// (and * when `mult`), fully bracketed, and its value modulo `modulus`: the authors'
// generate_one_expression_and_result (tasks/dcf/modular_arithmetic_brackets.py). Lengths 1-4 are
// d, -d, (d), (-d); longer ones (left op right) with |left| uniform in [1, length - 4].
struct Expression {
  std::string text;  // "((1+2)-(-3))": digits as '0' + d
  std::int64_t value = 0;
};
Expression random_expression(Rng& rng, std::size_t length, std::int64_t modulus, bool mult);
// The value of a fully bracketed expression of that grammar, with `x` standing for x_value; Error
// naming the place when `text` is not one.
std::int64_t evaluate_expression(const std::string& text, std::int64_t modulus, std::int64_t x_value = -1);

// The bits 0 and 1: the alphabet of the suite's binary tasks.
inline const std::vector<std::string> kBits = {"0", "1"};

}  // namespace pelab::chomsky
