// pelab probe / predict: the numbers behind the probes against closed forms (sinusoidal similarity,
// RoFormer's bound, entropy of uniform rows), per-position accuracy on a hand-made batch, causal maps,
// typed input per task, and the CLI end to end on a tiny trained run (absurd lengths refused before work).
#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <complex>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/tape.hpp"
#include "experiments/config/config.hpp"
#include "experiments/eval/predict.hpp"
#include "experiments/probe/probe.hpp"
#include "experiments/tasks/sequence.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/transformer.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"
#include "cli_helpers.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using test::has;
using test::run_cli;

std::string temp_dir(const std::string& name) { return test::fresh_temp_dir("probe_" + name); }

// A CSV with a header line -> rows of numbers.
std::vector<std::vector<double>> read_csv(const std::string& path) {
  std::istringstream in(read_file(path));
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    std::vector<double> r;
    std::stringstream ss(line);
    std::string f;
    while (std::getline(ss, f, ',')) r.push_back(f == "NaN" ? std::nan("") : std::stod(f));
    rows.push_back(r);
  }
  return rows;
}

const Task& task_of(const std::string& name, std::vector<std::string> sets = {}) {
  static std::map<std::string, RunSpec> cache;
  std::string key = name;
  for (const auto& s : sets) key += "|" + s;
  if (!cache.count(key)) {
    sets.push_back("task.name=" + name);
    sets.push_back("eval.lengths=[4]");
    cache[key] = parse_config("", "test", sets).runs.at(0);
  }
  return *cache[key].task;
}

}  // namespace

TEST_CASE("probe encoding: sinusoidal <PE(t), PE(t+k)> = sum_i cos(w_i k), symmetric in +-k", "[probe]") {
  EncodingProbeArgs a;
  a.name = "sinusoidal";
  a.sets = {"base=500"};
  a.len = 40;
  a.d_model = 16;
  a.out_dir = temp_dir("sin");
  probe_encoding(a);
  const auto g = read_csv(a.out_dir + "/similarity.csv");  // i, j, dot
  REQUIRE(g.size() == a.len * a.len);
  for (const auto& r : g) {
    REQUIRE(r.size() == 3);
    const double k = r[1] - r[0];
    double want = 0;
    for (std::size_t i = 0; i < a.d_model / 2; ++i) want += std::cos(std::pow(500.0, -2.0 * double(i) / double(a.d_model)) * k);
    CHECK(r[2] == Approx(want).margin(1e-4));
  }
  const auto prof = read_csv(a.out_dir + "/similarity_profile.csv");  // row c = 20 against k = j - c
  REQUIRE(prof.size() == a.len);
  for (std::size_t k = 1; k < 20; ++k) CHECK(prof[20 + k][1] == Approx(prof[20 - k][1]).margin(1e-5));
  const auto j = nlohmann::json::parse(read_file(a.out_dir + "/similarity_profile.json"));
  CHECK(j["max_asymmetry"].get<double>() < 1e-4);
  CHECK(has(j["title"].get<std::string>(), "base=500"));
  fs::remove_all(a.out_dir);
}

TEST_CASE("probe encoding: rope's all-ones logit is sum_i cos(m theta_i), the RoFormer bound", "[probe]") {
  EncodingProbeArgs a;
  a.name = "rope";
  a.len = 32;
  a.d_model = 32;
  a.n_heads = 2;  // head_dim 16: theta_i = 10000^(-2i/16)
  a.out_dir = temp_dir("rope");
  probe_encoding(a);
  const auto d = read_csv(a.out_dir + "/rotary_decay.csv");  // m, normalized dot, normalized bound
  REQUIRE(d.size() == a.len);
  const auto bound = rope_decay_bound(16, 10000.0, a.len - 1);
  for (std::size_t m = 0; m < a.len; ++m) {
    REQUIRE(d[m].size() == 3);
    double want = 0;
    for (std::size_t i = 0; i < 8; ++i) want += std::cos(double(m) * std::pow(10000.0, -2.0 * double(i) / 16.0));
    CHECK(d[m][1] == Approx(want / 8).margin(1e-4));
    CHECK(d[m][2] == Approx(bound[m] / bound[0]).margin(1e-6));
  }
  fs::remove_all(a.out_dir);
  // m = 0: S_j = j, so the mean of |S_j| over j = 1..d/2 is (d/2 + 1) / 2; one pair: |e^{i m}| = 1.
  CHECK(rope_decay_bound(16, 10000.0, 0)[0] == Approx(4.5));
  for (double v : rope_decay_bound(2, 10000.0, 9)) CHECK(v == Approx(1.0));
  // Two pairs, theta = 1 and 100^(-2/4) = 0.1: (1 + |e^{i m} + e^{i m / 10}|) / 2.
  const auto b2 = rope_decay_bound(4, 100.0, 5);
  for (std::size_t m = 0; m <= 5; ++m)
    CHECK(b2[m] == Approx((1 + std::abs(std::polar(1.0, double(m)) + std::polar(1.0, double(m) / 10.0))) / 2));
}

TEST_CASE("probe encoding: alibi's bias is -slope_h * distance, bad names and parameters are errors", "[probe]") {
  EncodingProbeArgs a;
  a.name = "alibi";
  a.len = 12;
  a.d_model = 16;
  a.n_heads = 4;
  a.out_dir = temp_dir("alibi");
  probe_encoding(a);
  const auto b = read_csv(a.out_dir + "/bias_by_distance.csv");
  REQUIRE(b.size() == a.len);
  REQUIRE(b[0].size() == 5);
  for (std::size_t h = 0; h < 4; ++h) {
    const double slope = -b[1][h + 1];
    CHECK(slope > 0);
    for (std::size_t d = 0; d < a.len; ++d) CHECK(b[d][h + 1] == Approx(-slope * double(d)).margin(1e-5));
  }
  fs::remove_all(a.out_dir);
  // Encodings without an additive vector or a bias still show what they do.
  a.name = "shaw";
  probe_encoding(a);
  CHECK(read_csv(a.out_dir + "/relative_key_by_distance.csv").size() == a.len);
  a.name = "multiplicative";
  probe_encoding(a);
  CHECK(read_csv(a.out_dir + "/similarity.csv").size() == a.len * a.len);
  fs::remove_all(a.out_dir);
  a.name = "no_such_encoding";
  CHECK_THROWS_WITH(probe_encoding(a), Catch::Contains("no_such_encoding"));
  a.name = "sinusoidal";
  a.sets = {"bogus=1"};
  CHECK_THROWS_WITH(probe_encoding(a), Catch::Contains("bogus"));
  a.sets = {"base"};
  CHECK_THROWS_WITH(probe_encoding(a), Catch::Contains("KEY=VALUE"));
  a.sets = {};
  a.name = "none";
  CHECK_THROWS_WITH(probe_encoding(a), Catch::Contains("nothing to plot"));
  CHECK_FALSE(fs::exists(a.out_dir));  // no empty directory left behind
  fs::create_directories(a.out_dir);   // one the user made is left alone
  CHECK_THROWS_WITH(probe_encoding(a), Catch::Contains("nothing to plot"));
  CHECK(fs::exists(a.out_dir));
  fs::remove_all(a.out_dir);
}

TEST_CASE("attention entropy: uniform causal rows give log(t + 1), one-hot rows 0", "[probe]") {
  const std::size_t B = 2, H = 3, T = 7;
  Array p = xt::zeros<real>(Shape{B, H, T, T});
  for (std::size_t bh = 0; bh < B * H; ++bh)
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t j = 0; j <= t; ++j) p.data()[(bh * T + t) * T + j] = real(1) / real(t + 1);
  auto e = attention_entropy(p);
  REQUIRE(e.size() == T);
  for (std::size_t t = 0; t < T; ++t) CHECK(e[t] == Approx(std::log(double(t + 1))).epsilon(1e-5));
  // Half the heads one-hot: the mean over heads halves.
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t t = 0; t < T; ++t) {
      real* row = p.data() + ((b * H + 0) * T + t) * T;
      std::fill(row, row + T, real(0));
      row[t] = 1;
    }
  e = attention_entropy(p);
  for (std::size_t t = 0; t < T; ++t) CHECK(e[t] == Approx(std::log(double(t + 1)) * 2 / 3).epsilon(1e-5));
  CHECK_THROWS(attention_entropy(Array(xt::zeros<real>(Shape{2, 3, 4}))));
}

TEST_CASE("per-position accuracy counts argmax hits per answer position over the counted targets", "[probe]") {
  // Two rows of 5 tokens, vocab 3. Row 0 answers at t = 2..4, row 1 at t = 1..4 (different offsets).
  Batch b;
  b.tokens = IndexArray(Shape{2, 5});
  b.targets = IndexArray(Shape{2, 5});
  b.mask = Array(xt::zeros<real>(Shape{2, 5}));
  b.answer_begin = {2, 1};
  b.answer_end = {5, 5};
  for (std::size_t t = 0; t < 5; ++t) {
    b.targets(0, t) = std::int32_t(t % 3);
    b.targets(1, t) = std::int32_t((t + 1) % 3);
    b.mask(0, t) = t >= 2;
    b.mask(1, t) = t >= 1;
  }
  b.mask(1, 3) = 0;  // an uncounted target inside the span is skipped
  Array logits = xt::zeros<real>(Shape{2, 5, 3});
  auto predict = [&](std::size_t r, std::size_t t, std::int32_t v) { logits(r, t, std::size_t(v)) = 5; };
  predict(0, 2, b.targets(0, 2));      // row 0 answer 1: right
  predict(0, 3, (b.targets(0, 3) + 1) % 3);  // answer 2: wrong
  predict(0, 4, b.targets(0, 4));      // answer 3: right
  predict(1, 1, (b.targets(1, 1) + 1) % 3);  // row 1 answer 1: wrong
  predict(1, 2, b.targets(1, 2));      // answer 2: right
  predict(1, 3, (b.targets(1, 3) + 2) % 3);  // answer 3: not counted
  predict(1, 4, b.targets(1, 4));      // answer 4: right
  const PositionAccuracy pa = position_accuracy(logits, b);
  REQUIRE(pa.acc.size() == 4);
  CHECK(pa.count == std::vector<std::size_t>{2, 2, 1, 1});
  CHECK(pa.acc[0] == Approx(0.5));
  CHECK(pa.acc[1] == Approx(0.5));
  CHECK(pa.acc[2] == Approx(1.0));
  CHECK(pa.acc[3] == Approx(1.0));
  CHECK_THROWS(position_accuracy(Array(xt::zeros<real>(Shape{2, 4, 3})), b));
}

TEST_CASE("attention maps through the transformer are causal probability rows", "[probe]") {
  for (const char* enc : {"none", "rope", "alibi", "learned", "t5"}) {
    ModelConfig m;
    m.vocab = 9;
    m.d_model = 16;
    m.n_layers = 2;
    m.n_heads = 2;
    m.encoding = enc;
    m.train_seq_len = 12;
    Transformer model(m);
    Rng rng(3);
    init_parameters(model, rng, m.init_options());
    model.set_training(false);
    const std::size_t B = 2, T = 10;
    IndexArray tok(Shape{B, T});
    for (std::size_t i = 0; i < B * T; ++i) tok.data()[i] = std::int32_t(rng.below(9));
    std::vector<Array> maps;
    ForwardOptions fo;
    fo.attention_maps = &maps;
    NoGrad ng;
    model.forward(tok, default_positions(B, T), fo);
    REQUIRE(maps.size() == 2);
    for (const Array& p : maps) {
      REQUIRE(p.shape() == Shape{B, 2, T, T});
      for (std::size_t r = 0; r < B * 2 * T; ++r) {
        const std::size_t i = r % T;
        double sum = 0;
        for (std::size_t j = 0; j < T; ++j) {
          const double v = p.data()[r * T + j];
          if (j > i) CHECK(v == 0);
          sum += v;
        }
        CHECK(sum == Approx(1.0).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("typed input in each task's notation, bad tokens name what is allowed", "[probe][predict]") {
  const Batch c = task_of("copy").parse_input("3 1 4");
  CHECK(task_of("copy").render(c, 0) == "<BOS> 3 1 4 <SEP> [3 1 4 <EOS>]");
  CHECK(task_of("copy").render(task_of("copy").parse_input("314"), 0) == "<BOS> 3 1 4 <SEP> [3 1 4 <EOS>]");
  CHECK(task_of("reverse").render(task_of("reverse").parse_input("3 1 4"), 0) == "<BOS> 3 1 4 <SEP> [4 1 3 <EOS>]");
  CHECK(task_of("sort").render(task_of("sort").parse_input("3 1 4"), 0) == "<BOS> 3 1 4 <SEP> [1 3 4 <EOS>]");
  CHECK(task_of("addition").render(task_of("addition").parse_input("456+789"), 0) ==
        "<BOS> 4 5 6 + 7 8 9 <SEP> [1 2 4 5 <EOS>]");
  CHECK(task_of("addition", {"task.addition.reverse_digits=true"}).render(
            task_of("addition", {"task.addition.reverse_digits=true"}).parse_input("654 + 987"), 0) ==
        "<BOS> 6 5 4 + 9 8 7 <SEP> [5 4 2 1 <EOS>]");
  CHECK(task_of("parity").render(task_of("parity").parse_input("1 0 1 1"), 0) == "<BOS> 1 0 1 1 <SEP> [1 <EOS>]");
  CHECK(task_of("assoc_recall").render(task_of("assoc_recall").parse_input("c 7 a 2 f 7 ? a"), 0) ==
        "<BOS> c 7 a 2 f 7 ? a <SEP> [2 <EOS>]");
  CHECK(task_of("copy", {"task.prompt=true", "task.bos=false"}).render(
            task_of("copy", {"task.prompt=true", "task.bos=false"}).parse_input("3 1"), 0) == "Copy: 3 1 <SEP> [3 1 <EOS>]");

  CHECK_THROWS_WITH(task_of("copy").parse_input("3 x 4"), Catch::Contains("unknown token 'x'") && Catch::Contains("0 1 2"));
  CHECK_THROWS_WITH(task_of("copy").parse_input("  "), Catch::Contains("empty"));
  CHECK_THROWS_WITH(task_of("addition").parse_input("12+3"), Catch::Contains("same number of digits"));
  CHECK_THROWS_WITH(task_of("addition").parse_input("12"), Catch::Contains("'+'"));
  CHECK_THROWS_WITH(task_of("assoc_recall").parse_input("c 7 c 2 ? c"), Catch::Contains("distinct keys"));
  CHECK_THROWS_WITH(task_of("assoc_recall").parse_input("c 7 ? a"), Catch::Contains("query 'a'"));
  CHECK_THROWS_WITH(task_of("assoc_recall").parse_input("c 7 a"), Catch::Contains("expected"));
}

TEST_CASE("char_lm reads a prompt as tokens with next-character targets, unknown bytes are named", "[probe][predict]") {
  const Task& lm = task_of("char_lm", {"task.train_len=8", "task.min_len=8"});
  const Batch b = lm.parse_input("To be");
  REQUIRE(b.batch() == 1);
  REQUIRE(b.length() == 5);
  std::string text;
  for (std::size_t t = 0; t < 5; ++t) text += lm.token_text(b.tokens(0, t));
  CHECK(text == "To be");
  for (std::size_t t = 0; t + 1 < 5; ++t) {
    CHECK(b.targets(0, t) == b.tokens(0, t + 1));
    CHECK(b.mask(0, t) == 1);
  }
  CHECK(b.targets(0, 4) == -1);
  CHECK(b.mask(0, 4) == 0);
  CHECK_THROWS_WITH(lm.parse_input("a\x01"), Catch::Contains("byte 1") && Catch::Contains("offset 1"));
  CHECK_THROWS_WITH(lm.parse_input(""), Catch::Contains("empty"));
}

TEST_CASE("pelab predict and pelab probe run on a tiny trained run (CLI)", "[probe][predict][cli]") {
  const std::string dir = temp_dir("cli"), cfg = dir + "/tiny.toml", run = dir + "/run", log = dir + "/log.txt";
  std::ofstream(cfg) << test::tiny_config(40) << "[encoding]\nname = \"sinusoidal\"\n";
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --quiet", log) == 0);

  REQUIRE(run_cli("predict " + run + " --len 6 -n 2 --json", log) == 0);
  const auto j = nlohmann::json::parse(read_file(log));
  REQUIRE(j["samples"].size() == 2);
  for (const auto& s : j["samples"]) {
    REQUIRE(s["target"].size() == 7);  // 6 symbols and <EOS>
    REQUIRE(s["output"].size() == 7);
    REQUIRE(s["correct"].size() == 7);
    for (std::size_t k = 0; k < 7; ++k) CHECK(s["correct"][k].get<bool>() == (s["target"][k] == s["output"][k]));
  }
  REQUIRE(run_cli("predict " + run + " --input \"1 2 3\"", log) == 0);
  CHECK(has(read_file(log), "<BOS> 1 2 3 <SEP>"));
  CHECK(run_cli("predict " + run + " --input \"1 z\"", log) == 2);
  CHECK(has(read_file(log), "unknown token 'z'"));
  CHECK(run_cli("predict " + run + " --prompt abc", log) == 2);
  CHECK(has(read_file(log), "--prompt is for language models"));
  CHECK(run_cli("predict " + dir, log) == 2);
  CHECK(has(read_file(log), "no config.toml"));

  REQUIRE(run_cli("probe run " + run + " --samples 8", log) == 0);
  for (const char* f : {"entropy.csv", "entropy.json", "position_accuracy.csv", "attention_1x.csv", "attention_2x.csv",
                        "qk_positions.csv"})
    CHECK(fs::exists(run + "/probe/" + f));
  // The entropy CSV: per query, never above the uniform log(t + 1).
  const auto e = read_csv(run + "/probe/entropy.csv");
  REQUIRE(!e.empty());
  for (const auto& r : e)
    if (!std::isnan(r[1])) CHECK(r[1] <= r.back() + 1e-4);
  // The attention CSV is causal: key <= query everywhere.
  for (const auto& r : read_csv(run + "/probe/attention_1x.csv")) CHECK(r[3] <= r[2]);
  // Lengths over the memory limit are refused before anything is written, naming the estimate, the limit
  // and the setting (the estimate of experiments/run/resources.hpp, as train, sweep and eval).
  fs::remove_all(run + "/probe");
  CHECK(run_cli("probe run " + run + " --lengths 1,200 --memory-limit 64", log) == 2);
  std::string msg = read_file(log);
  CHECK(has(msg, "--lengths / --samples: pelab probe run at 200x"));
  CHECK(has(msg, "needs about"));
  CHECK(has(msg, "--memory-limit 64"));
  CHECK(!fs::exists(run + "/probe"));
  REQUIRE(run_cli("probe run " + run + " --lengths 1 --samples 2 --memory-limit 64", log) == 0);  // fits
  // A forward grows linearly with the length (attention streams): 400002 tokens are about 480 MiB.
  CHECK(run_cli("predict " + run + " --len 200000 --memory-limit 64", log) == 2);
  msg = read_file(log);
  CHECK(has(msg, "--len: pelab predict: a forward of"));
  CHECK(has(msg, "--memory-limit 64"));
  CHECK(run_cli("predict " + run + " --len 6 --memory-limit x", log) == 2);
  CHECK(has(read_file(log), "--memory-limit x: expected"));
  CHECK(run_cli("probe run " + run + " --lengths 0", log) == 2);
  CHECK(run_cli("probe encoding rope --out " + dir + "/enc --set fraction=0.3", log) == 2);
  CHECK(has(read_file(log), "fraction"));
  fs::remove_all(dir);
}

TEST_CASE("[probe] run = true: the sweep probes every finished cell and the report shows them", "[probe][cli]") {
  const std::string dir = temp_dir("sweep"), cfg = dir + "/tiny.toml", log = dir + "/log.txt";
  std::ofstream(cfg) << test::tiny_config(20) << "[sweep]\n\"encoding.name\" = [\"none\", \"rope\"]\n"
                     << "[probe]\nrun = true\nsamples = 4\n";
  REQUIRE(run_cli("sweep " + cfg + " --out " + dir + "/sw", log) == 0);
  const std::string out = read_file(log);
  for (const char* cell : {"encoding.name=none", "encoding.name=rope"}) {
    const std::string probe_dir = dir + "/sw/" + cell + "/probe";
    CHECK(fs::exists(probe_dir + "/entropy.csv"));
    CHECK(has(out, std::string("probe  ") + cell));
    const auto j = nlohmann::json::parse(read_file(probe_dir + "/entropy.json"));
    CHECK(j["lengths"]["1x"]["n"].get<int>() == 4);
  }
  const std::string html = read_file(dir + "/sw/report.html");
  CHECK(has(html, "id=\"probe-entropy\""));
  CHECK(has(html, "id=\"probe-attention_1x\""));
  // Without [probe] run (the default) and without --probe: no probes.
  std::ofstream(cfg, std::ios::trunc) << test::tiny_config(20) << "[sweep]\n\"encoding.name\" = [\"none\"]\n";
  REQUIRE(run_cli("sweep " + cfg + " --out " + dir + "/plain", log) == 0);
  CHECK(!fs::exists(dir + "/plain/encoding.name=none/probe"));
  CHECK(run_cli("sweep " + cfg + " --out " + dir + "/plain --probe", log) == 0);  // finished cells are probed
  CHECK(fs::exists(dir + "/plain/encoding.name=none/probe/entropy.csv"));
  std::ofstream(cfg, std::ios::trunc) << test::tiny_config(20) << "[probe]\nsamples = 0\n";
  CHECK(run_cli("train " + cfg + " --out " + dir + "/bad", log) == 2);
  CHECK(has(read_file(log), "probe"));
  fs::remove_all(dir);
}
