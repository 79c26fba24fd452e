// passkey: passkey retrieval at toy scale (Mohtashami and Jaggi 2023, "Landmark Attention", arXiv
// 2305.16300, Section 4.2: a pass key hidden in repeated filler text, asked for at the end; the "needle in
// a haystack" tests grid it over the key's depth and the context length). Here the filler is n random
// tokens, the key `key_len` random digits after a marker K, placed after round(depth * n) filler tokens;
// y = the key. Training draws the depth uniformly; a depth x length grid evaluates fixed depths
// (`pelab eval --set task.passkey.depth=D`, a named evaluation each) at the eval lengths.
#include <algorithm>
#include <cmath>

#include "experiments/tasks/sequence.hpp"
#include "experiments/tasks/stream.hpp"  // number_text

namespace pelab {
namespace {

constexpr std::int32_t kDigit0 = seq::kFirstSymbol, kKey = kDigit0 + 10, kFiller0 = kKey + 1;

class Passkey : public SequenceTask {
 public:
  Passkey(const SequenceFormat& f, std::size_t key_len, std::size_t filler, double depth)
      : SequenceTask("passkey", f, "Passkey:"), key_len_(key_len), filler_(filler), depth_(depth) {}

 protected:
  std::size_t base_vocab_size() const override { return std::size_t(kFiller0) + filler_; }
  // Filler tokens before the key: round(depth * n), or uniform in [0, n] when depth < 0 (training).
  std::size_t before(Rng& rng, std::size_t n) const {
    if (depth_ < 0) return std::size_t(rng.range(0, std::int64_t(n)));
    return std::size_t(std::lround(depth_ * double(n)));
  }
  seq::Example generate(Rng& rng, std::size_t n) const override {
    const std::size_t a = before(rng, n);
    seq::Example e;
    for (std::size_t i = 0; i < n; ++i) {
      if (i == a) e.x.push_back(kKey);
      if (i == a)
        for (std::size_t d = 0; d < key_len_; ++d) e.x.push_back(kDigit0 + std::int32_t(rng.below(10)));
      e.x.push_back(kFiller0 + std::int32_t(rng.below(filler_)));
    }
    if (a == n) {  // depth 1: the key after all the filler
      e.x.push_back(kKey);
      for (std::size_t d = 0; d < key_len_; ++d) e.x.push_back(kDigit0 + std::int32_t(rng.below(10)));
    }
    e.y = solve(e.x);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    const auto k = std::find(x.begin(), x.end(), kKey);
    const char* form = "expected filler letters with one K followed by the key's digits, e.g. \"a b K 3 1 4 c\"";
    if (k == x.end() || std::count(x.begin(), x.end(), kKey) != 1)
      throw Error(std::string(form) + " (exactly one K)");
    if (std::size_t(x.end() - k - 1) < key_len_ || std::any_of(k + 1, k + 1 + std::ptrdiff_t(key_len_), [](std::int32_t v) { return v >= kKey; }))
      throw Error(std::string(form) + ": K must be followed by key_len = " + std::to_string(key_len_) + " digits");
    if (std::count_if(x.begin(), x.end(), [](std::int32_t v) { return v < kKey; }) != std::ptrdiff_t(key_len_))
      throw Error(std::string(form) + ": digits appear only in the key");
    return {k + 1, k + 1 + std::ptrdiff_t(key_len_)};
  }
  std::size_t x_length(std::size_t n) const override { return n + 1 + key_len_; }
  std::size_t y_length(std::size_t) const override { return key_len_; }
  std::vector<std::size_t> answer_support(std::size_t) const override { return std::vector<std::size_t>(key_len_, 10); }
  std::string token_name(std::int32_t id) const override {
    if (id < kKey) return std::to_string(id - kDigit0);
    if (id == kKey) return "K";
    const std::size_t f = std::size_t(id - kFiller0);
    return filler_ <= 26 ? std::string(1, char('a' + f)) : "f" + std::to_string(f);
  }

 private:
  std::size_t key_len_, filler_;
  double depth_;
};

}  // namespace

PELAB_REGISTER_TASK(passkey, TaskSpec{
    "passkey",
    "passkey retrieval at toy scale: a key at a chosen depth of n random filler tokens, asked at the end",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, digits 0-9 = ids 4-13, the key marker K = id 14, then the\n"
    "`filler` filler tokens (letters a.. up to 26, else f0 f1 ...), then the prompt token \"Passkey:\" when\n"
    "prompt = true.\n"
    "x = n uniform filler tokens with K and key_len uniform digits inserted after the first round(depth * n)\n"
    "of them (depth = -1: uniform in 0..n, the training default); y = the key's digits. The problem size n\n"
    "counts the filler only: |x| = n + 1 + key_len.\n"
    "example (n=6, depth=0.5, default format): <BOS> c a f K 3 1 4 b h a <SEP> [3 1 4 <EOS>]\n"
    "A depth x length grid: pelab eval RUN --set task.passkey.depth=0.25 --name depth25 (one per depth),\n"
    "each at the eval lengths.\n" + std::string(kFormatKeys),
    {integer_param("key_len", 3, "digits of the key").in(1.0, 64.0),
     integer_param("filler", 16, "filler alphabet size").in(1.0, 10000.0),
     number_param("depth", -1.0, "fraction of the filler before the key in [0, 1]; -1: uniform (training)").in(-1.0, 1.0)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      const double depth = p.get_number("depth");
      if (depth < 0 && depth != -1.0)
        throw Error("task 'passkey': depth = " + number_text(depth) + "; expected a fraction in [0, 1] (the share of "
                    "the filler before the key) or -1 (uniform, for training)");
      return std::make_unique<Passkey>(c.format, std::size_t(p.get_int("key_len")), std::size_t(p.get_int("filler")),
                                       depth);
    },
    {"depth"}});

}  // namespace pelab
