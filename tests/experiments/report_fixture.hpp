// Helpers for the report tests: a temporary directory, file I/O, summary.csv parsing, and known
// finished runs written as run.cpp writes them.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "experiments/eval/eval_result.hpp"

namespace pelab::test {

namespace fs = std::filesystem;

struct TempDir {
  fs::path dir;
  TempDir() {
    static int counter = 0;
    dir = fs::temp_directory_path() / ("pelab_report_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

inline void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

using CsvRow = std::map<std::string, std::string>;
// RFC 4180 fields of one line (quoted fields may hold commas and doubled quotes; no newlines here).
inline std::vector<std::string> csv_split(const std::string& l) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (std::size_t i = 0; i < l.size(); ++i) {
    const char c = l[i];
    if (quoted && c == '"' && i + 1 < l.size() && l[i + 1] == '"') f.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) f.emplace_back();
    else f.back() += c;
  }
  return f;
}

inline std::vector<CsvRow> read_csv(const fs::path& p) {
  std::istringstream in(slurp(p));
  std::string line;
  std::vector<std::string> header;
  std::vector<CsvRow> rows;
  auto split = csv_split;
  while (std::getline(in, line)) {
    const auto f = split(line);
    if (header.empty()) {
      header = f;
      continue;
    }
    REQUIRE(f.size() == header.size());
    CsvRow r;
    for (std::size_t i = 0; i < f.size(); ++i) r[header[i]] = f[i];
    rows.push_back(r);
  }
  return rows;
}

inline bool have_gnuplot() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

inline bool is_png(const fs::path& p) {
  const std::string b = slurp(p);
  return b.size() > 100 && b.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

inline bool has_line_containing(const std::string& text, const std::string& a, const std::string& b) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
  return false;
}

// The line of `text` starting with `prefix` ("" when none).
inline std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, prefix.size(), prefix) == 0) return line;
  return "";
}

// The trimmed cells of the first markdown table row after `heading` whose first cell is `label`
// (empty when none).
inline std::vector<std::string> md_row(const std::string& md, const std::string& heading, const std::string& label) {
  const std::size_t at = md.find(heading);
  if (at == std::string::npos) return {};
  std::istringstream in(md.substr(at));
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() < 2 || line[0] != '|') continue;
    std::vector<std::string> cells;
    std::size_t p = 1;
    for (std::size_t q; (q = line.find('|', p)) != std::string::npos; p = q + 1) {
      std::string c = line.substr(p, q - p);
      c.erase(0, c.find_first_not_of(' '));
      c.erase(c.find_last_not_of(' ') + 1);
      cells.push_back(c);
    }
    if (!cells.empty() && cells[0] == label) return cells;
  }
  return {};
}
using Cells = std::vector<std::string>;

inline std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// A finished run with chosen numbers, written as run.cpp writes it (eval.json, metrics.jsonl, config.toml,
// train.log). Lengths without a token_acc entry are n/a.
struct FakeRun {
  std::string task = "copy", encoding = "rope";
  int seed = 1;
  bool lm = false;
  bool sweep_task = false;  // "task.name" is a swept key
  std::size_t train_len = 16;
  std::map<std::size_t, double> acc;        // token_acc per eval length (exact match = acc / 2, loss = 1 - acc)
  std::map<std::size_t, double> chance;     // chance token_acc per length (exact match = its square)
  std::map<std::size_t, std::vector<Bucket>> buckets;  // LM
  std::vector<std::pair<long, double>> held_out;       // (step, token_acc at train_len)
  std::string config = "[train]\nsteps = 600\neval_every = 100\nearly_stop_metric = \"token_acc\"\n"
                       "early_stop_target = 0.9\n";  // "" = no config.toml
  std::string dir_name() const {
    return (sweep_task ? "task.name=" + task + "," : "") + "encoding.name=" + encoding + ",train.seed=" +
           std::to_string(seed);
  }
};

inline EvalResult fake_eval_result(const FakeRun& f, const std::vector<std::size_t>& lengths) {
  EvalResult r;
  r.label = f.dir_name();
  if (f.sweep_task) r.assignment.emplace_back("task.name", Value(f.task));
  r.assignment.emplace_back("encoding.name", Value(f.encoding));
  r.assignment.emplace_back("train.seed", Value(std::int64_t(f.seed)));
  r.encoding = f.encoding;
  r.task = f.task;
  r.is_lm = f.lm;
  r.train_len = f.train_len;
  r.seed = static_cast<std::uint64_t>(f.seed);
  r.steps = f.held_out.empty() ? 100 : static_cast<std::size_t>(f.held_out.back().first);
  r.status = "early_stopped";
  r.train_seconds = 2;
  r.parameters = 1000;
  for (std::size_t len : lengths) {
    LengthResult lr;
    lr.length = len;
    lr.in_distribution = len <= f.train_len;
    if (auto c = f.chance.find(len); c != f.chance.end()) {
      lr.chance["token_acc"] = c->second;
      lr.chance["exact_match"] = c->second * c->second;
    }
    auto a = f.acc.find(len);
    if (a == f.acc.end()) {
      lr.ok = false;
      lr.reason = "position " + std::to_string(len + 2) + " is beyond the table";
    } else {
      lr.metrics["token_acc"] = a->second;
      lr.metrics["loss"] = 1 - a->second;
      if (!f.lm) lr.metrics["exact_match"] = a->second / 2;
      lr.samples = 32;
      if (auto b = f.buckets.find(len); b != f.buckets.end()) lr.buckets = b->second;
    }
    r.results.push_back(lr);
  }
  return r;
}

inline void write_fake_run(const fs::path& sweep, const FakeRun& f, const std::vector<std::size_t>& lengths) {
  using json = nlohmann::ordered_json;
  const fs::path dir = sweep / f.dir_name();
  write(dir / "eval.json", to_json(fake_eval_result(f, lengths)).dump(2));
  std::string m;
  for (long step : {50, 100}) m += json({{"step", step}, {"split", "train"}, {"length", nullptr}, {"loss", 2.0 / step}}).dump() + "\n";
  for (const auto& [step, acc] : f.held_out)
    m += json({{"step", step}, {"split", "eval"}, {"length", f.train_len}, {"loss", 1 - acc}, {"token_acc", acc},
               {"exact_match", nullptr}})
             .dump() +
         "\n";
  write(dir / "metrics.jsonl", m);
  if (!f.config.empty()) write(dir / "config.toml", f.config);
  write(dir / "train.log", "step 100\n");
}

}  // namespace pelab::test
