// The 2024-2026 suites (MQAR, flip-flop, state tracking, passkey, Dyck; issue 42): every generated row is
// checked by an answer function of this file written from the papers' definitions (not the task's own),
// the stream layout (mask, answer span, <BOS>, padding) and determinism, the chance levels, and bad
// parameters refused at file:line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cli_helpers.hpp"
#include "config_error.hpp"
#include "experiments/eval/eval_named.hpp"
#include "experiments/eval/eval_result.hpp"
#include "experiments/tasks/stream.hpp"
#include "task_helpers.hpp"

using namespace pelab;
using Catch::Contains;

namespace {

std::unique_ptr<Task> task(const std::string& name, const test::TaskParams& p = {}, std::size_t min_len = 1,
                           std::size_t train_len = 16) {
  return test::make_seq_task(name, p, min_len, train_len, SequenceFormat{});
}

Value num(double v) { return Value(v); }
std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
Value integer(std::int64_t v) { return Value(v); }

// One row as its tokens' texts (without <BOS> and padding) and, per token, the scored target's text or "".
struct Row {
  std::vector<std::string> tok, target;
};
Row row(const Task& t, const Batch& b, std::size_t r) {
  Row out;
  REQUIRE(b.tokens(r, 0) == stream::kBos);
  CHECK(b.mask(r, 0) == 0);
  for (std::size_t i = 1; i < b.length() && b.tokens(r, i) != stream::kPad; ++i) {
    out.tok.push_back(t.token_text(b.tokens(r, i)));
    const bool scored = b.mask(r, i) > 0;
    CHECK(scored == (b.targets(r, i) >= 0));
    out.target.push_back(scored ? t.token_text(b.targets(r, i)) : "");
  }
  return out;
}

// The stream layout: <BOS> first, PAD after the row, nothing scored there, the answer span from the first
// to the last scored position, rows of the size's length, and the same batch from the same seed.
void check_stream_layout(const Task& t, std::size_t n) {
  Rng a(7), b(7);
  const Batch x = t.sample(a, 6, n, n), y = t.sample(b, 6, n, n);
  CHECK(x.tokens == y.tokens);
  CHECK(x.targets == y.targets);
  REQUIRE(x.length() == t.sequence_length(n));
  for (std::size_t r = 0; r < x.batch(); ++r) {
    std::size_t first = x.length(), last = 0;
    for (std::size_t i = 0; i < x.length(); ++i) {
      CHECK(x.positions(r, i) == std::int32_t(i));
      if (x.mask(r, i) > 0) first = std::min(first, i), last = i;
    }
    CHECK(x.answer_begin[r] == first);
    CHECK(x.answer_end[r] == last + 1);
  }
  Rng c(3);
  const Batch mixed = t.sample(c, 16, 2, n);  // mixed sizes: padded, the padding unscored
  for (std::size_t r = 0; r < mixed.batch(); ++r)
    for (std::size_t i = 0; i < mixed.length(); ++i)
      if (mixed.tokens(r, i) == stream::kPad) CHECK(mixed.mask(r, i) == 0);
}

// Permutation in one-line notation "10234" -> images.
std::vector<int> perm(const std::string& s) {
  std::vector<int> p;
  for (char ch : s) p.push_back(ch - '0');
  return p;
}

}  // namespace

TEST_CASE("the five suites are registered with examples, and their eval-time parameters exist", "[tasks][suites]") {
  for (const char* name : {"mqar", "flip_flop", "state_tracking", "passkey", "dyck"}) {
    INFO(name);
    const TaskSpec& s = TaskRegistry::instance().get(name);
    CHECK(s.format.find("example") != std::string::npos);
    for (const auto& p : s.eval_params)
      CHECK(std::any_of(s.params.begin(), s.params.end(), [&](const ParamSpec& q) { return q.key == p; }));
  }
  CHECK(TaskRegistry::instance().get("flip_flop").eval_params == std::vector<std::string>{"p_ignore"});
  CHECK(TaskRegistry::instance().get("passkey").eval_params == std::vector<std::string>{"depth"});
  CHECK(TaskRegistry::instance().get("copy").eval_params.empty());
}

TEST_CASE("stream tasks lay out rows with <BOS>, scored positions and answer spans, deterministically",
          "[tasks][suites]") {
  check_stream_layout(*task("mqar"), 8);
  check_stream_layout(*task("flip_flop", {}, 2), 20);
  for (const char* g : {"s5", "a5", "a4", "parity", "mod_count"})
    check_stream_layout(*task("state_tracking", {{"group", Value(std::string(g))}}), 12);
}

TEST_CASE("mqar: distinct pairs, every key queried once at an even offset, scored with its value", "[tasks][suites]") {
  const auto t = task("mqar", {{"keys", integer(20)}, {"values", integer(20)}});
  CHECK(t->vocab_size() == 2 + 40);
  CHECK(t->sequence_length(4) == 1 + 64);  // Zoology's (64, 4)
  Rng rng(1);
  std::size_t first_slot = 0, queries = 0;
  for (std::size_t n : {1, 4, 8, 16}) {
    const Batch b = t->sample(rng, 32, n, n);
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const Row w = row(*t, b, r);
      REQUIRE(w.tok.size() == 16 * n);
      std::map<std::string, std::string> stored;
      std::set<std::string> values;
      for (std::size_t i = 0; i < 2 * n; i += 2) {
        CHECK(w.tok[i][0] == 'k');
        CHECK(w.tok[i + 1][0] == 'v');
        CHECK(stored.emplace(w.tok[i], w.tok[i + 1]).second);  // distinct keys
        CHECK(values.insert(w.tok[i + 1]).second);               // distinct values
        CHECK(w.target[i].empty());
        CHECK(w.target[i + 1].empty());
      }
      std::set<std::string> asked;
      for (std::size_t i = 2 * n; i < w.tok.size(); ++i) {
        if (w.target[i].empty()) continue;
        CHECK((i - 2 * n) % 2 == 0);
        CHECK(w.target[i] == stored.at(w.tok[i]));
        CHECK(asked.insert(w.tok[i]).second);
        first_slot += i == 2 * n;
        ++queries;
      }
      CHECK(asked.size() == n);
    }
  }
  CHECK(queries == 32 * (1 + 4 + 8 + 16));
  CHECK(first_slot > 0);
  // One pair: one gap g in [0, 7), with Zoology's weight a (g+1)^(a-1), normalized (a = 0.01, and 1: uniform).
  for (double a : {0.01, 1.0}) {
    const auto one = task("mqar", {{"power_a", num(a)}});
    Rng r(8);
    const std::size_t rows = 20000;
    const Batch b = one->sample(r, rows, 1, 1);
    std::vector<double> hist(7, 0), want(7);
    double total = 0;
    for (std::size_t g = 0; g < 7; ++g) total += want[g] = a * std::pow(double(g + 1), a - 1);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t g = 0; g < 7; ++g) hist[g] += b.mask(i, 1 + 2 + 2 * g) / double(rows);
    for (std::size_t g = 0; g < 7; ++g) CHECK(hist[g] == Approx(want[g] / total).margin(0.012));
  }
  CHECK(t->chance(8)->token_acc == Approx(1.0 / 20));
  CHECK(t->chance(2)->exact_match == Approx(1.0 / 400));
}

TEST_CASE("flip_flop: reads are scored with the last written bit, instruction frequencies follow p_ignore",
          "[tasks][suites]") {
  for (double p : {0.8, 0.98, 0.1}) {
    INFO(p);
    const auto t = task("flip_flop", {{"p_ignore", num(p)}}, 2);
    Rng rng(5);
    const std::size_t n = 64;
    const Batch b = t->sample(rng, 64, n, n);
    std::size_t ignores = 0, middle = 0;
    double mean_chance = 0;
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const Row w = row(*t, b, r);
      REQUIRE(w.tok.size() == 2 * n);
      CHECK(w.tok.front() == "w");
      CHECK(w.tok[2 * n - 2] == "r");
      std::string last;
      std::size_t reads = 0;
      for (std::size_t i = 0; i < w.tok.size(); i += 2) {
        const std::string& op = w.tok[i];
        const std::string& bit = w.tok[i + 1];
        CHECK((bit == "0" || bit == "1"));
        CHECK(w.target[i + 1].empty());
        if (op == "w") last = bit;
        if (op == "r") {
          CHECK(w.target[i] == last);
          CHECK(bit == last);
          ++reads;
        } else {
          CHECK(w.target[i].empty());
        }
        if (i > 0 && i + 2 < w.tok.size()) ++middle, ignores += op == "i";
      }
      mean_chance += std::pow(0.5, double(reads)) / double(b.batch());
    }
    CHECK(double(ignores) / double(middle) == Approx(p).margin(0.03));
    CHECK(t->chance(n)->token_acc == 0.5);
    CHECK(t->chance(n)->exact_match == Approx(0.5 * std::pow(1 - (1 - p) / 4, double(n - 2))));
    if (p > 0.5) CHECK(mean_chance == Approx(t->chance(n)->exact_match).epsilon(0.5));
  }
}

TEST_CASE("state_tracking: running products by composing the permutations' one-line notation", "[tasks][suites]") {
  const std::map<std::string, std::size_t> order = {{"s5", 120}, {"a5", 60}, {"a4", 12}};
  for (const auto& [g, size] : order) {
    INFO(g);
    const auto t = task("state_tracking", {{"group", Value(g)}});
    CHECK(t->vocab_size() == 2 + size);
    CHECK(t->token_text(2) == (g == "a4" ? "0123" : "01234"));  // the identity first
    Rng rng(11);
    const Batch b = t->sample(rng, 64, 24, 24);
    std::set<std::string> seen;
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const Row w = row(*t, b, r);
      std::vector<int> state(g == "a4" ? 4 : 5);
      for (std::size_t i = 0; i < state.size(); ++i) state[i] = int(i);
      for (std::size_t i = 0; i < w.tok.size(); ++i) {
        const std::vector<int> x = perm(w.tok[i]);
        int inversions = 0;
        for (std::size_t a = 0; a < x.size(); ++a)
          for (std::size_t c = a + 1; c < x.size(); ++c) inversions += x[a] > x[c];
        if (g != "s5") CHECK(inversions % 2 == 0);
        std::vector<int> next(state.size());
        for (std::size_t k = 0; k < state.size(); ++k) next[k] = x[std::size_t(state[k])];  // state first, then x
        state = next;
        std::string want;
        for (int v : state) want += char('0' + v);
        CHECK(w.target[i] == want);
        seen.insert(w.tok[i]);
      }
    }
    CHECK(seen.size() == size);  // 1536 uniform draws reach every element
    CHECK(t->chance(10)->token_acc == Approx(1.0 / double(size)));
  }
  for (std::int64_t m : {2, 3, 7}) {
    const auto t = task("state_tracking", {{"group", Value(std::string(m == 2 ? "parity" : "mod_count"))},
                                           {"modulus", integer(m)}});
    Rng rng(2);
    const Batch b = t->sample(rng, 16, 30, 30);
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const Row w = row(*t, b, r);
      int ones = 0;
      for (std::size_t i = 0; i < w.tok.size(); ++i) {
        CHECK((w.tok[i] == "0" || w.tok[i] == "1"));
        ones += w.tok[i] == "1";
        CHECK(w.target[i] == std::to_string(ones % m));
      }
    }
  }
  // Counting mod 3 over 3 bits: 1 value is possible after... 2, 3, 3 values at positions 1, 2, 3.
  const auto mod3 = task("state_tracking", {{"group", Value(std::string("mod_count"))}});
  CHECK(mod3->chance(3)->token_acc == Approx((1.0 / 2 + 1.0 / 3 + 1.0 / 3) / 3));
  CHECK(mod3->chance(3)->exact_match == Approx(1.0 / 18));
}

TEST_CASE("passkey: the answer is the key after K, placed at the asked depth", "[tasks][suites]") {
  for (double depth : {0.0, 0.25, 0.5, 1.0, -1.0}) {
    INFO(depth);
    const auto t = task("passkey", {{"depth", num(depth)}, {"key_len", integer(4)}});
    Rng rng(9);
    const std::size_t n = 20;
    const Batch b = t->sample(rng, 64, n, n);
    std::set<std::size_t> places;
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const seq::Example e = seq::decode(b, r);
      REQUIRE(e.x.size() == n + 5);
      std::size_t k = 0, marks = 0;
      for (std::size_t i = 0; i < e.x.size(); ++i)
        if (t->token_text(e.x[i]) == "K") k = i, ++marks;
      CHECK(marks == 1);
      REQUIRE(e.y.size() == 4);
      for (std::size_t d = 0; d < 4; ++d) {
        CHECK(e.y[d] == e.x[k + 1 + d]);
        CHECK(std::isdigit(static_cast<unsigned char>(t->token_text(e.y[d])[0])));
      }
      places.insert(k);
      if (depth >= 0) CHECK(k == std::size_t(std::lround(depth * double(n))));
    }
    if (depth < 0) CHECK(places.size() > 15);  // uniform over the 21 places
  }
  const auto t = task("passkey");
  CHECK(t->chance(8)->token_acc == Approx((3 * 0.1 + 1) / 4));  // three digits and the scored <EOS>
  CHECK(test::as_seq(*t).format().eos == EosMode::scored);
}

TEST_CASE("dyck: exhaustive at n = 4, k = 2: exactly the prefixes with a bracket open, completed minimally",
          "[tasks][suites]") {
  const std::size_t n = 4, depth = 3;
  const auto t = task("dyck", {{"max_depth", integer(std::int64_t(depth))}});
  // Every string over ( [ ) ] of length n: the valid ones are the prefixes of depth <= 3 with one open.
  const std::string alphabet = "([)]";
  std::map<std::string, std::string> valid;  // x -> completion
  for (std::size_t code = 0; code < 256; ++code) {
    std::string x, stack;
    bool ok = true;
    for (std::size_t i = 0, c = code; i < n; ++i, c /= 4) {
      const char ch = alphabet[c % 4];
      x += ch;
      if (ch == '(' || ch == '[') stack += ch;
      else if (!stack.empty() && stack.back() == (ch == ')' ? '(' : '[')) stack.pop_back();
      else ok = false;
      ok = ok && stack.size() <= depth;
    }
    if (!ok || stack.empty()) continue;
    std::string y;
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) y += *it == '(' ? ')' : ']';
    valid[x] = y;
  }
  Rng rng(4);
  const Batch b = t->sample(rng, 4000, n, n);
  std::set<std::string> seen;
  for (std::size_t r = 0; r < b.batch(); ++r) {
    const seq::Example e = seq::decode(b, r);
    std::string x, y;
    for (auto v : e.x) x += t->token_text(v);
    for (auto v : e.y) y += t->token_text(v);
    INFO(x);
    REQUIRE(valid.count(x));
    CHECK(valid.at(x) == y);
    seen.insert(x);
  }
  CHECK(seen.size() == valid.size());
  CHECK_THROWS_WITH(t->parse_input("( ] "), Contains("closes '('"));
  CHECK_THROWS_WITH(t->parse_input("( )"), Contains("balanced"));
  CHECK(seq::decode(t->parse_input("( [ ] ( ["), 0).y.size() == 3);
}

TEST_CASE("bad suite parameters are refused at file:line", "[tasks][suites]") {
  const std::string head = "[task]\nname = \"";
  CHECK_THAT(test::config_error(head + "flip_flop\"\nmin_len = 1\ntrain_len = 8\n", "ff.toml"),
             Contains("ff.toml:3") && Contains("min_len >= 2"));
  CHECK_THAT(test::config_error(head + "passkey\"\n[task.passkey]\ndepth = -0.5\n", "pk.toml"),
             Contains("pk.toml:4") && Contains("depth = -0.5"));
  CHECK_THAT(test::config_error(head + "mqar\"\ntrain_len = 80\n", "mq.toml"),
             Contains("mq.toml:") && Contains("distinct keys"));
  CHECK_THAT(test::config_error(head + "state_tracking\"\neos = \"absent\"\n", "st.toml"),
             Contains("st.toml:3") && Contains("scores positions of one stream"));
  CHECK_THAT(test::config_error(head + "flip_flop\"\nmin_len = 2\n[task.flip_flop]\np_ignore = 1.0\n", "ff.toml"),
             Contains("ff.toml:5") && Contains("p_ignore"));
  CHECK_THAT(test::config_error(head + "dyck\"\n[task.dyck]\nmax_depth = 1\n", "d.toml"), Contains("d.toml:4"));
}

TEST_CASE("pelab eval may change a task's eval-time parameters and nothing else of it", "[tasks][suites]") {
  const RunSpec ff = parse_config(
      "[task]\nname = \"flip_flop\"\nmin_len = 2\ntrain_len = 8\n", "ff.toml").runs.at(0);
  CHECK_NOTHROW(check_eval_settings({"task.flip_flop.p_ignore=0.98"}, ff.config));
  CHECK_THROWS_WITH(check_eval_settings({"task.flip_flop.nonsense=1"}, ff.config),
                    Contains("task.flip_flop.p_ignore") && Contains("not an evaluation setting"));
  CHECK_THROWS_WITH(check_eval_settings({"task.train_len=9"}, ff.config), Contains("not an evaluation setting"));
  const RunSpec copy = parse_config("[task]\nname = \"copy\"\n", "c.toml").runs.at(0);
  CHECK_THROWS_WITH(check_eval_settings({"task.copy.symbols=5"}, copy.config), Contains("not an evaluation setting"));
}

TEST_CASE("pelab eval at another p_ignore writes a named evaluation with that setting's chance, and predict refuses",
          "[tasks][suites][cli]") {
  const std::string dir = test::fresh_temp_dir("suites_cli");
  const std::string cfg = dir + "/ff.toml", run = dir + "/run", log = dir + "/log.txt";
  {
    std::ofstream f(cfg);
    f << "[model]\nd_model = 16\nn_layers = 1\nn_heads = 2\n[task]\nname = \"flip_flop\"\nmin_len = 2\ntrain_len = 6\n"
         "[train]\nsteps = 4\nbatch_size = 4\nlog_every = 2\n[eval]\nlengths = [6]\nsamples = 8\n";
  }
  REQUIRE(test::run_cli("train " + cfg + " --out " + run, log, 120) == 0);
  REQUIRE(test::run_cli("eval " + run + " --set task.flip_flop.p_ignore=0.1 --name dense", log, 120) == 0);
  const EvalResult dense = read_eval_result(run + "/eval-dense.json");
  REQUIRE(dense.results.size() == 1);
  CHECK(dense.eval_settings == std::vector<std::string>{"task.flip_flop.p_ignore=0.1"});
  // E[2^-reads] at p = 0.1 over 6 instructions: 1/2 (1 - 0.45/2)^4, not p = 0.8's 1/2 (1 - 0.1/2)^4.
  CHECK(dense.results[0].chance.at("exact_match") == Approx(0.5 * std::pow(1 - 0.45 / 2, 4)));
  CHECK(test::run_cli("eval " + run + " --set task.flip_flop.min_len=3 --name x", log, 120) == 2);
  CHECK(test::has(slurp(log), "not an evaluation setting"));
  CHECK_FALSE(std::filesystem::exists(run + "/eval-x.json"));
  REQUIRE(test::run_cli("show-task flip_flop --len 4", log, 60) == 0);
  CHECK(test::has(slurp(log), "format: <BOS> then the task's tokens (a stream task: no format keys)"));
  CHECK(test::has(slurp(log), "<BOS> w "));
  CHECK(test::run_cli("predict " + run, log, 120) != 0);
  CHECK(test::has(slurp(log), "scores chosen positions of one sequence"));
  std::filesystem::remove_all(dir);
}
