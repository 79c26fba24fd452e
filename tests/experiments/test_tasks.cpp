// The task generators: batch layout in every format ([BOS] [P] x [SEP] y [EOS], mask on y and a scored
// EOS only), golden renderings, chance levels against counting, correct answers decoded from the
// batches, determinism under a seed, lengths, and clear errors for bad settings and files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

#include "experiments/tasks/sequence.hpp"
#include "task_helpers.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using Params_ = test::TaskParams;
using test::all_formats;
using test::as_seq;
using test::fmt;

std::unique_ptr<Task> task(const std::string& name, const Params_& p = {}, std::size_t min_len = 1,
                           std::size_t train_len = 8, const SequenceFormat& f = {}) {
  return test::make_seq_task(name, p, min_len, train_len, f);
}

bool same(const Batch& a, const Batch& b) {
  return a.tokens.shape() == b.tokens.shape() && a.tokens == b.tokens && a.targets == b.targets &&
         a.mask == b.mask && a.answer_begin == b.answer_begin && a.answer_end == b.answer_end;
}

// Layout invariants of a sequence-task batch in format f; returns the row lengths (tokens fed, before padding).
std::vector<std::size_t> check_layout(const Task& t, const Batch& batch, std::size_t B, const SequenceFormat& f) {
  REQUIRE(batch.batch() == B);
  const std::size_t T = batch.length();
  REQUIRE(batch.targets.shape() == Shape{B, T});
  REQUIRE(batch.mask.shape() == Shape{B, T});
  REQUIRE(batch.positions.shape() == Shape{B, T});  // 0..T-1, padding included (modes are the trainer's)
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < T; ++i) REQUIRE(batch.positions(b, i) == static_cast<std::int32_t>(i));
  REQUIRE(batch.answer_begin.size() == B);
  REQUIRE(batch.answer_end.size() == B);
  const std::int32_t prompt = as_seq(t).prompt_id();
  const std::size_t x0 = std::size_t(f.bos) + std::size_t(f.prompt);  // where x starts
  std::vector<std::size_t> lengths;
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t a = batch.answer_begin[b], e = batch.answer_end[b];
    // The row length: the EOS target (when present) ends it, else y's last target.
    const std::size_t L = e + (f.eos == EosMode::unscored ? 1 : 0);
    REQUIRE(L <= T);
    REQUIRE(a + 1 + (f.eos == EosMode::scored ? 1 : 0) <= e);  // y has at least one token
    REQUIRE(a + (f.sep ? 0 : 1) > x0);                          // x has at least one token
    lengths.push_back(L);
    if (f.bos) CHECK(batch.tokens(b, 0) == seq::kBos);
    if (f.prompt) CHECK(batch.tokens(b, f.bos ? 1 : 0) == prompt);
    if (f.sep) CHECK(batch.tokens(b, a) == seq::kSep);  // the SEP is read right before the first y prediction
    if (f.eos != EosMode::absent) CHECK(batch.targets(b, L - 1) == seq::kEos);
    for (std::size_t i = 0; i < T; ++i) {
      if (i < L) {
        CHECK(batch.tokens(b, i) >= 0);
        CHECK(std::size_t(batch.tokens(b, i)) < t.vocab_size());
        CHECK(batch.targets(b, i) >= 0);
        CHECK(std::size_t(batch.targets(b, i)) < t.vocab_size());
        if (i + 1 < L) CHECK(batch.targets(b, i) == batch.tokens(b, i + 1));  // targets = tokens shifted
        const std::size_t x_end = f.sep ? a : a + 1;
        if (i >= x0 && i < x_end) {  // x holds task symbols only
          CHECK(batch.tokens(b, i) >= seq::kFirstSymbol);
          CHECK(batch.tokens(b, i) != prompt);
        }
        if (i >= a && i < e) CHECK(batch.targets(b, i) != prompt);
        CHECK(batch.mask(b, i) == (i >= a && i < e ? 1.0f : 0.0f));
      } else {
        CHECK(batch.tokens(b, i) == seq::kPad);
        CHECK(batch.targets(b, i) == -1);
        CHECK(batch.mask(b, i) == 0.0f);
      }
    }
  }
  CHECK(*std::max_element(lengths.begin(), lengths.end()) == T);  // padded to the longest row only
  return lengths;
}

// Problem size n of a row length L, checked against sequence_length.
std::size_t size_of(const Task& t, std::size_t L, std::size_t max_n) {
  for (std::size_t n = 1; n <= max_n; ++n)
    if (t.sequence_length(n) == L) return n;
  FAIL("row length " << L << " matches no problem size up to " << max_n);
  return 0;
}

std::vector<int> symbols(const std::vector<std::int32_t>& ids, std::int32_t first = seq::kFirstSymbol) {
  std::vector<int> s;
  for (auto id : ids) s.push_back(int(id - first));
  return s;
}

// Generic properties every sequence task must have, for one configuration and format. `exact`: every
// example of size n has sequence_length(n) tokens (false: at most, as when answers vary in length).
void check_sequence_task(const std::string& name, const Params_& p, const SequenceFormat& f = {}, bool exact = true) {
  INFO("task " << name << ", format " << describe(f));
  const std::size_t B = 64, lo = 2, hi = 7;
  auto t = task(name, p, lo, hi, f);
  REQUIRE(!t->is_language_model());
  Rng r1(7), r2(7), r3(8);
  const Batch a = t->sample(r1, B, lo, hi), a2 = t->sample(r2, B, lo, hi), c = t->sample(r3, B, lo, hi);
  CHECK(same(a, a2));
  CHECK(!same(a, c));
  const auto lengths = check_layout(*t, a, B, f);
  std::set<std::size_t> sizes;
  for (auto L : lengths) {
    if (!exact) {
      CHECK(L <= t->sequence_length(hi));
      continue;
    }
    const std::size_t n = size_of(*t, L, hi + 5);
    CHECK(n >= lo);
    CHECK(n <= hi);
    sizes.insert(n);
  }
  CHECK((!exact || sizes.size() >= 3));  // sizes really vary across rows
  CHECK((!exact || sizes.count(lo) + sizes.count(hi) >= 1));
  // Eval: fixed by the seed, every row exactly size n (beyond the training range too).
  const std::size_t n = 3 * hi;
  const Batch e1 = t->eval_batch(99, 16, n), e2 = t->eval_batch(99, 16, n), e3 = t->eval_batch(100, 16, n);
  CHECK(same(e1, e2));
  CHECK(!same(e1, e3));
  for (auto L : check_layout(*t, e1, 16, f)) CHECK((exact ? L == t->sequence_length(n) : L <= t->sequence_length(n)));
  CHECK((exact ? e1.length() == t->sequence_length(n) : e1.length() <= t->sequence_length(n)));
  // Decoding recovers x and y of the sizes the task promises; rendering shows the answer in brackets.
  for (std::size_t r = 0; r < 16; ++r) {
    const seq::Example ex = seq::decode(e1, r, f);
    const std::size_t fed = seq::fed_length(ex.x.size(), ex.y.size(), f);
    CHECK((exact ? fed == t->sequence_length(n) : fed <= t->sequence_length(n)));
    CHECK(std::count(ex.x.begin(), ex.x.end(), seq::kSep) == 0);
  }
  const std::string s = t->render(a, 0);
  CHECK(std::count(s.begin(), s.end(), '[') == 1);
  CHECK(s.back() == (f.eos == EosMode::unscored ? '>' : ']'));
  CHECK((s.rfind("<BOS>", 0) == 0) == f.bos);
  CHECK((s.find("<EOS>") != std::string::npos) == (f.eos != EosMode::absent));
  CHECK_THROWS_AS(t->render(a, B), Error);
  // Bad sampling arguments are errors, not crashes.
  Rng r(1);
  CHECK_THROWS_AS(t->sample(r, 4, 5, 3), Error);
  CHECK_THROWS_AS(t->sample(r, 0, 1, 3), Error);
  CHECK_THROWS_AS(t->sample(r, 4, 0, 3), Error);
}

struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& text, const std::string& tag = "") {
    path = fs::temp_directory_path() / ("pelab_test_tasks_" + std::to_string(::getpid()) + tag + ".txt");
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::error_code ec; fs::remove(path, ec); }
};

std::string window_text(const Batch& b, std::size_t row, const std::vector<unsigned char>& bytes) {
  std::string s;
  for (std::size_t t = 0; t < b.length(); ++t) s += char(bytes.at(std::size_t(b.tokens(row, t))));
  s += char(bytes.at(std::size_t(b.targets(row, b.length() - 1))));
  return s;
}

}  // namespace

TEST_CASE("the task registry lists the tasks and explains unknown names", "[tasks]") {
  const auto names = TaskRegistry::instance().names();
  for (const char* n : {"copy", "reverse", "sort", "addition", "parity", "assoc_recall", "char_lm"}) {
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
    const TaskSpec& s = TaskRegistry::instance().get(n);
    CHECK(!s.summary.empty());
    CHECK(s.format.find("example") != std::string::npos);
  }
  CHECK_THROWS_WITH(TaskRegistry::instance().get("revrse"),
                    Catch::Contains("unknown task 'revrse'") && Catch::Contains("did you mean 'reverse'") &&
                        Catch::Contains("known tasks: addition"));
  CHECK_THROWS_WITH(task("nonsense_task"), Catch::Contains("known tasks"));
}

TEST_CASE("bad task parameters and common settings are errors naming the key", "[tasks]") {
  CHECK_THROWS_WITH(task("copy", {{"symbols", Value(std::int64_t(1))}}),
                    Catch::Contains("task 'copy'") && Catch::Contains("symbols"));
  CHECK_THROWS_WITH(task("copy", {{"symbls", Value(std::int64_t(5))}}), Catch::Contains("symbols"));
  CHECK_THROWS_WITH(task("addition", {{"reverse_digits", Value(std::int64_t(1))}}),
                    Catch::Contains("reverse_digits"));
  CHECK_THROWS_WITH(task("assoc_recall", {{"keys", Value(std::int64_t(6))}}, 1, 8),
                    Catch::Contains("keys") && Catch::Contains("train_len = 8"));
  CHECK_THROWS_WITH(task("copy", {}, 9, 8), Catch::Contains("min_len"));
  CHECK_THROWS_WITH(task("copy", {}, 0, 8), Catch::Contains("min_len"));
  CHECK_NOTHROW(task("copy", {{"symbols", Value(std::int64_t(2))}}));
}

TEST_CASE("every sequence task lays out batches correctly in every format and is deterministic", "[tasks]") {
  for (const SequenceFormat& f : all_formats()) {
    check_sequence_task("copy", {}, f);
    check_sequence_task("copy", {{"symbols", Value(std::int64_t(40))}}, f);
    check_sequence_task("reverse", {}, f);
    check_sequence_task("sort", {}, f);
    check_sequence_task("addition", {}, f);
    check_sequence_task("addition", {{"reverse_digits", Value(true)}}, f);
    check_sequence_task("parity", {}, f);
    check_sequence_task("assoc_recall", {{"keys", Value(std::int64_t(30))}}, f);
    check_sequence_task("assoc_recall", {{"keys", Value(std::int64_t(30))}, {"queries", Value(std::int64_t(3))}}, f);
    // The Chomsky suite (experiments/tasks/chomsky/): answers of varying length, or x of n - 1 tokens
    // for an even n (modular_arithmetic), so sizes are not read back from row lengths there.
    for (const char* name : {"even_pairs", "cycle_navigation", "modular_arithmetic_brackets", "solve_equation",
                             "duplicate_string", "missing_duplicate_string", "odds_first", "compute_sqrt",
                             "parity_check", "reverse_string", "bucket_sort"})
      check_sequence_task(name, {}, f);
    for (const char* name : {"modular_arithmetic", "stack_manipulation", "binary_addition", "binary_multiplication"})
      check_sequence_task(name, {}, f, false);
  }
}

TEST_CASE("copy reverse and sort answers are correct", "[tasks]") {
  for (const char* name : {"copy", "reverse", "sort"}) {
    INFO(name);
    const std::size_t S = 12;
    auto t = task(name, {{"symbols", Value(std::int64_t(S))}});
    CHECK(t->vocab_size() == 4 + S);
    CHECK(t->sequence_length(5) == 12);  // 2n + 2 tokens fed
    Rng rng(3);
    const Batch b = t->sample(rng, 32, 1, 10);
    REQUIRE(b.batch() == 32);
    std::set<int> seen;
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const auto e = seq::decode(b, r);
      auto x = symbols(e.x), y = symbols(e.y);
      for (int v : x) {
        CHECK(v >= 0);
        CHECK(v < int(S));
        seen.insert(v);
      }
      if (std::string(name) == "reverse") std::reverse(x.begin(), x.end());
      if (std::string(name) == "sort") std::sort(x.begin(), x.end());
      CHECK(y == x);
    }
    CHECK(seen.size() == S);  // the whole alphabet is used
  }
}

TEST_CASE("addition sums are correct in both digit orders", "[tasks]") {
  for (bool lsb : {false, true}) {
    INFO("reverse_digits " << lsb);
    auto t = task("addition", {{"reverse_digits", Value(lsb)}});
    CHECK(t->vocab_size() == 15);
    CHECK(t->sequence_length(3) == 13);  // a(3) + b(3) + sum(4) + BOS SEP
    Rng rng(11);
    const Batch b = t->sample(rng, 64, 1, 9);
    std::size_t carries_out = 0;
    for (std::size_t r = 0; r < b.batch(); ++r) {
      const auto e = seq::decode(b, r);
      const auto x = symbols(e.x), y = symbols(e.y);
      REQUIRE(x.size() % 2 == 1);
      const std::size_t n = x.size() / 2;
      REQUIRE(x[n] == 10);  // '+'
      REQUIRE(y.size() == n + 1);
      auto number = [&](std::vector<int> digits) {
        if (lsb) std::reverse(digits.begin(), digits.end());
        std::uint64_t v = 0;
        for (int d : digits) {
          REQUIRE(d >= 0);
          REQUIRE(d <= 9);
          v = v * 10 + std::uint64_t(d);
        }
        return v;
      };
      const auto a = number({x.begin(), x.begin() + long(n)}), c = number({x.begin() + long(n) + 1, x.end()});
      CHECK(number(y) == a + c);
      carries_out += (lsb ? y.back() : y.front()) == 1;
    }
    CHECK(carries_out > 0);
  }
  auto t = task("addition");
  CHECK(t->render(seq::assemble({{{8, 9, 10, 14, 11, 12, 13}, {5, 6, 8, 9}}}), 0) ==
        "<BOS> 4 5 6 + 7 8 9 <SEP> [1 2 4 5 <EOS>]");
}

TEST_CASE("parity answers are the parity of the ones", "[tasks]") {
  auto t = task("parity");
  CHECK(t->vocab_size() == 6);
  CHECK(t->sequence_length(4) == 7);  // BOS x(4) SEP y(1), the final EOS only a target
  Rng rng(5);
  const Batch b = t->sample(rng, 64, 1, 12);
  int odd = 0;
  for (std::size_t r = 0; r < b.batch(); ++r) {
    const auto e = seq::decode(b, r);
    const auto x = symbols(e.x), y = symbols(e.y);
    REQUIRE(y.size() == 1);
    int ones = 0;
    for (int v : x) {
      CHECK((v == 0 || v == 1));
      ones += v;
    }
    CHECK(y[0] == ones % 2);
    odd += y[0];
  }
  CHECK(odd > 8);
  CHECK(odd < 56);
}

TEST_CASE("assoc_recall answers are the values stored under the queried keys", "[tasks]") {
  const std::int64_t K = 20, V = 7, Q = 2;
  auto t = task("assoc_recall", {{"keys", Value(K)}, {"values", Value(V)}, {"queries", Value(Q)}}, 1, 12);
  CHECK(t->vocab_size() == std::size_t(4 + 1 + K + V));
  CHECK(t->sequence_length(3) == 2 * 3 + 1 + 2 + 2 + 2);
  Rng rng(13);
  const Batch b = t->sample(rng, 64, 1, 20);  // n up to keys is fine
  const std::int32_t query = 4, key0 = 5, val0 = 5 + std::int32_t(K);
  for (std::size_t r = 0; r < b.batch(); ++r) {
    const auto e = seq::decode(b, r);
    REQUIRE(e.x.size() >= std::size_t(1 + Q));
    const std::size_t n = (e.x.size() - 1 - std::size_t(Q)) / 2;
    REQUIRE(e.x.size() == 2 * n + 1 + std::size_t(Q));
    REQUIRE(e.x[2 * n] == query);
    std::map<std::int32_t, std::int32_t> store;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t k = e.x[2 * i], v = e.x[2 * i + 1];
      CHECK(k >= key0);
      CHECK(k < val0);
      CHECK(v >= val0);
      CHECK(v < val0 + std::int32_t(V));
      CHECK(store.count(k) == 0);  // keys distinct
      store[k] = v;
    }
    REQUIRE(e.y.size() == std::size_t(Q));
    for (std::int64_t q = 0; q < Q; ++q) {
      const std::int32_t k = e.x[2 * n + 1 + std::size_t(q)];
      REQUIRE(store.count(k) == 1);
      CHECK(e.y[std::size_t(q)] == store[k]);
    }
  }
  CHECK_THROWS_WITH(t->sample(rng, 4, 1, 21), Catch::Contains("keys = 20"));
  CHECK_THROWS_WITH(t->eval_batch(1, 4, 21), Catch::Contains("keys"));
  // Rendering: keys as letters, values as digits, the query marker as '?'.
  auto d = task("assoc_recall");
  CHECK(d->render(seq::assemble({{{5 + 2, 21 + 7, 5 + 0, 21 + 2, 4, 5 + 0}, {21 + 2}}}), 0) ==
        "<BOS> c 7 a 2 ? a <SEP> [2 <EOS>]");
}

TEST_CASE("copy renders symbol names and special tokens", "[tasks]") {
  auto t = task("copy");
  const Batch b = seq::assemble({{{7, 5, 8}, {7, 5, 8}}, {{4}, {4}}});
  CHECK(t->render(b, 0) == "<BOS> 3 1 4 <SEP> [3 1 4 <EOS>]");
  CHECK(t->render(b, 1) == "<BOS> 0 <SEP> [0 <EOS>]");  // a shorter, padded row
  auto big = task("copy", {{"symbols", Value(std::int64_t(30))}});
  CHECK(big->render(seq::assemble({{{4, 30, 33}, {4}}}), 0) == "<BOS> a A D <SEP> [a <EOS>]");
}

TEST_CASE("char_lm samples training windows and evaluates on the held-out tail", "[tasks][char_lm]") {
  // 1000 bytes: the last 100 are held out. Training text uses lowercase, the held-out tail uppercase,
  // so every window shows which split it came from.
  std::string text;
  for (int i = 0; i < 900; ++i) text += (i % 37 == 36) ? '\n' : char('a' + (i * 7 + i / 26) % 26);
  for (int i = 0; i < 100; ++i) text += char('A' + (i * 5 + i / 26) % 26);
  TempFile f(text);
  auto t = task("char_lm", {{"path", Value(f.path.string())}}, 4, 16);
  CHECK(t->is_language_model());
  CHECK(t->sequence_length(37) == 37);
  std::set<unsigned char> distinct(text.begin(), text.end());
  REQUIRE(t->vocab_size() == 1 + distinct.size());
  std::vector<unsigned char> bytes{0};  // id -> byte, ascending
  bytes.insert(bytes.end(), distinct.begin(), distinct.end());
  const std::string train = text.substr(0, 900), held = text.substr(900);

  Rng r1(3), r2(3), r3(4);
  const Batch a = t->sample(r1, 8, 4, 16), a2 = t->sample(r2, 8, 4, 16), c = t->sample(r3, 8, 4, 16);
  CHECK(same(a, a2));
  CHECK(!same(a, c));
  REQUIRE(a.batch() == 8);
  const std::size_t L = a.length();
  CHECK(L >= 4);
  CHECK(L <= 16);
  REQUIRE(a.targets.shape() == Shape{8, L});
  REQUIRE(a.mask.shape() == Shape{8, L});
  REQUIRE(a.positions.shape() == Shape{8, L});
  CHECK(a.positions(7, L - 1) == static_cast<std::int32_t>(L - 1));
  CHECK(a.positions(3, 0) == 0);
  CHECK(a.answer_begin.empty());
  CHECK(std::all_of(a.mask.begin(), a.mask.end(), [](real m) { return m == 1; }));
  std::set<std::size_t> lens;
  for (std::uint64_t s = 0; s < 40; ++s) {
    Rng r(s);
    lens.insert(t->sample(r, 2, 4, 16).length());
  }
  CHECK(lens.size() >= 5);  // L is redrawn per batch
  for (std::size_t b = 0; b < 8; ++b) {
    for (std::size_t i = 0; i + 1 < L; ++i) CHECK(a.targets(b, i) == a.tokens(b, i + 1));
    CHECK(train.find(window_text(a, b, bytes)) != std::string::npos);
  }

  // Eval at 4x the training context: exact size, from the held-out split, fixed by the seed.
  const Batch e1 = t->eval_batch(5, 6, 64), e2 = t->eval_batch(5, 6, 64), e3 = t->eval_batch(6, 6, 64);
  REQUIRE(e1.tokens.shape() == Shape{6, 64});
  CHECK(same(e1, e2));
  CHECK(!same(e1, e3));
  std::set<std::string> windows;
  for (std::size_t b = 0; b < 6; ++b) {
    const std::string w = window_text(e1, b, bytes);
    CHECK(held.find(w) != std::string::npos);
    windows.insert(w);
  }
  CHECK(windows.size() == 6);  // evenly spaced, not all the same window
  CHECK_NOTHROW(t->eval_batch(0, 3, 99));
  CHECK_THROWS_WITH(t->eval_batch(0, 3, 100), Catch::Contains(f.path.string()) && Catch::Contains("100 characters") &&
                                                 Catch::Contains("n = 100"));

  // Rendering shows the text with newlines escaped.
  Batch nl = t->sample(r1, 1, 16, 16);
  const std::string shown = t->render(nl, 0);
  CHECK(shown.size() >= 17);
  const std::string raw = window_text(nl, 0, bytes);
  if (raw.find('\n') != std::string::npos) CHECK(shown.find("\\n") != std::string::npos);
  CHECK(shown.find('\n') == std::string::npos);

  // A larger holdout moves the split.
  auto t2 = task("char_lm", {{"path", Value(f.path.string())}, {"holdout", Value(0.5)}}, 4, 16);
  CHECK_NOTHROW(t2->eval_batch(0, 2, 400));
}

TEST_CASE("char_lm rejects missing empty and too short files", "[tasks][char_lm]") {
  const std::string missing = "/nonexistent/pelab/corpus.txt";
  CHECK_THROWS_WITH(task("char_lm", {{"path", Value(missing)}}),
                    Catch::Contains(missing) && Catch::Contains("task.char_lm.path"));
  TempFile empty("", "_empty");
  CHECK_THROWS_WITH(task("char_lm", {{"path", Value(empty.path.string())}}),
                    Catch::Contains(empty.path.string()) && Catch::Contains("empty"));
  TempFile tiny("hello world", "_tiny");
  CHECK_THROWS_WITH(task("char_lm", {{"path", Value(tiny.path.string())}}, 1, 16), Catch::Contains("train_len"));
  CHECK_THROWS_WITH(task("char_lm", {{"holdout", Value(0.9)}}), Catch::Contains("holdout"));
}

TEST_CASE("char_lm reads a directory as one text: its text files in name order, binary files skipped",
          "[tasks][char_lm]") {
  const fs::path dir = fs::temp_directory_path() / ("pelab_corpus_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string a(200, 'a'), b = "b\xc3\xa9" + std::string(197, 'b');  // b holds UTF-8 "é"
  std::ofstream(dir / "2_b") << b;
  std::ofstream(dir / "1_a") << a;
  std::ofstream(dir / "1_a.dat", std::ios::binary) << std::string("\0\x01\x02", 3);  // an index: skipped
  auto t = task("char_lm", {{"path", Value(dir.string())}}, 4, 16);
  const auto rec = t->data_record();
  REQUIRE(rec);
  CHECK(rec->path == dir.string());
  CHECK(rec->bytes == a.size() + b.size());
  CHECK(rec->vocabulary == "ab\\xa9\\xc3");  // bytes past ASCII escaped: corpus.json stays valid UTF-8
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "x.dat", std::ios::binary) << std::string("\0", 1);
  CHECK_THROWS_WITH(task("char_lm", {{"path", Value(dir.string())}}), Catch::Contains("has no text file"));
  fs::remove_all(dir);
}

TEST_CASE("char_lm default corpus supports eval at 4x the training context", "[tasks][char_lm]") {
  const std::string path = "/usr/share/games/fortunes/literature";
  if (!fs::exists(path)) {
    WARN("skipped: " << path << " is missing (install fortunes-min)");
    return;
  }
  auto t = task("char_lm", {}, 1, 256);
  const Batch e = t->eval_batch(1, 4, 1024);
  CHECK(e.tokens.shape() == Shape{4, 1024});
  CHECK(t->vocab_size() > 60);
}
