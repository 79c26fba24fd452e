// Evaluation under [eval] positions: the ids reach the model, are the same at every evaluation, and a
// learned table too small for the eval ids is reported n/a.
#include <catch2/catch.hpp>

#include "experiments/config/config.hpp"
#include "experiments/eval/evaluate.hpp"
#include "tiny_config.hpp"

using namespace pelab;

namespace {

RunSpec spec_of(const std::vector<std::string>& overrides) {
  return parse_config(test::tiny_config(10), "eval.toml", overrides).runs.at(0);
}

std::unique_ptr<Transformer> model_of(const RunSpec& spec) {
  auto m = std::make_unique<Transformer>(spec.model);
  Rng rng(5);
  init_parameters(*m, rng, 0.3, 0.3);  // large: positions visibly change the outputs
  m->set_training(false);
  return m;
}

double loss_at(Transformer& m, const RunSpec& spec, const PositionConfig& pc, std::size_t n) {
  const LengthResult r = evaluate_length(m, *spec.task, spec.config.eval, pc, n, spec.config.min_len,
                                         spec.config.train_len);
  REQUIRE(r.ok);
  REQUIRE(r.metric("loss").has_value());
  return *r.metric("loss");
}

}  // namespace

TEST_CASE("evaluation uses the eval position ids, the same ones at every evaluation", "[eval][positions]") {
  // copy, train_len 4 (10 tokens), eval up to 8 (18 tokens): auto max_position 18.
  const RunSpec spec = spec_of({"encoding.name=sinusoidal", "train.positions=randomized"});
  auto m = model_of(spec);
  const PositionConfig pc = eval_positions(spec.config);
  REQUIRE(pc.mode == PositionMode::randomized);
  REQUIRE(pc.max_position == 18);
  const double a = loss_at(*m, spec, pc, 4), b = loss_at(*m, spec, pc, 4);
  CHECK(a == b);  // fixed by the eval seed, not drawn afresh
  const double contiguous = loss_at(*m, spec, {PositionMode::contiguous, 18}, 4);
  const double offset = loss_at(*m, spec, {PositionMode::offset, 18}, 4);
  CHECK(a != contiguous);  // the ids reached the model
  CHECK(offset != contiguous);
  CHECK(offset != a);
  // another eval seed, other ids (and other data)
  RunSpec other = spec;
  other.config.eval.seed += 1;
  CHECK(loss_at(*m, other, pc, 4) != a);
  // a relative encoding does not care where a contiguous window starts (length 4: starts 0..8)
  const RunSpec rel = spec_of({"encoding.name=rope", "train.positions=offset"});
  auto mr = model_of(rel);
  const double shifted = loss_at(*mr, rel, eval_positions(rel.config), 4);
  CHECK(shifted == Approx(loss_at(*mr, rel, {PositionMode::contiguous, 18}, 4)).epsilon(1e-5));
  CHECK(shifted != loss_at(*mr, rel, {PositionMode::randomized, 18}, 4));
}

TEST_CASE("a learned table trained on contiguous ids is n/a for randomized eval ids beyond it", "[eval][positions]") {
  const RunSpec spec = spec_of({"encoding.name=learned", "eval.positions=randomized"});
  REQUIRE(spec.model.dims().max_position == 10);  // contiguous training: 10 rows
  auto m = model_of(spec);
  REQUIRE(m->parameter("pos.weight").size(0) == 10);
  const LengthResult r = evaluate_length(*m, *spec.task, spec.config.eval, eval_positions(spec.config), 2,
                                         spec.config.min_len, spec.config.train_len);
  CHECK_FALSE(r.ok);  // ids may reach 17 even at length 2
  CHECK_THAT(r.reason, Catch::Contains("position 17") && Catch::Contains("10 rows"));
  // trained on randomized ids, the table covers the whole range and every length evaluates
  const RunSpec rnd = spec_of({"encoding.name=learned", "train.positions=randomized"});
  auto mr = model_of(rnd);
  CHECK(mr->parameter("pos.weight").size(0) == 18);
  for (std::size_t n : {2, 4, 8}) {
    INFO("length " << n);
    CHECK(evaluate_length(*mr, *rnd.task, rnd.config.eval, eval_positions(rnd.config), n, rnd.config.min_len,
                          rnd.config.train_len)
              .ok);
  }
}

TEST_CASE("a length range gives each length's own results, for encodings that read a row's length too",
          "[eval][range]") {
  // Lengths are never batched together: every length of a range is evaluated as when it is alone,
  // also where a row's ids or length shape the output (normalized ids, dynamic NTK) or pads would be
  // visible (causal = false).
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"encoding.name=normalized"},
        {"encoding.name=rope", "encoding.rope.scaling=dynamic_ntk", "encoding.rope.factor=2"},
        {"encoding.name=rope", "model.causal=false"}}) {
    std::vector<std::string> all = sets;
    all.push_back("eval.length_range=[1, 9, 2]");
    all.push_back("eval.lengths=[]");
    const RunSpec spec = spec_of(all);
    INFO(spec.config.encoding << " causal " << spec.model.causal);
    REQUIRE(spec.config.eval.lengths == std::vector<std::size_t>{1, 3, 5, 7, 9});
    auto m = model_of(spec);
    const std::vector<LengthResult> range = evaluate_lengths(*m, spec);
    REQUIRE(range.size() == 5);
    for (const LengthResult& r : range) {
      RunSpec one = spec;
      one.config.eval.lengths = {r.length};
      const std::vector<LengthResult> alone = evaluate_lengths(*m, one);
      REQUIRE(alone.size() == 1);
      CHECK(alone[0].metrics == r.metrics);  // bit for bit
    }
  }
}
