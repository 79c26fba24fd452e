// Sequence-task formats ([task] bos, eos, sep, prompt): golden renderings and batches per task and
// format, chance levels against counting (and a simulated guesser scored by the real metrics code),
// the config keys with their errors, and the chance stored in eval.json.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "config_error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/tasks/sequence.hpp"
#include "training/metrics.hpp"
#include "task_helpers.hpp"
#include "test_paths.hpp"

using namespace pelab;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

using Params_ = test::TaskParams;
using test::all_formats;
using test::as_seq;
using test::fmt;

std::unique_ptr<Task> task(const std::string& name, const SequenceFormat& f, const Params_& p = {},
                           std::size_t train_len = 8) {
  return test::make_seq_task(name, p, 1, train_len, f);
}

// The formats of the golden tests: every value of every key appears at least once.
const SequenceFormat kDefault = fmt(true, EosMode::scored, true, false);
const SequenceFormat kKazemnejad = fmt(false, EosMode::scored, true, true);
const SequenceFormat kRuoss = fmt(false, EosMode::absent, true, false);
const SequenceFormat kPromptUnscored = fmt(true, EosMode::unscored, true, true);
const SequenceFormat kBare = fmt(false, EosMode::unscored, false, false);
const SequenceFormat kBosNoSep = fmt(true, EosMode::absent, false, false);

// Renders one hand-built example of task `name` in format f.
std::string golden(const std::string& name, const SequenceFormat& f, const seq::Example& e, const Params_& p = {}) {
  auto t = task(name, f, p);
  return t->render(seq::assemble({e}, f, as_seq(*t).prompt_id()), 0);
}

std::vector<std::int32_t> row_of(const IndexArray& a) { return {a.begin(), a.end()}; }
std::vector<float> row_of(const Array& a) { return {a.begin(), a.end()}; }

// Chance level from counting: the tokens each counted target (by its offset in the answer span) takes
// over `rows` held-out examples of size n, then the uniform guesser's expected scores over those sets.
Chance counted_chance(const Task& t, std::size_t n, std::size_t rows) {
  std::vector<std::set<std::int32_t>> support;
  for (std::uint64_t seed = 0; seed * 250 < rows; ++seed) {
    const Batch b = t.eval_batch(seed, 250, n);
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const std::size_t a = b.answer_begin[r], e = b.answer_end[r];
      if (support.empty()) support.resize(e - a);
      REQUIRE(e - a == support.size());  // every example of size n counts the same number of targets
      for (std::size_t i = 0; i < b.length(); ++i) {
        REQUIRE(b.mask(r, i) == (i >= a && i < e ? 1.0f : 0.0f));
        if (i >= a && i < e) support[i - a].insert(b.targets(r, i));
      }
    }
  }
  Chance c;
  c.exact_match = 1;
  for (const auto& s : support) c.token_acc += 1.0 / double(s.size()), c.exact_match /= double(s.size());
  c.token_acc /= double(support.size());
  return c;
}

std::string error_of(const std::string& text) { return test::config_error(text, "f.toml"); }

}  // namespace

TEST_CASE("format: copy batches are exactly the documented sequences in every golden format", "[tasks][format]") {
  // x = y = 3 1 4 (ids 7 5 8); the prompt token of copy with 10 symbols is id 14.
  struct Case {
    SequenceFormat f;
    std::vector<std::int32_t> tokens, targets;
    std::vector<float> mask;
    std::size_t begin, end;
  };
  const std::vector<Case> cases = {
      {kDefault, {1, 7, 5, 8, 2, 7, 5, 8}, {7, 5, 8, 2, 7, 5, 8, 3}, {0, 0, 0, 0, 1, 1, 1, 1}, 4, 8},
      {kKazemnejad, {14, 7, 5, 8, 2, 7, 5, 8}, {7, 5, 8, 2, 7, 5, 8, 3}, {0, 0, 0, 0, 1, 1, 1, 1}, 4, 8},
      {kRuoss, {7, 5, 8, 2, 7, 5}, {5, 8, 2, 7, 5, 8}, {0, 0, 0, 1, 1, 1}, 3, 6},
      {kPromptUnscored, {1, 14, 7, 5, 8, 2, 7, 5, 8}, {14, 7, 5, 8, 2, 7, 5, 8, 3}, {0, 0, 0, 0, 0, 1, 1, 1, 0}, 5, 8},
      {kBare, {7, 5, 8, 7, 5, 8}, {5, 8, 7, 5, 8, 3}, {0, 0, 1, 1, 1, 0}, 2, 5},
      {kBosNoSep, {1, 7, 5, 8, 7, 5}, {7, 5, 8, 7, 5, 8}, {0, 0, 0, 1, 1, 1}, 3, 6},
  };
  for (const Case& c : cases) {
    INFO(describe(c.f));
    auto t = task("copy", c.f);
    CHECK(t->vocab_size() == (c.f.prompt ? 15u : 14u));
    CHECK(t->sequence_length(3) == c.tokens.size());
    const Batch b = seq::assemble({{{7, 5, 8}, {7, 5, 8}}}, c.f, as_seq(*t).prompt_id());
    CHECK(row_of(b.tokens) == c.tokens);
    CHECK(row_of(b.targets) == c.targets);
    CHECK(row_of(b.mask) == c.mask);
    CHECK(b.answer_begin == std::vector<std::size_t>{c.begin});
    CHECK(b.answer_end == std::vector<std::size_t>{c.end});
    const seq::Example e = seq::decode(b, 0, c.f);
    CHECK(e.x == std::vector<std::int32_t>{7, 5, 8});
    CHECK(e.y == std::vector<std::int32_t>{7, 5, 8});
  }
  // Padding: a shorter second row is PAD / -1 / 0 after its end, its span its own.
  const Batch b = seq::assemble({{{7, 5, 8}, {7, 5, 8}}, {{4}, {4}}}, kRuoss);
  REQUIRE(b.tokens.shape() == Shape{2, 6});
  CHECK(std::vector<std::int32_t>(b.tokens.begin() + 6, b.tokens.end()) == std::vector<std::int32_t>{4, 2, 0, 0, 0, 0});
  CHECK(std::vector<std::int32_t>(b.targets.begin() + 6, b.targets.end()) ==
        std::vector<std::int32_t>{2, 4, -1, -1, -1, -1});
  CHECK(std::vector<float>(b.mask.begin() + 6, b.mask.end()) == std::vector<float>{0, 1, 0, 0, 0, 0});
  CHECK(b.answer_begin[1] == 1);
  CHECK(b.answer_end[1] == 2);
  // A format without BOS, prompt or SEP and an empty x leaves nothing to predict y from.
  CHECK_THROWS_WITH(seq::assemble({{{}, {4}}}, kBare), Contains("nothing before y"));
  CHECK_THROWS_WITH(seq::assemble({{{4}, {}}}, kRuoss), Contains("no target to count"));
  CHECK_THROWS_WITH(seq::assemble({{{4}, {4}}}, kKazemnejad), Contains("no prompt token id"));
  // Decoding with the wrong format is an error, not garbage.
  CHECK_THROWS_WITH(seq::decode(seq::assemble({{{7, 5, 8}, {7, 5, 8}}}, kRuoss), 0, kDefault), Contains("malformed"));
}

TEST_CASE("format: golden renderings of every task", "[tasks][format]") {
  // copy, reverse, sort: x = 3 1 4 (1) as ids 7 5 8 (5).
  const seq::Example copy{{7, 5, 8}, {7, 5, 8}}, rev{{7, 5, 8}, {8, 5, 7}}, srt{{7, 5, 8, 5}, {5, 5, 7, 8}};
  CHECK(golden("copy", kDefault, copy) == "<BOS> 3 1 4 <SEP> [3 1 4 <EOS>]");
  CHECK(golden("copy", kKazemnejad, copy) == "Copy: 3 1 4 <SEP> [3 1 4 <EOS>]");
  CHECK(golden("copy", kRuoss, copy) == "3 1 4 <SEP> [3 1 4]");
  CHECK(golden("copy", kPromptUnscored, copy) == "<BOS> Copy: 3 1 4 <SEP> [3 1 4] <EOS>");
  CHECK(golden("copy", kBare, copy) == "3 1 4 [3 1 4] <EOS>");
  CHECK(golden("copy", kBosNoSep, copy) == "<BOS> 3 1 4 [3 1 4]");

  CHECK(golden("reverse", kDefault, rev) == "<BOS> 3 1 4 <SEP> [4 1 3 <EOS>]");
  CHECK(golden("reverse", kKazemnejad, rev) == "Reverse: 3 1 4 <SEP> [4 1 3 <EOS>]");
  CHECK(golden("reverse", kRuoss, rev) == "3 1 4 <SEP> [4 1 3]");
  CHECK(golden("reverse", kPromptUnscored, rev) == "<BOS> Reverse: 3 1 4 <SEP> [4 1 3] <EOS>");
  CHECK(golden("reverse", kBare, rev) == "3 1 4 [4 1 3] <EOS>");
  CHECK(golden("reverse", kBosNoSep, rev) == "<BOS> 3 1 4 [4 1 3]");

  CHECK(golden("sort", kDefault, srt) == "<BOS> 3 1 4 1 <SEP> [1 1 3 4 <EOS>]");
  CHECK(golden("sort", kKazemnejad, srt) == "Sort: 3 1 4 1 <SEP> [1 1 3 4 <EOS>]");
  CHECK(golden("sort", kRuoss, srt) == "3 1 4 1 <SEP> [1 1 3 4]");
  CHECK(golden("sort", kPromptUnscored, srt) == "<BOS> Sort: 3 1 4 1 <SEP> [1 1 3 4] <EOS>");
  CHECK(golden("sort", kBare, srt) == "3 1 4 1 [1 1 3 4] <EOS>");
  CHECK(golden("sort", kBosNoSep, srt) == "<BOS> 3 1 4 1 [1 1 3 4]");

  // addition: 456 + 789 = 1245; digits are ids 4..13, '+' is 14, the prompt 15.
  const seq::Example add{{8, 9, 10, 14, 11, 12, 13}, {5, 6, 8, 9}};
  CHECK(golden("addition", kDefault, add) == "<BOS> 4 5 6 + 7 8 9 <SEP> [1 2 4 5 <EOS>]");
  CHECK(golden("addition", kKazemnejad, add) == "Add: 4 5 6 + 7 8 9 <SEP> [1 2 4 5 <EOS>]");
  CHECK(golden("addition", kRuoss, add) == "4 5 6 + 7 8 9 <SEP> [1 2 4 5]");
  CHECK(golden("addition", kPromptUnscored, add) == "<BOS> Add: 4 5 6 + 7 8 9 <SEP> [1 2 4 5] <EOS>");
  CHECK(golden("addition", kBare, add) == "4 5 6 + 7 8 9 [1 2 4 5] <EOS>");
  CHECK(golden("addition", kBosNoSep, add) == "<BOS> 4 5 6 + 7 8 9 [1 2 4 5]");

  // parity: 1 0 1 1 has three ones -> 1.
  const seq::Example par{{5, 4, 5, 5}, {5}};
  CHECK(golden("parity", kDefault, par) == "<BOS> 1 0 1 1 <SEP> [1 <EOS>]");
  CHECK(golden("parity", kKazemnejad, par) == "Parity: 1 0 1 1 <SEP> [1 <EOS>]");
  CHECK(golden("parity", kRuoss, par) == "1 0 1 1 <SEP> [1]");
  CHECK(golden("parity", kPromptUnscored, par) == "<BOS> Parity: 1 0 1 1 <SEP> [1] <EOS>");
  CHECK(golden("parity", kBare, par) == "1 0 1 1 [1] <EOS>");
  CHECK(golden("parity", kBosNoSep, par) == "<BOS> 1 0 1 1 [1]");

  // assoc_recall (16 keys from id 5, 10 values from id 21): c 7 a 2 ? a -> 2.
  const seq::Example rec{{5 + 2, 21 + 7, 5 + 0, 21 + 2, 4, 5 + 0}, {21 + 2}};
  CHECK(golden("assoc_recall", kDefault, rec) == "<BOS> c 7 a 2 ? a <SEP> [2 <EOS>]");
  CHECK(golden("assoc_recall", kKazemnejad, rec) == "Recall: c 7 a 2 ? a <SEP> [2 <EOS>]");
  CHECK(golden("assoc_recall", kRuoss, rec) == "c 7 a 2 ? a <SEP> [2]");
  CHECK(golden("assoc_recall", kPromptUnscored, rec) == "<BOS> Recall: c 7 a 2 ? a <SEP> [2] <EOS>");
  CHECK(golden("assoc_recall", kBare, rec) == "c 7 a 2 ? a [2] <EOS>");
  CHECK(golden("assoc_recall", kBosNoSep, rec) == "<BOS> c 7 a 2 ? a [2]");
}

TEST_CASE("format: the default format keeps the vocabulary and the sampled batches of before", "[tasks][format]") {
  // Vocabulary sizes without a prompt are the tasks' own; the prompt adds exactly one id at the end.
  const std::vector<std::pair<std::string, std::size_t>> vocab = {
      {"copy", 14}, {"reverse", 14}, {"sort", 14}, {"addition", 15}, {"parity", 6}, {"assoc_recall", 31}};
  for (const auto& [name, v] : vocab) {
    INFO(name);
    CHECK(task(name, kDefault)->vocab_size() == v);
    CHECK(task(name, kKazemnejad)->vocab_size() == v + 1);
    CHECK(as_seq(*task(name, kKazemnejad)).prompt_id() == std::int32_t(v));
    // The same RNG stream gives the same examples in every format: only the framing changes.
    Rng r1(5), r2(5);
    const Batch a = task(name, kDefault)->sample(r1, 8, 1, 6), b = task(name, kBare)->sample(r2, 8, 1, 6);
    for (std::size_t r = 0; r < 8; ++r) {
      const seq::Example ea = seq::decode(a, r, kDefault), eb = seq::decode(b, r, kBare);
      CHECK(ea.x == eb.x);
      CHECK(ea.y == eb.y);
    }
  }
}

TEST_CASE("chance: every task and format matches counting over generated examples", "[tasks][chance]") {
  // Tiny alphabets so that a few thousand examples show every token each answer position can take.
  const std::vector<std::pair<std::string, Params_>> tasks = {
      {"copy", {{"symbols", Value(std::int64_t(3))}}},
      {"reverse", {{"symbols", Value(std::int64_t(3))}}},
      {"sort", {{"symbols", Value(std::int64_t(2))}}},
      {"addition", {}},
      {"addition", {{"reverse_digits", Value(true)}}},
      {"parity", {}},
      {"assoc_recall", {{"keys", Value(std::int64_t(4))}, {"values", Value(std::int64_t(3))},
                        {"queries", Value(std::int64_t(2))}}}};
  for (const auto& [name, p] : tasks)
    for (const SequenceFormat& f : all_formats())
      for (std::size_t n = 1; n <= 3; ++n) {
        INFO(name << " n=" << n << " " << describe(f));
        auto t = task(name, f, p, 4);
        const auto c = t->chance(n);
        REQUIRE(c.has_value());
        const Chance counted = counted_chance(*t, n, 2000);
        CHECK(c->token_acc == Approx(counted.token_acc).epsilon(1e-12));
        CHECK(c->exact_match == Approx(counted.exact_match).epsilon(1e-12));
      }
  // The closed form documented in task.hpp: copy with 10 symbols.
  for (std::size_t n : {1, 7, 40}) {
    const auto scored = task("copy", kDefault)->chance(n), absent = task("copy", kRuoss)->chance(n);
    CHECK(scored->token_acc == Approx((double(n) / 10 + 1) / double(n + 1)));
    CHECK(absent->token_acc == Approx(0.1));
    CHECK(scored->exact_match == Approx(std::pow(10.0, -double(n))));
    CHECK(absent->exact_match == scored->exact_match);
  }
  // Language models have none.
  CHECK_FALSE(task("char_lm", kDefault, {{"path", Value(std::string(PELAB_SOURCE_DIR) + "/README.md")}}, 8)
                  ->chance(8)
                  .has_value());
}

TEST_CASE("chance: a simulated uniform guesser scored by the metrics code lands on the chance level",
          "[tasks][chance]") {
  // The guesser picks each counted target uniformly among the tokens seen there; its argmax logits go
  // through token_stats, which applies the mask and the exact-match rule the evaluation uses.
  const std::vector<std::tuple<std::string, Params_, SequenceFormat, std::size_t>> cases = {
      {"copy", {{"symbols", Value(std::int64_t(3))}}, kDefault, 3},
      {"addition", {}, kRuoss, 2},
      {"parity", {}, kPromptUnscored, 5},
      {"assoc_recall", {{"keys", Value(std::int64_t(4))}, {"values", Value(std::int64_t(3))},
                        {"queries", Value(std::int64_t(2))}}, kBare, 3}};
  for (const auto& [name, p, f, n] : cases) {
    INFO(name << " " << describe(f));
    auto t = task(name, f, p, 4);
    const std::size_t V = t->vocab_size(), rows = 40000;
    // The tokens each answer offset can take, read off a first batch.
    const Batch probe = t->eval_batch(1, 2000, n);
    std::vector<std::set<std::int32_t>> support(probe.answer_end[0] - probe.answer_begin[0]);
    for (std::size_t r = 0; r < probe.batch(); ++r)
      for (std::size_t i = probe.answer_begin[r]; i < probe.answer_end[r]; ++i)
        support[i - probe.answer_begin[r]].insert(probe.targets(r, i));
    Rng guess(3);
    TokenStats stats;
    for (std::uint64_t s = 0; s * 1000 < rows; ++s) {
      const Batch b = t->eval_batch(100 + s, 1000, n);
      const std::size_t B = b.batch(), T = b.length();
      Array logits(Shape{B, T, V});
      std::fill(logits.begin(), logits.end(), real(0));
      for (std::size_t r = 0; r < B; ++r)
        for (std::size_t i = b.answer_begin[r]; i < b.answer_end[r]; ++i) {
          const auto& sup = support[i - b.answer_begin[r]];
          auto it = sup.begin();
          std::advance(it, long(guess.below(sup.size())));
          logits(r, i, std::size_t(*it)) = 1;
        }
      stats.add(token_stats(logits, b));
    }
    const Chance c = *t->chance(n);
    REQUIRE(stats.rows == rows);
    // Within 5 standard errors (binomial over rows for exact match; conservative over rows for tokens).
    const double se_exact = std::sqrt(c.exact_match * (1 - c.exact_match) / double(rows));
    const double se_token = std::sqrt(c.token_acc * (1 - c.token_acc) / double(rows));
    CHECK(std::abs(stats.exact_match() - c.exact_match) <= 5 * se_exact + 1e-12);
    CHECK(std::abs(stats.token_acc() - c.token_acc) <= 5 * se_token);
  }
}

TEST_CASE("format: [task] keys are read, validated with file:line, swept and refused for a language model",
          "[tasks][format][config]") {
  const LoadedConfig l = parse_config(
      "[task]\nname = \"copy\"\ntrain_len = 4\nbos = false\neos = \"absent\"\nprompt = true\n", "f.toml");
  const ExperimentConfig& cfg = l.config;
  CHECK(cfg.format == fmt(false, EosMode::absent, true, true));
  REQUIRE(l.runs.size() == 1);
  const Task& t = *l.runs[0].task;
  CHECK(t.vocab_size() == 15);
  CHECK(l.runs[0].model.train_seq_len == t.sequence_length(4));
  CHECK(t.sequence_length(4) == 1 + 4 + 1 + 4 - 1);  // Copy: x SEP y, minus the last token
  // Written out in full and read back the same.
  const std::string toml = to_toml(l.runs[0].config);
  CHECK_THAT(toml, Contains("bos = false\neos = \"absent\"\nsep = true\nprompt = true\n"));
  CHECK(to_toml(parse_config(toml, "again.toml").runs[0].config) == toml);
  // Defaults: pelab's format.
  CHECK(parse_config("", "empty.toml").config.format == SequenceFormat{});

  CHECK_THAT(error_of("[task]\nname = \"copy\"\n\neos = \"maybe\"\n"),
             StartsWith("f.toml:4: [task] key 'eos' has value \"maybe\"; expected one of: scored, unscored, absent"));
  CHECK_THAT(error_of("[task]\nbos = 1\n"), StartsWith("f.toml:2: [task] key 'bos' has value 1; expected a boolean"));
  // A language model has no format: a changed key is refused at its line, the defaults are accepted
  // (every resolved config.toml writes them).
  const std::string lm_sep = "[task]\nname = \"char_lm\"\ntrain_len = 8\n\nsep = false\n[task.char_lm]\npath = \"" + std::string(PELAB_SOURCE_DIR) +
                             "/README.md\"\n[eval]\nlengths = [8]\n";
  CHECK_THAT(error_of(lm_sep), StartsWith("f.toml:5: [task] key 'sep'") && Contains("language model"));
  const std::string lm_defaults = "[task]\nname = \"char_lm\"\ntrain_len = 8\nbos = true\neos = \"scored\"\n"
                                  "[task.char_lm]\npath = \"" + std::string(PELAB_SOURCE_DIR) + "/README.md\"\n[eval]\nlengths = [8]\n";
  CHECK(error_of(lm_defaults) == "(no error)");
  // make_task says which key, for callers outside the config loader.
  TaskCommon c;
  c.format.eos = EosMode::unscored;
  try {
    make_task("char_lm", c, {{"path", Value(std::string(PELAB_SOURCE_DIR) + "/README.md")}});
    FAIL("expected TaskFormatError");
  } catch (const TaskFormatError& e) {
    CHECK(e.key == "eos");
  }
  // A sweep over the format: one cell per value, each with its own sequence length.
  const LoadedConfig s = parse_config("[task]\nname = \"copy\"\ntrain_len = 4\n[sweep]\n\"task.eos\" = [\"scored\", \"absent\"]\n"
                                      "\"task.bos\" = [true, false]\n",
                                      "s.toml");
  REQUIRE(s.runs.size() == 4);
  CHECK(s.runs[0].model.train_seq_len == 10);  // <BOS> x <SEP> y <EOS> minus one
  CHECK(s.runs[1].model.train_seq_len == 9);   // no BOS
  CHECK(s.runs[3].model.train_seq_len == 8);   // no BOS, no EOS
  CHECK(s.runs[3].config.cell.label == "task.eos=absent,task.bos=false");
  CHECK_THAT(error_of("[task]\nname = \"char_lm\"\n[task.char_lm]\npath = \"" + std::string(PELAB_SOURCE_DIR) +
                      "/README.md\"\n[eval]\nlengths = [8]\n[sweep]\n\"task.prompt\" = [false, true]\n"),
             Contains("task.prompt=true") && Contains("[task] key 'prompt'") && Contains("language model"));
}

TEST_CASE("chance: evaluation stores the chance level per length in eval.json", "[tasks][chance][eval]") {
  LoadedConfig l = parse_config(
      "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n[encoding]\nname = \"learned\"\n"
      "[task]\nname = \"copy\"\ntrain_len = 4\neos = \"unscored\"\n[eval]\nlengths = [2, 8]\nsamples = 8\n",
      "e.toml");
  const RunSpec& spec = l.runs.at(0);
  Transformer model(spec.model);
  Rng rng(1);
  init_parameters(model, rng);
  const auto rs = evaluate_lengths(model, spec);
  REQUIRE(rs.size() == 2);
  CHECK(rs[0].ok);
  CHECK_FALSE(rs[1].ok);  // beyond the learned table: n/a, but the chance level is still known
  for (const auto& r : rs) {
    const Chance c = *spec.task->chance(r.length);
    REQUIRE(r.chance.size() == 2);
    CHECK(r.chance.at("token_acc") == c.token_acc);
    CHECK(r.chance.at("exact_match") == c.exact_match);
  }
  CHECK(rs[0].chance.at("token_acc") == Approx(0.1));  // EOS not scored: 1 / 10 per symbol
  EvalResult er;
  er.encoding = "learned", er.task = "copy", er.train_len = 4, er.status = "finished";
  er.results = rs;
  const nlohmann::ordered_json j = to_json(er);
  CHECK(j["results"][0]["chance"]["token_acc"].get<double>() == rs[0].chance.at("token_acc"));
  const EvalResult back = eval_result_from_json(nlohmann::ordered_json::parse(j.dump()), "eval.json");
  CHECK(back.results[0].chance == rs[0].chance);
  CHECK(back.results[1].chance == rs[1].chance);
  // Older files have no chance; a malformed one is an error naming the key.
  nlohmann::ordered_json old = j;
  old["results"][0].erase("chance");
  CHECK(eval_result_from_json(old, "old.json").results[0].chance.empty());
  nlohmann::ordered_json bad = j;
  bad["results"][0]["chance"]["token_acc"] = "x";
  CHECK_THROWS_WITH(eval_result_from_json(bad, "bad.json"), Contains("bad.json: results[0].chance.token_acc"));
  bad["results"][0]["chance"] = {{"tokn_acc", 0.5}};
  CHECK_THROWS_WITH(eval_result_from_json(bad, "bad.json"), Contains("results[0].chance") && Contains("tokn_acc"));
}

TEST_CASE("format: with causal attention an unscored EOS scores as an absent one", "[tasks][format]") {
  // The claim of format.hpp and docs/tasks.md: the unscored EOS is only a target, never read, so the counted
  // predictions see the same prefixes. Without the causal mask they do not.
  for (bool causal : {true, false}) {
    INFO("causal " << causal);
    auto unscored = task("copy", fmt(true, EosMode::unscored, true, false));
    auto absent = task("copy", fmt(true, EosMode::absent, true, false));
    ModelConfig c;
    c.vocab = unscored->vocab_size();
    c.d_model = 16, c.n_layers = 2, c.n_heads = 2, c.encoding = "rope", c.causal = causal;
    c.train_seq_len = unscored->sequence_length(6);
    Transformer m(c);
    Rng rng(4);
    init_parameters(m, rng, 0.3, 0.3);
    m.set_training(false);
    const Batch bu = unscored->eval_batch(9, 32, 6), ba = absent->eval_batch(9, 32, 6);
    REQUIRE(bu.length() == ba.length() + 1);
    const Array lu = m.forward(bu.tokens, default_positions(32, bu.length())).value();
    const Array la = m.forward(ba.tokens, default_positions(32, ba.length())).value();
    double max_diff = 0;  // over the counted targets, which sit at the same t in both
    for (std::size_t r = 0; r < 32; ++r) {
      REQUIRE(bu.answer_begin[r] == ba.answer_begin[r]);
      REQUIRE(bu.answer_end[r] == ba.answer_end[r]);
      for (std::size_t t = ba.answer_begin[r]; t < ba.answer_end[r]; ++t)
        for (std::size_t v = 0; v < c.vocab; ++v) max_diff = std::max(max_diff, double(std::abs(lu(r, t, v) - la(r, t, v))));
    }
    const TokenStats su = token_stats(lu, bu), sa = token_stats(la, ba);
    CHECK(su.counted == sa.counted);
    if (causal) {
      CHECK(max_diff < 1e-5);
      CHECK(su.correct == sa.correct);
      CHECK(su.rows_exact == sa.rows_exact);
    } else {
      CHECK(max_diff > 1e-3);
    }
  }
}
