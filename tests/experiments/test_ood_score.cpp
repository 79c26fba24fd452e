// The out-of-distribution score in eval.json: each metric's mean over the lengths above training,
// n/a lengths counted apart, nothing for a run evaluated only inside its training range.
#include <catch2/catch.hpp>

#include "experiments/eval/eval_result.hpp"

using namespace pelab;

namespace {
LengthResult at(std::size_t n, double acc, bool ok = true) {
  LengthResult r;
  r.length = n, r.ok = ok, r.in_distribution = n <= 8;
  if (ok) r.metrics = {{"token_acc", acc}, {"loss", 1 - acc}};
  else r.reason = "beyond the table";
  return r;
}
}  // namespace

TEST_CASE("the OOD score averages every metric over the lengths above training", "[eval][ood]") {
  const std::vector<LengthResult> rs = {at(4, 1.0), at(8, 0.9), at(16, 0.5), at(32, 0.2), at(64, 0, false)};
  const OodScore s = ood_score(rs, 8);
  CHECK(s.lengths == std::vector<std::size_t>{16, 32});
  CHECK(s.n_a == 1);
  CHECK(s.metrics.at("token_acc") == Approx(0.35));
  CHECK(s.metrics.at("loss") == Approx(0.65));
  const auto j = to_json(s);
  CHECK(j["lengths"].size() == 2);
  CHECK(j["n_a"] == 1);
  CHECK(j.begin().key() == "lengths");
  CHECK(std::next(j.begin(), 2).key() == "loss");  // metrics in the metric table's order

  const OodScore none = ood_score({at(4, 1.0), at(8, 0.9)}, 8);
  CHECK(none.lengths.empty());
  CHECK(none.metrics.empty());
  EvalResult r;
  r.train_len = 8;
  r.results = rs;
  CHECK(to_json(r)["ood"]["token_acc"] == Approx(0.35));
}
