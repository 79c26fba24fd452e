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
        "sequence: <BOS> x <SEP> y <EOS>; x = n random symbols, y = x. Loss counts y and <EOS> only.\n"
        "example (n=3): <BOS> 3 1 4 <SEP> 3 1 4 <EOS>",
    {symbols_param()},
    [](const TaskCommon&, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<SymbolTask>("copy", std::size_t(p.get_int("symbols")), identity);
    }});

}  // namespace pelab
