#include "training/metrics.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "training/fs.hpp"
#include "training/metrics_table.hpp"

namespace pelab {

void TokenStats::add(const TokenStats& o) {
  loss_sum += o.loss_sum;
  counted += o.counted;
  correct += o.correct;
  rows += o.rows;
  rows_exact += o.rows_exact;
}

TokenStats token_stats(const Array& logits, const Batch& batch) {
  const std::size_t B = batch.batch(), T = batch.length();
  if (logits.dimension() != 3 || logits.shape()[0] != B || logits.shape()[1] != T)
    throw Error("token_stats: logits " + shape_str(logits.shape()) + " do not match the batch (" +
                std::to_string(B) + ", " + std::to_string(T) + ")");
  const std::size_t V = logits.shape()[2];
  TokenStats s;
  const real* pl = logits.data();
  const std::int32_t* pt = batch.targets.data();
  const real* pm = batch.mask.data();
  for (std::size_t b = 0; b < B; ++b) {
    bool all = true, any = false;
    for (std::size_t t = 0; t < T; ++t) {
      const std::size_t r = b * T + t;
      if (pm[r] <= 0) continue;
      const real* row = pl + r * V;
      std::size_t arg = 0;
      for (std::size_t v = 1; v < V; ++v)
        if (row[v] > row[arg]) arg = v;
      const bool ok = static_cast<std::int32_t>(arg) == pt[r];
      ++s.counted;
      s.correct += ok;
      all = all && ok;
      any = true;
    }
    if (any && !batch.answer_begin.empty()) {
      ++s.rows;
      s.rows_exact += all;
    }
  }
  return s;
}

std::string to_json_line(const MetricRecord& r) {
  nlohmann::ordered_json j;
  auto opt = [](const std::optional<double>& v) -> nlohmann::ordered_json {
    if (!v || !std::isfinite(*v)) return nullptr;
    return *v;
  };
  j["step"] = r.step;
  j["split"] = r.split;
  j["length"] = r.length ? nlohmann::ordered_json(*r.length) : nlohmann::ordered_json(nullptr);
  for (const auto& m : metric_table()) {
    auto it = r.metrics.find(m.name);
    j[m.name] = opt(it == r.metrics.end() ? std::nullopt : std::optional<double>(it->second));
  }
  j["lr"] = opt(r.lr);
  j["grad_norm"] = opt(r.grad_norm);
  j["tokens_per_s"] = opt(r.tokens_per_s);
  j["time"] = r.time;
  if (r.beyond.empty()) return j.dump();
  nlohmann::ordered_json beyond = nlohmann::ordered_json::array();
  for (const LengthMetrics& l : r.beyond) {
    nlohmann::ordered_json b;
    b["length"] = l.length;
    b["samples"] = l.samples;
    for (const auto& m : metric_table()) {
      auto it = l.metrics.find(m.name);
      b[m.name] = opt(it == l.metrics.end() ? std::nullopt : std::optional<double>(it->second));
    }
    beyond.push_back(b);
  }
  j["beyond"] = beyond;
  return j.dump();
}

MetricsWriter::~MetricsWriter() {
  if (f_) std::fclose(f_);
}

void MetricsWriter::open(const std::string& path, std::optional<std::size_t> keep_up_to_step) {
  if (f_) std::fclose(f_), f_ = nullptr;
  if (keep_up_to_step) {
    std::ifstream in(path);
    std::ostringstream kept;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      try {
        if (nlohmann::json::parse(line).at("step").get<std::size_t>() <= *keep_up_to_step) kept << line << '\n';
      } catch (const std::exception&) {
        // a torn last line from a killed run: drop it
      }
    }
    write_file_atomic(path, kept.str());
  }
  f_ = std::fopen(path.c_str(), "a");
  if (!f_) throw Error("cannot open metrics file " + path + " for appending");
}

void MetricsWriter::write(const MetricRecord& r) {
  if (!f_) throw Error("MetricsWriter: not open");
  const std::string line = to_json_line(r) + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace pelab
