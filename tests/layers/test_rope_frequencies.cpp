// The RoPE-frequency encodings: HoPE's cut (which pairs turn), FoPE's clipped frequencies, Fourier series
// and position-free pairs, PoPE's phase bias, each against values computed here in double from the
// formulas in the files' headers. The PyTorch twins (tests/pytorch/pelab_ref.py) are matched in
// test_parity.cpp; causality, relativity and per-row ids in the property tests.
#include <cmath>

#include <catch2/catch.hpp>

#include "model_helpers.hpp"

using namespace pelab;
using pelab::test::small_config;

namespace {

const double kPi = std::acos(-1.0);

struct Encoded {
  Tensor q, k;
};

// q0 and k0 (1, H, T, hs) encoded by `name` with `params` at ids `pos` (1, T), in layer `layer` of a
// model with H heads of hs dims and a training range of L ids.
Encoded encode(const std::string& name, const std::map<std::string, Value>& params, std::size_t H, std::size_t hs,
               std::size_t L, const IndexArray& pos, const Tensor& q0, const Tensor& k0,
               std::unique_ptr<PositionalEncoding>* keep = nullptr, std::size_t layer = 0) {
  ModelConfig c = small_config(name, params);
  c.n_heads = H;
  c.d_model = H * hs;
  c.train_seq_len = L;
  const Params p = resolve_encoding_params(name, c.encoding_params, c.dims());
  std::unique_ptr<PositionalEncoding> owned;
  std::unique_ptr<PositionalEncoding>& enc = keep ? *keep : owned;
  if (!enc) {
    enc = make_encoding(name, p, c.dims());
    Rng rng(1);
    init_parameters(*enc, rng);  // PoPE's phase bias by its own initializer
  }
  Encoded e{q0, k0};
  enc->begin_forward(pos);
  enc->encode_qk(e.q, e.k, AttentionContext{pos, layer, true});
  return e;
}

IndexArray ids(std::vector<std::int32_t> v) {
  IndexArray p(Shape{1, v.size()});
  for (std::size_t i = 0; i < v.size(); ++i) p(0, i) = v[i];
  return p;
}

Tensor random(const Shape& s, std::uint64_t seed) {
  Rng rng(seed);
  Array a(s);
  for (auto& v : a) v = static_cast<real>(rng.normal());
  return Tensor(std::move(a));
}

double at(const Tensor& x, std::size_t h, std::size_t t, std::size_t d) { return double(x.value()(0, h, t, d)); }

}  // namespace

TEST_CASE("hope rotates exactly the pairs with theta_i >= 2 pi / L, the highest first", "[hope]") {
  // base 10, hs 8: theta = 1, 0.562, 0.316, 0.178. L = 20 (2 pi / L = 0.314) keeps three pairs, L = 19
  // (0.331) two; interleaved pairs (0,1), (2,3), (4,5) turn, dims 6, 7 never change.
  const IndexArray pos = ids({0, 3, 11});
  const Tensor q0 = random({1, 1, 3, 8}, 1), k0 = random({1, 1, 3, 8}, 2);
  for (int L : {20, 19}) {
    INFO("length " << L);
    const Encoded e = encode("hope", {{"base", Value(10.0)}, {"length", Value(std::int64_t(L))}}, 1, 8, 16, pos, q0, k0);
    const std::size_t kept = L == 20 ? 3 : 2;
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t i = 0; i < 4; ++i) {
        const double a = double(pos(0, t)) * std::pow(10.0, -2.0 * double(i) / 8.0);
        const double c = i < kept ? std::cos(a) : 1.0, s = i < kept ? std::sin(a) : 0.0;
        const double x1 = at(q0, 0, t, 2 * i), x2 = at(q0, 0, t, 2 * i + 1);
        CHECK(at(e.q, 0, t, 2 * i) == Approx(x1 * c - x2 * s).margin(1e-6));
        CHECK(at(e.q, 0, t, 2 * i + 1) == Approx(x1 * s + x2 * c).margin(1e-6));
      }
  }
}

TEST_CASE("hope is p-RoPE: rope rotating the same 2m dims with base^(2m/hs) gives the same q and k", "[hope]") {
  // hs 16, base 10000: theta = 1, 0.316, 0.1, 0.032, ...; the default cut at L = 16 (2 pi / 16 = 0.39) keeps
  // m = 1 pair, L = 64 (0.098) keeps m = 3.
  const IndexArray pos = ids({0, 5, 9, 40});
  const Tensor q0 = random({1, 2, 4, 16}, 3), k0 = random({1, 2, 4, 16}, 4);
  for (std::size_t L : {std::size_t(16), std::size_t(64)}) {
    const std::size_t m = L == 16 ? 1 : 3;
    INFO("L " << L << ", m " << m);
    const Encoded h = encode("hope", {{"layout", Value(std::string("half"))}}, 2, 16, L, pos, q0, k0);
    const Encoded r = encode("rope",
                             {{"layout", Value(std::string("half"))},
                              {"fraction", Value(double(2 * m) / 16.0)},
                              {"base", Value(std::pow(10000.0, double(2 * m) / 16.0))}},
                             2, 16, L, pos, q0, k0);
    REQUIRE(h.q.shape() == r.q.shape());
    for (std::size_t i = 0; i < h.q.numel(); ++i) {
      CHECK(h.q.data()[i] == Approx(r.q.data()[i]).margin(1e-6));
      CHECK(h.k.data()[i] == Approx(r.k.data()[i]).margin(1e-6));
    }
  }
}

TEST_CASE("fope with sigma 0 is RoPE on its D' unclipped pairs and (x1 - x2, x1 + x2) on the rest", "[fope]") {
  // hs 16, base 10000, L 64: w_n = 10000^(-n/8) = 1, 0.316, 0.1, 0.032, ... >= 2 pi / 64 = 0.098 keeps
  // D' = 3 <= hs/4 = 4, so with sigma 0 (coefficients = identity) pairs (m, m + 8), m < 3, turn by p w_m.
  const IndexArray pos = ids({0, 2, 7, 30});
  const Tensor q0 = random({1, 2, 4, 16}, 5), k0 = random({1, 2, 4, 16}, 6);
  const Encoded e = encode("fope", {{"sigma", Value(0.0)}}, 2, 16, 64, pos, q0, k0);
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t t = 0; t < 4; ++t)
      for (std::size_t m = 0; m < 8; ++m) {
        const double a = double(pos(0, t)) * std::pow(10000.0, -double(m) / 8.0);
        const double c = m < 3 ? std::cos(a) : 1.0, s = m < 3 ? std::sin(a) : 1.0;
        const double x1 = at(k0, h, t, m), x2 = at(k0, h, t, m + 8);
        CHECK(at(e.k, h, t, m) == Approx(x1 * c - x2 * s).margin(1e-6));
        CHECK(at(e.k, h, t, m + 8) == Approx(x1 * s + x2 * c).margin(1e-6));
      }
}

TEST_CASE("fope: the series differ by head and layer, repeat with the seed, and the padded pairs ignore ids", "[fope]") {
  const IndexArray pos = ids({1, 4, 9});
  Tensor q0 = random({1, 2, 3, 16}, 7);
  // the same vector in both heads: the heads' coefficients differ
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t d = 0; d < 16; ++d) q0.impl()->value(0, 1, t, d) = q0.value()(0, 0, t, d);
  std::unique_ptr<PositionalEncoding> enc;
  const Encoded l0 = encode("fope", {}, 2, 16, 64, pos, q0, q0, &enc, 0);
  const Encoded l1 = encode("fope", {}, 2, 16, 64, pos, q0, q0, &enc, 1);
  const Encoded again = encode("fope", {}, 2, 16, 64, pos, q0, q0, nullptr, 1);
  const Encoded other = encode("fope", {{"seed", Value(std::int64_t(5))}}, 2, 16, 64, pos, q0, q0, nullptr, 1);
  for (std::size_t t = 1; t < 3; ++t) {
    CHECK(at(l0.q, 0, t, 0) != Approx(at(l0.q, 1, t, 0)).margin(1e-4));  // head 0 vs head 1
    CHECK(at(l0.q, 0, t, 0) != Approx(at(l1.q, 0, t, 0)).margin(1e-4));  // layer 0 vs layer 1
    CHECK(at(l1.q, 0, t, 0) == at(again.q, 0, t, 0));                    // a fresh encoding, the same draw
    CHECK(at(l1.q, 0, t, 0) != Approx(at(other.q, 0, t, 0)).margin(1e-4));  // another seed
  }
  // pairs m >= D' = 3: (x1 - x2, x1 + x2) at every position
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t m = 3; m < 8; ++m) {
      CHECK(at(l1.q, 1, t, m) == Approx(at(q0, 1, t, m) - at(q0, 1, t, m + 8)).margin(1e-6));
      CHECK(at(l1.q, 1, t, m + 8) == Approx(at(q0, 1, t, m) + at(q0, 1, t, m + 8)).margin(1e-6));
    }
}

TEST_CASE("pope's phase bias: logit = sum_c mu_q mu_k cos((p_i - p_j) theta_c - delta_c), delta clamped", "[pope]") {
  // base 100, hs 4: theta_c = 100^(-c/4). Deltas inside [-2 pi, 0] and outside (clamped to the bounds).
  const IndexArray pos = ids({0, 3, 8});
  const Tensor q0 = random({1, 2, 3, 4}, 8), k0 = random({1, 2, 3, 4}, 9);
  const std::map<std::string, Value> params = {{"base", Value(100.0)}, {"phase_bias", Value(std::string("zeros"))}};
  std::unique_ptr<PositionalEncoding> enc;
  const Encoded none = encode("pope", {{"base", Value(100.0)}}, 2, 4, 16, pos, q0, k0);
  const Encoded zero = encode("pope", params, 2, 4, 16, pos, q0, k0, &enc, 1);
  for (std::size_t i = 0; i < none.k.numel(); ++i) CHECK(zero.k.data()[i] == Approx(none.k.data()[i]).margin(1e-7));
  const std::vector<double> delta = {-1.0, -7.5, 0.4, -3.0, -0.2, -6.0, 2.0, -4.5};  // layer 1, (H, hs)
  Tensor d = enc->parameter("phase_bias");
  REQUIRE(d.shape() == Shape{2, 2, 4});  // (n_layers, H, hs) of small_config's 2 layers
  for (std::size_t i = 0; i < 8; ++i) d.mutable_data()[8 + i] = static_cast<real>(delta[i]);
  const Encoded e = encode("pope", params, 2, 4, 16, pos, q0, k0, &enc, 1);
  auto softplus = [](double x) { return std::log1p(std::exp(x)); };
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 3; ++j) {
        double want = 0, got = 0;
        for (std::size_t c = 0; c < 4; ++c) {
          const double dc = std::min(0.0, std::max(-2 * kPi, delta[h * 4 + c]));
          const double theta = std::pow(100.0, -double(c) / 4.0);
          want += softplus(at(q0, h, i, c)) * softplus(at(k0, h, j, c)) *
                  std::cos(double(pos(0, i) - pos(0, j)) * theta - dc);
        }
        for (std::size_t c = 0; c < 8; ++c) got += at(e.q, h, i, c) * at(e.k, h, j, c);
        CHECK(got == Approx(want).margin(1e-5));
      }
}
