// The model's fast paths against what they replace.
#include <catch2/catch.hpp>

#include "core/rng.hpp"
#include "layers/positional/encoding.hpp"

using namespace pelab;

TEST_CASE("an encoding that says it leaves q and k alone does nothing to them in encode_qk", "[fast_paths][positional]") {
  // The transformer skips the head split (and encode_qk) for these encodings.
  ModelDims dims;
  dims.vocab = 11;
  dims.d_model = 12;
  dims.n_heads = 3;
  dims.head_dim = 4;
  dims.n_layers = 2;
  dims.train_seq_len = 6;
  Rng rng(3);
  int claiming = 0;
  for (const std::string& name : EncodingRegistry::instance().names()) {
    INFO(name);
    auto enc = make_encoding(name, resolve_encoding_params(name, {}, dims), dims);
    if (!enc->leaves_qk_alone()) continue;
    ++claiming;
    const IndexArray pos = default_positions(2, 6);
    enc->begin_forward(pos);
    Array qa(Shape{2, 3, 6, 4}), ka(Shape{2, 3, 6, 4});
    for (auto& v : qa) v = static_cast<real>(rng.normal());
    for (auto& v : ka) v = static_cast<real>(rng.normal());
    Tensor q(qa, true), k(ka, true);
    const Tensor q0 = q, k0 = k;
    for (std::size_t layer = 0; layer < dims.n_layers; ++layer) enc->encode_qk(q, k, pos, layer);
    CHECK(q.impl() == q0.impl());
    CHECK(k.impl() == k0.impl());
    CHECK(q.version() == 0);
    CHECK(k.version() == 0);
  }
  CHECK(claiming >= 1);
}
