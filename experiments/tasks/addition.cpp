// addition (and N x M multiplication): two numbers in, their sum (product) out. Carries make each output
// digit depend on aligned digits of both operands, so the model must match positions across x and y.
// The options are the formats of the arithmetic length-generalization papers:
//   reverse_digits / reverse_output  least significant digit first (Lee et al. 2023; Zhou et al. 2024;
//                                    Cho et al. 2024 reverse the answer only, McLeish et al. 2024 everything)
//   operand_lengths = "independent"  each operand's length uniform in [min_len, n], no leading zeros
//                                    (Cho et al.'s src/data/addition.py; McLeish et al.'s bucket sampling)
//   index_hints                      a hint symbol before each digit naming its place (Zhou et al. 2023, 2024)
//   coupled_positions                position ids tied to digit significance (Cho et al. 2024)
//   field_width = W                  operands and answer zero-padded to one field of W digits in training
//                                    and test alike (Duan et al. 2023's src/utility.py: every number
//                                    rjust(FIXED_LEN, "0")), so a longer n only has more significant digits
// and every example carries the digit-index stream that Abacus embeds (McLeish et al. 2024).
#include <algorithm>

#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {

// Ids: digits 0-9, then the operator ('+' or '*', the same id), then the hint symbols when index_hints.
constexpr std::int32_t kDigit0 = seq::kFirstSymbol, kOp = seq::kFirstSymbol + 10, kHint0 = kOp + 1;
// Coupled position ids (Cho et al. 2024): the operator and <SEP> get kCoupledOp, a digit of significance
// i (10^i) gets kCoupledOp + 1 + i in both operands and the answer; <BOS> and padding 0. Their code's
// addition ids at evaluation (randomize = False: start = 1) are these.
constexpr std::int32_t kCoupledOp = 1;

struct ArithOptions {
  bool multiply = false;
  bool reverse_digits = false;  // operands and answer least significant digit first
  bool reverse_output = false;  // the answer only
  bool independent = false;     // operand lengths drawn independently, numbers without leading zeros
  bool zero_pad = true;         // independent: addition's operands padded to the longer, the answer to its widest
  std::size_t b_digits = 0;     // b has exactly this many digits, any of them 0 (Cho et al.'s N x M); 0: like a
  bool index_hints = false;
  std::size_t hint_symbols = 102;
  bool coupled = false;
  std::size_t field = 0;        // field_width: every number written with this many digits; 0 = off
};

// A number as written: its digits least significant first (leading zeros included up to its width).
using Digits = std::vector<std::int32_t>;

class Arithmetic : public SequenceTask {
 public:
  Arithmetic(const SequenceFormat& f, const ArithOptions& o)
      : SequenceTask("addition", f, o.multiply ? "Multiply:" : "Add:"), o_(o) {}

  // Training data: hint offsets drawn at random (Zhou et al. 2024); independent lengths drawn per operand.
  Batch sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const override {
    if (!o_.independent) return SequenceTask::sample(rng, batch, min_len, max_len);
    seq::check_sample_args("task 'addition'", batch, min_len, max_len);
    check_size(max_len);
    std::vector<seq::Example> ex;
    for (std::size_t i = 0; i < batch; ++i) {
      const auto la = std::size_t(rng.range(std::int64_t(min_len), std::int64_t(max_len)));
      const std::size_t lb = o_.b_digits ? o_.b_digits : std::size_t(rng.range(std::int64_t(min_len), std::int64_t(max_len)));
      ex.push_back(make(rng, la, lb, true));
    }
    return seq::assemble(ex, format(), prompt_id());
  }
  // Held-out data at n: both operands n digits (b: b_digits when set), hints from the first symbol.
  Batch eval_batch(std::uint64_t seed, std::size_t batch, std::size_t n) const override {
    check_size(n);
    return operands(seed, batch, n, b_len(n));
  }
  bool has_operands() const override { return true; }
  Batch eval_batch_operands(std::uint64_t seed, std::size_t batch, std::size_t la, std::size_t lb) const override {
    if (la == 0 || lb == 0) throw Error("task 'addition': operand lengths must be at least 1");
    check_hints(la, lb);
    return operands(seed, batch, la, lb);
  }
  std::size_t operand_sequence_length(std::size_t la, std::size_t lb) const override {
    return seq::fed_length(x_len(la, lb), y_len(la, lb), format());
  }
  bool supplies_positions() const override { return o_.coupled; }
  bool supplies_digit_index() const override { return true; }
  // Training with independent lengths mixes x lengths in a batch (the eval sets, both operands n, do not).
  std::optional<std::string> blank_unsupported() const override {
    if (o_.independent) return std::string("operand_lengths = \"independent\" gives the examples of a batch x of different lengths");
    return std::nullopt;
  }

 protected:
  std::size_t base_vocab_size() const override {
    return std::size_t(kHint0) + (o_.index_hints ? o_.hint_symbols : 0);
  }
  seq::Example generate(Rng& rng, std::size_t n) const override { return make(rng, n, b_len(n), true); }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override { return complete(x).y; }
  seq::Example complete(const std::vector<std::int32_t>& x) const override;
  std::size_t x_length(std::size_t n) const override { return x_len(n, b_len(n)); }
  std::size_t y_length(std::size_t n) const override { return y_len(n, b_len(n)); }
  std::vector<std::size_t> answer_support(std::size_t n) const override;
  std::string token_name(std::int32_t id) const override;
  void check_size(std::size_t n) const override { check_hints(n, b_len(n)); }

 public:
  // The field must hold the answer of the largest training size (train_len) too.
  void check_training_size(std::size_t train_len) const {
    if (o_.field && natural_y(train_len, b_len(train_len)) > o_.field)
      throw Error("task 'addition': train_len = " + std::to_string(train_len) + " gives an answer of " +
                  std::to_string(natural_y(train_len, b_len(train_len))) + " digits, more than field_width = " +
                  std::to_string(o_.field) + "; expected field_width >= " +
                  std::to_string(natural_y(train_len, b_len(train_len))) + " (and >= the answer of the largest eval length)");
  }

 private:
  std::size_t b_len(std::size_t n) const { return o_.b_digits ? o_.b_digits : n; }
  // The widths as written at the widest: operands (addition pads them to the longer when zero_pad) and answer;
  // a field_width writes all three at that width.
  std::size_t width_a(std::size_t la, std::size_t lb) const { return o_.field ? o_.field : pads_operands() ? std::max(la, lb) : la; }
  std::size_t width_b(std::size_t la, std::size_t lb) const { return o_.field ? o_.field : pads_operands() ? std::max(la, lb) : lb; }
  std::size_t width_y(std::size_t la, std::size_t lb) const { return o_.field ? o_.field : natural_y(la, lb); }
  // The digits the answer can need: n+1 for a sum, la+lb for a product.
  std::size_t natural_y(std::size_t la, std::size_t lb) const { return o_.multiply ? la + lb : std::max(la, lb) + 1; }
  bool pads_operands() const { return o_.independent && o_.zero_pad && !o_.multiply; }
  std::size_t per_digit() const { return o_.index_hints ? 2 : 1; }
  std::size_t x_len(std::size_t la, std::size_t lb) const { return per_digit() * (width_a(la, lb) + width_b(la, lb)) + 1; }
  std::size_t y_len(std::size_t la, std::size_t lb) const { return per_digit() * width_y(la, lb); }
  void check_hints(std::size_t la, std::size_t lb) const {
    if (o_.field && natural_y(la, lb) > o_.field)
      throw Error("task 'addition': operands of " + std::to_string(la) + " and " + std::to_string(lb) +
                  " digits give an answer of " + std::to_string(natural_y(la, lb)) + " digits, more than field_width = " +
                  std::to_string(o_.field) + "; expected field_width >= " + std::to_string(natural_y(la, lb)));
    if (o_.index_hints && width_y(la, lb) > o_.hint_symbols)
      throw Error("task 'addition': operands of " + std::to_string(la) + " and " + std::to_string(lb) + " digits need " +
                  std::to_string(width_y(la, lb)) + " index hints, more than hint_symbols = " +
                  std::to_string(o_.hint_symbols) + "; expected hint_symbols >= the answer's digits");
  }
  Digits draw(Rng& rng, std::size_t len, bool any_leading) const;
  seq::Example make(Rng& rng, std::size_t la, std::size_t lb, bool training) const;
  seq::Example write(Digits a, Digits b, std::size_t hint_offset) const;
  Batch operands(std::uint64_t seed, std::size_t batch, std::size_t la, std::size_t lb) const {
    Rng rng(seed);
    std::vector<seq::Example> ex;
    for (std::size_t i = 0; i < batch; ++i) {
      // The draw SequenceTask::sample makes for the problem size (of [n, n]): the held-out sets stay those
      // of the task before these options.
      if (!o_.independent) rng.range(std::int64_t(la), std::int64_t(la));
      ex.push_back(make(rng, la, lb, false));
    }
    return seq::assemble(ex, format(), prompt_id(), blank_id(), y_len(la, lb));
  }
  ArithOptions o_;
};

Digits Arithmetic::draw(Rng& rng, std::size_t len, bool any_leading) const {
  Digits d(len);
  if (any_leading) {
    for (auto& v : d) v = std::int32_t(rng.below(10));
    return d;
  }
  // No leading zero: the most significant digit first, 1-9 unless the number has one digit (0-9), as
  // Cho et al.'s and McLeish et al.'s generators draw numbers of a given length.
  d.back() = len == 1 ? std::int32_t(rng.below(10)) : 1 + std::int32_t(rng.below(9));
  for (std::size_t i = len - 1; i-- > 0;) d[i] = std::int32_t(rng.below(10));
  return d;
}

seq::Example Arithmetic::make(Rng& rng, std::size_t la, std::size_t lb, bool training) const {
  // Equal lengths keep the task's original data: n uniform digits each, a's before b's.
  Digits a = draw(rng, la, !o_.independent), b = draw(rng, lb, !o_.independent || o_.b_digits > 0);
  std::size_t hint_offset = 0;  // consecutive hints from a random start in training (Zhou et al. 2024)
  if (o_.index_hints && training) hint_offset = rng.below(o_.hint_symbols - width_y(la, lb) + 1);
  return write(std::move(a), std::move(b), hint_offset);
}

seq::Example Arithmetic::write(Digits a, Digits b, std::size_t hint_offset) const {
  const std::size_t la = a.size(), lb = b.size(), wy = width_y(la, lb);
  Digits y(wy, 0);  // schoolbook, least significant first, at the answer's full width
  if (o_.multiply) {
    for (std::size_t i = 0; i < la; ++i)
      for (std::size_t j = 0; j < lb; ++j) y[i + j] += a[i] * b[j];
  } else {
    for (std::size_t i = 0; i < std::max(la, lb); ++i) y[i] = (i < la ? a[i] : 0) + (i < lb ? b[i] : 0);
  }
  for (std::size_t i = 0; i + 1 < wy; ++i) y[i + 1] += y[i] / 10, y[i] %= 10;
  if (o_.independent && !o_.zero_pad)  // natural length (McLeish et al.): no leading zeros
    while (y.size() > 1 && y.back() == 0) y.pop_back();
  a.resize(width_a(la, lb), 0);
  b.resize(width_b(la, lb), 0);
  seq::Example e;
  // One number, as written: its digits in order, each after its hint; the streams beside it.
  auto put = [&](const Digits& d, bool reversed, std::vector<std::int32_t>& tok, std::vector<std::int32_t>& pos,
                 std::vector<std::int32_t>& digit) {
    for (std::size_t k = 0; k < d.size(); ++k) {
      const std::size_t i = reversed ? k : d.size() - 1 - k;  // significance of the k-th written digit
      if (o_.index_hints) {
        tok.push_back(kHint0 + std::int32_t(hint_offset + i));
        pos.push_back(0), digit.push_back(0);
      }
      tok.push_back(kDigit0 + d[i]);
      pos.push_back(kCoupledOp + 1 + std::int32_t(i));
      digit.push_back(std::int32_t(k + 1));  // McLeish et al.'s abacus.py: the index within the run of digits
    }
  };
  put(a, o_.reverse_digits, e.x, e.x_pos, e.x_digit);
  e.x.push_back(kOp), e.x_pos.push_back(kCoupledOp), e.x_digit.push_back(0);
  put(b, o_.reverse_digits, e.x, e.x_pos, e.x_digit);
  put(y, o_.reverse_digits || o_.reverse_output, e.y, e.y_pos, e.y_digit);
  e.sep_pos = kCoupledOp;
  if (!o_.coupled) e.x_pos.clear(), e.y_pos.clear();
  return e;
}

seq::Example Arithmetic::complete(const std::vector<std::int32_t>& x) const {
  const char* expected = o_.multiply ? "expected a * b: digits around one '*', e.g. 456 * 78"
                                     : "expected a + b: digits around one '+', e.g. 456 + 789";
  const auto op = std::find(x.begin(), x.end(), kOp);
  if (op == x.end() || std::find(op + 1, x.end(), kOp) != x.end() || op == x.begin() || op + 1 == x.end())
    throw Error(expected);
  for (std::int32_t id : x)
    if (id != kOp && (id < kDigit0 || id >= kOp))
      throw Error(std::string(expected) + " (type the digits only: the task writes the index hints)");
  Digits a(x.begin(), op), b(op + 1, x.end());
  if (!o_.independent && !o_.b_digits && !o_.field && a.size() != b.size())
    throw Error("expected two numbers of the same number of digits (operand_lengths = \"equal\"), e.g. 456 + 789");
  for (auto& d : a) d -= kDigit0;
  for (auto& d : b) d -= kDigit0;
  if (!o_.reverse_digits) std::reverse(a.begin(), a.end()), std::reverse(b.begin(), b.end());
  check_hints(a.size(), b.size());
  return write(std::move(a), std::move(b), 0);
}

std::vector<std::size_t> Arithmetic::answer_support(std::size_t n) const {
  // Per digit of significance i: a sum's carry digit (the top one) is 0 or 1, every other digit any of 10;
  // a product's digits are counted as 10 (an upper bound: its chance level is a lower bound). Natural
  // lengths (zero_pad = false) are counted at the full width. Hints at evaluation are fixed: support 1, as
  // is a field_width's padding above the answer's natural width (always 0).
  check_size(n);  // a field too narrow for n: an Error, not a count past the field
  const std::size_t wy = width_y(n, b_len(n)), natural = natural_y(n, b_len(n));
  std::vector<std::size_t> by_significance(wy, 1);
  for (std::size_t i = 0; i < natural; ++i) by_significance[i] = 10;
  if (!o_.multiply) by_significance[natural - 1] = 2;
  const bool reversed = o_.reverse_digits || o_.reverse_output;
  std::vector<std::size_t> s;
  for (std::size_t k = 0; k < wy; ++k) {
    if (o_.index_hints) s.push_back(1);
    s.push_back(by_significance[reversed ? k : wy - 1 - k]);
  }
  return s;
}

std::string Arithmetic::token_name(std::int32_t id) const {
  if (id == kOp) return o_.multiply ? "*" : "+";
  if (id < kOp) return std::string(1, char('0' + (id - kDigit0)));
  const std::size_t h = std::size_t(id - kHint0);  // hints: a-z, A-Z, then h52, h53, ...
  if (h < 26) return std::string(1, char('a' + h));
  if (h < 52) return std::string(1, char('A' + (h - 26)));
  return "h" + std::to_string(h);
}

ArithOptions read_options(const Params& p) {
  ArithOptions o;
  o.multiply = p.get_string("operation") == "multiply";
  o.reverse_digits = p.get_bool("reverse_digits");
  o.reverse_output = p.get_bool("reverse_output");
  o.independent = p.get_string("operand_lengths") == "independent";
  o.zero_pad = p.get_bool("zero_pad");
  o.b_digits = std::size_t(p.get_int("b_digits"));
  o.index_hints = p.get_bool("index_hints");
  o.hint_symbols = std::size_t(p.get_int("hint_symbols"));
  o.coupled = p.get_bool("coupled_positions");
  o.field = std::size_t(p.get_int("field_width"));
  auto both = [](const char* k1, const char* k2, const std::string& why) {
    throw Error(std::string(k1) + " = true and " + k2 + " = true: " + why);
  };
  if (o.reverse_digits && o.reverse_output)
    both("reverse_digits", "reverse_output", "reverse_digits already writes the answer least significant digit "
                                             "first; set one of them");
  if (o.index_hints && o.coupled)
    both("index_hints", "coupled_positions", "two ways of marking a digit's place (Cho et al. 2024 compare them as "
                                             "alternatives); set one of them");
  if (!o.zero_pad && !o.independent)
    throw Error("zero_pad = false needs operand_lengths = \"independent\" (equal lengths are always written at "
                "their full width)");
  if (o.field && !o.zero_pad)
    throw Error("field_width = " + std::to_string(o.field) + " and zero_pad = false: a field pads every number with "
                "zeros; set one of them");
  return o;
}

}  // namespace

PELAB_REGISTER_TASK(addition, TaskSpec{
    "addition",
    "add (or multiply) two numbers: reversed digits, index hints, coupled position ids, digit indices (Abacus)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, digits 0-9 = ids 4-13, the operator ('+', or '*' with\n"
    "operation = \"multiply\") = id 14, then with index_hints the hint symbols (a-z, A-Z, h52, ...: ids 15..),\n"
    "then the prompt token (\"Add:\" or \"Multiply:\") when prompt = true.\n"
    "x = a + b, y = s. Default: a and b have n uniformly random digits each (leading zeros allowed), s = a + b\n"
    "written with exactly n+1 digits (leading zero kept); a * b is written with 2n digits. Most significant\n"
    "digit first; reverse_digits writes a, b and s least significant first, reverse_output s only.\n"
    "example (n=3, default format): <BOS> 4 5 6 + 7 8 9 <SEP> [1 2 4 5 <EOS>]\n"
    "reverse_digits:                <BOS> 6 5 4 + 9 8 7 <SEP> [5 4 2 1 <EOS>]\n"
    "reverse_output:                <BOS> 4 5 6 + 7 8 9 <SEP> [5 4 2 1 <EOS>]\n"
    "index_hints, reverse_output:   <BOS> c 4 b 5 a 6 + c 7 b 8 a 9 <SEP> [a 5 b 4 c 2 d 1 <EOS>]\n"
    "  (a hint names a digit's place, 10^0 = the first hint; in training the hints start at a random symbol\n"
    "  and run on consecutively, at evaluation and in `pelab predict` at the first)\n"
    "operation = \"multiply\", b_digits = 2: <BOS> 4 5 6 * 7 8 <SEP> [3 5 5 6 8 <EOS>]  (456 * 78 = 35568)\n"
    "operand_lengths = \"independent\": each operand's length uniform in [min_len, n] (b: b_digits when set),\n"
    "  numbers without leading zeros; zero_pad pads addition's operands to the longer one and the answer to\n"
    "  its widest (Cho et al. 2024), zero_pad = false writes each number at its own length (McLeish et al.).\n"
    "  Evaluation at n: both operands n digits; [eval] operand_grid: every (len a, len b).\n"
    "coupled_positions: position ids tied to significance for [train] positions = \"task_offset\" / \"task\"\n"
    "  (Cho et al. 2024): '+' and <SEP> 1, a digit of 10^i 2+i in a, b and s alike, <BOS> 0.\n"
    "field_width = W: a, b and s zero-padded to W digits each, in training and evaluation alike (Duan et al.\n"
    "  2023's fixed field): the sequence is the same at every n, only the significant digits grow. W must hold\n"
    "  the answer of train_len and of every eval length (n+1 digits; a product's 2n).\n"
    "  example (n=3, field_width = 6, reverse_digits): <BOS> 6 5 4 0 0 0 + 9 8 7 0 0 0 <SEP> [5 4 2 1 0 0 <EOS>]\n"
    "digit indices (every example; read by encoding abacus): each digit's 1-based index within its number as\n"
    "  written, 0 elsewhere (McLeish et al. 2024: with reverse_digits, 1 = the units digit).\n" +
        std::string(kFormatKeys),
    {bool_param("reverse_digits", false,
                "write operands and answer least significant digit first (carries then flow left to right)"),
     bool_param("reverse_output", false, "write the answer only least significant digit first (Zhou et al. 2024, Cho et al. 2024)"),
     choice_param("operation", "add", {"add", "multiply"}, "the answer: a + b, or a * b (N x M multiplication)"),
     choice_param("operand_lengths", "equal", {"equal", "independent"},
                  "equal: both operands n digits (any digits); independent: each uniform in [min_len, n], no leading zeros"),
     bool_param("zero_pad", true, "operand_lengths = independent: pad addition's operands to the longer one and "
                                  "the answer to its widest with zeros (false: each number at its own length)"),
     integer_param("b_digits", 0, "b has exactly this many digits, leading zeros allowed (N x M: Cho et al.); 0 = like a")
         .in(0.0, 1000.0),
     bool_param("index_hints", false, "a hint symbol before each digit naming its place (Zhou et al. 2023, 2024)"),
     integer_param("hint_symbols", 102, "the ordered set of hints; training draws consecutive hints from it "
                                        "(102: McLeish et al.'s set for up to 100-digit operands)")
         .in(2.0, 10000.0),
     bool_param("coupled_positions", false,
                "position ids tied to digit significance (Cho et al. 2024); needs [train] positions = \"task_offset\" or \"task\""),
     integer_param("field_width", 0, "write a, b and the answer zero-padded to this many digits at every n (Duan et al. "
                                     "2023's fixed field); 0 = off, else >= the answer's digits at every length")
         .in(0.0, 10000.0)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      auto t = std::make_unique<Arithmetic>(c.format, read_options(p));
      t->check_training_size(c.train_len);
      return t;
    }});

}  // namespace pelab
