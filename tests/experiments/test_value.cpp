// Values: the one printer (format_value, TOML literals) and the one reader of values as text
// (parse_value_text) agree, and the metric table drives computation and direction.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/params/value.hpp"
#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "training/metrics_table.hpp"

using namespace pelab;

TEST_CASE("format_value writes TOML literals") {
  CHECK(format_value(Value(true)) == "true");
  CHECK(format_value(Value(std::int64_t(-42))) == "-42");
  CHECK(format_value(Value(1.0)) == "1.0");         // a TOML float keeps its '.'
  CHECK(format_value(Value(0.1)) == "0.1");         // shortest text, not 0.1000000000000000055
  CHECK(format_value(Value(3e-3)) == "0.003");
  CHECK(format_value(Value(10000.0)) == "10000.0");
  CHECK(format_value(Value(1e-8)) == "1e-08");
  CHECK(format_value(Value(1e20)) == "1e+20");
  CHECK(format_value(Value(std::string("a \"b\"\\\n"))) == "\"a \\\"b\\\"\\\\\\n\"");
  CHECK(label_text(Value(std::string("rope"))) == "rope");
  CHECK(label_text(Value(0.5)) == "0.5");
}

TEST_CASE("parse_value_text reads what format_value writes") {
  Rng rng(5);
  std::vector<Value> values;
  values.reserve(64);  // (no reallocation: GCC 12 -O3 warns spuriously about moving variants)
  for (bool b : {false, true}) values.emplace_back(b);
  for (std::int64_t i : {std::int64_t(0), std::int64_t(-7), std::int64_t(1234567890123)}) values.emplace_back(i);
  for (double d : {0.0, -2.5, 1e-300, 123456789.125}) values.emplace_back(d);
  for (const char* t : {"x y", "tab\there \"q\""}) values.emplace_back(std::string(t));
  for (int i = 0; i < 50; ++i) values.emplace_back(std::ldexp(rng.uniform() - 0.5, int(rng.below(80)) - 40));
  for (const Value& v : values) {
    INFO(format_value(v));
    const ValueText t = parse_value_text(format_value(v));
    CHECK_FALSE(t.array);
    REQUIRE(t.values.size() == 1);
    CHECK(t.values[0] == v);
  }
}

TEST_CASE("parse_value_text: bare words, arrays and errors") {
  CHECK(parse_value_text("rope").values == std::vector<Value>{Value(std::string("rope"))});
  CHECK(parse_value_text("1e-3").values == std::vector<Value>{Value(1e-3)});
  const ValueText a = parse_value_text("[\"none\", 2, true]");
  CHECK(a.array);
  CHECK(a.values == std::vector<Value>{Value(std::string("none")), Value(std::int64_t(2)), Value(true)});
  CHECK_THROWS_WITH(parse_value_text("[1,"), Catch::StartsWith("value is not valid TOML"));
  CHECK_THROWS_WITH(parse_value_text("[none]"), Catch::Contains("quote strings inside arrays"));
  CHECK_THROWS_WITH(parse_value_text("{a = 1}"), Catch::StartsWith("expected a boolean, integer, number or string"));
  CHECK_THROWS_WITH(parse_value_text("[[1]]"), Catch::StartsWith("arrays hold single values"));
  CHECK_THROWS_WITH(parse_value_text(""), Catch::StartsWith("missing value"));
}

TEST_CASE("the metric table computes, names and orders the metrics") {
  const TokenStats s{2.0, 8, 6, 4, 1};  // loss_sum, counted, correct, rows, rows_exact
  const MetricValues seq = compute_metrics(s, false), lm = compute_metrics(s, true);
  CHECK(seq.at("loss") == 0.25);
  CHECK(seq.at("token_acc") == 0.75);
  CHECK(seq.at("exact_match") == 0.25);
  CHECK(lm.at("loss") == 0.25);
  CHECK(lm.at("token_acc") == 0.75);
  CHECK(lm.count("exact_match") == 0);  // no exact match for language models
  // The built-ins in their order (files and tables list metrics so); a test may register more.
  std::vector<std::string> builtins;
  for (const auto& n : metric_names())
    if (n == "loss" || n == "token_acc" || n == "exact_match") builtins.push_back(n);
  CHECK(builtins == std::vector<std::string>{"loss", "token_acc", "exact_match"});
  CHECK(find_metric("token_acc").percent);
  CHECK(find_metric("loss").lower_is_better);
  CHECK(reaches(find_metric("loss"), 0.1, 0.2));
  CHECK_FALSE(reaches(find_metric("token_acc"), 0.1, 0.2));
  CHECK(headline_metric(false, true).name == "token_acc");
  CHECK(headline_metric(true, false).name == "loss");
  CHECK(headline_metric(true, true).name == "loss");
  CHECK_THROWS_WITH(find_metric("acc"), Catch::StartsWith("unknown metric 'acc'") && Catch::Contains("token_acc"));
}
