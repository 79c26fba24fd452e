// modular_arithmetic_brackets (deterministic context-free; Delétang et al. 2023): the value modulo 5
// of a random fully bracketed expression of exactly n characters. The authors'
// tasks/dcf/modular_arithmetic_brackets.py, whose default (mult = False) uses + and - only.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

constexpr std::int64_t kModulus = 5;
const std::string kChars = "01234+-*()";  // symbol i is kChars[i]

class ModularArithmeticBrackets : public NamedSymbolTask {
 public:
  ModularArithmeticBrackets(const SequenceFormat& f, bool mult)
      : NamedSymbolTask("modular_arithmetic_brackets", f, "Mod():",
                        {"0", "1", "2", "3", "4", "+", "-", "*", "(", ")"}),
        mult_(mult) {}

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override {
    const Expression ex = random_expression(rng, n, kModulus, mult_);
    seq::Example e;
    for (char c : ex.text) e.x.push_back(id(kChars.find(c)));
    e.y = {id(std::size_t(ex.value))};
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    std::string text;
    for (auto v : x) text += kChars.at(symbol(v));
    if (!mult_ && text.find('*') != std::string::npos) throw Error("'*' needs mult = true");
    return {id(std::size_t(evaluate_expression(text, kModulus)))};
  }
  std::size_t y_length(std::size_t) const override { return 1; }
  std::vector<std::size_t> answer_support(std::size_t) const override { return {std::size_t(kModulus)}; }

 private:
  bool mult_;
};

}  // namespace

PELAB_REGISTER_TASK(modular_arithmetic_brackets, TaskSpec{
    "modular_arithmetic_brackets",
    "Chomsky suite, DCF: the value modulo 5 of a bracketed +/- expression of n characters (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, digits 0-4 = ids 4-8, + - * ( ) = ids 9-13, then the\n"
    "prompt token \"Mod():\" (id 14) when prompt = true.\n"
    "x = a random expression of exactly n characters: d, -d, (d), (-d) for n <= 4, else (left op right) with\n"
    "|left| uniform in [1, n-4]; digits and operators uniform (op in + - , and * with mult = true).\n"
    "y = its value modulo 5.\n"
    "example (n=8, default format): <BOS> ( ( - 2 ) + 4 ) <SEP> [2 <EOS>]\n" + std::string(kFormatKeys),
    {bool_param("mult", false, "also draw * (the authors' default, used in the paper, is false)")},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<ModularArithmeticBrackets>(c.format, p.get_bool("mult"));
    }});

}  // namespace pelab::chomsky
