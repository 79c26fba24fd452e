// Reading a sweep directory (eval.json + metrics.jsonl per run), grouping runs over seeds, and
// assembling summary.csv / summary.md.
#include "experiments/report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/tensor.hpp"
#include "training/fs.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

CellStats cell_stats(const Group& g, std::size_t length, const std::string& metric) {
  CellStats c;
  std::vector<double> xs;
  for (const Run* r : g.runs) {
    for (const LengthResult& lr : r->results) {
      if (lr.length != length) continue;
      if (!c.present) c.in_distribution = lr.in_distribution;
      c.present = true;
      if (!lr.ok) {
        ++c.n_na;
        if (c.reason.empty()) c.reason = lr.reason;
      } else if (auto v = lr.metric(metric)) {
        xs.push_back(*v);
      }
    }
  }
  c.n = static_cast<int>(xs.size());
  if (c.n > 0) {
    double sum = 0;
    for (double x : xs) sum += x;
    c.mean = sum / c.n;
    if (c.n > 1) {
      double ss = 0;
      for (double x : xs) ss += (x - c.mean) * (x - c.mean);
      c.std = std::sqrt(ss / (c.n - 1));
    }
  }
  return c;
}

namespace {

// "run10" after "run9": digit runs compare as numbers, so seed/index order survives directory naming.
bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      std::string da = a.substr(i, ie - i), db = b.substr(j, je - j);
      da.erase(0, std::min(da.find_first_not_of('0'), da.size()));
      db.erase(0, std::min(db.find_first_not_of('0'), db.size()));
      if (da.size() != db.size()) return da.size() < db.size();
      if (da != db) return da < db;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

[[noreturn]] void bad(const std::string& file, const std::string& where, const std::string& what) {
  throw Error(file + ": " + where + ": " + what);
}

const ojson& need(const ojson& obj, const char* key, const std::string& file, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(file, where, std::string("missing key \"") + key + "\"");
  return *it;
}

std::optional<double> opt_number(const ojson& obj, const char* key, const std::string& file,
                                 const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) bad(file, where + "." + key, "expected a number or null, got " + it->dump());
  return it->get<double>();
}

long need_int(const ojson& obj, const char* key, const std::string& file, const std::string& where,
              long min_value) {
  const ojson& v = need(obj, key, file, where);
  if (!v.is_number_integer() || v.get<long long>() < min_value)
    bad(file, where + "." + key, "expected an integer >= " + std::to_string(min_value) + ", got " + v.dump());
  return static_cast<long>(v.get<long long>());
}

std::string need_string(const ojson& obj, const char* key, const std::string& file, const std::string& where) {
  const ojson& v = need(obj, key, file, where);
  if (!v.is_string()) bad(file, where + "." + key, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

ojson parse_json(const std::string& text, const std::string& file, const std::string& where) {
  try {
    return ojson::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(file + ": " + where + "invalid JSON: " + e.what());
  }
}

// Training loss points of a finished run. A missing file is tolerated (no curve); a malformed line is not.
void load_train_loss(const fs::path& run_dir, Run& r) {
  const fs::path path = run_dir / "metrics.jsonl";
  if (!fs::exists(path)) return;
  const std::string file = path.string();
  std::istringstream in(read_file(file));
  std::string line;
  for (long no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "line " + std::to_string(no);
    const ojson j = parse_json(line, file, where + ": ");
    if (!j.is_object()) bad(file, where, "expected a JSON object");
    if (need_string(j, "split", file, where) != "train") continue;
    const long step = need_int(j, "step", file, where, 0);
    const auto loss = opt_number(j, "loss", file, where);
    if (loss && std::isfinite(*loss) && *loss > 0) r.train_loss.emplace_back(step, *loss);
  }
}

Run load_run(const fs::path& run_dir, const std::string& dir_name) {
  Run r;
  static_cast<EvalResult&>(r) = read_eval_result((run_dir / "eval.json").string());
  r.dir_name = dir_name;
  if (r.label.empty()) r.label = dir_name;
  load_train_loss(run_dir, r);
  return r;
}

// Status of a run directory without eval.json; the last metrics line may be half-written, so be lenient.
std::string unfinished_status(const fs::path& run_dir) {
  const fs::path path = run_dir / "metrics.jsonl";
  if (!fs::exists(path)) return "not started (no metrics.jsonl)";
  std::ifstream in(path);
  std::string line;
  long last_step = -1;
  while (std::getline(in, line)) {
    try {
      const ojson j = ojson::parse(line);
      if (j.is_object() && j.contains("step") && j["step"].is_number_integer())
        last_step = static_cast<long>(j["step"].get<long long>());
    } catch (const nlohmann::json::exception&) {
    }
  }
  if (last_step < 0) return "running or interrupted (nothing logged yet)";
  return "running or interrupted (last logged step " + std::to_string(last_step) + ")";
}

constexpr const char* kSeedKey = "train.seed";

void build_groups(Sweep& s) {
  for (const Run& r : s.runs) {
    for (const auto& [k, v] : r.assignment)
      if (k != kSeedKey && std::find(s.group_keys.begin(), s.group_keys.end(), k) == s.group_keys.end())
        s.group_keys.push_back(k);
    for (const LengthResult& lr : r.results) s.lengths.push_back(lr.length);
    (r.is_lm ? s.any_lm : s.any_seq) = true;
  }
  std::sort(s.lengths.begin(), s.lengths.end());
  s.lengths.erase(std::unique(s.lengths.begin(), s.lengths.end()), s.lengths.end());

  // Nothing swept but seeds: group by encoding, shown as an "encoding" column.
  const bool by_encoding = s.group_keys.empty();
  if (by_encoding) s.group_keys = {"encoding"};
  for (const Run& r : s.runs) {
    std::vector<std::string> values;
    for (const std::string& k : s.group_keys) {
      std::string v = by_encoding ? r.encoding : "";
      for (const auto& [rk, rv] : r.assignment)
        if (rk == k) v = label_text(rv);
      values.push_back(v);
    }
    auto it = std::find_if(s.groups.begin(), s.groups.end(), [&](const Group& g) { return g.values == values; });
    if (it == s.groups.end()) {
      Group g;
      g.values = values;
      if (values.size() == 1) {
        g.label = values[0];
      } else {
        for (std::size_t i = 0; i < values.size(); ++i) {
          const std::string& k = s.group_keys[i];
          const std::size_t dot = k.rfind('.');
          g.label += (i ? ", " : "") + k.substr(dot == std::string::npos ? 0 : dot + 1) + "=" + values[i];
        }
      }
      s.groups.push_back(g);
      it = s.groups.end() - 1;
    }
    it->runs.push_back(&r);
  }
}

Sweep load_sweep(const std::string& sweep_dir) {
  Sweep s;
  s.dir = sweep_dir;
  const fs::path root(sweep_dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error(sweep_dir + ": not a directory (expected a sweep directory)");
  if (fs::exists(root / "eval.json")) {  // a single run reported on its own
    s.runs.push_back(load_run(root, root.filename().string()));
  } else {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(root)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_directory() || name.empty() || name[0] == '.' || name == "plots") continue;
      names.push_back(name);
    }
    std::sort(names.begin(), names.end(), natural_less);
    for (const std::string& name : names) {
      if (fs::exists(root / name / "eval.json")) s.runs.push_back(load_run(root / name, name));
      else s.unfinished.push_back({name, unfinished_status(root / name)});
    }
    // Rows follow the grid: the cell index each run wrote (runs without one keep the name order, last).
    std::stable_sort(s.runs.begin(), s.runs.end(), [](const Run& a, const Run& b) {
      return a.cell.value_or(SIZE_MAX) < b.cell.value_or(SIZE_MAX);
    });
  }
  if (s.runs.empty()) {
    std::string msg = "no finished runs in " + sweep_dir + " (no subdirectory holds an eval.json";
    if (!s.unfinished.empty()) msg += "; " + std::to_string(s.unfinished.size()) + " unfinished";
    throw Error(msg + ")");
  }
  build_groups(s);
  return s;
}

std::string resolve_metric(const Sweep& s, const ReportOptions& opt, std::vector<std::string>& warnings) {
  if (opt.metric == "auto") {
    if (s.any_lm && s.any_seq)
      warnings.push_back("sweep mixes language-model and sequence tasks: main metric is " +
                         headline_metric(true, true).name);
    return headline_metric(s.any_lm, s.any_seq).name;
  }
  const MetricSpec* m = nullptr;
  try {
    m = &find_metric(opt.metric);
  } catch (const Error& e) {
    throw Error(std::string("report: ") + e.what() + " (or auto)");
  }
  if (!m->for_lm && !s.any_seq) throw Error("report: " + m->name + " is not reported for language-model runs");
  return m->name;
}

}  // namespace
}  // namespace report_detail

ReportResult write_report(const std::string& sweep_dir, const ReportOptions& opt) {
  using namespace report_detail;
  ReportResult out;
  const Sweep s = load_sweep(sweep_dir);
  const std::string metric = resolve_metric(s, opt, out.warnings);

  // Tables: the chosen metric first, then those the task kinds present show; the CSV has every metric
  // reported, those shown first.
  std::vector<std::string> tables = {metric}, csv_metrics, rest;
  for (const auto& m : metric_table()) {
    const bool shown = (s.any_seq && m.shown_for_sequence) || (s.any_lm && m.shown_for_lm);
    if (shown && m.name != metric) tables.push_back(m.name);
    if (shown) csv_metrics.push_back(m.name);
    else if (s.any_seq || m.for_lm) rest.push_back(m.name);
  }
  csv_metrics.insert(csv_metrics.end(), rest.begin(), rest.end());

  const fs::path root(sweep_dir);
  const std::string csv_path = (root / "summary.csv").string();
  write_file_atomic(csv_path, summary_csv(s, csv_metrics));
  out.files_written.push_back(csv_path);

  std::vector<std::string> pngs;
  if (opt.plots) pngs = write_plots(s, metric, opt, out);

  std::ostringstream md;
  md << "# Sweep report: " << title_line(s) << "\n\n";
  md << s.runs.size() << " finished run(s) in " << s.groups.size() << " group(s)";
  if (!s.unfinished.empty()) md << ", " << s.unfinished.size() << " unfinished";
  md << ". Cells are mean ± sample std over seeds (n runs); accuracies are in percent.\n\n";
  for (std::size_t i = 0; i < tables.size(); ++i) {
    const std::string t = metric_table(s, tables[i]);
    if (i == 0) out.table_markdown = t;
    md << t << "\n";
  }
  if (!s.unfinished.empty()) {
    md << "## Unfinished runs\n\n";
    for (const Unfinished& u : s.unfinished) md << "- `" << u.dir_name << "`: " << u.status << "\n";
    md << "\n";
  }
  if (opt.plots) {
    md << "## Plots\n\n";
    if (pngs.empty()) md << "No plot rendered (see warnings); the gnuplot scripts and data are in `plots/`.\n";
    for (const std::string& p : pngs) {
      const std::string name = fs::path(p).filename().string();
      md << "- [" << name << "](plots/" << name << ") (script: `plots/" << fs::path(p).stem().string()
         << ".gp`)\n";
    }
  }
  const std::string md_path = (root / "summary.md").string();
  write_file_atomic(md_path, md.str());
  out.files_written.push_back(md_path);
  return out;
}

}  // namespace pelab
