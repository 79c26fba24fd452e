// stack_manipulation (deterministic context-free; Delétang et al. 2023): a stack of bits given bottom
// to top, then POP / PUSH 0 / PUSH 1 actions; y is the final stack top to bottom, then the terminator.
// The authors' tasks/dcf/stack_manipulation.py: stack length uniform in [1, n-1], the rest actions
// uniform; a POP on an empty stack does nothing; n = 1 is a single bit that is its own answer.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

constexpr std::size_t kPop = 2, kPush0 = 3, kPush1 = 4, kEnd = 5;

class StackManipulation : public NamedSymbolTask {
 public:
  explicit StackManipulation(const SequenceFormat& f)
      : NamedSymbolTask("stack_manipulation", f, "Stack:", {"0", "1", "POP", "PUSH0", "PUSH1", "|"}) {}

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    const std::size_t stack = n == 1 ? 1 : std::size_t(rng.range(1, std::int64_t(n) - 1));
    for (int b : random_bits(rng, stack)) e.x.push_back(id(std::size_t(b)));
    for (std::size_t i = stack; i < n; ++i) e.x.push_back(id(kPop + rng.below(3)));
    e.y = solve(e.x);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    expect_symbols(x, kEnd, "x");
    std::vector<std::int32_t> stack;
    bool actions = false;
    for (auto v : x) {
      const std::size_t s = symbol(v);
      if (s < kPop && actions) throw Error("the stack's bits come first, then the actions");
      actions = actions || s >= kPop;
      if (s < kPop) stack.push_back(v);
      else if (s == kPop && !stack.empty()) stack.pop_back();
      else if (s != kPop) stack.push_back(id(s - kPush0));
    }
    std::vector<std::int32_t> y(stack.rbegin(), stack.rend());
    y.push_back(id(kEnd));
    return y;
  }
  // At most n bits (every action a push) and the terminator.
  std::size_t y_length(std::size_t n) const override { return n + 1; }
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    return std::vector<std::size_t>(n + 1, 3);  // 0, 1 or | (bound: answers are shorter than n + 1)
  }
};

}  // namespace

PELAB_REGISTER_TASK(stack_manipulation, TaskSpec{
    "stack_manipulation",
    "Chomsky suite, DCF: run POP/PUSH actions on a bit stack, y = the stack top first (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, bits 0 1 = ids 4-5, POP PUSH0 PUSH1 = ids 6-8, the\n"
    "terminator | = id 9, then the prompt token \"Stack:\" (id 10) when prompt = true.\n"
    "x = a stack of k bits bottom to top (k uniform in [1, n-1]) then n - k uniformly random actions (POP on an\n"
    "empty stack does nothing); y = the final stack top to bottom, then |. The authors pad y with zeros to\n"
    "n + 1 tokens and leave the padding out of the accuracy; pelab omits it. The chance level assumes a\n"
    "guess among 0, 1 and | at each of n + 1 places: a lower bound on exact match.\n"
    "example (n=7, default format): <BOS> 0 1 1 0 PUSH1 POP POP <SEP> [1 1 0 | <EOS>]\n" + std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<StackManipulation>(c.format);
    }});

}  // namespace pelab::chomsky
