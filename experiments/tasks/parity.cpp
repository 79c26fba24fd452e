// parity: one output bit = parity of the number of 1s in x. The negative control: the answer depends on
// every input bit regardless of position, and transformers rarely extend it beyond training lengths.
#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {

class Parity : public SequenceTask {
 public:
  explicit Parity(const SequenceFormat& f) : SequenceTask("parity", f, "Parity:") {}

 protected:
  std::size_t base_vocab_size() const override { return seq::kFirstSymbol + 2; }
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    std::int32_t ones = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto bit = std::int32_t(rng.below(2));
      ones += bit;
      e.x.push_back(seq::kFirstSymbol + bit);
    }
    e.y.push_back(seq::kFirstSymbol + ones % 2);
    return e;
  }
  std::size_t x_length(std::size_t n) const override { return n; }
  std::size_t y_length(std::size_t) const override { return 1; }
  std::vector<std::size_t> answer_support(std::size_t) const override { return {2}; }  // for every n >= 1
  std::string token_name(std::int32_t id) const override { return std::to_string(id - seq::kFirstSymbol); }
};

}  // namespace

PELAB_REGISTER_TASK(parity, TaskSpec{
    "parity",
    "parity of a random bit string (negative control: hard to extrapolate)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, bits 0 = id 4 and 1 = id 5, then the prompt token\n"
    "\"Parity:\" (id 6) when prompt = true.\n"
    "x = n uniformly random bits, y = one bit: 1 if x has an odd number of 1s.\n"
    "example (n=4, default format): <BOS> 1 0 1 1 <SEP> [1 <EOS>]\n" + std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> { return std::make_unique<Parity>(c.format); }});

}  // namespace pelab
