// modular_arithmetic (regular; Delétang et al. 2023): evaluate d op d op ... d modulo 5, ops + - *
// with the usual precedence (products first). The authors' tasks/regular/modular_arithmetic.py: the
// input length is odd (an even n is lowered by one), digits and operators uniform.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

constexpr std::int64_t kModulus = 5;
constexpr std::size_t kPlus = 5, kMinus = 6, kTimes = 7;  // symbols after the digits 0-4

class ModularArithmetic : public NamedSymbolTask {
 public:
  explicit ModularArithmetic(const SequenceFormat& f)
      : NamedSymbolTask("modular_arithmetic", f, "Mod:", {"0", "1", "2", "3", "4", "+", "-", "*"}) {}

 protected:
  std::size_t x_length(std::size_t n) const override { return n % 2 ? n : n - 1; }
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    for (std::size_t i = 0; i < x_length(n); ++i)
      e.x.push_back(id(i % 2 ? kPlus + rng.below(3) : rng.below(std::uint64_t(kModulus))));
    e.y = solve(e.x);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    if (x.size() % 2 == 0) throw Error("expected digit op digit ... op digit (an odd number of tokens)");
    std::int64_t sum = 0, term = 1;
    int sign = 1;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t s = symbol(x[i]);
      if ((i % 2 == 0) != (s < kPlus))
        throw Error("expected digits 0-4 at odd places and + - * between them, got '" + token_name(x[i]) + "'");
      if (i % 2 == 0) {
        term = term * std::int64_t(s) % kModulus;
      } else if (s != kTimes) {  // + or -: the product so far is a finished term
        sum += sign * term, term = 1, sign = s == kMinus ? -1 : 1;
      }
    }
    sum += sign * term;
    return {id(std::size_t(((sum % kModulus) + kModulus) % kModulus))};
  }
  std::size_t y_length(std::size_t) const override { return 1; }
  std::vector<std::size_t> answer_support(std::size_t) const override { return {std::size_t(kModulus)}; }
  void check_size(std::size_t n) const override {
    if (n < 1) throw Error("task 'modular_arithmetic': n must be at least 1");
  }
};

}  // namespace

PELAB_REGISTER_TASK(modular_arithmetic, TaskSpec{
    "modular_arithmetic",
    "Chomsky suite, regular: evaluate digit op digit ... modulo 5, ops + - * (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, digits 0-4 = ids 4-8, + - * = ids 9-11, then the prompt\n"
    "token \"Mod:\" (id 12) when prompt = true.\n"
    "x = n tokens (n - 1 when n is even, as the authors' generator): uniformly random digits and operators\n"
    "alternating, y = its value modulo 5 with products evaluated first.\n"
    "example (n=7, default format): <BOS> 0 * 1 + 4 * 3 <SEP> [2 <EOS>]   (0 + 12 = 2 mod 5)\n" +
        std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<ModularArithmetic>(c.format);
    }});

}  // namespace pelab::chomsky
