// Position modes: the ids each mode assigns, their distribution, determinism and bad input.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "training/positions.hpp"

using namespace pelab;

namespace {

Batch empty_batch(std::size_t B, std::size_t T) {
  Batch b;
  b.tokens = IndexArray(Shape{B, T});
  b.tokens.fill(0);
  return b;
}

}  // namespace

TEST_CASE("contiguous ids are 0..T-1 on every row and draw nothing from the RNG", "[positions]") {
  Batch b = empty_batch(3, 7);
  Rng rng(1);
  const Rng::State before = rng.state();
  assign_positions(b, {PositionMode::contiguous, 0}, rng);
  CHECK(rng.state() == before);
  REQUIRE(b.positions.shape() == b.tokens.shape());
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t t = 0; t < 7; ++t) CHECK(b.positions(r, t) == static_cast<std::int32_t>(t));
  CHECK(max_position_id({PositionMode::contiguous, 100}, 7) == 6);
}

TEST_CASE("offset ids are consecutive from a per-row start uniform in [0, max_position - T]", "[positions]") {
  const std::size_t B = 4000, T = 5, M = 12;
  Batch b = empty_batch(B, T);
  Rng rng(2);
  assign_positions(b, {PositionMode::offset, M}, rng);
  std::map<std::int32_t, std::size_t> starts;
  for (std::size_t r = 0; r < B; ++r) {
    const std::int32_t s = b.positions(r, 0);
    REQUIRE(s >= 0);
    REQUIRE(static_cast<std::size_t>(s) <= M - T);
    for (std::size_t t = 1; t < T; ++t) REQUIRE(b.positions(r, t) == s + static_cast<std::int32_t>(t));
    ++starts[s];
  }
  REQUIRE(starts.size() == M - T + 1);  // every start, including both ends, occurs
  for (const auto& [s, n] : starts) {
    INFO("start " << s << " drawn " << n << " times of " << B);
    CHECK(n > B / (M - T + 1) * 3 / 4);  // 500 expected: a gross bias would show
    CHECK(n < B / (M - T + 1) * 5 / 4);
  }
  CHECK(max_position_id({PositionMode::offset, M}, T) == static_cast<std::int64_t>(M) - 1);
}

TEST_CASE("randomized ids are T distinct sorted ids per row, each id equally likely", "[positions]") {
  const std::size_t B = 6000, T = 6, M = 20;
  Batch b = empty_batch(B, T);
  Rng rng(3);
  assign_positions(b, {PositionMode::randomized, M}, rng);
  std::vector<std::size_t> count(M, 0);
  std::set<std::vector<std::int32_t>> rows;
  for (std::size_t r = 0; r < B; ++r) {
    std::vector<std::int32_t> row;
    for (std::size_t t = 0; t < T; ++t) {
      const std::int32_t p = b.positions(r, t);
      REQUIRE(p >= 0);
      REQUIRE(static_cast<std::size_t>(p) < M);
      if (t > 0) REQUIRE(p > b.positions(r, t - 1));  // sorted and distinct
      ++count[static_cast<std::size_t>(p)];
      row.push_back(p);
    }
    rows.insert(row);
  }
  CHECK(rows.size() > B / 2);  // rows differ (38760 subsets exist)
  const double expected = double(B) * T / M;  // 1800 per id
  for (std::size_t p = 0; p < M; ++p) {
    INFO("id " << p << " drawn " << count[p] << " times, expected " << expected);
    CHECK(count[p] > 0.9 * expected);
    CHECK(count[p] < 1.1 * expected);
  }
  // T = M leaves one choice: all ids
  Batch full = empty_batch(2, 9);
  assign_positions(full, {PositionMode::randomized, 9}, rng);
  for (std::size_t t = 0; t < 9; ++t) CHECK(full.positions(1, t) == static_cast<std::int32_t>(t));
}

TEST_CASE("position ids are deterministic in the RNG state and overwrite what the task filled", "[positions]") {
  for (PositionMode mode : {PositionMode::offset, PositionMode::randomized}) {
    INFO(position_mode_name(mode));
    Batch a = empty_batch(5, 8), b = empty_batch(5, 8), c = empty_batch(5, 8);
    b.positions = IndexArray(Shape{5, 8});
    b.positions.fill(77);
    Rng r1(9), r2(9), r3(10);
    assign_positions(a, {mode, 50}, r1);
    assign_positions(b, {mode, 50}, r2);
    assign_positions(c, {mode, 50}, r3);
    const bool same = a.positions == b.positions, other = a.positions == c.positions;
    CHECK(same);
    CHECK(r1.state() == r2.state());
    CHECK_FALSE(other);
  }
}

TEST_CASE("position modes reject a range shorter than the batch and unknown names", "[positions]") {
  Batch b = empty_batch(2, 10);
  Rng rng(4);
  for (PositionMode mode : {PositionMode::offset, PositionMode::randomized}) {
    CHECK_THROWS_WITH(assign_positions(b, {mode, 9}, rng),
                      Catch::Contains("max_position 9") && Catch::Contains("batch length 10"));
    CHECK_THROWS_WITH(assign_positions(b, {mode, 0}, rng), Catch::Contains("max_position 0"));
    CHECK_NOTHROW(assign_positions(b, {mode, 10}, rng));
  }
  CHECK_NOTHROW(assign_positions(b, {PositionMode::contiguous, 0}, rng));  // the range is unused
  CHECK(parse_position_mode("offset") == PositionMode::offset);
  CHECK_THROWS_WITH(parse_position_mode("random"),
                    Catch::Contains("'random'") && Catch::Contains("contiguous, offset, randomized"));
}
