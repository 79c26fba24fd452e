#include "experiments/tasks/chomsky/chomsky.hpp"

#include <algorithm>

namespace pelab::chomsky {

void NamedSymbolTask::expect_symbols(const std::vector<std::int32_t>& x, std::size_t count,
                                     const std::string& what) const {
  for (auto v : x)
    if (v < seq::kFirstSymbol || symbol(v) >= count)
      throw Error("'" + token_name(v) + "' cannot appear in " + what);
}

std::vector<int> random_bits(Rng& rng, std::size_t n) {
  std::vector<int> bits(n);
  for (auto& b : bits) b = int(rng.below(2));
  return bits;
}

std::vector<int> random_nonzero_bits(Rng& rng, std::size_t n) {
  for (;;) {  // rejection: uniform over the 2^n - 1 nonzero patterns
    std::vector<int> bits = random_bits(rng, n);
    if (std::find(bits.begin(), bits.end(), 1) != bits.end()) return bits;
  }
}

std::vector<int> trimmed(std::vector<int> a) {
  while (a.size() > 1 && a.back() == 0) a.pop_back();
  if (a.empty()) a.push_back(0);
  return a;
}

std::vector<int> add_bits(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> s(std::max(a.size(), b.size()) + 1, 0);
  int carry = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const int v = (i < a.size() ? a[i] : 0) + (i < b.size() ? b[i] : 0) + carry;
    s[i] = v & 1, carry = v >> 1;
  }
  return trimmed(s);
}

std::vector<int> multiply_bits(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> p(a.size() + b.size() + 1, 0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i]) continue;
    int carry = 0;  // p += b << i
    for (std::size_t j = 0; i + j < p.size(); ++j) {
      const int v = p[i + j] + (j < b.size() ? b[j] : 0) + carry;
      p[i + j] = v & 1, carry = v >> 1;
      if (j >= b.size() && !carry) break;
    }
  }
  return trimmed(p);
}

namespace {
// a >= b for numbers of equal bit count, least significant first.
bool not_less(const std::vector<int>& a, const std::vector<int>& b) {
  for (std::size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return a[i] > b[i];
  return true;
}
}  // namespace

std::vector<int> isqrt_bits(const std::vector<int>& a) {
  // The digit-by-digit method in base 2 (e.g. Wikipedia, "Methods of computing square roots",
  // binary numeral system): two bits of a at a time from the top; the remainder stays below 2 r + 1.
  const std::size_t pairs = (a.size() + 1) / 2, w = pairs + 3;
  std::vector<int> root, rem(w, 0);  // root: most significant first while built
  for (std::size_t k = pairs; k-- > 0;) {
    // rem = rem * 4 + the next two bits
    rem.insert(rem.begin(), {2 * k < a.size() ? a[2 * k] : 0, 2 * k + 1 < a.size() ? a[2 * k + 1] : 0});
    rem.resize(w);
    std::vector<int> trial(w, 0);  // 4 r + 1, r the root so far
    trial[0] = 1;
    for (std::size_t i = 0; i < root.size(); ++i) trial[2 + i] = root[root.size() - 1 - i];
    const bool fits = not_less(rem, trial);
    if (fits) {
      int borrow = 0;
      for (std::size_t i = 0; i < w; ++i) {
        int v = rem[i] - trial[i] - borrow;
        borrow = v < 0, rem[i] = v & 1;
      }
    }
    root.push_back(fits);
  }
  std::reverse(root.begin(), root.end());
  return trimmed(root);
}

seq::Example binary_operands(Rng& rng, std::size_t n, std::vector<int>& a, std::vector<int>& b) {
  seq::Example e;
  if (n <= 2) {
    do a = random_bits(rng, n);
    while (std::count(a.begin(), a.end(), 1) == int(n));  // numpy's randint(0, 2**n - 1): high excluded
    b.clear();
    for (int v : a) e.x.push_back(seq::kFirstSymbol + v);
    return e;
  }
  const std::size_t la = std::size_t(rng.range(1, std::int64_t(n) - 2));
  a = random_nonzero_bits(rng, la), b = random_nonzero_bits(rng, n - 1 - la);
  for (int v : a) e.x.push_back(seq::kFirstSymbol + v);
  e.x.push_back(seq::kFirstSymbol + 2);  // the operator
  for (int v : b) e.x.push_back(seq::kFirstSymbol + v);
  return e;
}

bool parse_binary_operands(const std::vector<std::int32_t>& x, const std::string& op, std::vector<int>& a,
                           std::vector<int>& b) {
  a.clear(), b.clear();
  auto* side = &a;
  for (auto v : x) {
    const std::int32_t s = v - seq::kFirstSymbol;
    if (s == 2 && side == &a) side = &b;
    else if (s == 0 || s == 1) side->push_back(s);
    else throw Error("expected bits, or bits " + op + " bits, least significant first");
  }
  if (a.empty() || (side == &b && b.empty())) throw Error("expected bits, or bits " + op + " bits, least significant first");
  return side == &b;
}

std::vector<std::int32_t> terminated(const std::vector<int>& bits, std::size_t end) {
  std::vector<std::int32_t> y;
  for (int v : bits) y.push_back(seq::kFirstSymbol + v);
  y.push_back(seq::kFirstSymbol + std::int32_t(end));
  return y;
}

namespace {
std::int64_t mod(std::int64_t v, std::int64_t m) { return ((v % m) + m) % m; }
}  // namespace

Expression random_expression(Rng& rng, std::size_t length, std::int64_t modulus, bool mult) {
  if (length == 0) throw Error("an expression needs at least one character");
  const auto digit = [&] {
    const auto d = std::int64_t(rng.below(std::uint64_t(modulus)));
    return Expression{std::string(1, char('0' + d)), d};
  };
  if (length <= 4) {  // d, -d, (d), (-d)
    Expression d = digit();
    const bool negate = length % 2 == 0, bracket = length >= 3;
    std::string t = (negate ? "-" : "") + d.text;
    return {bracket ? "(" + t + ")" : t, mod(negate ? -d.value : d.value, modulus)};
  }
  const std::size_t left_length = std::size_t(rng.range(1, std::int64_t(length) - 4));
  const Expression left = random_expression(rng, left_length, modulus, mult);
  const Expression right = random_expression(rng, length - left_length - 3, modulus, mult);
  const std::uint64_t op = rng.below(mult ? 3 : 2);
  const std::int64_t v = op == 0 ? left.value + right.value : op == 1 ? left.value - right.value
                                                                      : left.value * right.value;
  return {"(" + left.text + "+-*"[op] + right.text + ")", mod(v, modulus)};
}

namespace {
// Recursive descent over the grammar above: e := d | x | -e | (e) | (e op e).
struct Parser {
  const std::string& s;
  std::int64_t m, x;
  std::size_t i = 0;
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("not an expression of the task's grammar at character " + std::to_string(i + 1) + ": " + what);
  }
  std::int64_t term() {
    if (i >= s.size()) fail("it ends early");
    const char c = s[i++];
    if (c >= '0' && c < char('0' + m)) return c - '0';
    if (c == 'x' && x >= 0) return x;
    if (c == '-') return mod(-term(), m);
    if (c != '(') fail(std::string("unexpected '") + c + "'");
    std::int64_t v = term();
    if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == '*')) {
      const char op = s[i++];
      const std::int64_t r = term();
      v = mod(op == '+' ? v + r : op == '-' ? v - r : v * r, m);
    }
    if (i >= s.size() || s[i] != ')') fail("expected ')'");
    ++i;
    return v;
  }
};
}  // namespace

std::int64_t evaluate_expression(const std::string& text, std::int64_t modulus, std::int64_t x_value) {
  Parser p{text, modulus, x_value};
  const std::int64_t v = p.term();
  if (p.i != text.size()) p.fail("extra characters after the expression");
  return v;
}

}  // namespace pelab::chomsky
