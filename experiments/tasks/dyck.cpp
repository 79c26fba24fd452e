// dyck: Dyck-k completion. x is a prefix of a Dyck-k word (k bracket types, nesting depth at most
// max_depth) with at least one bracket open; y closes it: the closing brackets of the open ones,
// innermost first (the one shortest completion). This is the completion protocol of BIG-bench's
// dyck_languages task (Suzgun et al. 2022, BIG-Bench Hard) at toy scale (issue 42 names Hayakawa and Sato,
// ACL 2025, for length and depth generalization on Dyck; their generator was not read); trained on short,
// shallow prefixes, evaluated on longer ones and, with `pelab eval --set task.dyck.max_depth=D`, deeper
// ones. The prefix is a random walk: at depth 0 it opens, at max_depth it closes, else it opens with
// probability p_open (a uniform type) or closes the innermost; the last step never closes to depth 0.
#include <algorithm>

#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {

const char* const kBrackets = "([{<)]}>";  // opener of type j at j, its closer at 4 + j

class Dyck : public SequenceTask {
 public:
  Dyck(const SequenceFormat& f, std::size_t types, std::size_t max_depth, double p_open)
      : SequenceTask("dyck", f, "Close:"), types_(types), max_depth_(max_depth), p_open_(p_open) {}

 protected:
  std::size_t base_vocab_size() const override { return seq::kFirstSymbol + 2 * types_; }
  std::int32_t opener(std::size_t j) const { return seq::kFirstSymbol + std::int32_t(j); }
  std::int32_t closer(std::size_t j) const { return seq::kFirstSymbol + std::int32_t(types_ + j); }
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < n; ++i) {
      const bool last = i + 1 == n;
      bool open = stack.empty() || (stack.size() < max_depth_ && rng.uniform() < p_open_);
      if (last && stack.size() == 1) open = true;  // end with a bracket open (max_depth >= 2)
      if (open) {
        stack.push_back(rng.below(types_));
        e.x.push_back(opener(stack.back()));
      } else {
        e.x.push_back(closer(stack.back()));
        stack.pop_back();
      }
    }
    e.y = solve(e.x);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t s = std::size_t(x[i] - seq::kFirstSymbol);
      if (s < types_) {
        stack.push_back(s);
        continue;
      }
      if (stack.empty() || stack.back() != s - types_)
        throw Error("bracket " + std::to_string(i + 1) + " '" + token_name(x[i]) + "' closes " +
                    (stack.empty() ? std::string("nothing") : "'" + token_name(opener(stack.back())) + "'") +
                    "; expected a prefix of a balanced string");
      stack.pop_back();
    }
    if (stack.empty()) throw Error("x is balanced: nothing to complete; expected a prefix with a bracket open");
    std::vector<std::int32_t> y;
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) y.push_back(closer(*it));
    return y;
  }
  std::size_t x_length(std::size_t n) const override { return n; }
  // At most min(n, max_depth) brackets are open; each closer is one of k (a bound, as y's length varies).
  std::size_t y_length(std::size_t n) const override { return std::min(n, max_depth_); }
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    return std::vector<std::size_t>(y_length(n), types_);
  }
  std::string token_name(std::int32_t id) const override {
    const std::size_t s = std::size_t(id - seq::kFirstSymbol);
    return std::string(1, kBrackets[s < types_ ? s : 4 + (s - types_)]);
  }

 private:
  std::size_t types_, max_depth_;
  double p_open_;
};

}  // namespace

PELAB_REGISTER_TASK(dyck, TaskSpec{
    "dyck",
    "Dyck-k completion: close the open brackets of a bounded-depth prefix (BIG-bench dyck_languages)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, the k openers ( [ { < (ids 4..), then their closers\n"
    ") ] } >, then the prompt token \"Close:\" when prompt = true.\n"
    "x = a prefix of n brackets of a Dyck-k word of depth <= max_depth, ending with a bracket open: a random\n"
    "walk that opens at depth 0, closes at max_depth, else opens (uniform type) with probability p_open or\n"
    "closes the innermost, and never closes to depth 0 at its last step; y = the closers of the open\n"
    "brackets, innermost first. Its length varies, so the chance level assumes a guess among the k closers\n"
    "at each of min(n, max_depth) places: a lower bound on exact match.\n"
    "example (n=6, types=2, default format): <BOS> ( [ ] ( ( [ <SEP> [] ) ) ) <EOS>]\n"
    "Deeper at evaluation: pelab eval RUN --set task.dyck.max_depth=8 --name deep\n" + std::string(kFormatKeys),
    {integer_param("types", 2, "bracket types k").in(1.0, 4.0),
     integer_param("max_depth", 4, "the deepest nesting (>= 2)").in(2.0, 10000.0),
     number_param("p_open", 0.5, "probability of opening where both are allowed").in(0.01, 0.99)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<Dyck>(c.format, std::size_t(p.get_int("types")), std::size_t(p.get_int("max_depth")),
                                    p.get_number("p_open"));
    },
    {"max_depth"}});

}  // namespace pelab
