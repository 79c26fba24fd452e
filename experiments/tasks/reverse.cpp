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

}  // namespace pelab
