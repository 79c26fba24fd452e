// reverse: y = x reversed. Needs attention to a position that moves with both n and the output index.
#include <algorithm>

#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {
std::vector<std::int32_t> reversed(std::vector<std::int32_t> x) {
  std::reverse(x.begin(), x.end());
  return x;
}
}  // namespace

PELAB_REGISTER_TASK(reverse, TaskSpec{
    "reverse",
    "reverse a random symbol string: y = reversed x",
    std::string(kSymbolVocabulary) +
        "x = n random symbols, y = x reversed; prompt token \"Reverse:\".\n"
        "example (n=3, default format): <BOS> 3 1 4 <SEP> [4 1 3 <EOS>]\n" + kFormatKeys,
    {symbols_param()},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<SymbolTask>("reverse", c.format, "Reverse:", std::size_t(p.get_int("symbols")), reversed);
    }});

// The Chomsky suite's reverse_string (Delétang et al. 2023, tasks/dcf/reverse_string.py) is this task with
// the paper's 2 symbols: one generator, so its results compare with `reverse`'s.
PELAB_REGISTER_TASK(reverse_string, TaskSpec{
    "reverse_string",
    "Chomsky suite: `reverse` with 2 symbols (Deletang et al. 2023)",
    "`reverse` with symbols = 2 by default (the paper's alphabet); see `pelab show-task reverse`.\n" +
        std::string(kFormatKeys),
    {symbols_param(2)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<SymbolTask>("reverse_string", c.format, "Reverse:", std::size_t(p.get_int("symbols")), reversed);
    }});

}  // namespace pelab
