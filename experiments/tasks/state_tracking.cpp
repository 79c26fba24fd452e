// state_tracking: the word problem of a group, its running product at every position (Merrill, Petty and
// Sabharwal, ICML 2024, "The Illusion of State in State-Space Models", arXiv 2404.08819; Grazzi et al.,
// ICLR 2025, "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues"). Permutations of S5
// (not solvable: no constant-depth transformer computes it, under standard conjectures), A5 (simple, not
// solvable) and A4 (solvable), with parity and counting modulo m as the controls. Inputs are uniform
// group elements (bits for the counters); the target at position t is g_t o ... o g_1, the permutation
// after applying g_1 first, then g_2, ... (for the counters: the number of 1s so far, modulo m).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "experiments/tasks/stream.hpp"

namespace pelab {
namespace {

class StateTracking : public StreamTask {
 public:
  // group: "s5", "a5", "a4" (permutations) or "parity", "mod_count" (bits counted modulo `modulus`).
  StateTracking(const std::string& group, std::size_t modulus) : StreamTask("state_tracking") {
    if (group == "parity" || group == "mod_count") {
      modulus_ = group == "parity" ? 2 : modulus;
      return;
    }
    std::vector<int> p(group == "a4" ? 4 : 5);
    std::iota(p.begin(), p.end(), 0);
    do {
      if (group == "s5" || even(p)) elements_.push_back(p);
    } while (std::next_permutation(p.begin(), p.end()));
    compose_.resize(elements_.size() * elements_.size());
    for (std::size_t a = 0; a < elements_.size(); ++a)
      for (std::size_t b = 0; b < elements_.size(); ++b) compose_[a * elements_.size() + b] = index_of(apply(a, b));
  }
  std::size_t vocab_size() const override { return stream::kFirstSymbol + outputs(); }
  // Permutations: a product of uniform elements is uniform, 1/|G| at every position. Counters: after t
  // bits the count modulo m takes min(t + 1, m) values, each guessed with probability 1 / min(t + 1, m).
  std::optional<Chance> chance(std::size_t n) const override {
    Chance c{0, 1};
    for (std::size_t t = 1; t <= n; ++t) {
      const double p = 1.0 / double(elements_.empty() ? std::min(t + 1, modulus_) : elements_.size());
      c.token_acc += p / double(n);
      c.exact_match *= p;
    }
    return c;
  }

 protected:
  std::size_t tokens_length(std::size_t n) const override { return n; }
  stream::Example generate(Rng& rng, std::size_t n) const override {
    stream::Example e;
    std::size_t state = elements_.empty() ? 0 : identity();
    for (std::size_t t = 0; t < n; ++t) {
      const std::size_t g = rng.below(elements_.empty() ? 2 : elements_.size());
      state = elements_.empty() ? (state + g) % modulus_ : compose_[g * elements_.size() + state];
      e.tokens.push_back(stream::kFirstSymbol + std::int32_t(g));
      e.targets.push_back(stream::kFirstSymbol + std::int32_t(state));
    }
    return e;
  }
  // A permutation in one-line notation (the images of 0, 1, ...: "10234" swaps 0 and 1); a residue as a number.
  std::string token_name(std::int32_t id) const override {
    const std::size_t i = std::size_t(id - stream::kFirstSymbol);
    if (elements_.empty()) return std::to_string(i);
    std::string s;
    for (int v : elements_.at(i)) s += char('0' + v);
    return s;
  }

 private:
  std::size_t outputs() const { return elements_.empty() ? std::max<std::size_t>(modulus_, 2) : elements_.size(); }
  std::size_t identity() const { return 0; }  // the first permutation in lexicographic order
  static bool even(const std::vector<int>& p) {
    int inversions = 0;
    for (std::size_t i = 0; i < p.size(); ++i)
      for (std::size_t j = i + 1; j < p.size(); ++j) inversions += p[i] > p[j];
    return inversions % 2 == 0;
  }
  // (a o b)(i) = a(b(i)): b first, then a.
  std::vector<int> apply(std::size_t a, std::size_t b) const {
    std::vector<int> r(elements_[b].size());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = elements_[a][std::size_t(elements_[b][i])];
    return r;
  }
  std::size_t index_of(const std::vector<int>& p) const {
    return std::size_t(std::lower_bound(elements_.begin(), elements_.end(), p) - elements_.begin());
  }
  std::vector<std::vector<int>> elements_;  // in lexicographic order; empty for the counters
  std::vector<std::size_t> compose_;        // [a * |G| + b] = index of a o b
  std::size_t modulus_ = 0;
};

}  // namespace

PELAB_REGISTER_TASK(state_tracking, TaskSpec{
    "state_tracking",
    "state tracking: running product of S5 / A5 / A4 permutations, parity, counting mod m (Merrill et al. 2024)",
    "vocabulary: <PAD>=0 <BOS>=1, then the group's elements (ids 2..): permutations of 0..4 (0..3 for a4) in\n"
    "lexicographic order, written in one-line notation (\"10234\" swaps 0 and 1; the identity \"01234\" is id 2),\n"
    "120 for s5, 60 for a5, 12 for a4; for parity and mod_count the residues 0 .. m-1 (at least 0 and 1).\n"
    "A row of problem size n is <BOS> then n inputs: uniform group elements (uniform bits for the counters).\n"
    "Scored: every position t, its target the running product g_t o ... o g_1 (g_1 applied first; the same\n"
    "ids as the inputs), or the number of 1s so far modulo m (in brackets after each input). Chance: 1 / |G|\n"
    "per position; for the counters 1 / min(t + 1, m) at position t.\n"
    "example (group = \"parity\", n=4): <BOS> 1[1] 0[1] 1[0] 1[1]\n"
    "(no [task] format keys: a stream task has no separator, prompt or EOS).",
    {choice_param("group", "s5", {"s5", "a5", "a4", "parity", "mod_count"}, "the group whose word problem is tracked"),
     integer_param("modulus", 3, "m of group = \"mod_count\"").in(2.0, 1000.0)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      refuse_format("state_tracking", c.format);
      return std::make_unique<StateTracking>(p.get_string("group"), std::size_t(p.get_int("modulus")));
    },
    {}});

}  // namespace pelab
