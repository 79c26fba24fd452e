// binary_multiplication (context-sensitive; Delétang et al. 2023): a * b in binary, least significant
// bit first, y = the product (no high zeros) then the terminator. The authors'
// tasks/cs/binary_multiplication.py draws the operands as binary_addition; for n <= 2 the input is n
// random bits and the answer n - 1 zeros (nothing for n = 1), which we keep.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

constexpr std::size_t kEnd = 3;  // after 0, 1 and *

class BinaryMultiplication : public NamedSymbolTask {
 public:
  explicit BinaryMultiplication(const SequenceFormat& f)
      : NamedSymbolTask("binary_multiplication", f, "Mul2:", {"0", "1", "*", "|"}) {}

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override {
    std::vector<int> a, b;
    seq::Example e = binary_operands(rng, n, a, b);
    e.y = terminated(n <= 2 ? std::vector<int>(n - 1, 0) : multiply_bits(a, b), kEnd);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    std::vector<int> a, b;
    if (!parse_binary_operands(x, "*", a, b)) {
      if (a.size() > 2) throw Error("expected bits * bits (least significant first), or at most 2 bits");
      return terminated(std::vector<int>(a.size() - 1, 0), kEnd);
    }
    return terminated(multiply_bits(a, b), kEnd);
  }
  // The product of numbers of |a| + |b| = n - 1 bits has at most n - 1 bits.
  std::size_t y_length(std::size_t n) const override { return n; }
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    return std::vector<std::size_t>(n, 3);  // 0, 1 or | (a bound: most answers are shorter)
  }
};

}  // namespace

PELAB_REGISTER_TASK(binary_multiplication, TaskSpec{
    "binary_multiplication",
    "Chomsky suite, CS: a * b in binary, least significant bit first (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, bits 0 1 = ids 4-5, * = id 6, the terminator | = id 7,\n"
    "then the prompt token \"Mul2:\" (id 8) when prompt = true.\n"
    "x = a * b in n tokens, drawn as in binary_addition; y = the product without high zeros, then |.\n"
    "n <= 2: x = n random bits (not all ones), y = n - 1 zeros then |, as the authors' generator. The\n"
    "authors pad y with zeros to n tokens and leave the padding out of the accuracy; pelab omits it. The\n"
    "chance level assumes a guess among 0, 1 and | at every place of the longest answer: a lower bound.\n"
    "example (n=9, default format): <BOS> 0 0 1 * 0 1 1 0 1 <SEP> [0 0 0 1 1 0 1 | <EOS>]   (4 * 22 = 88)\n" +
        std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<BinaryMultiplication>(c.format);
    }});

}  // namespace pelab::chomsky
