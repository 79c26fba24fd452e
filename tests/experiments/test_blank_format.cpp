// The blank output format ([task] output = "blank"; experiments/tasks/format.hpp): x followed by one blank
// per answer place, y predicted at the blanks in one pass (Delétang et al. 2023; Ruoss et al. 2023).
// Golden batches, a round trip for every sequence task that has it, targets only at the blanks and no y
// token read, one length per batch (so a non-causal model never reads padding, checked on the model),
// the config keys and their errors, greedy prediction, and a short training run through the command line.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "config_error.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/predict.hpp"
#include "experiments/tasks/sequence.hpp"
#include "layers/module.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/transformer.hpp"
#include "task_helpers.hpp"
#include "test_paths.hpp"

using namespace pelab;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

SequenceFormat blank_fmt(bool bos, bool sep, bool prompt) {
  SequenceFormat f = test::fmt(bos, EosMode::absent, sep, prompt);
  f.output = OutputMode::blank;
  return f;
}
const SequenceFormat kDeepMind = blank_fmt(false, false, false);  // x then the blanks, nothing else

std::unique_ptr<Task> task(const std::string& name, const SequenceFormat& f, const test::TaskParams& p = {},
                           std::size_t train_len = 8) {
  return test::make_seq_task(name, p, 1, train_len, f);
}

std::vector<std::int32_t> row_of(const IndexArray& a) { return {a.begin(), a.end()}; }
std::vector<float> row_of(const Array& a) { return {a.begin(), a.end()}; }

std::string error_of(const std::string& text) { return test::config_error(text, "b.toml"); }

// Every sequence task, with the parameters its blank format needs (none so far).
const std::vector<std::string> kTasks = {
    "copy", "reverse", "sort", "parity", "assoc_recall", "addition", "even_pairs", "modular_arithmetic",
    "parity_check", "cycle_navigation", "stack_manipulation", "reverse_string", "modular_arithmetic_brackets",
    "solve_equation", "duplicate_string", "missing_duplicate_string", "odds_first", "binary_addition",
    "binary_multiplication", "compute_sqrt", "bucket_sort"};

// x of row b as typed text (token names separated by spaces), for parse_input.
std::string typed_x(const Task& t, const seq::Example& e) {
  std::string s;
  for (auto id : e.x) s += (s.empty() ? "" : " ") + t.token_text(id);
  return s;
}

// A small model over task t; causal or not.
std::unique_ptr<Transformer> model_for(const Task& t, bool causal, const std::string& encoding = "rope") {
  ModelConfig c;
  c.vocab = t.vocab_size();
  c.d_model = 16, c.n_layers = 2, c.n_heads = 2, c.encoding = encoding, c.causal = causal;
  c.train_seq_len = t.sequence_length(12);
  auto m = std::make_unique<Transformer>(c);
  Rng rng(4);
  init_parameters(*m, rng, 0.3, 0.3);
  m->set_training(false);
  return m;
}

Array logits_of(Transformer& m, const Batch& b) { return m.forward(b.tokens, b.positions).value(); }

}  // namespace

TEST_CASE("blank: reverse_string batches are exactly the documented rows", "[tasks][format][blank]") {
  // x = 0 1 1 (ids 4 5 5), y = 1 1 0; reverse_string has 2 symbols: prompt id 6, blank id 6 or 7.
  struct Case {
    SequenceFormat f;
    std::vector<std::int32_t> tokens, targets;
    std::vector<float> mask;
    std::size_t begin, end, vocab;
  };
  const std::vector<Case> cases = {
      {kDeepMind, {4, 5, 5, 6, 6, 6}, {-1, -1, -1, 5, 5, 4}, {0, 0, 0, 1, 1, 1}, 3, 6, 7},
      {blank_fmt(true, true, false), {1, 4, 5, 5, 2, 6, 6, 6}, {-1, -1, -1, -1, -1, 5, 5, 4}, {0, 0, 0, 0, 0, 1, 1, 1}, 5, 8, 7},
      {blank_fmt(false, true, true), {6, 4, 5, 5, 2, 7, 7, 7}, {-1, -1, -1, -1, -1, 5, 5, 4}, {0, 0, 0, 0, 0, 1, 1, 1}, 5, 8, 8},
  };
  for (const Case& c : cases) {
    INFO(describe(c.f));
    auto t = task("reverse_string", c.f);
    const auto& s = test::as_seq(*t);
    CHECK(t->vocab_size() == c.vocab);
    CHECK(s.blank_id() == std::int32_t(c.vocab - 1));  // the last id
    CHECK(t->sequence_length(3) == c.tokens.size());  // every token is fed: no shift
    const Batch b = seq::assemble({{{4, 5, 5}, {5, 5, 4}}}, c.f, s.prompt_id(), s.blank_id());
    CHECK(b.blank_answer);
    CHECK(row_of(b.tokens) == c.tokens);
    CHECK(row_of(b.targets) == c.targets);
    CHECK(row_of(b.mask) == c.mask);
    CHECK(b.answer_begin == std::vector<std::size_t>{c.begin});
    CHECK(b.answer_end == std::vector<std::size_t>{c.end});
    const seq::Example e = seq::decode(b, 0, c.f, s.blank_id());
    CHECK(e.x == std::vector<std::int32_t>{4, 5, 5});
    CHECK(e.y == std::vector<std::int32_t>{5, 5, 4});
  }
  auto t = task("reverse_string", kDeepMind);
  const auto& s = test::as_seq(*t);
  CHECK(t->render(seq::assemble({{{4, 5, 5}, {5, 5, 4}}}, kDeepMind, -1, s.blank_id()), 0) ==
        "0 1 1 <BLANK> <BLANK> <BLANK> -> [1 1 0]");
  // Decoding with the other output mode, or another blank id, is an error.
  const Batch b = seq::assemble({{{4, 5, 5}, {5, 5, 4}}}, kDeepMind, -1, s.blank_id());
  CHECK_THROWS_WITH(seq::decode(b, 0, test::fmt(false, EosMode::absent, false, false)), Contains("blank"));
  CHECK_THROWS_WITH(seq::decode(b, 0, kDeepMind, 5), Contains("malformed"));
  // What assemble refuses: no blank id, an EOS, fewer blanks than the answer, rows of two lengths.
  CHECK_THROWS_WITH(seq::assemble({{{4}, {4}}}, kDeepMind), Contains("blank token id"));
  SequenceFormat with_eos = kDeepMind;
  with_eos.eos = EosMode::scored;
  CHECK_THROWS_WITH(seq::assemble({{{4}, {4}}}, with_eos, -1, 6), Contains("no <EOS>"));
  CHECK_THROWS_WITH(seq::assemble({{{4, 5}, {4, 5}}}, kDeepMind, -1, 6, 1), Contains("only 1 blanks"));
  CHECK_THROWS_WITH(seq::assemble({{{4, 5, 5}, {5, 5, 4}}, {{4}, {4}}}, kDeepMind, -1, 6),
                    Contains("one length"));
}

TEST_CASE("blank: every sequence task round-trips, reads no y token, and counts only the blanks",
          "[tasks][format][blank]") {
  for (const std::string& name : kTasks) {
    for (const SequenceFormat& f : {kDeepMind, blank_fmt(true, true, true)}) {
      auto t = task(name, f, {}, 12);
      auto tf = task(name, test::fmt(false, EosMode::absent, true, false), {}, 12);  // the same task, teacher forced
      const auto& s = test::as_seq(*t);
      for (std::size_t n : {1, 2, 3, 6, 9, 12}) {
        INFO(name << " n=" << n << " " << describe(f));
        Batch b;
        try {
          b = t->eval_batch(n, 16, n);
        } catch (const Error& e) {  // sizes the task cannot make (modular_arithmetic_brackets, ...)
          CHECK_THROWS(tf->eval_batch(n, 16, n));
          continue;
        }
        const std::size_t T = b.length();
        CHECK(T == t->sequence_length(n));  // one length: no padding for attention to read
        CHECK(b.blank_answer);
        for (std::size_t r = 0; r < b.batch(); ++r) {
          const std::size_t a = b.answer_begin[r], e = b.answer_end[r];
          REQUIRE(a < e);
          REQUIRE(e <= T);
          for (std::size_t i = 0; i < T; ++i) {
            CHECK(b.tokens(r, i) != seq::kPad);
            // Blanks from the first counted target to the end of the row; before it, no blank.
            CHECK((b.tokens(r, i) == s.blank_id()) == (i >= a));
            CHECK(b.mask(r, i) == (i >= a && i < e ? 1.0f : 0.0f));
            if (i < a || i >= e) CHECK(b.targets(r, i) == -1);
          }
          // The targets are the task's answer to x: the teacher-forced task, given x typed, agrees.
          const seq::Example ex = seq::decode(b, r, f, s.blank_id());
          Batch typed;
          try {
            typed = tf->parse_input(typed_x(*t, ex));
          } catch (const Error&) {  // an x no one can type (solve_equation at n = 1 is a bare digit)
            CHECK_THROWS(t->parse_input(typed_x(*t, ex)));
            continue;
          }
          CHECK(seq::decode(typed, 0, test::as_seq(*tf).format()).y == ex.y);
          // And typed into the blank task, the same row comes back (blanks included).
          const Batch again = t->parse_input(typed_x(*t, ex));
          CHECK(row_of(again.tokens) == std::vector<std::int32_t>(b.tokens.data() + r * T, b.tokens.data() + (r + 1) * T));
        }
        // The chance level counts y alone: the teacher-forced one without EOS.
        CHECK(t->chance(n)->token_acc == tf->chance(n)->token_acc);
        CHECK(t->chance(n)->exact_match == tf->chance(n)->exact_match);
      }
    }
  }
}

TEST_CASE("blank: the authors' padded output lengths, padding unscored", "[tasks][format][blank][chomsky]") {
  // output_length(n) of google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4b: binary_addition n + 1,
  // binary_multiplication n, stack_manipulation n + 1, compute_sqrt ceil(n / 2), duplicate_string 2n.
  const std::vector<std::pair<std::string, std::size_t (*)(std::size_t)>> lengths = {
      {"binary_addition", [](std::size_t n) { return n + 1; }},
      {"binary_multiplication", [](std::size_t n) { return n; }},
      {"stack_manipulation", [](std::size_t n) { return n + 1; }},
      {"compute_sqrt", [](std::size_t n) { return (n + 1) / 2; }},
      {"duplicate_string", [](std::size_t n) { return 2 * n; }},
      {"parity_check", [](std::size_t) { return std::size_t(1); }},
  };
  for (const auto& [name, out_len] : lengths) {
    auto t = task(name, kDeepMind);
    for (std::size_t n : {5, 7, 10}) {  // at n = 3 binary addition and multiplication are always 1 op 1
      INFO(name << " n=" << n);
      CHECK(t->sequence_length(n) == n + out_len(n));
      const Batch b = t->eval_batch(1, 64, n);
      std::set<std::size_t> counted;
      for (std::size_t r = 0; r < b.batch(); ++r) counted.insert(b.answer_end[r] - b.answer_begin[r]);
      if (name == "binary_addition" || name == "stack_manipulation" || name == "binary_multiplication")
        CHECK(counted.size() > 1);  // answers of several lengths, the rest of the blanks unscored padding
    }
  }
  // 4 + 22 = 26 (the authors' docstring): 9 tokens in, 10 blanks out, 6 counted (0 1 0 1 1 |).
  auto t = task("binary_addition", kDeepMind);
  const Batch b = t->parse_input("0 0 1 + 0 1 1 0 1");
  CHECK(t->render(b, 0) == "0 0 1 + 0 1 1 0 1 <BLANK> <BLANK> <BLANK> <BLANK> <BLANK> <BLANK> <BLANK> <BLANK> "
                           "<BLANK> <BLANK> -> [0 1 0 1 1 |] - - - -");
}

TEST_CASE("blank: training draws one problem size per batch", "[tasks][format][blank]") {
  for (const char* name : {"reverse_string", "binary_addition", "modular_arithmetic"}) {
    INFO(name);
    auto t = task(name, kDeepMind, {}, 12);
    Rng rng(7);
    std::set<std::size_t> lengths;
    for (int i = 0; i < 40; ++i) {
      const Batch b = t->sample(rng, 16, 1, 12);
      for (std::size_t r = 0; r < b.batch(); ++r)
        for (std::size_t j = 0; j < b.length(); ++j) REQUIRE(b.tokens(r, j) != seq::kPad);
      lengths.insert(b.length());
    }
    CHECK(lengths.size() > 4);  // the size varies between batches, never within one
  }
}

TEST_CASE("blank: padding cannot change a result: a row alone gives the logits it gives in its batch",
          "[tasks][format][blank][model]") {
  // The blank format has no padding, so a non-causal model's logits of a row do not depend on the others.
  auto t = task("reverse_string", kDeepMind, {}, 12);
  auto m = model_for(*t, false);
  Rng rng(3);
  const Batch b = t->sample(rng, 8, 1, 12);
  const Array all = logits_of(*m, b);
  const std::size_t T = b.length(), V = t->vocab_size();
  double worst = 0;
  for (std::size_t r = 0; r < b.batch(); ++r) {
    const Array one = logits_of(*m, rows_of(b, r, r + 1));
    for (std::size_t i = 0; i < T; ++i)
      for (std::size_t v = 0; v < V; ++v) worst = std::max(worst, double(std::abs(one(0, i, v) - all(r, i, v))));
  }
  CHECK(worst < 1e-5);
  // The check has teeth: teacher forced, mixed sizes are right-padded, and a non-causal model reads the pads.
  auto tf = task("reverse_string", test::fmt(true, EosMode::scored, true, false), {}, 12);
  auto mt = model_for(*tf, false);
  Rng rng2(3);
  Batch mixed;
  do mixed = tf->sample(rng2, 8, 1, 12);
  while (mixed.answer_end[0] == mixed.length());  // until row 0 is shorter than the batch: it has padding
  const Array mall = logits_of(*mt, mixed);
  double diff = 0;
  // rows_of keeps the batch's length, so trim row 0 to its own length to see it without the pads.
  const std::size_t L = mixed.answer_end[0];
  Batch own;
  own.tokens = IndexArray(Shape{1, L});
  own.positions = default_positions(1, L);
  std::copy_n(mixed.tokens.data(), L, own.tokens.data());
  const Array alone = mt->forward(own.tokens, own.positions).value();
  for (std::size_t i = mixed.answer_begin[0]; i < L; ++i)
    for (std::size_t v = 0; v < tf->vocab_size(); ++v) diff = std::max(diff, double(std::abs(alone(0, i, v) - mall(0, i, v))));
  CHECK(diff > 1e-3);
}

TEST_CASE("blank: greedy prediction reads the row once and takes the argmax at each blank", "[tasks][format][blank]") {
  auto t = task("duplicate_string", kDeepMind, {}, 6);
  for (bool causal : {false, true}) {
    auto m = model_for(*t, causal);
    const Batch b = t->eval_batch(2, 4, 5);
    const Array l = logits_of(*m, b);
    const std::size_t V = t->vocab_size();
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const Prediction p = greedy_decode(*m, b, r);
      REQUIRE(p.output.size() == b.answer_end[r] - b.answer_begin[r]);
      CHECK(p.input.size() == b.length());
      for (std::size_t j = 0; j < p.output.size(); ++j) {
        const std::size_t i = b.answer_begin[r] + j;
        std::int32_t best = 0;
        for (std::size_t v = 1; v < V; ++v)
          if (l(r, i, v) > l(r, i, std::size_t(best))) best = std::int32_t(v);
        CHECK(p.output[j] == best);
        CHECK(p.correct[j] == (best == b.targets(r, i)));
      }
    }
  }
}

TEST_CASE("blank: [task] output is read, resolved, written back and refused where it makes no sense",
          "[tasks][format][blank][config]") {
  const LoadedConfig l = parse_config("[model]\ncausal = false\n[task]\nname = \"reverse_string\"\ntrain_len = 4\n"
                                      "bos = false\nsep = false\noutput = \"blank\"\n",
                                      "b.toml");
  const RunSpec& spec = l.runs.at(0);
  CHECK(spec.config.format == kDeepMind);  // eos resolved to "absent"
  CHECK(spec.model.train_seq_len == 8);    // 4 bits, 4 blanks
  CHECK(spec.task->vocab_size() == 7);
  const std::string toml = to_toml(spec.config);
  CHECK_THAT(toml, Contains("eos = \"absent\"") && Contains("output = \"blank\""));
  CHECK(to_toml(parse_config(toml, "again.toml").runs[0].config) == toml);
  // Causal attention is allowed: every blank still sees all of x (the authors' causal_masking option).
  CHECK(error_of("[task]\nname = \"reverse_string\"\noutput = \"blank\"\n") == "(no error)");
  // The default stays teacher forced.
  CHECK(parse_config("", "d.toml").config.format.output == OutputMode::teacher_forced);

  CHECK_THAT(error_of("[task]\nname = \"copy\"\noutput = \"encoder\"\n"),
             StartsWith("b.toml:3: [task] key 'output' has value \"encoder\"; expected one of: teacher_forced, blank"));
  CHECK_THAT(error_of("[task]\nname = \"copy\"\neos = \"scored\"\noutput = \"blank\"\n"),
             StartsWith("b.toml:3: [task] eos = \"scored\" with output = \"blank\"") && Contains("expected eos = \"absent\""));
  CHECK_THAT(error_of("[task]\nname = \"char_lm\"\ntrain_len = 8\noutput = \"blank\"\n[task.char_lm]\npath = \"" + std::string(PELAB_SOURCE_DIR) +
                      "/README.md\"\n[eval]\nlengths = [8]\n"),
             StartsWith("b.toml:4: [task] key 'output'") && Contains("language model"));
  CHECK_THAT(error_of("[task]\nname = \"addition\"\noutput = \"blank\"\n[task.addition]\noperand_lengths = \"independent\"\n"),
             StartsWith("b.toml:3: [task] output = \"blank\" is not possible for task 'addition'") &&
                 Contains("independent") && Contains("expected output = \"teacher_forced\""));
  // A sweep over the output mode: eos resolves per cell.
  const LoadedConfig s = parse_config("[task]\nname = \"copy\"\ntrain_len = 4\n[sweep]\n\"task.output\" = [\"teacher_forced\", \"blank\"]\n",
                                      "s.toml");
  REQUIRE(s.runs.size() == 2);
  CHECK(s.runs[0].config.format.eos == EosMode::scored);
  CHECK(s.runs[1].config.format.eos == EosMode::absent);
  CHECK(s.runs[0].model.train_seq_len == 10);  // <BOS> x <SEP> y <EOS> minus one
  CHECK(s.runs[1].model.train_seq_len == 10);  // <BOS> x <SEP> and 4 blanks
}

TEST_CASE("blank: a short training run, evaluation, predict and show-task through the command line",
          "[tasks][format][blank][cli]") {
  const std::string dir = test::fresh_temp_dir("blank"), cfg = dir + "/b.toml", run = dir + "/run";
  std::ofstream(cfg) << "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\ncausal = false\n"
                        "[task]\nname = \"reverse_string\"\ntrain_len = 6\nbos = false\nsep = false\noutput = \"blank\"\n"
                        "[train]\nsteps = 20\nbatch_size = 8\nlog_every = 10\npositions = \"randomized\"\nmax_position = 32\n"
                        "[eval]\nlength_range = [1, 10]\nsamples = 16\n";
  REQUIRE(test::run_cli("train " + cfg + " --out " + run, dir + "/log.txt") == 0);
  std::ifstream in(run + "/eval.json");
  REQUIRE(in.good());
  const nlohmann::json j = nlohmann::json::parse(in);
  REQUIRE(j["results"].size() == 10);
  for (const auto& r : j["results"]) {
    CHECK(r["token_acc"].is_number());
    CHECK(r["chance"]["token_acc"].get<double>() == Approx(0.5));  // one bit of two at every blank
  }
  CHECK(j.contains("ood"));
  REQUIRE(test::run_cli("predict " + run + " --len 8 -n 2", dir + "/p.txt") == 0);
  std::stringstream p;
  p << std::ifstream(dir + "/p.txt").rdbuf();
  CHECK_THAT(p.str(), Contains("<BLANK>") && Contains("token accuracy"));
  REQUIRE(test::run_cli("predict " + run + " --input \"0 1 1\"", dir + "/q.txt") == 0);
  REQUIRE(test::run_cli("show-task reverse_string --len 4 --set output=blank --set bos=false", dir + "/s.txt") == 0);
  std::stringstream s;
  s << std::ifstream(dir + "/s.txt").rdbuf();
  CHECK_THAT(s.str(), Contains("output = \"blank\"") && Contains("<BLANK> <BLANK> <BLANK> <BLANK> -> ["));
  CHECK(test::run_cli("show-task char_lm --set output=blank", dir + "/c.txt") == 2);
}
