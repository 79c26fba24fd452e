// Arithmetic the way the length-generalization papers write it (experiments/tasks/addition.cpp): every
// option's answers checked against integer arithmetic, the index hints, coupled position ids and digit
// indices checked against their definitions, the position modes task / task_offset, Abacus's stream and
// training offset, [eval] operand_grid, and the config errors of pairings that make no sense.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "config_error.hpp"
#include "core/tape.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/eval/evaluate_grid.hpp"
#include "task_helpers.hpp"
#include "training/positions.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr std::int32_t kDigit0 = 4, kOp = 14, kHint0 = 15;

struct Number {
  std::uint64_t value = 0;
  std::size_t digits = 0;
};

// The numbers of x (a, b) and y of row r, each read in its written order (`reversed`: least significant
// first), hints skipped; also checks that every hint names its digit's significance from `hint_base`.
struct Decoded {
  Number a, b, y;
};
Number read_number(const std::vector<std::int32_t>& toks, bool reversed, bool hints, std::int64_t hint_base) {
  Number n;
  std::vector<std::int32_t> digits;
  for (std::size_t k = 0; k < toks.size(); ++k) {
    if (hints && k % 2 == 0) continue;
    digits.push_back(toks[k] - kDigit0);
  }
  n.digits = digits.size();
  for (std::size_t k = 0; k < digits.size(); ++k) {
    const std::size_t i = reversed ? k : digits.size() - 1 - k;  // significance
    std::uint64_t p = 1;
    for (std::size_t j = 0; j < i; ++j) p *= 10;
    n.value += std::uint64_t(digits[k]) * p;
    if (hints) CHECK(toks[2 * k] == kHint0 + hint_base + std::int64_t(i));
  }
  return n;
}

Decoded decode_row(const Batch& batch, std::size_t r, bool rev_operands, bool rev_answer, bool hints) {
  const seq::Example e = seq::decode(batch, r);
  const auto op = std::find(e.x.begin(), e.x.end(), kOp);
  REQUIRE(op != e.x.end());
  const std::int64_t base = hints ? e.y[0] - kHint0 - (rev_answer ? 0 : std::int64_t(e.y.size() / 2 - 1)) : 0;
  Decoded d;
  d.a = read_number({e.x.begin(), op}, rev_operands, hints, base);
  d.b = read_number({op + 1, e.x.end()}, rev_operands, hints, base);
  d.y = read_number(e.y, rev_answer, hints, base);
  return d;
}

std::unique_ptr<Task> addition(const TaskParams& p, std::size_t train_len = 8) {
  return make_seq_task("addition", p, 1, train_len, SequenceFormat{});
}

}  // namespace

TEST_CASE("addition: every option combination computes the right sum or product", "[tasks][arith]") {
  const std::vector<TaskParams> options = {
      {},
      {{"reverse_digits", Value(true)}},
      {{"reverse_output", Value(true)}},
      {{"operand_lengths", Value(std::string("independent"))}},
      {{"operand_lengths", Value(std::string("independent"))}, {"zero_pad", Value(false)}, {"reverse_digits", Value(true)}},
      {{"operation", Value(std::string("multiply"))}},
      {{"operation", Value(std::string("multiply"))}, {"b_digits", Value(std::int64_t(2))}, {"reverse_output", Value(true)},
       {"operand_lengths", Value(std::string("independent"))}},
      {{"index_hints", Value(true)}, {"reverse_output", Value(true)}, {"operand_lengths", Value(std::string("independent"))}},
      {{"index_hints", Value(true)}, {"operation", Value(std::string("multiply"))}},
  };
  for (const auto& p : options) {
    auto task = addition(p);
    auto get = [&](const char* k, bool d) { return p.count(k) ? std::get<bool>(p.at(k)) : d; };
    const bool rev = get("reverse_digits", false), rev_out = rev || get("reverse_output", false), hints = get("index_hints", false);
    const bool mul = p.count("operation") > 0;
    Rng rng(5);
    std::set<std::pair<std::size_t, std::size_t>> lengths;
    for (const Batch& batch : {task->sample(rng, 64, 1, 8), task->eval_batch(9, 16, 8)})
      for (std::size_t r = 0; r < batch.batch(); ++r) {
        INFO("options " << p.size() << ": " << as_seq(*task).render(batch, r));
        const Decoded d = decode_row(batch, r, rev, rev_out, hints);
        CHECK(d.y.value == (mul ? d.a.value * d.b.value : d.a.value + d.b.value));
        if (p.count("b_digits")) CHECK(d.b.digits == 2);
        lengths.insert({d.a.digits, d.b.digits});
      }
    // independent lengths differ between the operands (unless padded to the longer one); equal ones never do
    const bool independent = p.count("operand_lengths") && !(p.count("zero_pad") == 0 && !mul);
    CHECK(std::any_of(lengths.begin(), lengths.end(), [](auto l) { return l.first != l.second; }) ==
          (independent || p.count("b_digits") > 0));
  }
}

TEST_CASE("addition: default data is the task's original data, index hints start at the first symbol at evaluation",
          "[tasks][arith]") {
  // pelab show-task addition --len 1 -n 6 --seed 3 before these options (the held-out sets stay the same)
  auto plain = addition({});
  Rng rng(3);
  const Batch b = plain->sample(rng, 2, 1, 1);
  CHECK(as_seq(*plain).render(b, 0) == "<BOS> 0 + 5 <SEP> [0 5 <EOS>]");
  CHECK(as_seq(*plain).render(b, 1) == "<BOS> 6 + 7 <SEP> [1 3 <EOS>]");
  auto hinted = addition({{"index_hints", Value(true)}, {"reverse_output", Value(true)}});
  CHECK(as_seq(*hinted).render(hinted->parse_input("456+789"), 0) ==
        "<BOS> c 4 b 5 a 6 + c 7 b 8 a 9 <SEP> [a 5 b 4 c 2 d 1 <EOS>]");
  CHECK(hinted->eval_batch(1, 4, 3).tokens(0, 1) == kHint0 + 2);  // a's hundreds: the third hint
  std::set<std::int32_t> starts;  // training: consecutive hints from a random start
  Rng r2(1);
  const Batch t = hinted->sample(r2, 64, 3, 3);
  for (std::size_t r = 0; r < t.batch(); ++r) starts.insert(t.tokens(r, 1));
  CHECK(starts.size() > 10);
  CHECK_THROWS_WITH(hinted->parse_input("c4+7"), Contains("type the digits only"));
  auto multiply = addition({{"operation", Value(std::string("multiply"))}, {"operand_lengths", Value(std::string("independent"))}});
  CHECK(as_seq(*multiply).render(multiply->parse_input("456*78"), 0) == "<BOS> 4 5 6 * 7 8 <SEP> [3 5 5 6 8 <EOS>]");
}

TEST_CASE("addition: coupled position ids follow digit significance, digit indices count within each number",
          "[tasks][arith]") {
  auto task = addition({{"coupled_positions", Value(true)}, {"reverse_output", Value(true)},
                        {"operand_lengths", Value(std::string("independent"))}, {"zero_pad", Value(false)}});
  REQUIRE(task->supplies_positions());
  const Batch b = task->parse_input("45+789");  // 45 + 789 = 834, written 4 3 8
  CHECK(as_seq(*task).render(b, 0) == "<BOS> 4 5 + 7 8 9 <SEP> [4 3 8 <EOS>]");
  // <BOS> 4 5 + 7 8 9 <SEP> 4 3 8: '+' and <SEP> 1, 10^i -> 2 + i (the units of a, b and y alike)
  const std::vector<std::int32_t> pos = {0, 3, 2, 1, 4, 3, 2, 1, 2, 3, 4};
  const std::vector<std::int32_t> digits = {0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3};
  REQUIRE(b.length() == pos.size());
  for (std::size_t t = 0; t < pos.size(); ++t) {
    INFO("t = " << t);
    CHECK(b.positions(0, t) == pos[t]);
    CHECK(b.digit_index(0, t) == digits[t]);
  }
  auto plain = addition({});
  CHECK(!plain->supplies_positions());
  const Batch p = plain->parse_input("45+78");
  for (std::size_t t = 0; t < p.length(); ++t) CHECK(p.positions(0, t) == std::int32_t(t));
}

TEST_CASE("addition: option pairings that make no sense are errors naming both keys", "[tasks][arith]") {
  CHECK_THROWS_WITH(addition({{"reverse_digits", Value(true)}, {"reverse_output", Value(true)}}),
                    Contains("reverse_digits = true and reverse_output = true"));
  CHECK_THROWS_WITH(addition({{"index_hints", Value(true)}, {"coupled_positions", Value(true)}}),
                    Contains("index_hints = true and coupled_positions = true"));
  CHECK_THROWS_WITH(addition({{"zero_pad", Value(false)}}), Contains("zero_pad = false needs operand_lengths"));
  auto few = addition({{"index_hints", Value(true)}, {"hint_symbols", Value(std::int64_t(5))}});
  CHECK_THROWS_WITH(few->eval_batch(1, 1, 5), Contains("need 6 index hints, more than hint_symbols = 5"));
  CHECK_NOTHROW(few->eval_batch(1, 1, 4));
}

TEST_CASE("positions task and task_offset keep the task's ids, task_offset shifting a row's nonzero ids by one draw",
          "[tasks][arith][positions]") {
  auto task = addition({{"coupled_positions", Value(true)}, {"reverse_output", Value(true)}});
  Rng data(2);
  const Batch orig = task->sample(data, 32, 1, 6);
  Batch kept = orig, shifted = orig;
  Rng rng(4);
  assign_positions(kept, {PositionMode::task, 0}, rng);
  CHECK((kept.positions == orig.positions));
  assign_positions(shifted, {PositionMode::task_offset, 20}, rng);
  std::set<std::int32_t> offsets;
  for (std::size_t r = 0; r < orig.batch(); ++r) {
    std::set<std::int32_t> s;
    for (std::size_t t = 0; t < orig.length(); ++t) {
      if (orig.positions(r, t) == 0) CHECK(shifted.positions(r, t) == 0);
      else s.insert(shifted.positions(r, t) - orig.positions(r, t));
      CHECK(shifted.positions(r, t) < 20);
    }
    REQUIRE(s.size() == 1);
    offsets.insert(*s.begin());
  }
  CHECK(offsets.size() > 5);
  Batch small = orig;
  CHECK_THROWS_WITH(assign_positions(small, {PositionMode::task_offset, 5}, rng), Contains("outside [0, max_position 5)"));
  CHECK(parse_position_mode("task_offset") == PositionMode::task_offset);
}

TEST_CASE("configs: task ids and digit indices must meet a mode and an encoding that use them", "[tasks][arith][config]") {
  const std::string head = "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n[task]\nname = \"addition\"\ntrain_len = 4\n";
  const std::string coupled = "[task.addition]\ncoupled_positions = true\n";
  // (an override is the likeliest culprit: errors that involve task.name point at --set task.name=copy)
  CHECK_THAT(config_error(head + "[train]\npositions = \"task\"\n", "a.toml", {"task.name=copy"}),
             StartsWith("--set task.name=copy: [train] positions = \"task\"") && Contains("task 'copy' supplies none"));
  CHECK_THAT(config_error(head + coupled + "[encoding]\nname = \"rope\"\n", "b.toml"),
             StartsWith("b.toml:9: [task.addition] coupled_positions = true") &&
                 Contains("[train] positions = \"contiguous\" replaces them"));
  CHECK_THAT(config_error(head + coupled + "[train]\npositions = \"task_offset\"\n[eval]\npositions = \"offset\"\n", "c.toml"),
             Contains("[eval] positions = \"offset\" replaces them"));
  CHECK_THAT(config_error(head + coupled + "[train]\npositions = \"task_offset\"\n", "d.toml"),
             Contains("[encoding] name = \"none\" reads no position ids"));
  CHECK(config_error(head + coupled + "[train]\npositions = \"task_offset\"\n[encoding]\nname = \"learned\"\n", "e.toml") ==
        "(no error)");
  CHECK_THAT(config_error(head + "[encoding]\nname = \"abacus\"\n", "f.toml", {"task.name=copy"}),
             StartsWith("--set task.name=copy: [encoding] name = \"abacus\"") && Contains("task 'copy' supplies no digit indices"));
  CHECK_THAT(config_error(head + "[eval]\noperand_grid = [1, 4]\n", "g.toml", {"task.name=copy"}),
             StartsWith("g.toml:9: [eval] operand_grid [1, 4, 1]") && Contains("task 'copy' has no operands"));
  CHECK_THAT(config_error(head + "[task.addition]\nindex_hints = true\nhint_symbols = 10\n[eval]\nlengths = [4]\n"
                                 "operand_grid = [1, 12, 1]\n", "h.toml"),
             StartsWith("h.toml:13: [eval] operand_grid [1, 12, 1] includes operand lengths (1, 10)"));
  CHECK_THAT(config_error(head + "[eval]\noperand_grid = [5, 2]\n", "i.toml"), Contains("the range is empty"));
}

TEST_CASE("abacus: reads the batch's digit indices, and shifts them by one k in [0, max_k] only in training",
          "[tasks][arith][abacus]") {
  ModelConfig mc;
  mc.vocab = 16, mc.d_model = 16, mc.n_layers = 1, mc.n_heads = 2, mc.train_seq_len = 12;
  mc.encoding = "abacus";
  mc.encoding_params = {{"max_k", Value(std::int64_t(3))}};
  Transformer m(mc);
  Rng init(1);
  init_parameters(m, init, mc.init_options());
  auto task = addition({{"reverse_digits", Value(true)}});
  const Batch b = task->eval_batch(3, 2, 4);
  NoGrad ng;
  auto run = [&](const IndexArray* digits, Rng* rng) {
    ForwardOptions fo;
    fo.digit_index = digits, fo.dropout_rng = rng;
    return m.forward(b.tokens, b.positions, fo).value();
  };
  m.set_training(false);
  const Array with = run(&b.digit_index, nullptr), without = run(nullptr, nullptr);
  CHECK((with != without));
  // training: the output of some shift k of the nonzero indices, each k in [0, 3] seen
  m.set_training(true);
  std::set<int> ks;
  Rng rng(8);
  for (int trial = 0; trial < 24; ++trial) {
    const Array out = run(&b.digit_index, &rng);
    int found = -1;
    for (int k = 0; k <= 3 && found < 0; ++k) {
      IndexArray d = b.digit_index;
      for (auto& v : d)
        if (v > 0) v += k;
      m.set_training(false);
      if (run(&d, nullptr) == out) found = k;
      m.set_training(true);
    }
    REQUIRE(found >= 0);
    ks.insert(found);
  }
  CHECK(ks.size() == 4);
  m.set_training(false);
  CHECK(!m.encoding().unsupported_digits(12 + 3));  // rows: train_seq_len + max_k + 1 = 16
  CHECK(m.encoding().unsupported_digits(16).value_or("") == "encoding 'abacus': digit index 16 is beyond its table of 16 rows (size)");
}

TEST_CASE("operand grid: one result per (len a, len b), in eval.json with the operand lengths", "[tasks][arith][eval]") {
  const std::string cfg = "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n[task]\nname = \"addition\"\ntrain_len = 3\n"
                          "[task.addition]\noperand_lengths = \"independent\"\nreverse_digits = true\n"
                          "[encoding]\nname = \"abacus\"\n[eval]\nlengths = [3]\nsamples = 8\noperand_grid = [1, 5, 2]\n";
  const RunSpec spec = parse_config(cfg, "grid.toml", {}).runs.at(0);
  Transformer m(spec.model);
  Rng init(1);
  init_parameters(m, init, spec.model.init_options());
  const auto grid = evaluate_grid(m, spec);
  REQUIRE(grid.size() == 9);
  CHECK(*grid[1].len_a == 1);
  CHECK(*grid[1].len_b == 3);
  CHECK(grid[1].length == 3);
  CHECK(grid[1].in_distribution);
  CHECK(!grid[8].in_distribution);  // (5, 5)
  for (const auto& c : grid) CHECK((c.ok && c.samples == 8 && c.metric("exact_match")));
  EvalResult er;
  er.encoding = "abacus", er.task = "addition", er.train_len = 3, er.status = "finished";
  er.operand_grid = grid;
  const EvalResult back = eval_result_from_json(to_json(er), "x");
  REQUIRE(back.operand_grid.size() == 9);
  CHECK(*back.operand_grid[5].len_a == 3);
  CHECK(*back.operand_grid[5].len_b == 5);
  CHECK(back.operand_grid[5].metric("token_acc") == grid[5].metric("token_acc"));
}
