// binary_addition (context-sensitive; Delétang et al. 2023): a + b in binary, least significant bit
// first, y = the sum (no high zeros) then the terminator. The authors' tasks/cs/binary_addition.py: for
// n >= 3, |a| uniform in [1, n-2], |b| = n - 1 - |a|, each operand uniform in [1, 2^len - 1] written
// with exactly len bits; for n <= 2, x is one number of n bits uniform in [0, 2^n - 2] and y that number.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

constexpr std::size_t kEnd = 3;  // after 0, 1 and +

class BinaryAddition : public NamedSymbolTask {
 public:
  explicit BinaryAddition(const SequenceFormat& f) : NamedSymbolTask("binary_addition", f, "Add2:", {"0", "1", "+", "|"}) {}

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override {
    std::vector<int> a, b;
    seq::Example e = binary_operands(rng, n, a, b);
    e.y = terminated(n <= 2 ? trimmed(a) : add_bits(a, b), kEnd);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    std::vector<int> a, b;
    const bool two = parse_binary_operands(x, "+", a, b);
    return terminated(two ? add_bits(a, b) : trimmed(a), kEnd);
  }
  // The sum of numbers of |a| and |b| <= n - 2 bits has at most n - 1 bits; n <= 2: n bits.
  std::size_t y_length(std::size_t n) const override { return (n <= 2 ? n : n - 1) + 1; }
  // The authors' output_length(n) = n + 1 (tasks/cs/binary_addition.py): one blank more than the longest
  // answer for n >= 3; the places past y are padding.
  std::size_t blank_length(std::size_t n) const override { return n + 1; }
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    return std::vector<std::size_t>(y_length(n), 3);  // 0, 1 or | (a bound: most answers are shorter)
  }
};

}  // namespace

PELAB_REGISTER_TASK(binary_addition, TaskSpec{
    "binary_addition",
    "Chomsky suite, CS: a + b in binary, least significant bit first (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, bits 0 1 = ids 4-5, + = id 6, the terminator | = id 7,\n"
    "then the prompt token \"Add2:\" (id 8) when prompt = true.\n"
    "x = a + b in n tokens, least significant bit first: |a| uniform in [1, n-2], |b| = n-1-|a|, each number\n"
    "uniform in [1, 2^len - 1] written with exactly len bits; n <= 2: one number of n bits. y = the sum\n"
    "without high zeros, then |. The authors pad y with zeros to n + 1 tokens and leave the padding out of\n"
    "the accuracy; pelab omits it. The chance level assumes a guess among 0, 1 and | at every place of\n"
    "the longest answer: a lower bound.\n"
    "example (n=9, default format): <BOS> 0 0 1 + 0 1 1 0 1 <SEP> [0 1 0 1 1 | <EOS>]   (4 + 22 = 26)\n" +
        std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<BinaryAddition>(c.format);
    }});

}  // namespace pelab::chomsky
