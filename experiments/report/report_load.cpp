// Reading a sweep directory: each run's eval.json, metrics.jsonl (training loss, held-out evaluations),
// config.toml (verbatim, and the [train] settings the report needs) and probe/ files; grouping runs
// over seeds.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "core/tensor.hpp"
#include "experiments/eval/eval_named.hpp"
#include "experiments/report/report_detail.hpp"
#include "training/fs.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

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

namespace {

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

MetricValues metric_values(const ojson& obj, const std::string& file, const std::string& where) {
  MetricValues out;
  for (const auto& m : metric_table())
    if (auto v = opt_number(obj, m.name.c_str(), file, where); v && std::isfinite(*v)) out[m.name] = *v;
  return out;
}

// A held-out record's "beyond" list (absent in runs from before it): per length above train_len, the
// metrics of its small sample; lengths not evaluated (samples 0) are left out.
void load_beyond(const ojson& j, HeldOut& h, Run& r, const std::string& file, const std::string& where) {
  auto it = j.find("beyond");
  if (it == j.end() || it->is_null()) return;
  if (!it->is_array()) bad(file, where + ".beyond", "expected an array, got " + it->dump());
  h.beyond_recorded = true;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const ojson& b = (*it)[i];
    const std::string at = where + ".beyond[" + std::to_string(i) + "]";
    if (!b.is_object()) bad(file, at, "expected an object, got " + b.dump());
    const auto length = static_cast<std::size_t>(need_int(b, "length", file, at, 1));
    const auto samples = static_cast<std::size_t>(need_int(b, "samples", file, at, 0));
    if (samples == 0) continue;
    h.beyond[length] = metric_values(b, file, at);
    r.beyond_samples = std::max(r.beyond_samples, samples);
  }
}

// Steps whose held-out record has no "beyond" (the final evaluation, when no periodic one ran at its
// step) take the lengths the run tracked from the final evaluation's records at that step.
void fill_beyond_from_final(Run& r, const std::map<long, std::map<std::size_t, MetricValues>>& final_records) {
  std::set<std::size_t> tracked;
  for (const HeldOut& h : r.held_out)
    for (const auto& [len, m] : h.beyond) tracked.insert(len);
  for (HeldOut& h : r.held_out) {
    const auto at = final_records.find(h.step);
    if (h.beyond_recorded || at == final_records.end()) continue;
    for (const auto& [len, m] : at->second)
      if (tracked.count(len)) h.beyond[len] = m;
  }
}

// Training loss points and held-out evaluations (at train_len) of a finished run. A missing file is
// tolerated (no curves); a malformed line is not.
void load_metrics(const fs::path& run_dir, Run& r) {
  const fs::path path = run_dir / "metrics.jsonl";
  if (!fs::exists(path)) return;
  const std::string file = path.string();
  std::istringstream in(read_file(file));
  std::string line;
  std::map<long, std::map<std::size_t, MetricValues>> other_lengths;  // eval records off train_len, by step
  for (long no = 1; std::getline(in, line); ++no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "line " + std::to_string(no);
    const ojson j = parse_json(line, file, where + ": ");
    if (!j.is_object()) bad(file, where, "expected a JSON object");
    const std::string split = need_string(j, "split", file, where);
    const long step = need_int(j, "step", file, where, 0);
    if (split == "train") {
      const auto loss = opt_number(j, "loss", file, where);
      if (loss && std::isfinite(*loss) && *loss > 0) r.train_loss.emplace_back(step, *loss);
      continue;
    }
    if (split != "eval") continue;
    auto len = j.find("length");
    if (len == j.end() || len->is_null()) continue;
    if (!len->is_number_integer() || len->get<long long>() < 1)
      bad(file, where + ".length", "expected an integer >= 1 or null, got " + len->dump());
    const auto length = static_cast<std::size_t>(len->get<long long>());
    if (length != r.train_len) {
      if (length > r.train_len) other_lengths[step].emplace(length, metric_values(j, file, where));
      continue;
    }
    // The final evaluation repeats the last periodic one at the same step: keep the first.
    if (std::any_of(r.held_out.begin(), r.held_out.end(), [&](const HeldOut& h) { return h.step == step; })) continue;
    HeldOut h;
    h.step = step;
    h.metrics = metric_values(j, file, where);
    load_beyond(j, h, r, file, where);
    r.held_out.push_back(h);
  }
  std::stable_sort(r.held_out.begin(), r.held_out.end(),
                   [](const HeldOut& a, const HeldOut& b) { return a.step < b.step; });
  fill_beyond_from_final(r, other_lengths);
}

// The [train] keys the report reads; a config.toml that is not TOML is an error naming it.
// RunSettings::features of a run's config: [attention] qk_norm unless "off", [canon] points unless "".
std::string feature_label(const toml::table& root) {
  std::string out;
  const std::string qk = root["attention"]["qk_norm"].value_or<std::string>("off");
  if (qk != "off") out += " + QK-norm " + qk;
  const std::string points = root["canon"]["points"].value_or<std::string>("");
  if (points.empty()) return out;
  const std::int64_t kernel = root["canon"]["kernel"].value_or<std::int64_t>(4);
  const bool residual = root["canon"]["residual"].value_or(true);
  std::string extra = kernel != 4 ? "kernel " + std::to_string(kernel) : "";
  if (!residual) extra += (extra.empty() ? "" : ", ") + std::string("no residual");
  return out + " + Canon " + points + (extra.empty() ? "" : " (" + extra + ")");
}

RunSettings load_settings(const std::string& file, const std::string& text) {
  RunSettings st;
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw Error(file + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) +
                ": TOML syntax error: " + std::string(e.description()));
  }
  st.known = true;
  st.features = feature_label(root);
  const auto train = root["train"];
  st.steps = static_cast<std::size_t>(std::max<std::int64_t>(0, train["steps"].value_or<std::int64_t>(0)));
  st.eval_every = static_cast<std::size_t>(std::max<std::int64_t>(0, train["eval_every"].value_or<std::int64_t>(0)));
  st.early_stop_metric = train["early_stop_metric"].value_or<std::string>("");
  st.early_stop_target = train["early_stop_target"].value_or<double>(0.0);
  if (!st.early_stop_metric.empty()) {
    try {
      find_metric(st.early_stop_metric);
    } catch (const Error& e) {
      throw Error(file + ": train.early_stop_metric: " + e.what());
    }
  }
  return st;
}

std::vector<std::string> present_files(const fs::path& run_dir, const std::string& rel_dir) {
  std::vector<std::string> out;
  for (const char* f : {"config.toml", "train.log", "metrics.jsonl", "eval.json", "stdout.log"})
    if (fs::is_regular_file(run_dir / f)) out.push_back(rel_dir.empty() ? f : rel_dir + "/" + f);
  return out;
}

// RUN/probe/NAME.png with NAME.json / NAME.csv beside it. An unreadable JSON only loses its title.
std::vector<ProbeFile> load_probes(const fs::path& run_dir, const std::string& rel_dir) {
  std::vector<ProbeFile> out;
  const fs::path dir = run_dir / kProbeDir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  const std::string rel = (rel_dir.empty() ? "" : rel_dir + "/") + kProbeDir + "/";
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.path().extension() != ".png") continue;
    ProbeFile p;
    p.name = e.path().stem().string();
    if (p.name.empty() || p.name[0] == '.') continue;
    p.png = rel + p.name + ".png";
    p.title = p.name;
    if (fs::is_regular_file(dir / (p.name + ".csv"))) p.csv = rel + p.name + ".csv";
    if (fs::is_regular_file(dir / (p.name + ".json"))) {
      p.json = rel + p.name + ".json";
      try {
        const ojson j = ojson::parse(read_file((dir / (p.name + ".json")).string()));
        if (j.is_object() && j.contains("title") && j["title"].is_string() && !j["title"].get<std::string>().empty())
          p.title = j["title"].get<std::string>();
      } catch (const std::exception&) {
      }
    }
    out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const ProbeFile& a, const ProbeFile& b) { return natural_less(a.name, b.name); });
  return out;
}

std::string config_text(const fs::path& run_dir) {
  const fs::path p = run_dir / "config.toml";
  return fs::is_regular_file(p) ? read_file(p.string()) : "";
}

Run load_run(const fs::path& run_dir, const std::string& dir_name, const std::string& rel_dir) {
  Run r;
  static_cast<EvalResult&>(r) = read_eval_result((run_dir / "eval.json").string());
  r.dir_name = dir_name;
  r.rel_dir = rel_dir;
  if (r.label.empty()) r.label = dir_name;
  load_metrics(run_dir, r);
  r.config_toml = config_text(run_dir);
  if (!r.config_toml.empty()) r.settings = load_settings((run_dir / "config.toml").string(), r.config_toml);
  r.probes = load_probes(run_dir, rel_dir);
  r.files = present_files(run_dir, rel_dir);
  return r;
}

// A run and its named re-evaluations (RUN/eval-NAME.json, `pelab eval --name`), each one more row: the
// same run with the swept key "eval" = NAME, the training's own evaluation "trained".
void load_run_with_evals(const fs::path& run_dir, const std::string& dir_name, const std::string& rel_dir,
                         std::vector<Run>& out) {
  Run base = load_run(run_dir, dir_name, rel_dir);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(run_dir))
    if (e.is_regular_file())
      if (std::string n = named_eval_of(e.path().filename().string()); !n.empty()) names.push_back(n);
  std::sort(names.begin(), names.end(), natural_less);
  if (!names.empty()) base.assignment.emplace_back("eval", Value(std::string("trained")));
  out.push_back(base);
  for (const auto& n : names) {
    Run r = base;
    const EvalResult e = read_eval_result(named_eval_path(run_dir.string(), n));
    r.results = e.results;
    r.eval_seconds = e.eval_seconds;
    r.eval_name = n;
    r.eval_settings = e.eval_settings;
    r.assignment.back().second = Value(n);
    r.label = base.label + " [eval " + n + "]";
    out.push_back(r);
  }
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

void build_groups(Sweep& s) {
  for (const Run& r : s.runs) {
    for (const auto& [k, v] : r.assignment)
      if (k != kSeedKey && std::find(s.group_keys.begin(), s.group_keys.end(), k) == s.group_keys.end())
        s.group_keys.push_back(k);
    for (const LengthResult& lr : r.results) s.lengths.push_back(lr.length);
    if (std::find(s.tasks.begin(), s.tasks.end(), r.task) == s.tasks.end()) s.tasks.push_back(r.task);
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
      std::string v = by_encoding ? r.encoding + r.settings.features : "";
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
        const std::vector<std::string> names = short_key_names(s.group_keys);
        for (std::size_t i = 0; i < values.size(); ++i) g.label += (i ? ", " : "") + names[i] + "=" + values[i];
      }
      s.groups.push_back(g);
      it = s.groups.end() - 1;
    }
    it->runs.push_back(&r);
  }
}

}  // namespace

// Legend names of the sweep keys: the last component ("train.seed" -> "seed"), the section for a key
// that ends in "name" ("task.name" -> "task", "encoding.name" -> "encoding"), the whole key where two
// of them would still read the same.
std::vector<std::string> short_key_names(const std::vector<std::string>& keys) {
  std::vector<std::string> names;
  for (const std::string& k : keys) {
    std::vector<std::string> parts;
    for (std::size_t start = 0;;) {
      const std::size_t dot = k.find('.', start);
      parts.push_back(k.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    names.push_back(parts.size() >= 2 && parts.back() == "name" ? parts[parts.size() - 2] : parts.back());
  }
  std::vector<bool> clash(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) clash[i] = std::count(names.begin(), names.end(), names[i]) > 1;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (clash[i]) names[i] = keys[i];
  return names;
}

Sweep load_sweep(const std::string& sweep_dir) {
  Sweep s;
  s.dir = sweep_dir;
  const fs::path root(sweep_dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error(sweep_dir + ": not a directory (expected a sweep directory)");
  if (fs::exists(root / "eval.json")) {  // a single run reported on its own
    fs::path norm = fs::absolute(root).lexically_normal();
    if (norm.filename().empty()) norm = norm.parent_path();  // "run/" names "run"
    load_run_with_evals(root, norm.filename().string(), "", s.runs);
  } else {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(root)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_directory() || name.empty() || name[0] == '.' || name == "plots") continue;
      names.push_back(name);
    }
    std::sort(names.begin(), names.end(), natural_less);
    for (const std::string& name : names) {
      if (fs::exists(root / name / "eval.json")) {
        load_run_with_evals(root / name, name, name, s.runs);
      } else {
        Unfinished u{name, unfinished_status(root / name), name, config_text(root / name), {}};
        u.files = present_files(root / name, name);
        s.unfinished.push_back(u);
      }
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

}  // namespace report_detail
}  // namespace pelab
