// flip_flop: flip-flop language modelling (Liu, Ash, Goel, Krishnamurthy, Zhang, NeurIPS 2023, "Exposing
// Attention Glitches with Flip-Flop Language Modeling", arXiv 2306.00946, Definition 1, as we read the
// paper; their released data and code were not read):
// n instructions, each followed by a bit; write (w) stores its bit, ignore (i) carries a random bit to
// be ignored, read (r) must be followed by the last bit written. The first instruction is w, the last r,
// those between are i with probability p_ignore and w or r otherwise (equally likely): FFL(p), trained
// at p = 0.8 and tested at 0.8, 0.98 (sparse) and 0.1 (dense). Scored: the bit after each r, predicted
// at the r; the error rate on those reads is 100% minus the token accuracy (the mask counts only them).
#include <cmath>

#include "experiments/tasks/stream.hpp"

namespace pelab {
namespace {

constexpr std::int32_t kW = stream::kFirstSymbol, kR = kW + 1, kI = kW + 2, kBit0 = kW + 3;

class FlipFlop : public StreamTask {
 public:
  explicit FlipFlop(double p_ignore) : StreamTask("flip_flop"), p_ignore_(p_ignore) {}
  std::size_t vocab_size() const override { return std::size_t(kBit0) + 2; }
  // Each read is a bit: 1/2. Reads: the last instruction, and each of the n - 2 between with
  // probability q = (1 - p) / 2, so exact match = E[2^-reads] = 1/2 (1 - q/2)^(n-2).
  std::optional<Chance> chance(std::size_t n) const override {
    const double q = (1 - p_ignore_) / 2;
    return Chance{0.5, 0.5 * std::pow(1 - q / 2, double(n < 2 ? 0 : n - 2))};
  }

 protected:
  std::size_t tokens_length(std::size_t n) const override { return 2 * n; }
  void check_size(std::size_t n) const override {
    if (n < 2)
      throw Error("task 'flip_flop': problem size " + std::to_string(n) + " is too small: a flip-flop string starts "
                  "with a write and ends with a read, so n >= 2 instructions (set min_len >= 2)");
  }
  stream::Example generate(Rng& rng, std::size_t n) const override {
    stream::Example e;
    std::int32_t stored = 0;
    for (std::size_t j = 0; j < n; ++j) {
      std::int32_t op = j == 0 ? kW : j + 1 == n ? kR : kI;
      if (j > 0 && j + 1 < n && rng.uniform() >= p_ignore_) op = rng.below(2) ? kR : kW;
      const std::int32_t bit = op == kR ? stored : std::int32_t(rng.below(2));
      if (op == kW) stored = bit;
      e.tokens.push_back(op);
      e.targets.push_back(op == kR ? kBit0 + bit : stream::kUnscored);
      e.tokens.push_back(kBit0 + bit);
      e.targets.push_back(stream::kUnscored);
    }
    return e;
  }
  std::string token_name(std::int32_t id) const override {
    static const char* const names[] = {"w", "r", "i", "0", "1"};
    return names[id - kW];
  }

 private:
  double p_ignore_;
};

}  // namespace

PELAB_REGISTER_TASK(flip_flop, TaskSpec{
    "flip_flop",
    "flip-flop language (Liu et al. 2023): write/ignore/read a bit; error rate on the reads",
    "vocabulary: <PAD>=0 <BOS>=1, w=2 r=3 i=4 (write, read, ignore), bits 0=5 1=6.\n"
    "A row of problem size n is <BOS> then n instructions, each followed by a bit (2n tokens). The first\n"
    "instruction is w, the last r; each between is i with probability p_ignore, else w or r (1/2 each).\n"
    "The bits of w and i are uniform; the bit after r is the last one written. Scored: that bit, predicted\n"
    "at its r (in brackets). Chance: 1/2 per read (error rate 50%).\n"
    "example (n=5): <BOS> w 1 i 0 r[1] 1 w 0 r[0] 0\n"
    "Evaluate at other p_ignore without retraining: pelab eval RUN --set task.flip_flop.p_ignore=0.98 --name sparse\n"
    "(no [task] format keys: a stream task has no separator, prompt or EOS).",
    {number_param("p_ignore", 0.8, "probability of an ignore instruction between the first and the last")
         .in_half_open(0.0, 1.0)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      refuse_format("flip_flop", c.format);
      if (c.min_len < 2)
        throw Error("task 'flip_flop': min_len = " + std::to_string(c.min_len) + " but a flip-flop string has at "
                    "least 2 instructions (a write, then a read); set min_len >= 2");
      return std::make_unique<FlipFlop>(p.get_number("p_ignore"));
    },
    {"p_ignore"}});

}  // namespace pelab
