// Attention bias calibration (layers/positional/abc_bias.hpp, abc.cpp): the bias file's reader (every
// refusal at PATH:LINE), the calibration arithmetic on hand-made attention and against a numpy version on a
// random attention tensor (tests/pytorch/abc_calibration_ref.py), the encoding's bias by id
// difference (whole and by query tiles), and its PyTorch twin at 1x, 2x and 4x the fixture's length.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/tape.hpp"
#include "layers/positional/abc_bias.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/transformer.hpp"
#include "parity_fixture.hpp"
#include "test_paths.hpp"

using namespace pelab;
using namespace pelab::test;

namespace {

std::string parse_error(const std::string& text) {
  try {
    parse_abc_bias(text, "b.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

const std::string kHeader = "pelab-abc-bias 1\nn_heads 2\n";

}  // namespace

TEST_CASE("abc bias file: written text reads back bit for bit, comments and blank lines skipped", "[abc]") {
  AbcBias b;
  b.heads.resize(3);
  b.heads[0].masked = -1e4;
  b.heads[0].kept = {{0, 0.0}, {1, -0.1234567890123456789}, {-3, 1e-300}};
  b.heads[2].masked = -2.5;
  b.heads[2].kept = {{7, -1.0 / 3.0}};
  const std::string text = abc_bias_text(b, {"made by a test", "second line"});
  CHECK(text.rfind("# made by a test\n# second line\npelab-abc-bias 1\nn_heads 3\n", 0) == 0);
  const AbcBias r = parse_abc_bias("\n  # leading comment\n" + text + "\n# trailing\n", "b.txt");
  REQUIRE(r.heads.size() == 3);
  for (std::size_t h = 0; h < 3; ++h) {
    CHECK(r.heads[h].masked == b.heads[h].masked);
    CHECK(r.heads[h].kept == b.heads[h].kept);
  }
  CHECK(r.heads[0].at(1) == b.heads[0].kept.at(1));
  CHECK(r.heads[0].at(2) == -1e4);  // not kept: masked
  CHECK(r.heads[1].at(0) == 0);     // transparent
}

TEST_CASE("abc bias file: every malformed file is refused at PATH:LINE with what is allowed", "[abc]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "b.txt:1: the file is empty"},
      {"# only a comment\n", "b.txt:2: the file is empty"},
      {"pelab-bias 1\n", "b.txt:1: it does not start with `pelab-abc-bias 1`"},
      {"pelab-abc-bias 2\n", "b.txt:1: format version '2', this pelab reads 1"},
      {"pelab-abc-bias 1\nheads 2\n", "b.txt:2: 'heads' where a line `n_heads ...` should be"},
      {"pelab-abc-bias 1\nn_heads 0\n", "b.txt:2: n_heads '0' is not an integer in [1, 4096]"},
      {"pelab-abc-bias 1\nn_heads 2 3\n", "b.txt:2: `n_heads` takes 1 value(s), this line has 2"},
      {kHeader, "b.txt:3: the file ends where a line `head ...` should be"},
      {kHeader + "head 1 masked 0\n", "b.txt:3: head 1 where head 0 comes next"},
      {kHeader + "head 0 masked nan\n", "b.txt:3: masked 'nan' is not a finite number"},
      {kHeader + "head 0 masked -inf\n", "b.txt:3: masked '-inf' is not a finite number"},
      {kHeader + "head 0 masked 0\n", "b.txt:4: the file ends before every head"},
      {kHeader + "head 0 masked 0\ndistance 1 0.5\ndistance 1 0\n", "b.txt:5: distance 1 twice in one head"},
      {kHeader + "head 0 masked 0\ndistance 1.5 0\n", "b.txt:4: distance '1.5' is not an integer"},
      {kHeader + "head 0 masked 0\ndistance 1 1e400\n", "b.txt:4: a distance's value '1e400' is not a finite number"},
      {kHeader + "head 0 masked 0\ndistance 1\n", "b.txt:4: `distance` takes 2 values (D V), this line has 1"},
      {kHeader + "head 0 masked 0\nweight 1 2\n", "b.txt:4: 'weight' where `distance D V` or the next `head`"},
      {kHeader + "head 0 masked 0\nhead 1 masked 0\nhead 2 masked 0\n", "b.txt:5: 'head' after the last head (2 heads"},
      {kHeader + "head 0 mask 0\n", "b.txt:3: expected `head 0 masked M`"},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    const std::string got = parse_error(text);
    INFO(got);
    CHECK(got.find(want) != std::string::npos);
    if (got != "(accepted)") CHECK(got.find("expected a bias file written by `pelab abc`") != std::string::npos);
  }
  CHECK(parse_error(kHeader + "head 0 masked 0\nhead 1 masked -5 # a comment\ndistance -2 3\n") == "(accepted)");
}

TEST_CASE("abc bias file: a missing path or a directory is refused naming it", "[abc]") {
  const std::string missing = "/nonexistent/dir/abc_bias.txt";
  CHECK_THROWS_WITH(read_abc_bias(missing), Catch::Contains(missing + " cannot be read (no such file)"));
  CHECK_THROWS_WITH(read_abc_bias(PELAB_FIXTURES_DIR), Catch::Contains("cannot be read (not a regular file)"));
  CHECK_THROWS_WITH(read_abc_bias(""), Catch::Contains("no path given"));
  CHECK(read_abc_bias(std::string(PELAB_FIXTURES_DIR) + "/abc_bias.txt").heads.size() == 4);
}

TEST_CASE("abc calibration: line means, mean + lambda std threshold, d_l - d_max, transparent heads", "[abc]") {
  AbcLines lines;
  lines.heads = 2;
  // head 0 line means 0.5, 0.3, 0.1, 0.1 (sums over 2 entries each); head 1 equal everywhere.
  const double h0[4] = {1.0, 0.6, 0.2, 0.2};
  for (std::int64_t d = 0; d < 4; ++d) lines.sum[d] = {h0[d], 0.4}, lines.count[d] = 2;
  // mu = 0.25, sigma = sqrt(0.0275) = 0.16583; lambda 0.87: threshold 0.39427 keeps d = 0 only
  AbcBias b = calibrate_abc(lines, 0.87, -1e4);
  REQUIRE(b.heads.size() == 2);
  CHECK(b.heads[0].kept == std::map<std::int64_t, double>{{0, 0.0}});
  CHECK(b.heads[0].masked == -1e4);
  CHECK(b.heads[1].kept.empty());  // sigma 0: nothing above the mean -> transparent
  CHECK(b.heads[1].masked == 0);
  // lambda 0: the threshold is the mean, 0.25: keeps d = 0 and 1, as d_l - d_max
  b = calibrate_abc(lines, 0.0, -7);
  REQUIRE(b.heads[0].kept.size() == 2);
  CHECK(b.heads[0].kept.at(0) == 0.0);
  CHECK(b.heads[0].kept.at(1) == Approx(-0.2).epsilon(1e-12));
  CHECK(b.heads[0].at(2) == -7);
  CHECK(b.heads[0].at(40) == -7);  // the extension: a line the training length never had is masked
  CHECK_THROWS(calibrate_abc(lines, -1, -1e4));
}

TEST_CASE("abc calibration: lines are id differences over the counted rows, causal keys only", "[abc]") {
  // B = 1, H = 1, T = 3, probs[i][j] = 10 i + j + 1; row 0 not counted; ids 5, 6, 8 (a gap).
  Array probs(Shape{1, 1, 3, 3});
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) probs(0, 0, i, j) = real(10 * i + j + 1);
  IndexArray pos(Shape{1, 3});
  pos(0, 0) = 5, pos(0, 1) = 6, pos(0, 2) = 8;
  Array rows(Shape{1, 3});
  rows(0, 0) = 0, rows(0, 1) = 1, rows(0, 2) = 1;
  AbcLines causal;
  accumulate_abc_lines(causal, probs, pos, rows, true);
  // row 1: (1,0) d 1 -> 11, (1,1) d 0 -> 12; row 2: (2,0) d 3 -> 21, (2,1) d 2 -> 22, (2,2) d 0 -> 23
  CHECK(causal.count == std::map<std::int64_t, std::size_t>{{0, 2}, {1, 1}, {2, 1}, {3, 1}});
  CHECK(causal.sum.at(0)[0] == 35);
  CHECK(causal.sum.at(1)[0] == 11);
  CHECK(causal.sum.at(2)[0] == 22);
  CHECK(causal.sum.at(3)[0] == 21);
  AbcLines both;
  accumulate_abc_lines(both, probs, pos, rows, false);  // bidirectional: the keys after the query too
  CHECK(both.sum.at(-2)[0] == 13);                      // (1,2): ids 6 and 8
  CHECK(both.count.count(-1) == 0);                     // 5 - 6 is row 0's, not counted
}

TEST_CASE("abc calibration agrees with the numpy version on a random attention tensor", "[abc]") {
  // tests/pytorch/abc_calibration_ref.py: (3, 3, 10, 10) causal probabilities, ids with gaps, rows not
  // counted; drawn so that a line sum instead of its mean, mean + 1 or 0.5 std, or the sample std keep other lines.
  const SafeTensors st = load_safetensors(std::string(PELAB_FIXTURES_DIR) + "/abc_calibration.safetensors");
  AbcLines lines;
  accumulate_abc_lines(lines, st.get_float("probs"), st.get_int("positions"), st.get_float("rows"), true);
  const IndexArray& ds = st.get_int("expected.d");
  const IndexArray& count = st.get_int("expected.count");
  REQUIRE(lines.count.size() == ds.size());
  for (std::size_t k = 0; k < ds.size(); ++k) CHECK(lines.count.at(ds(k)) == std::size_t(count(k)));
  const AbcBias b = calibrate_abc(lines, 0.87, -1e4);
  const Array& want = st.get_float("expected.bias");  // (H, lines): kept d_l - d_max, or masked
  REQUIRE(b.heads.size() == want.shape()[0]);
  for (std::size_t h = 0; h < b.heads.size(); ++h) {
    CHECK(b.heads[h].masked == Approx(double(st.get_float("expected.masked")(h))));
    for (std::size_t k = 0; k < ds.size(); ++k) {
      INFO("head " << h << ", d = " << ds(k));
      CHECK(b.heads[h].at(ds(k)) == Approx(double(want(h, k))).margin(1e-6));
    }
  }
}

TEST_CASE("abc encoding: bias_h(p_i - p_j) from the file, the same by query tiles, none without a file", "[abc]") {
  const EncodingSpec& spec = EncodingRegistry::instance().get("abc");
  ModelDims dims;
  dims.n_heads = 4, dims.d_model = 32, dims.head_dim = 8, dims.n_layers = 2, dims.train_seq_len = 12;
  const std::string file = std::string(PELAB_FIXTURES_DIR) + "/abc_bias.txt";
  const AbcBias want = read_abc_bias(file);
  auto build = [&](std::map<std::string, Value> given) {
    return make_encoding("abc", resolve_encoding_params("abc", given, dims), dims);
  };
  auto enc = build({{"bias_file", Value(file)}});
  IndexArray pos(Shape{2, 6});
  const std::int32_t ids[2][6] = {{0, 1, 2, 3, 4, 5}, {0, 2, 3, 7, 9, 10}};
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 6; ++t) pos(b, t) = ids[b][t];
  enc->begin_forward(pos);
  const AttentionContext ctx{pos, 0, false};
  const Array bias = enc->attention_bias(Tensor(), Tensor(), ctx).value();  // (2, 4, 6, 6)
  REQUIRE(bias.shape() == Shape{2, 4, 6, 6});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 4; ++h)
      for (std::size_t i = 0; i < 6; ++i)
        for (std::size_t j = 0; j < 6; ++j)
          CHECK(bias(b, h, i, j) == real(want.heads[h].at(ids[b][i] - ids[b][j])));
  AttentionContext tiled{pos, 1, false};
  tiled.tile = QueryTile{2, 5, 6};
  const Array tile = enc->attention_bias(Tensor(), Tensor(), tiled).value();
  REQUIRE(tile.shape() == Shape{2, 4, 3, 6});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t h = 0; h < 4; ++h)
      for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 6; ++j) CHECK(tile(b, h, i, j) == bias(b, h, i + 2, j));
  auto none = build({});
  CHECK_FALSE(none->attention_bias(Tensor(), Tensor(), ctx).defined());
  CHECK(spec.relative);
  dims.n_heads = 2;
  CHECK_THROWS_WITH(build({{"bias_file", Value(file)}}),
                    Catch::Contains("bias_file " + file + " holds biases for 4 heads, but the encoding runs in 2"));
}

TEST_CASE("abc matches its PyTorch twin at 1x, 2x and 4x the fixture's training length", "[abc][parity]") {
  CHECK(check_long_logits("model_abc") == 3);
}
