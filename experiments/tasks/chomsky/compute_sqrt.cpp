// compute_sqrt (context-sensitive; Delétang et al. 2023): the floor of the square root of an n-bit
// number, both most significant bit first. The authors' tasks/cs/compute_sqrt.py: the number is
// uniform in [1, 2^n - 1] written with exactly n bits, the root with exactly ceil(n / 2) bits.
#include "experiments/tasks/chomsky/chomsky.hpp"

namespace pelab::chomsky {
namespace {

class ComputeSqrt : public NamedSymbolTask {
 public:
  explicit ComputeSqrt(const SequenceFormat& f) : NamedSymbolTask("compute_sqrt", f, "Sqrt:", kBits) {}

 protected:
  seq::Example generate(Rng& rng, std::size_t n) const override {
    seq::Example e;
    const std::vector<int> bits = random_nonzero_bits(rng, n);  // least significant first
    for (auto it = bits.rbegin(); it != bits.rend(); ++it) e.x.push_back(id(std::size_t(*it)));
    e.y = solve(e.x);
    return e;
  }
  std::vector<std::int32_t> solve(const std::vector<std::int32_t>& x) const override {
    expect_symbols(x, 2, "x");
    std::vector<int> lsb_first;
    for (auto it = x.rbegin(); it != x.rend(); ++it) lsb_first.push_back(int(symbol(*it)));
    std::vector<int> root = isqrt_bits(lsb_first);
    root.resize(y_length(x.size()), 0);  // exactly ceil(n / 2) bits
    std::vector<std::int32_t> y;
    for (auto it = root.rbegin(); it != root.rend(); ++it) y.push_back(id(std::size_t(*it)));
    return y;
  }
  std::size_t y_length(std::size_t n) const override { return (n + 1) / 2; }
  std::vector<std::size_t> answer_support(std::size_t n) const override {
    return std::vector<std::size_t>(y_length(n), 2);
  }
};

}  // namespace

PELAB_REGISTER_TASK(compute_sqrt, TaskSpec{
    "compute_sqrt",
    "Chomsky suite, CS: floor(sqrt(x)) of an n-bit number, in binary (Deletang et al. 2023)",
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, bits 0 1 = ids 4-5, then the prompt token \"Sqrt:\" (id 6)\n"
    "when prompt = true.\n"
    "x = a number uniform in [1, 2^n - 1] written with n bits, y = floor(sqrt(x)) with ceil(n/2) bits, both\n"
    "most significant bit first.\n"
    "example (n=6, default format): <BOS> 1 0 0 1 0 1 <SEP> [1 1 0 <EOS>]   (floor(sqrt(37)) = 6)\n" +
        std::string(kFormatKeys),
    {},
    [](const TaskCommon& c, const Params&) -> std::unique_ptr<Task> { return std::make_unique<ComputeSqrt>(c.format); }});

}  // namespace pelab::chomsky
