// Metrics: token statistics of a batch, and the metrics.jsonl writer (fixed keys, one object per line).
#pragma once

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "training/batch.hpp"

namespace pelab {

// Greedy (argmax) predictions scored on the counted targets of a batch.
struct TokenStats {
  double loss_sum = 0;        // sum of masked nll (filled by the caller when known)
  std::size_t counted = 0;    // targets with mask > 0
  std::size_t correct = 0;    // of those, argmax == target
  std::size_t rows = 0;       // sequences with an answer span
  std::size_t rows_exact = 0; // sequences whose every counted target is predicted
  void add(const TokenStats& o);
  double token_acc() const { return counted ? double(correct) / double(counted) : 0.0; }
  double exact_match() const { return rows ? double(rows_exact) / double(rows) : 0.0; }
};
// logits (B, T, V). Exact match under teacher forcing equals exact match under greedy decoding: if every
// answer token is the argmax given the true prefix, greedy decoding reproduces the true answer token by
// token, and conversely. So one forward pass gives it.
TokenStats token_stats(const Array& logits, const Batch& batch);

// One length of a held-out evaluation's "beyond" list: a small fixed sample at an eval length above
// the training length, measured during training.
struct LengthMetrics {
  std::size_t length = 0;
  std::size_t samples = 0;                // 0: not evaluated (the encoding cannot represent the length)
  std::map<std::string, double> metrics;  // by metric name; empty when samples is 0
};

// One metrics.jsonl line. Keys are fixed (every registered metric, training/metrics_table.hpp, in list order):
// absent values are written as null. A held-out evaluation during training may add "beyond" (after
// "time"): [{"length", "samples", then every metric in list order}, ...]; it is left out when empty, so
// lines without it read exactly as before.
struct MetricRecord {
  std::size_t step = 0;
  std::string split = "train";  // "train" | "eval"
  std::optional<std::size_t> length;
  std::map<std::string, double> metrics;  // by metric name (MetricValues)
  std::optional<double> lr, grad_norm, tokens_per_s;
  double time = 0;  // seconds since the run started (accumulated across resumes)
  std::vector<LengthMetrics> beyond;  // ascending length ([eval] beyond_samples)
};
std::string to_json_line(const MetricRecord& r);

class MetricsWriter {
 public:
  MetricsWriter() = default;
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  // Opens path for appending; with keep_up_to_step set, first drops records past that step (a resumed
  // run re-logs the steps after its checkpoint), rewriting the file atomically.
  void open(const std::string& path, std::optional<std::size_t> keep_up_to_step = std::nullopt);
  void write(const MetricRecord& r);  // one line, flushed

 private:
  std::FILE* f_ = nullptr;
};

}  // namespace pelab
