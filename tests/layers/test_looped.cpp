// Looped depth ([loop], layers/transformer.hpp LoopSettings; Fan et al. 2025, arXiv 2409.15647): the
// PyTorch twin's logits and gradients at 1x, 2x and 4x the training length (the loops growing with the
// length under rule "length"), the number of block applications, shared parameters, and the refusals.
#include <catch2/catch.hpp>

#include "core/ops/reduce.hpp"
#include "core/tape.hpp"
#include "layers/dry_run.hpp"
#include "model_helpers.hpp"
#include "parity_fixture.hpp"
#include "rel_diff.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Matchers::Contains;

namespace {

// Blocks a forward applies, counted by ForwardOptions::between_layers (called after each).
std::size_t applied_blocks(Transformer& m, std::size_t T) {
  std::size_t n = 0;
  ForwardOptions fo;
  fo.between_layers = [&n] { ++n; };
  Rng rng(2);
  NoGrad ng;
  m.forward(random_tokens(1, T, 11, rng), default_positions(1, T), fo);
  return n;
}

ModelConfig looped(const std::string& enc, std::size_t n_layers, LoopSettings loop) {
  ModelConfig c = small_config(enc);
  c.n_layers = n_layers;
  c.loop = loop;
  return c;
}

}  // namespace

TEST_CASE("looped depth: PyTorch parity of logits at 1x, 2x and 4x the training length", "[parity][loop]") {
  // model_looped_rope: block 0 three times, then block 1; model_looped_none_length: NoPE, block 1 looped
  // floor(T / 4) + 1 times: 4, 7 and 13 loops at T = 12, 24, 48. Logits, loss and float64 gradients at
  // the training length are in "PyTorch parity: logits, loss and every gradient for each fixture".
  CHECK(check_long_logits("model_looped_rope") == 3);
  CHECK(check_long_logits("model_looped_none_length") == 3);
}

TEST_CASE("looped depth: the group runs N(T) times, the blocks around it once", "[loop]") {
  LoopSettings fixed;
  fixed.first = 1, fixed.blocks = 2, fixed.times = 3;  // blocks 0, (1, 2) x 3, 3
  auto m = make_model(looped("rope", 4, fixed));
  CHECK(applied_blocks(*m, 5) == 1 + 2 * 3 + 1);
  CHECK(applied_blocks(*m, 20) == 1 + 2 * 3 + 1);
  LoopSettings grows;
  grows.rule = "length", grows.per_token = 0.5, grows.offset = 1;  // every block: floor(T / 2) + 1 times
  CHECK(grows.loops_at(1) == 1);
  CHECK(grows.loops_at(7) == 4);
  CHECK(grows.loops_at(40) == 21);
  auto g = make_model(looped("alibi", 2, grows));
  CHECK(applied_blocks(*g, 7) == 2 * 4);
  CHECK(applied_blocks(*g, 40) == 2 * 21);
  CHECK(applied_blocks(*make_model(small_config("rope")), 9) == 2);  // no [loop]: each block once
}

TEST_CASE("looped depth: the input is injected and looping changes the logits, and times = 1 is the plain model",
          "[loop]") {
  Rng rng(4);
  const IndexArray tok = random_tokens(2, 9, 11, rng), pos = default_positions(2, 9);
  NoGrad ng;
  const Array plain = make_model(small_config("rope"), 3)->forward(tok, pos).value();
  LoopSettings once;
  once.first = 1;  // a group of one block applied once
  CHECK(rel_diff(make_model(looped("rope", 2, once), 3)->forward(tok, pos).value(), plain) == 0);
  LoopSettings twice = once;
  twice.times = 2;
  CHECK(rel_diff(make_model(looped("rope", 2, twice), 3)->forward(tok, pos).value(), plain) > 1e-3);
}

TEST_CASE("looped depth: parameters are the blocks', shared by every loop, for the model and its dry run", "[loop]") {
  const std::size_t plain = make_model(small_config("t5"))->num_parameters();
  LoopSettings loop;
  loop.times = 5;
  const ModelConfig c = looped("t5", 2, loop);
  CHECK(make_model(c)->num_parameters() == plain);
  CHECK(dry_parameter_count(c) == plain);
  // Training a looped model keeps every application's activations: the dry run (the memory estimate)
  // grows with the loops, but stays under five distinct blocks' (their weights and gradients).
  DryRunShape s;
  s.batch = 2, s.tokens = 16, s.training = true;
  Tape::current().clear();  // a training dry run needs an empty tape (what an earlier test left recorded)
  ModelConfig deep = small_config("t5");
  deep.n_layers = 6;  // 1 + 5: the looped model applies blocks 0 .. 1 as 0 x 5, then 1
  LoopSettings first_block;
  first_block.blocks = 1, first_block.times = 5;
  const DryRunResult one = dry_run(small_config("t5"), s), five = dry_run(looped("t5", 2, first_block), s),
                     six = dry_run(deep, s);
  CHECK(five.parameters == one.parameters);
  CHECK(five.summary.peak_live_bytes > one.summary.peak_live_bytes);
  CHECK(five.summary.peak_live_bytes < six.summary.peak_live_bytes);
}

TEST_CASE("looped depth: every parameter's gradient sums its uses over the loops", "[loop]") {
  // A group applied twice gets (for the same weights) a different gradient from one applied once, and
  // every parameter still gets exactly one gradient (the optimizer sees each once).
  Rng rng(6);
  const IndexArray tok = random_tokens(2, 7, 11, rng), pos = default_positions(2, 7);
  LoopSettings loop;
  loop.times = 2;
  auto once = make_model(small_config("alibi"), 8), twice = make_model(looped("alibi", 2, loop), 8);
  for (Transformer* m : {once.get(), twice.get()}) {
    Tape::current().clear();
    pelab::sum(m->forward(tok, pos)).backward();
  }
  const auto a = once->parameters(), b = twice->parameters();
  REQUIRE(a.size() == b.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    REQUIRE(b[i].tensor.has_grad());
    differ += rel_diff(a[i].tensor.grad(), b[i].tensor.grad()) > 0;
  }
  CHECK(differ > a.size() / 2);
  Tape::current().clear();
}

TEST_CASE("looped depth: the model refuses 0 loops and rules that give 0 loops", "[loop][errors]") {
  LoopSettings zero;
  zero.times = 0;
  CHECK_THROWS_WITH(Transformer(looped("rope", 2, zero)), Contains("loop.times = 0: the group must run at least once"));
  LoopSettings rule;
  rule.rule = "length", rule.per_token = 0.3, rule.offset = 0;  // 0 at T = 1..3
  CHECK_THROWS_WITH(Transformer(looped("rope", 2, rule)), Contains("< 1 at T = 1 token"));
  rule.offset = 1;
  CHECK_NOTHROW(Transformer(looped("rope", 2, rule)));
}
