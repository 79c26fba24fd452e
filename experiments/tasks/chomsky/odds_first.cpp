// odds_first (context-sensitive; Delétang et al. 2023): y = the tokens at odd places, then those at
// even places. Their docstring (1-based: s1 s3 s5 ... s2 s4 ...) and code (0-based x[1::2] then
// x[::2], i.e. s2 s4 ... s1 s3 ...) disagree; we follow the code, which made the paper's numbers:
// 0-based odd indices first.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

std::vector<std::int32_t> odds_then_evens(std::vector<std::int32_t> x) {
  std::vector<std::int32_t> y;
  for (std::size_t start : {1, 0})
    for (std::size_t i = start; i < x.size(); i += 2) y.push_back(x[i]);
  return y;
}

}  // namespace

PELAB_REGISTER_TASK(odds_first, TaskSpec{
    "odds_first",
    "Chomsky suite, CS: the tokens at odd indices, then at even ones (Deletang et al. 2023)",
    std::string(kSymbolVocabulary) +
        "x = n random symbols (2 in the paper), y = x[1], x[3], ... then x[0], x[2], ... (0-based; the authors'\n"
        "code, where their docstring says the opposite); prompt token \"OddsFirst:\".\n"
        "example (n=8, default format): <BOS> 0 0 1 1 0 1 0 1 <SEP> [0 1 1 1 0 1 0 0 <EOS>]\n" + kFormatKeys,
    {symbols_param(2)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<SymbolTask>("odds_first", c.format, "OddsFirst:", std::size_t(p.get_int("symbols")),
                                          odds_then_evens);
    }});

}  // namespace pelab::chomsky
