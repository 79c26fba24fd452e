// even_pairs (regular; Delétang et al. 2023): is the number of "01" and "10" pairs in a bit string
// even? The authors' tasks/regular/even_pairs.py: class 1 when odd. It equals x_first != x_last, so a
// model can solve it by attending to both ends only.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

class EvenPairs : public NamedSymbolTask {
 public:
  explicit EvenPairs(const SequenceFormat& f) : NamedSymbolTask("even_pairs", f, "EvenPairs:", kBits) {}

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    for (int b : random_bits(rng, n)) e.x.push_back(id(std::size_t(b)));
    e.y = solve(e.x);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    std::size_t changes = 0;
    for (std::size_t i = 1; i < x.size(); ++i) changes += x[i] != x[i - 1];
    return {id(changes % 2)};
  }
  std::size_t y_length(std::size_t) const override { return 1; }
  std::vector<std::size_t> answer_support(std::size_t n) const override { return {n >= 2 ? 2u : 1u}; }
};

}  // namespace

PELAB_REGISTER_TASK(even_pairs, TaskSpec{
    "even_pairs",
    "Chomsky suite, regular: 1 if a bit string has an odd number of 01/10 pairs (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, bits 0 = id 4 and 1 = id 5, then the prompt token\n"
    "\"EvenPairs:\" (id 6) when prompt = true.\n"
    "x = n uniformly random bits, y = one bit: the number of adjacent unequal pairs (01 or 10) modulo 2.\n"
    "example (n=7, default format): <BOS> 0 1 0 1 0 0 1 <SEP> [1 <EOS>]   (2 x 10, 3 x 01)\n" +
        std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> { return std::make_unique<EvenPairs>(c.format); }});

}  // namespace pelab::chomsky
