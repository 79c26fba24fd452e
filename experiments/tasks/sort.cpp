// sort: y = x sorted ascending. Largely content-based (counting), so positions matter less than in copy.
#include <algorithm>

#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {
std::vector<std::int32_t> sorted(std::vector<std::int32_t> x) {
  std::sort(x.begin(), x.end());
  return x;
}
}  // namespace

PELAB_REGISTER_TASK(sort, TaskSpec{
    "sort",
    "sort a random symbol string: y = x in ascending order",
    std::string(kSymbolVocabulary) +
        "x = n random symbols, y = x sorted ascending (by id); prompt token \"Sort:\".\n"
        "example (n=4, default format): <BOS> 3 1 4 1 <SEP> [1 1 3 4 <EOS>]\n" + kFormatKeys,
    {symbols_param()},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<SymbolTask>("sort", c.format, "Sort:", std::size_t(p.get_int("symbols")), sorted);
    }});

// The Chomsky suite's bucket_sort (Delétang et al. 2023, tasks/cs/bucket_sort.py) is this task with the
// paper's 5 symbols: one generator, so its results compare with `sort`'s.
PELAB_REGISTER_TASK(bucket_sort, TaskSpec{
    "bucket_sort",
    "Chomsky suite: `sort` with 5 symbols (Deletang et al. 2023)",
    "`sort` with symbols = 5 by default (the paper's alphabet); see `pelab show-task sort`.\n" +
        std::string(kFormatKeys),
    {symbols_param(5)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<SymbolTask>("bucket_sort", c.format, "Sort:", std::size_t(p.get_int("symbols")), sorted);
    }});

}  // namespace pelab
