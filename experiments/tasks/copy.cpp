// copy: y = x. The baseline length-generalization task: an encoding must let attention find
// "the token n positions back" at lengths never seen in training.
#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {
std::vector<std::int32_t> identity(std::vector<std::int32_t> x) { return x; }
}  // namespace

PELAB_REGISTER_TASK(copy, TaskSpec{
    "copy",
    "copy a random symbol string: y = x",
    std::string(kSymbolVocabulary) +
        "x = n random symbols, y = x; prompt token \"Copy:\".\n"
        "example (n=3, default format): <BOS> 3 1 4 <SEP> [3 1 4 <EOS>]\n" + kFormatKeys,
    {symbols_param()},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<SymbolTask>("copy", c.format, "Copy:", std::size_t(p.get_int("symbols")), identity);
    }});

}  // namespace pelab
