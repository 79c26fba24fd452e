// cycle_navigation (regular; Delétang et al. 2023): walk on a cycle of 5 states from state 0, one
// step left, none or right per input token; y is the final state. The authors'
// tasks/regular/cycle_navigation.py: actions 0, 1, 2 move by -1, 0, +1; final = sum mod 5.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

constexpr std::size_t kStates = 5;

class CycleNavigation : public NamedSymbolTask {
 public:
  explicit CycleNavigation(const SequenceFormat& f)
      : NamedSymbolTask("cycle_navigation", f, "Cycle:", {"L", "S", "R", "0", "1", "2", "3", "4"}) {}

 protected:
  // Symbols 0-2 are the moves (left, stay, right), 3-7 the states 0-4 (y only).
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    for (std::size_t i = 0; i < n; ++i) e.x.push_back(id(rng.below(3)));
    e.y = solve(e.x);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    expect_symbols(x, 3, "x: the moves are L (left), S (stay), R (right)");
    std::size_t state = 0;
    for (auto v : x) state = (state + kStates + symbol(v) - 1) % kStates;
    return {id(3 + state)};
  }
  std::size_t y_length(std::size_t) const override { return 1; }
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    return {std::min<std::size_t>(kStates, 2 * n + 1)};  // n moves reach -n..n
  }
};

}  // namespace

PELAB_REGISTER_TASK(cycle_navigation, TaskSpec{
    "cycle_navigation",
    "Chomsky suite, regular: the final state of a walk on a 5-cycle (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, moves L S R = ids 4-6, states 0-4 = ids 7-11, then the\n"
    "prompt token \"Cycle:\" (id 12) when prompt = true.\n"
    "x = n uniformly random moves (L: -1, S: 0, R: +1) from state 0, y = the final state modulo 5.\n"
    "example (n=5, default format): <BOS> R L S L L <SEP> [3 <EOS>]   (+1 -1 0 -1 -1 = -2 = 3 mod 5)\n" +
        std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<CycleNavigation>(c.format);
    }});

}  // namespace pelab::chomsky
