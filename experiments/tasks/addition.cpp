// addition: two n-digit numbers in, their (n+1)-digit sum out. Carries make each output digit depend
// on aligned digits of both operands, so the model must match positions across x and y.
#include <algorithm>

#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {

constexpr std::int32_t kDigit0 = seq::kFirstSymbol, kPlus = seq::kFirstSymbol + 10;

class Addition : public SequenceTask {
 public:
  Addition(const SequenceFormat& f, bool lsb_first) : SequenceTask("addition", f, "Add:"), lsb_first_(lsb_first) {}

 protected:
  std::size_t base_vocab_size() const override { return kPlus + 1; }
  seq::Example generate(Rng& rng, std::size_t n) const override {
    // Digits least significant first while computing; flipped at the end unless reverse_digits.
    std::vector<std::int32_t> a(n), b(n), s(n + 1);
    for (auto& d : a) d = std::int32_t(rng.below(10));
    for (auto& d : b) d = std::int32_t(rng.below(10));
    std::int32_t carry = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t v = a[i] + b[i] + carry;
      s[i] = v % 10, carry = v / 10;
    }
    s[n] = carry;
    if (!lsb_first_) {
      std::reverse(a.begin(), a.end());
      std::reverse(b.begin(), b.end());
      std::reverse(s.begin(), s.end());
    }
    seq::Example e;
    for (auto d : a) e.x.push_back(kDigit0 + d);
    e.x.push_back(kPlus);
    for (auto d : b) e.x.push_back(kDigit0 + d);
    for (auto d : s) e.y.push_back(kDigit0 + d);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    const auto plus = std::find(x.begin(), x.end(), kPlus);
    const std::size_t n = std::size_t(plus - x.begin());
    if (plus == x.end() || std::find(plus + 1, x.end(), kPlus) != x.end() || n == 0 || x.size() != 2 * n + 1)
      throw Error("expected a + b: two numbers of the same number of digits (at least one) around one '+', e.g. 456 + 789");
    // Same arithmetic as generate, digits least significant first.
    std::vector<std::int32_t> a(x.begin(), plus), b(plus + 1, x.end()), s(n + 1);
    if (!lsb_first_) std::reverse(a.begin(), a.end()), std::reverse(b.begin(), b.end());
    std::int32_t carry = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t v = (a[i] - kDigit0) + (b[i] - kDigit0) + carry;
      s[i] = kDigit0 + v % 10, carry = v / 10;
    }
    s[n] = kDigit0 + carry;
    if (!lsb_first_) std::reverse(s.begin(), s.end());
    return s;
  }
  std::size_t x_length(std::size_t n) const override { return 2 * n + 1; }
  std::size_t y_length(std::size_t n) const override { return n + 1; }
  // The carry digit (first, or last with reverse_digits) is 0 or 1; every other digit can be any of 10.
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    std::vector<std::size_t> s(n + 1, 10);
    (lsb_first_ ? s.back() : s.front()) = 2;
    return s;
  }
  std::string token_name(std::int32_t id) const override {
    return id == kPlus ? "+" : std::string(1, char('0' + (id - kDigit0)));
  }

 private:
  bool lsb_first_;
};

}  // namespace

PELAB_REGISTER_TASK(addition, TaskSpec{
    "addition",
    "add two n-digit numbers: y = the (n+1)-digit sum",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, digits 0-9 = ids 4-13, '+' = id 14, then the prompt token\n"
    "\"Add:\" (id 15) when prompt = true.\n"
    "x = a + b, y = s: a and b have n uniformly random digits each (leading zeros allowed), s = a + b written\n"
    "with exactly n+1 digits (leading zero kept). Most significant digit first; with reverse_digits = true\n"
    "a, b and s are all written least significant first.\n"
    "example (n=3, default format): <BOS> 4 5 6 + 7 8 9 <SEP> [1 2 4 5 <EOS>]\n"
    "reverse_digits:                <BOS> 6 5 4 + 9 8 7 <SEP> [5 4 2 1 <EOS>]\n" + std::string(kFormatKeys),
    {bool_param("reverse_digits", false,
        "write operands and sum least significant digit first (carries then flow left to right)")},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<Addition>(c.format, p.get_bool("reverse_digits"));
    }});

}  // namespace pelab
