// missing_duplicate_string (context-sensitive; Delétang et al. 2023): a bit string written twice with
// one place blanked out; y is the missing bit. The authors' tasks/cs/missing_duplicate_string.py: the
// halves have n // 2 bits, the blank is uniform over both, an odd n ends with one empty token, and
// n = 1 is the input 1 with answer 1.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

constexpr std::size_t kBlank = 2, kEmpty = 3;

class MissingDuplicateString : public NamedSymbolTask {
 public:
  explicit MissingDuplicateString(const SequenceFormat& f)
      : NamedSymbolTask("missing_duplicate_string", f, "Missing:", {"0", "1", "_", "."}) {}

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    if (n == 1) {
      e.x = {id(1)}, e.y = {id(1)};
      return e;
    }
    const std::vector<int> half = random_bits(rng, n / 2);
    for (int pass = 0; pass < 2; ++pass)
      for (int b : half) e.x.push_back(id(std::size_t(b)));
    const std::size_t blank = std::size_t(rng.below(e.x.size()));
    e.y = {e.x[blank]};
    e.x[blank] = id(kBlank);
    if (n % 2) e.x.push_back(id(kEmpty));
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    if (x.size() == 1 && x[0] == id(1)) return {id(1)};
    std::vector<std::int32_t> s = x;
    if (!s.empty() && s.back() == id(kEmpty)) s.pop_back();
    const std::size_t h = s.size() / 2;
    const auto blanks = std::count(s.begin(), s.end(), id(kBlank));
    if (s.size() % 2 || h == 0 || blanks != 1)
      throw Error("expected a bit string twice with one _ in place of a bit (and . at the end for odd n), e.g. 01_0010");
    const std::size_t at = std::size_t(std::find(s.begin(), s.end(), id(kBlank)) - s.begin());
    return {s[at < h ? at + h : at - h]};
  }
  std::size_t y_length(std::size_t) const override { return 1; }
  std::vector<std::size_t> answer_support(std::size_t n) const override { return {n == 1 ? 1u : 2u}; }
};

}  // namespace

PELAB_REGISTER_TASK(missing_duplicate_string, TaskSpec{
    "missing_duplicate_string",
    "Chomsky suite, CS: the bit blanked out of a string written twice (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, bits 0 1 = ids 4-5, the blank _ = id 6, the empty token\n"
    ". = id 7, then the prompt token \"Missing:\" (id 8) when prompt = true.\n"
    "x = s s with s n // 2 uniformly random bits, one place (uniform) replaced by _, then . when n is odd;\n"
    "y = the bit that was there. n = 1: x = 1, y = 1 (the authors' generator).\n"
    "example (n=8, default format): <BOS> 0 1 1 0 0 _ 1 0 <SEP> [1 <EOS>]\n" + std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> {
      return std::make_unique<MissingDuplicateString>(c.format);
    }});

}  // namespace pelab::chomsky
