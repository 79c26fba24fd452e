// solve_equation (deterministic context-free; Delétang et al. 2023): one digit of a bracketed +/-
// expression is replaced by x and its value given after "="; y is the hidden digit (unique modulo 5:
// x enters with coefficient +1 or -1). The authors' tasks/dcf/solve_equation.py: an expression of n - 2
// characters, then "=" and the value; x replaces the first digit at or after a uniform place.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

constexpr std::int64_t kModulus = 5;
const std::string kChars = "01234+-()x=";  // symbol i is kChars[i]

class SolveEquation : public NamedSymbolTask {
 public:
  explicit SolveEquation(const SequenceFormat& f)
      : NamedSymbolTask("solve_equation", f, "Solve:", {"0", "1", "2", "3", "4", "+", "-", "(", ")", "x", "="}) {}

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    if (n < 3) {  // too short for "e=v": the authors' generator gives zeros and answer 0
      e.x.assign(n, id(0));
      e.y = {id(0)};
      return e;
    }
    Expression ex = random_expression(rng, n - 2, kModulus, false);
    std::size_t at = std::size_t(rng.below(ex.text.size()));
    while (!(ex.text[at] >= '0' && ex.text[at] <= '4')) at = (at + 1) % ex.text.size();
    const std::int32_t answer = id(std::size_t(ex.text[at] - '0'));
    ex.text[at] = 'x';
    for (char c : ex.text + "=" + char('0' + ex.value)) e.x.push_back(id(kChars.find(c)));
    e.y = {answer};
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    std::string text;
    for (auto v : x) text += kChars.at(symbol(v));
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq + 2 != text.size() || text.back() < '0' || text.back() > '4' ||
        std::count(text.begin(), text.end(), 'x') != 1)
      throw Error("expected an expression with one x, then = and a digit, e.g. ((x+4)-1)=2");
    const std::int64_t value = text.back() - '0';
    for (std::int64_t d = 0; d < kModulus; ++d)  // the coefficient of x is +-1: exactly one d fits
      if (evaluate_expression(text.substr(0, eq), kModulus, d) == value) return {id(std::size_t(d))};
    throw Error("no digit solves it");
  }
  std::size_t y_length(std::size_t) const override { return 1; }
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    return {n < 3 ? 1u : std::size_t(kModulus)};
  }
};

}  // namespace

PELAB_REGISTER_TASK(solve_equation, TaskSpec{
    "solve_equation",
    "Chomsky suite, DCF: the digit x of a bracketed +/- equation modulo 5 (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, digits 0-4 = ids 4-8, + - ( ) x = = ids 9-14, then the\n"
    "prompt token \"Solve:\" (id 15) when prompt = true.\n"
    "x = e=v, n characters: e a random expression of n-2 characters as in modular_arithmetic_brackets\n"
    "(+ and - only) with one digit replaced by x, v its value modulo 5; y = the replaced digit. n < 3 gives\n"
    "n zeros and the answer 0, as the authors' generator.\n"
    "example (n=10, default format): <BOS> ( ( - x ) + 4 ) = 2 <SEP> [2 <EOS>]\n" + std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<SolveEquation>(c.format);
    }});

}  // namespace pelab::chomsky
