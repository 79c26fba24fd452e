// pelab probe spectrum: the decompositions against hand-computed matrices, the effective rank and Toeplitz
// measures against their definitions, what each encoding's matrices must satisfy (sinusoidal's Gram is Toeplitz,
// positive semidefinite, of rank <= d, with trace T d / 2), and the CLI on a tiny trained run.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "experiments/probe/probe.hpp"
#include "experiments/probe/spectrum.hpp"
#include "tiny_config.hpp"
#include "training/fs.hpp"
#include "cli_helpers.hpp"

using namespace pelab;
namespace fs = std::filesystem;

namespace {

using test::has;
using test::run_cli;

const MatrixSpectrum& find(const SpectrumReport& r, const std::string& name) {
  for (const auto& m : r.matrices)
    if (m.name == name) return m;
  FAIL("no matrix " << name);
  return r.matrices.front();
}

SpectrumReport encoding_spectrum(const std::string& name, std::size_t T, std::size_t d, std::size_t H,
                                 std::vector<std::string> sets = {}) {
  SpectrumProbeArgs a;
  a.encoding = name;
  a.sets = sets;
  a.length = T;
  a.d_model = d;
  a.n_heads = H;
  a.out_dir = test::fresh_temp_dir("spectrum_" + name);
  SpectrumReport r = probe_spectrum(a);
  fs::remove_all(a.out_dir);
  return r;
}

}  // namespace

TEST_CASE("spectrum: a diagonal matrix's singular values and eigenvalues are its entries", "[spectrum]") {
  const PositionMatrix m = {{3, 0, 0}, {0, -2, 0}, {0, 0, 1}};
  const auto s = singular_values(m);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == Approx(3));
  CHECK(s[1] == Approx(2));
  CHECK(s[2] == Approx(1));
  const auto e = symmetric_eigenvalues(m);
  REQUIRE(e.size() == 3);
  CHECK(e[0] == Approx(3));
  CHECK(e[1] == Approx(1));
  CHECK(e[2] == Approx(-2));
  // p = (1/2, 1/3, 1/6): erank = exp(-sum p log p).
  const double h = -(0.5 * std::log(0.5) + std::log(1.0 / 3) / 3 + std::log(1.0 / 6) / 6);
  CHECK(entropy_effective_rank(s) == Approx(std::exp(h)));
  CHECK(rank_above(s, 0.01) == 3);
  CHECK(rank_above(s, 0.5) == 2);  // 3 and 2 exceed 1.5
  const MatrixSpectrum a = analyze_matrix("d", "diagonal", m);
  CHECK(a.symmetric);
  CHECK(a.toeplitz > 0.1);  // the main diagonal is (3, -2, 1), not constant
}

TEST_CASE("spectrum: eigenvalues and singular values of hand-computed 2x2 and 3x3 matrices", "[spectrum]") {
  const auto e2 = symmetric_eigenvalues({{2, 1}, {1, 2}});  // (2 - l)^2 = 1
  REQUIRE(e2.size() == 2);
  CHECK(e2[0] == Approx(3));
  CHECK(e2[1] == Approx(1));
  // The second-difference matrix: 2 - 2 cos(k pi / 4), k = 1, 2, 3.
  const auto e3 = symmetric_eigenvalues({{2, -1, 0}, {-1, 2, -1}, {0, -1, 2}});
  REQUIRE(e3.size() == 3);
  CHECK(e3[0] == Approx(2 + std::sqrt(2.0)));
  CHECK(e3[1] == Approx(2));
  CHECK(e3[2] == Approx(2 - std::sqrt(2.0)));
  // Not symmetric: A^T A = [[25, 20], [20, 25]], eigenvalues 45 and 5.
  const auto s = singular_values({{3, 0}, {4, 5}});
  REQUIRE(s.size() == 2);
  CHECK(s[0] == Approx(std::sqrt(45.0)));
  CHECK(s[1] == Approx(std::sqrt(5.0)));
  CHECK_FALSE(analyze_matrix("a", "", {{3, 0}, {4, 5}}).symmetric);
  CHECK_THROWS_AS(symmetric_eigenvalues({{1, 2, 3}, {4, 5, 6}}), Error);
  CHECK_THROWS_AS(singular_values({{1, 2}, {3}}), Error);
}

TEST_CASE("spectrum: effective rank of the identity, a rank-one and a zero matrix", "[spectrum]") {
  PositionMatrix id(5, std::vector<double>(5, 0.0)), one(5, std::vector<double>(5, 0.0));
  for (std::size_t i = 0; i < 5; ++i) {
    id[i][i] = 2;
    for (std::size_t j = 0; j < 5; ++j) one[i][j] = double(i + 1) * double(j + 2);
  }
  CHECK(entropy_effective_rank(singular_values(id)) == Approx(5));
  CHECK(entropy_effective_rank(singular_values(one)) == Approx(1).margin(1e-9));
  CHECK(rank_above(singular_values(one), 0.01) == 1);
  CHECK(entropy_effective_rank({0, 0, 0}) == 0);
  CHECK(rank_above({0, 0}, 0.01) == 0);
}

TEST_CASE("spectrum: the Toeplitz deviation against its definition", "[spectrum]") {
  // Diagonal means: i - j = 0: (1 + 4) / 2; i - j = +-1: single entries. Residual 1.5 twice.
  CHECK(toeplitz_deviation({{1, 2}, {3, 4}}) == Approx(std::sqrt(4.5 / 30)));
  CHECK(toeplitz_deviation({{1, 2, 3}, {5, 1, 2}, {7, 5, 1}}) == Approx(0).margin(1e-15));
  CHECK(toeplitz_deviation({{0, 0}, {0, 0}}) == 0);
  // lower_only: the 9 above the diagonal is not counted; norm^2 = 1 + 9 + 16.
  CHECK(toeplitz_deviation({{1, 9}, {3, 4}}, true) == Approx(std::sqrt(4.5 / 26)));
  CHECK(toeplitz_deviation({{1, 9}, {3, 1}}, true) == Approx(0).margin(1e-15));
  // A causal matrix analyzed lower_only decomposes with its upper triangle zeroed.
  const MatrixSpectrum a = analyze_matrix("c", "", {{1, 9}, {0, 2}}, true);
  CHECK(a.sigma[0] == Approx(2));
  CHECK(a.sigma[1] == Approx(1));
}

TEST_CASE("probe spectrum: sinusoidal <PE(i), PE(j)> is Toeplitz, PSD, of rank <= d, with trace T d / 2", "[spectrum]") {
  const std::size_t T = 64, d = 16;
  const SpectrumReport r = encoding_spectrum("sinusoidal", T, d, 2);
  const MatrixSpectrum& g = find(r, "gram");
  REQUIRE(g.symmetric);
  REQUIRE(g.sigma.size() == T);
  CHECK(g.toeplitz < 1e-6);  // sum_i cos(w_i (i - j)), computed from float32 vectors
  CHECK(g.erank <= double(d) + 1e-9);
  CHECK(g.rank_1pct <= d);
  CHECK(rank_above(g.sigma, 1e-9) <= d);
  double trace = 0;
  for (double e : g.eigenvalues) {
    CHECK(e >= -1e-9 * g.eigenvalues.front());
    trace += e;
  }
  CHECK(trace == Approx(double(T * d / 2)).epsilon(1e-5));  // |PE(t)|^2 = d / 2 for every t
  CHECK(r.files.size() >= 4);                                   // csv, json, gp, dat (+ png with gnuplot)
  // A learned table at its random initialization is not Toeplitz: the measure sees it.
  CHECK(find(encoding_spectrum("learned", T, d, 2), "gram").toeplitz > 0.1);
}

TEST_CASE("probe spectrum: rope's rotation kernel and alibi's biases depend on i - j only", "[spectrum]") {
  const SpectrumReport rope = encoding_spectrum("rope", 48, 32, 2);  // head_dim 16
  const MatrixSpectrum& k = find(rope, "rotary");
  CHECK(k.toeplitz < 1e-6);
  CHECK(rank_above(k.sigma, 1e-9) <= 16);  // sum over 8 pairs of cos and sin terms
  CHECK(has(rope.not_defined.at(0), "gram"));
  const SpectrumReport alibi = encoding_spectrum("alibi", 24, 16, 4);
  int heads = 0;
  for (const auto& m : alibi.matrices) {
    CHECK(has(m.name, "bias_head"));
    CHECK(m.toeplitz < 1e-6);
    ++heads;
  }
  CHECK(heads == 4);
  CHECK_THROWS_WITH(encoding_spectrum("none", 16, 16, 2), Catch::Contains("defines no position matrix"));
  CHECK_THROWS_WITH(encoding_spectrum("sinusoidal", 1, 16, 2), Catch::Contains("--length"));
}

TEST_CASE("pelab probe spectrum on an encoding and a tiny trained run (CLI)", "[spectrum][cli]") {
  const std::string dir = test::fresh_temp_dir("spectrum_cli"), cfg = dir + "/tiny.toml", run = dir + "/run",
                    log = dir + "/log.txt";
  REQUIRE(run_cli("probe spectrum --encoding sinusoidal --length 32 --d-model 16 --out " + dir + "/enc", log) == 0);
  CHECK(has(read_file(log), "gram"));
  CHECK(has(read_file(log), "Roy & Vetterli"));
  const auto je = nlohmann::json::parse(read_file(dir + "/enc/spectrum.json"));
  REQUIRE(je["matrices"].size() == 1);
  CHECK(je["matrices"][0]["name"] == "gram");
  CHECK(je["matrices"][0]["toeplitz_deviation"].get<double>() < 1e-6);
  // The CSV: one row per singular value, descending.
  std::ifstream csv(dir + "/enc/spectrum.csv");
  std::string line;
  std::getline(csv, line);
  CHECK(line == "matrix,k,singular_value,relative,eigenvalue");
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  CHECK(rows == 32);

  std::ofstream(cfg) << test::tiny_config(40) << "[encoding]\nname = \"sinusoidal\"\n";
  REQUIRE(run_cli("train " + cfg + " --out " + run + " --quiet", log) == 0);
  REQUIRE(run_cli("probe spectrum --run " + run + " --samples 4", log) == 0);
  const auto jr = nlohmann::json::parse(read_file(run + "/probe/spectrum.json"));
  std::vector<std::string> names;
  for (const auto& m : jr["matrices"]) names.push_back(m["name"].get<std::string>());
  // Two heads: the mean attention per head, the trained encoding's Gram, layer 0's qk per head and summed.
  CHECK(names == std::vector<std::string>{"attention_head0", "attention_head1", "gram", "qk_head0", "qk_head1", "qk"});
  CHECK(jr["matrices"][0]["lower_only"].get<bool>());
  CHECK(jr["matrices"][2]["toeplitz_deviation"].get<double>() < 1e-6);  // sinusoidal is not trained

  CHECK(run_cli("probe spectrum --encoding rope --run " + run, log) == 2);
  CHECK(run_cli("probe spectrum", log) == 2);
  CHECK(has(read_file(log), "exactly one of --encoding"));
  CHECK(run_cli("probe spectrum --run " + run + " --length 8", log) == 2);  // --length needs --encoding
  CHECK(run_cli("probe spectrum --run " + run + " --factor 200 --memory-limit 64", log) == 2);
  fs::remove_all(dir);
}
