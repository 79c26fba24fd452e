// mqar: multi-query associative recall (Arora, Eyuboglu et al. 2023, "Zoology: Measuring and Improving
// Recall in Efficient Language Models"), the generator of github.com/HazyResearch/zoology,
// zoology/data/multiquery_ar.py (multiquery_ar): n key-value pairs, then a query region in which each of
// the n keys appears once, at an even offset drawn from a power law that favours short gaps; the model
// must name the key's value where the key is queried. Everything else in the region is random tokens.
#include <cmath>

#include "experiments/tasks/stream.hpp"

namespace pelab {
namespace {

class Mqar : public StreamTask {
 public:
  Mqar(std::size_t keys, std::size_t values, std::size_t per_pair, double power_a)
      : StreamTask("mqar"), keys_(keys), values_(values), per_pair_(per_pair), power_a_(power_a) {}
  std::size_t vocab_size() const override { return stream::kFirstSymbol + keys_ + values_; }
  // Values are uniform over the value alphabet: a guess is right with probability 1 / values.
  std::optional<Chance> chance(std::size_t n) const override {
    return Chance{1.0 / double(values_), std::pow(1.0 / double(values_), double(n))};
  }

 protected:
  std::int32_t key_id(std::size_t k) const { return stream::kFirstSymbol + std::int32_t(k); }
  std::int32_t value_id(std::size_t v) const { return stream::kFirstSymbol + std::int32_t(keys_ + v); }
  std::size_t tokens_length(std::size_t n) const override { return per_pair_ * n; }
  void check_size(std::size_t n) const override {
    if (n > keys_ || n > values_)
      throw Error("task 'mqar': " + std::to_string(n) + " pairs need " + std::to_string(n) +
                  " distinct keys and values but keys = " + std::to_string(keys_) + " and values = " +
                  std::to_string(values_) + " (raise task.mqar.keys / values or lower the problem size)");
  }
  stream::Example generate(Rng& rng, std::size_t n) const override;
  std::string token_name(std::int32_t id) const override {
    const std::size_t i = std::size_t(id - stream::kFirstSymbol);
    return i < keys_ ? "k" + std::to_string(i) : "v" + std::to_string(i - keys_);
  }

 private:
  // `count` distinct picks from [0, size): a partial Fisher-Yates shuffle.
  static std::vector<std::size_t> distinct(Rng& rng, std::size_t size, std::size_t count);
  // `count` distinct gaps from [0, space) without replacement, gap g drawn with weight a (g+1)^(a-1)
  // renormalized over those left (numpy's choice(replace=False, p=...), as Zoology draws them).
  std::vector<std::size_t> gaps(Rng& rng, std::size_t space, std::size_t count) const;
  std::size_t keys_, values_, per_pair_;
  double power_a_;
};

std::vector<std::size_t> Mqar::distinct(Rng& rng, std::size_t size, std::size_t count) {
  std::vector<std::size_t> order(size);
  for (std::size_t i = 0; i < size; ++i) order[i] = i;
  for (std::size_t i = 0; i < count; ++i) std::swap(order[i], order[i + rng.below(size - i)]);
  order.resize(count);
  return order;
}

std::vector<std::size_t> Mqar::gaps(Rng& rng, std::size_t space, std::size_t count) const {
  std::vector<double> w(space);
  for (std::size_t g = 0; g < space; ++g) w[g] = power_a_ * std::pow(double(g + 1), power_a_ - 1);
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < count; ++k) {
    double total = 0;
    for (double v : w) total += v;
    double u = rng.uniform() * total;
    std::size_t g = 0;
    while (g + 1 < space && (w[g] == 0 || u >= w[g])) u -= w[g], ++g;
    while (w[g] == 0) --g;  // rounding at the top end: the last gap still available
    out.push_back(g);
    w[g] = 0;
  }
  return out;
}

stream::Example Mqar::generate(Rng& rng, std::size_t n) const {
  const std::size_t L = tokens_length(n), context = 2 * n;
  const std::vector<std::size_t> k = distinct(rng, keys_, n), v = distinct(rng, values_, n);
  stream::Example e;
  e.tokens.resize(L);
  e.targets.assign(L, stream::kUnscored);
  for (std::size_t i = 0; i < n; ++i) e.tokens[2 * i] = key_id(k[i]), e.tokens[2 * i + 1] = value_id(v[i]);
  std::vector<bool> query(L, false);
  const std::vector<std::size_t> g = gaps(rng, (L - context) / 2, n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t t = context + 2 * g[i];
    e.tokens[t] = key_id(k[i]);
    e.targets[t] = value_id(v[i]);
    query[t] = true;
  }
  for (std::size_t t = context; t < L; ++t)  // the rest: random keys and values (random_non_queries)
    if (!query[t]) e.tokens[t] = stream::kFirstSymbol + std::int32_t(rng.below(keys_ + values_));
  return e;
}

}  // namespace

PELAB_REGISTER_TASK(mqar, TaskSpec{
    "mqar",
    "multi-query associative recall (Zoology, Arora et al. 2023): n pairs, then each key queried once",
    "vocabulary: <PAD>=0 <BOS>=1, the `keys` keys k0 k1 ... (ids 2..), then the `values` values v0 v1 ....\n"
    "A row of problem size n is <BOS> then L = length_per_pair * n tokens (Zoology's grid (64, 4), (128, 8),\n"
    "(256, 16) is L / n = 16): the n pairs k v (distinct keys, distinct values, uniform), then the query\n"
    "region of L - 2n tokens where each key appears once, at offset 2 g from the region's start, the gaps g\n"
    "distinct in [0, (L - 2n) / 2) with weight power_a (g+1)^(power_a - 1); every other token of the region\n"
    "is a uniformly random key or value (Zoology's random_non_queries). Scored: the value, predicted where\n"
    "its key is queried (shown in brackets after it). Chance: 1 / values per query.\n"
    "example (n=2, length_per_pair=8): <BOS> k5 v1 k2 v7 k5[v1] v3 k2[v7] k9 v0 k1 v4 k3 v2 v3 k0\n"
    "(no [task] format keys: a stream task has no separator, prompt or EOS).",
    {integer_param("keys", 64, "key alphabet size (>= the largest n)").in(1.0, 100000.0),
     integer_param("values", 64, "value alphabet size (>= the largest n)").in(2.0, 100000.0),
     integer_param("length_per_pair", 16, "tokens per key-value pair: L = length_per_pair * n (>= 4)").in(4.0, 1024.0),
     number_param("power_a", 0.01, "power-law exponent a of the query gaps (1 = uniform)").in(0.001, 1.0)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      refuse_format("mqar", c.format);
      const auto keys = std::size_t(p.get_int("keys")), values = std::size_t(p.get_int("values"));
      if (c.train_len > keys || c.train_len > values)
        throw Error("task 'mqar': train_len = " + std::to_string(c.train_len) + " pairs need that many distinct keys "
                    "and values but task.mqar.keys = " + std::to_string(keys) + " and task.mqar.values = " +
                    std::to_string(values) + "; set both >= train_len (and >= the largest eval length)");
      return std::make_unique<Mqar>(keys, values, std::size_t(p.get_int("length_per_pair")), p.get_number("power_a"));
    },
    {}});

}  // namespace pelab
