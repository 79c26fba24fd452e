// embedding: gathered values, scatter-add gradients (repeats accumulate, unused rows exactly zero), errors.
#include "core/ops/embedding.hpp"
#include "gradcheck.hpp"

using namespace pelab;
using pelab::test::gradcheck;
using pelab::test::randn;

namespace {
IndexArray make_ids(const IndexArray::shape_type& s, const std::vector<std::int32_t>& v) {
  IndexArray ids(s);
  REQUIRE(ids.size() == v.size());
  std::copy(v.begin(), v.end(), ids.begin());
  return ids;
}
}  // namespace

TEST_CASE("embedding: gathers rows for ids of any shape", "[embedding]") {
  Rng rng(1);
  Tensor table = randn({5, 3}, rng, 1.0, false);
  const IndexArray ids = make_ids({2, 3}, {4, 0, 2, 2, 1, 4});
  Tensor y = embedding(table, ids);
  REQUIRE(y.shape() == Shape{2, 3, 3});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t d = 0; d < 3; ++d)
        CHECK(y.value()(i, j, d) == table.value()(static_cast<std::size_t>(ids(i, j)), d));
  // 1-D ids and a single 0-d id.
  Tensor v = embedding(table, make_ids({2}, {3, 3}));
  REQUIRE(v.shape() == Shape{2, 3});
  CHECK(v.value()(1, 2) == table.value()(3, 2));
  IndexArray scalar_id(IndexArray::shape_type{});
  scalar_id() = 1;
  Tensor s = embedding(table, scalar_id);
  REQUIRE(s.shape() == Shape{3});
  CHECK(s.value()(0) == table.value()(1, 0));
  // Empty ids give an empty (0, D) result.
  CHECK(embedding(table, IndexArray(IndexArray::shape_type{0})).shape() == Shape{0, 3});
}

TEST_CASE("embedding: gradient scatter-adds into used rows only", "[embedding][grad]") {
  Rng rng(2);
  Tensor table = randn({6, 4}, rng);
  const IndexArray ids = make_ids({2, 3}, {1, 3, 1, 5, 1, 3});  // rows 0, 2, 4 unused
  gradcheck([ids](const std::vector<Tensor>& in) { return embedding(in[0], ids); }, {table});

  table.zero_grad();
  Tensor y = embedding(table, ids);
  Array seed(y.shape());
  for (std::size_t i = 0; i < seed.size(); ++i) seed.data()[i] = real(i + 1);
  y.backward(seed);
  const Array& g = table.grad();
  REQUIRE(g.shape() == table.shape());
  // Row 1 appears at positions 0, 2, 4: its gradient is the sum of those seed rows.
  for (std::size_t d = 0; d < 4; ++d) {
    CHECK(g(1, d) == seed(0, 0, d) + seed(0, 2, d) + seed(1, 1, d));
    CHECK(g(3, d) == seed(0, 1, d) + seed(1, 2, d));
    CHECK(g(5, d) == seed(1, 0, d));
    CHECK(g(0, d) == 0);
    CHECK(g(2, d) == 0);
    CHECK(g(4, d) == 0);
  }
}

TEST_CASE("embedding: bad ids and tables throw naming the op", "[embedding][errors]") {
  Tensor table = Tensor::zeros({20, 2});
  CHECK_THROWS_WITH(embedding(table, make_ids({2, 2}, {0, 1, 19, 25})),
                    "embedding: id 25 at position 3 is out of range for a table of 20 rows");
  CHECK_THROWS_WITH(embedding(table, make_ids({3}, {0, -1, 2})),
                    Catch::Contains("embedding") && Catch::Contains("id -1 at position 1"));
  CHECK_THROWS_WITH(embedding(table, make_ids({1}, {20})), Catch::Contains("id 20"));
  CHECK_THROWS_WITH(embedding(Tensor::zeros({4}), make_ids({1}, {0})),
                    Catch::Contains("embedding") && Catch::Contains("(4,)"));
  CHECK_THROWS_WITH(embedding(Tensor(), make_ids({1}, {0})), Catch::Contains("embedding"));
}
