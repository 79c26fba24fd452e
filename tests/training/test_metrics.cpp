// metrics.jsonl lines: fixed keys in a fixed order, and a held-out record's "beyond" list (the eval
// lengths above training) after them, left out when empty so that other lines read as before.
#include <catch2/catch.hpp>

#include <string>

#include "training/metrics.hpp"

using namespace pelab;

TEST_CASE("metrics.jsonl: a record without beyond has the fixed keys only", "[metrics][beyond]") {
  MetricRecord r;
  r.step = 250;
  r.split = "eval";
  r.length = 16;
  r.metrics = {{"loss", 0.5}, {"token_acc", 0.75}, {"exact_match", 0.25}};
  r.time = 1.5;
  CHECK(to_json_line(r) ==
        "{\"step\":250,\"split\":\"eval\",\"length\":16,\"loss\":0.5,\"token_acc\":0.75,\"exact_match\":0.25,"
        "\"lr\":null,\"grad_norm\":null,\"tokens_per_s\":null,\"time\":1.5}");
}

TEST_CASE("metrics.jsonl: beyond lists each length with its samples and every metric, null when not evaluated",
          "[metrics][beyond]") {
  MetricRecord r;
  r.step = 250;
  r.split = "eval";
  r.length = 16;
  r.metrics = {{"loss", 0.5}, {"token_acc", 0.75}, {"exact_match", 0.25}};
  r.time = 1.5;
  LengthMetrics at24;
  at24.length = 24;
  at24.samples = 64;
  at24.metrics = {{"token_acc", 0.5}, {"loss", 2.0}};  // a language model's: no exact match
  LengthMetrics at32;
  at32.length = 32;  // n/a: not evaluated
  r.beyond = {at24, at32};
  CHECK(to_json_line(r) ==
        "{\"step\":250,\"split\":\"eval\",\"length\":16,\"loss\":0.5,\"token_acc\":0.75,\"exact_match\":0.25,"
        "\"lr\":null,\"grad_norm\":null,\"tokens_per_s\":null,\"time\":1.5,\"beyond\":["
        "{\"length\":24,\"samples\":64,\"loss\":2.0,\"token_acc\":0.5,\"exact_match\":null},"
        "{\"length\":32,\"samples\":0,\"loss\":null,\"token_acc\":null,\"exact_match\":null}]}");
}
