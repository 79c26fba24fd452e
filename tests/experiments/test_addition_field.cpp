// addition's field_width (Duan et al. 2023's fixed field: src/utility.py writes every number
// rjust(FIXED_LEN, "0")): every rendered example is compared with a second writer that pads decimal strings
// the way their code does, exhaustively at one digit and on random batches at several n; the sequence
// length does not depend on n; the chance level counts the padding as certain; the refusals point at
// the config line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

#include "config_error.hpp"
#include "task_helpers.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

struct Written {
  std::string x_a, x_b, y;  // the digit strings as rendered, in written order
};

// Splits "<BOS> 1 2 + 3 4 <SEP> [0 4 6 <EOS>]" into its numbers' digit strings.
Written split_render(const std::string& r, char op) {
  std::istringstream in(r);
  std::string tok;
  Written w;
  int part = 0;  // 0: a, 1: b, 2: y
  while (in >> tok) {
    if (tok == std::string(1, op)) part = 1;
    else if (tok == "<SEP>") part = 2;
    else if (tok.size() == 1 && tok[0] >= '0' && tok[0] <= '9') (part == 0 ? w.x_a : part == 1 ? w.x_b : w.y) += tok;
    else if (tok[0] == '[' && tok.size() == 2) w.y += tok[1];
  }
  return w;
}

std::uint64_t value_of(std::string digits, bool reversed) {
  if (reversed) std::reverse(digits.begin(), digits.end());
  return std::stoull(digits);
}

// The paper's writer: the decimal string right-justified with '0' to the field, reversed when asked.
std::string rjust(std::uint64_t v, std::size_t width, bool reversed) {
  std::string s = std::to_string(v);
  s = std::string(width > s.size() ? width - s.size() : 0, '0') + s;
  if (reversed) std::reverse(s.begin(), s.end());
  return s;
}

std::string render_expected(std::uint64_t a, std::uint64_t b, std::uint64_t y, std::size_t w, bool rev_x, bool rev_y,
                            char op) {
  auto spaced = [](const std::string& s) {
    std::string o;
    for (char ch : s) o += std::string(1, ch) + " ";
    return o;
  };
  const std::string ys = spaced(rjust(y, w, rev_y));
  return "<BOS> " + spaced(rjust(a, w, rev_x)) + op + " " + spaced(rjust(b, w, rev_x)) + "<SEP> [" + ys + "<EOS>]";
}

std::uint64_t pow10(std::size_t n) {
  std::uint64_t p = 1;
  while (n--) p *= 10;
  return p;
}

struct FieldCase {
  TaskParams params;
  bool rev_x = false, rev_y = false, multiply = false;
};

// Checks every row of a batch against the second writer; returns the largest a seen.
std::uint64_t check_rows(const Task& task, const Batch& batch, const FieldCase& c, std::size_t w, std::size_t max_n) {
  std::uint64_t largest = 0;
  for (std::size_t r = 0; r < batch.batch(); ++r) {
    const std::string rendered = as_seq(task).render(batch, r);
    INFO(rendered);
    const Written wr = split_render(rendered, c.multiply ? '*' : '+');
    REQUIRE(wr.x_a.size() == w);
    const std::uint64_t a = value_of(wr.x_a, c.rev_x), b = value_of(wr.x_b, c.rev_x);
    CHECK(a < pow10(max_n));  // at most max_n significant digits inside the field
    CHECK(b < pow10(max_n));
    CHECK(rendered == render_expected(a, b, c.multiply ? a * b : a + b, w, c.rev_x, c.rev_y, c.multiply ? '*' : '+'));
    largest = std::max(largest, a);
  }
  return largest;
}

}  // namespace

TEST_CASE("addition field_width: every number zero-padded to the field, as the paper's rjust", "[tasks][arith][field]") {
  const Value w7(std::int64_t(7));
  const std::vector<FieldCase> cases = {
      {{{"field_width", w7}}},
      {{{"field_width", w7}, {"reverse_digits", Value(true)}}, true, true},
      {{{"field_width", w7}, {"reverse_output", Value(true)}}, false, true},
      {{{"field_width", w7}, {"operand_lengths", Value(std::string("independent"))}}},
      {{{"field_width", w7}, {"operation", Value(std::string("multiply"))}, {"reverse_digits", Value(true)}}, true, true, true},
  };
  for (const auto& c : cases) {
    auto task = make_seq_task("addition", c.params, 1, 3, SequenceFormat{});
    const std::size_t T = task->sequence_length(1);
    for (std::size_t n = 1; n <= 3; ++n) {
      INFO("n = " << n);
      CHECK(task->sequence_length(n) == T);  // one field: no length changes with n
      const std::uint64_t largest = check_rows(*task, task->eval_batch(11 + n, 64, n), c, 7, n);
      if (!c.params.count("operand_lengths")) CHECK(largest >= pow10(n - 1));  // n digits are used
    }
    Rng rng(5);  // training: sizes 1..3 mixed in one batch, one sequence length
    const Batch t = task->sample(rng, 64, 1, 3);
    CHECK(t.length() == T);
    CHECK(check_rows(*task, t, c, 7, 3) >= 100);
  }
  // Exhaustive at one digit: all 100 sums typed, in a field of 3 (predict's path).
  auto rev = make_seq_task("addition", {{"field_width", Value(std::int64_t(3))}, {"reverse_digits", Value(true)}}, 1, 1,
                           SequenceFormat{});
  for (int a = 0; a < 10; ++a)
    for (int b = 0; b < 10; ++b) {
      const Batch one = rev->parse_input(std::to_string(a) + "+" + std::to_string(b));
      CHECK(as_seq(*rev).render(one, 0) == render_expected(a, b, a + b, 3, true, true, '+'));
    }
}

TEST_CASE("addition field_width: chance counts the field's padding as certain, off changes nothing",
          "[tasks][arith][field]") {
  auto task = make_seq_task("addition", {{"field_width", Value(std::int64_t(5))}}, 1, 2, SequenceFormat{});
  // n = 2 in a field of 5: digits 10^0, 10^1 any of 10, the carry 0/1, two zeros; <EOS> scored.
  const Chance c = *task->chance(2);
  CHECK(c.token_acc == Approx((0.1 + 0.1 + 0.5 + 1 + 1 + 1) / 6));
  CHECK(c.exact_match == Approx(0.1 * 0.1 * 0.5));
  CHECK_THROWS_WITH(task->chance(5), Contains("answer of 6 digits, more than field_width = 5"));
  auto off = make_seq_task("addition", {{"field_width", Value(std::int64_t(0))}}, 1, 2, SequenceFormat{});
  auto plain = make_seq_task("addition", {}, 1, 2, SequenceFormat{});
  const bool same = off->eval_batch(3, 8, 4).tokens == plain->eval_batch(3, 8, 4).tokens;  // xtensor: one bool
  CHECK(same);
}

TEST_CASE("addition field_width: a field narrower than an answer is refused at its config line", "[tasks][arith][field]") {
  const std::string head = "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n[task]\nname = \"addition\"\n";
  // train_len 5: answers of 6 digits
  CHECK_THAT(config_error(head + "train_len = 5\n[task.addition]\nfield_width = 5\n", "a.toml"),
             StartsWith("a.toml:9: [task.addition] train_len = 5 gives an answer of 6 digits, more than field_width = 5"));
  CHECK_THAT(config_error(head + "train_len = 4\n[task.addition]\nfield_width = 8\n[eval]\nlengths = [4, 6, 8]\n", "b.toml"),
             StartsWith("b.toml:11: [eval] length 8 is not possible") &&
                 Contains("answer of 9 digits, more than field_width = 8"));
  CHECK_THAT(config_error(head + "train_len = 4\n[task.addition]\nfield_width = 8\nzero_pad = false\n"
                                 "operand_lengths = \"independent\"\n", "c.toml"),
             Contains("field_width = 8 and zero_pad = false"));
  CHECK(config_error(head + "train_len = 4\n[task.addition]\nfield_width = 13\n[eval]\nlengths = [4, 6, 8, 12]\n", "d.toml") ==
        "(no error)");
}
