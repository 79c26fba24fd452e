// assoc_recall: n key-value pairs, then query keys; y = the values stored under them. Retrieval by
// content followed by a fixed offset (the value sits right after its key).
#include <algorithm>
#include <map>

#include "experiments/tasks/sequence.hpp"

namespace pelab {
namespace {

constexpr std::int32_t kQuery = seq::kFirstSymbol;

class AssocRecall : public SequenceTask {
 public:
  AssocRecall(const SequenceFormat& f, std::size_t keys, std::size_t values, std::size_t queries)
      : SequenceTask("assoc_recall", f, "Recall:"), keys_(keys), values_(values), queries_(queries) {}

 protected:
  std::size_t base_vocab_size() const override { return kQuery + 1 + keys_ + values_; }
  std::int32_t key_id(std::size_t k) const { return kQuery + 1 + std::int32_t(k); }
  std::int32_t value_id(std::size_t v) const { return kQuery + 1 + std::int32_t(keys_ + v); }

  void check_size(std::size_t n) const override {
    if (n > keys_)
      throw Error("task 'assoc_recall': " + std::to_string(n) + " pairs need " + std::to_string(n) +
                  " distinct keys but the alphabet has keys = " + std::to_string(keys_) +
                  " (raise task.assoc_recall.keys or lower the problem size)");
  }
  seq::Example generate(Rng& rng, std::size_t n) const override {
    // n distinct keys: a partial Fisher-Yates shuffle of the key alphabet.
    std::vector<std::size_t> order(keys_);
    for (std::size_t i = 0; i < keys_; ++i) order[i] = i;
    std::vector<std::size_t> value(n);
    seq::Example e;
    for (std::size_t i = 0; i < n; ++i) {
      std::swap(order[i], order[i + rng.below(keys_ - i)]);
      value[i] = rng.below(values_);
      e.x.push_back(key_id(order[i]));
      e.x.push_back(value_id(value[i]));
    }
    e.x.push_back(kQuery);
    for (std::size_t q = 0; q < queries_; ++q) {  // queried pairs: uniform, with replacement
      const std::size_t i = rng.below(n);
      e.x.push_back(key_id(order[i]));
      e.y.push_back(value_id(value[i]));
    }
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    const auto is_key = [&](std::int32_t id) { return id > kQuery && std::size_t(id - kQuery - 1) < keys_; };
    const auto q = std::find(x.begin(), x.end(), kQuery);
    const std::size_t pairs = std::size_t(q - x.begin());
    const char* form = "expected k1 v1 ... kn vn ? q1 .. qm: n >= 1 pairs of a key (letter) and a value (digit), distinct keys, "
                       "then '?' and m >= 1 query keys that are among the n";
    if (q == x.end() || pairs == 0 || pairs % 2 != 0 || q + 1 == x.end()) throw Error(form);
    std::map<std::int32_t, std::int32_t> stored;
    for (std::size_t i = 0; i < pairs; i += 2) {
      if (!is_key(x[i]) || is_key(x[i + 1]) || x[i + 1] == kQuery || !stored.emplace(x[i], x[i + 1]).second)
        throw Error(std::string(form) + "; pair " + std::to_string(i / 2 + 1) + " is '" + token_name(x[i]) + " " +
                    token_name(x[i + 1]) + "'");
    }
    std::vector<std::int32_t> y;
    for (auto it = q + 1; it != x.end(); ++it) {
      auto s = stored.find(*it);
      if (s == stored.end()) throw Error(std::string(form) + "; query '" + token_name(*it) + "' is not a stored key");
      y.push_back(s->second);
    }
    return y;
  }
  std::size_t x_length(std::size_t n) const override { return 2 * n + 1 + queries_; }
  std::size_t y_length(std::size_t) const override { return queries_; }
  // Each answer is the (uniform) value stored under some key: any of the values.
  std::vector<std::size_t> answer_support(std::size_t) const override {
    return std::vector<std::size_t>(queries_, values_);
  }
  std::string token_name(std::int32_t id) const override {
    if (id == kQuery) return "?";
    const std::size_t i = std::size_t(id - kQuery - 1);
    if (i < keys_) {
      if (keys_ <= 52) return std::string(1, i < 26 ? char('a' + i) : char('A' + (i - 26)));
      return "k" + std::to_string(i);
    }
    const std::size_t v = i - keys_;
    return values_ <= 10 ? std::string(1, char('0' + v)) : "v" + std::to_string(v);
  }

 private:
  std::size_t keys_, values_, queries_;
};

}  // namespace

PELAB_REGISTER_TASK(assoc_recall, TaskSpec{
    "assoc_recall",
    "associative recall: n key-value pairs, then query keys; y = their values",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, <QUERY>=4 (shown as ?), then the `keys` keys (shown as\n"
    "letters a-z A-Z, or k0 k1 ... beyond 52), then the `values` values (digits 0-9, or v0 v1 ... beyond 10),\n"
    "then the prompt token \"Recall:\" when prompt = true.\n"
    "x = k1 v1 ... kn vn ? q1 .. qm, y = y1 .. ym: the n keys are distinct (so n <= keys), values are uniform\n"
    "and may repeat, each of the m = `queries` query keys is one of the n keys (uniform, with replacement),\n"
    "y_j = the value stored under q_j.\n"
    "example (n=3, queries=1, default format): <BOS> c 7 a 2 f 7 ? a <SEP> [2 <EOS>]\n" + std::string(kFormatKeys),
    {integer_param("keys", 16, "key alphabet size (>= the largest n)").in(2.0, 100.0),
     integer_param("values", 10, "value alphabet size").in(2.0, 100.0),
     integer_param("queries", 1, "query keys per example").in(1.0, 64.0)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      const auto keys = std::size_t(p.get_int("keys"));
      if (c.train_len > keys)
        throw Error("task 'assoc_recall': train_len = " + std::to_string(c.train_len) + " pairs need " +
                    std::to_string(c.train_len) + " distinct keys but task.assoc_recall.keys = " +
                    std::to_string(keys) + "; set keys >= train_len (and >= the largest eval length)");
      return std::make_unique<AssocRecall>(c.format, keys, std::size_t(p.get_int("values")),
                                           std::size_t(p.get_int("queries")));
    }});

}  // namespace pelab
