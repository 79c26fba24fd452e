// duplicate_string (context-sensitive; Delétang et al. 2023): y = x x. The authors'
// tasks/cs/duplicate_string.py, binary strings in the paper.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

std::vector<std::int32_t> twice(std::vector<std::int32_t> x) {
  const std::size_t n = x.size();
  x.insert(x.end(), x.begin(), x.begin() + std::ptrdiff_t(n));
  return x;
}

class DuplicateString : public SymbolTask {
 public:
  DuplicateString(const SequenceFormat& f, std::size_t symbols)
      : SymbolTask("duplicate_string", f, "Duplicate:", symbols, twice), symbols_(symbols) {}

 protected:
  std::size_t y_length(std::size_t n) const override { return 2 * n; }
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    return std::vector<std::size_t>(2 * n, symbols_);
  }

 private:
  std::size_t symbols_;
};

}  // namespace

PELAB_REGISTER_TASK(duplicate_string, TaskSpec{
    "duplicate_string",
    "Chomsky suite, CS: write a random string twice, y = x x (Deletang et al. 2023)",
    std::string(kSymbolVocabulary) +
        "x = n random symbols (2 in the paper), y = x twice without a separator; prompt token \"Duplicate:\".\n"
        "example (n=3, default format): <BOS> 1 0 1 <SEP> [1 0 1 1 0 1 <EOS>]\n" + kFormatKeys,
    {symbols_param(2)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<DuplicateString>(c.format, std::size_t(p.get_int("symbols")));
    }});

}  // namespace pelab::chomsky
