// The Chomsky-hierarchy suite (experiments/tasks/chomsky/): the worked examples of the authors'
// docstrings (github.com/google-deepmind/neural_networks_chomsky_hierarchy, tasks/*/*.py) give the
// answers below; every generated example is solved again from its typed x; the big-number arithmetic
// against 64-bit integers and, at 500 bits, against its own definition.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "experiments/tasks/chomsky/chomsky.hpp"
#include "task_helpers.hpp"

using namespace pelab;

namespace {

const std::vector<std::string> kSuite = {
    "even_pairs", "modular_arithmetic", "parity_check", "cycle_navigation", "stack_manipulation",
    "reverse_string", "modular_arithmetic_brackets", "solve_equation", "duplicate_string",
    "missing_duplicate_string", "odds_first", "binary_addition", "binary_multiplication", "compute_sqrt",
    "bucket_sort"};

std::unique_ptr<Task> task(const std::string& name, const test::TaskParams& p = {}) {
  return test::make_seq_task(name, p, 1, 16, SequenceFormat{});
}

// The answer pelab computes for a typed x, written in the task's notation ("1 1 0 |").
std::string answer(const std::string& name, const std::string& x, const test::TaskParams& p = {}) {
  const auto t = task(name, p);
  const seq::Example e = seq::decode(t->parse_input(x), 0);
  std::string s;
  for (auto v : e.y) s += (s.empty() ? "" : " ") + t->token_text(v);
  return s;
}

std::vector<int> bits_of(std::uint64_t v) {  // least significant first, "0" for zero
  std::vector<int> b;
  for (; v; v >>= 1) b.push_back(int(v & 1));
  return b.empty() ? std::vector<int>{0} : b;
}

}  // namespace

TEST_CASE("the Chomsky suite has its 15 tasks", "[tasks][chomsky]") {
  for (const auto& name : kSuite) {
    INFO(name);
    const TaskSpec& s = TaskRegistry::instance().get(name);
    CHECK(s.summary.find("Chomsky suite") != std::string::npos);
    CHECK(s.format.find(name == "parity_check" || name == "reverse_string" || name == "bucket_sort" ? "see `pelab"
                                                                                                     : "example") !=
          std::string::npos);
  }
}

TEST_CASE("Chomsky tasks answer the authors' worked examples", "[tasks][chomsky]") {
  CHECK(answer("even_pairs", "0 0 1 1 1 0") == "0");
  CHECK(answer("even_pairs", "0101001") == "1");
  CHECK(answer("parity_check", "1010100") == "1");
  CHECK(answer("parity_check", "01111") == "0");
  CHECK(answer("cycle_navigation", "R L S L L") == "3");
  CHECK(answer("cycle_navigation", "RRRL") == "2");
  CHECK(answer("modular_arithmetic", "1 + 2 * 3") == "2");
  CHECK(answer("modular_arithmetic", "1-1-1") == "4");
  CHECK(answer("modular_arithmetic", "0*1+4*3-2") == "0");
  CHECK(answer("stack_manipulation", "0 1 1 0 PUSH1 POP POP") == "1 1 0 |");
  CHECK(answer("stack_manipulation", "1 1 0 POP POP POP") == "|");
  CHECK(answer("reverse_string", "011010") == "0 1 0 1 1 0");
  CHECK(answer("modular_arithmetic_brackets", "((-2)+4)") == "2");
  CHECK(answer("modular_arithmetic_brackets", "(2*(3+4))", {{"mult", Value(true)}}) == "4");
  CHECK_THROWS_WITH(answer("modular_arithmetic_brackets", "(2*(3+4))"), Catch::Contains("mult = true"));
  CHECK_THROWS_WITH(answer("modular_arithmetic_brackets", "(2+3"), Catch::Contains("expected ')'"));
  CHECK(answer("solve_equation", "((-x)+4)=2") == "2");
  CHECK(answer("solve_equation", "(x-(3+4))=0") == "2");
  CHECK_THROWS_AS(answer("solve_equation", "(1+2)=3"), Error);
  CHECK(answer("duplicate_string", "101") == "1 0 1 1 0 1");
  CHECK(answer("missing_duplicate_string", "01100_10") == "1");
  CHECK(answer("missing_duplicate_string", "1011_1.") == "0");
  // The authors' code (x[1::2] then x[::2]), not their docstring's "0100 0111".
  CHECK(answer("odds_first", "00110101") == "0 1 1 1 0 1 0 0");
  CHECK(answer("binary_addition", "001+01101") == "0 1 0 1 1 |");     // 4 + 22 = 26
  CHECK(answer("binary_addition", "1001+000001") == "1 0 0 1 0 1 |");  // 9 + 32 = 41
  CHECK(answer("binary_multiplication", "001*01101") == "0 0 0 1 1 0 1 |");        // 4 * 22 = 88
  CHECK(answer("binary_multiplication", "1001*000001") == "0 0 0 0 0 1 0 0 1 |");  // 9 * 32 = 288
  CHECK(answer("compute_sqrt", "100101") == "1 1 0");  // floor(sqrt(37)) = 6
  CHECK(answer("compute_sqrt", "111") == "1 0");       // floor(sqrt(7)) = 2
  CHECK(answer("bucket_sort", "10204112") == "0 0 1 1 1 2 2 4");
}

TEST_CASE("every generated Chomsky example is its x's answer, at every size", "[tasks][chomsky]") {
  for (const auto& name : kSuite) {
    const auto t = task(name);
    for (std::size_t n : {1, 2, 3, 4, 5, 8, 13, 40}) {
      INFO(name << " n=" << n);
      const Batch b = t->eval_batch(n, 8, n);
      for (std::size_t r = 0; r < b.batch(); ++r) {
        const seq::Example e = seq::decode(b, r);
        CHECK(seq::fed_length(e.x.size(), e.y.size(), SequenceFormat{}) <= t->sequence_length(n));
        if (name == "solve_equation" && n < 3) continue;  // zeros with answer 0: nothing to type
        std::ostringstream x;
        for (auto v : e.x) x << t->token_text(v) << ' ';
        CHECK(seq::decode(t->parse_input(x.str()), 0).y == e.y);
      }
    }
  }
}

TEST_CASE("Chomsky inputs have the authors' lengths", "[tasks][chomsky]") {
  Rng rng(3);
  for (std::size_t n : {1, 2, 6, 7, 30}) {
    INFO("n=" << n);
    for (const auto& name : kSuite) {
      const seq::Example e = seq::decode(task(name)->eval_batch(n, 1, n), 0);
      INFO(name);
      CHECK(e.x.size() == (name == "modular_arithmetic" && n % 2 == 0 ? n - 1 : n));
    }
    CHECK(seq::decode(task("duplicate_string")->eval_batch(n, 1, n), 0).y.size() == 2 * n);
    CHECK(seq::decode(task("compute_sqrt")->eval_batch(n, 1, n), 0).y.size() == (n + 1) / 2);
  }
}

TEST_CASE("bit arithmetic matches 64-bit integers and holds at 500 bits", "[tasks][chomsky]") {
  using namespace chomsky;
  Rng rng(11);
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t a = rng.below(1u << 30), b = rng.below(1u << 30);
    CHECK(add_bits(bits_of(a), bits_of(b)) == bits_of(a + b));
    CHECK(multiply_bits(bits_of(a), bits_of(b)) == bits_of(a * b));
    const std::uint64_t c = a * (std::uint64_t(1) << 30) + b;  // up to 60 bits
    std::uint64_t r = std::uint64_t(std::sqrt(double(c)));
    while (r * r > c) --r;
    while ((r + 1) * (r + 1) <= c) ++r;
    CHECK(isqrt_bits(bits_of(c)) == bits_of(r));
  }
  // r = isqrt(a) for a 500-bit a: r^2 <= a < (r + 1)^2, compared as bit strings of equal width.
  const auto less = [](std::vector<int> x, std::vector<int> y) {
    x.resize(std::max(x.size(), y.size())), y.resize(x.size());
    return std::lexicographical_compare(x.rbegin(), x.rend(), y.rbegin(), y.rend());
  };
  for (int i = 0; i < 20; ++i) {
    const std::vector<int> a = trimmed(random_nonzero_bits(rng, 500)), r = isqrt_bits(a);
    const std::vector<int> r1 = add_bits(r, {1});
    CHECK(!less(a, multiply_bits(r, r)));
    CHECK(less(a, multiply_bits(r1, r1)));
  }
}
