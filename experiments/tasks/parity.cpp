// parity: one output bit = parity of the number of 1s in x. The negative control: the answer depends on
// every input bit regardless of position, and transformers rarely extend it beyond training lengths.
#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {

class Parity : public SequenceTask {
 public:
  Parity(const SequenceFormat& f, std::string name) : SequenceTask(std::move(name), f, "Parity:") {}

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
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    std::int32_t ones = 0;
    for (auto v : x) ones += v - seq::kFirstSymbol;  // the vocabulary has only the two bits
    return {seq::kFirstSymbol + ones % 2};
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
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<Parity>(c.format, "parity");
    }});

// The Chomsky suite's parity_check (Delétang et al. 2023, tasks/regular/parity_check.py) is this task:
// the same bits and answer, under the suite's name.
PELAB_REGISTER_TASK(parity_check, TaskSpec{
    "parity_check",
    "Chomsky suite, regular: `parity` under the suite's name (Deletang et al. 2023)",
    "`parity` (the same generator and scoring); see `pelab show-task parity`.\n" + std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<Parity>(c.format, "parity_check");
    }});

}  // namespace pelab
