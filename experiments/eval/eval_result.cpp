#include "experiments/eval/eval_result.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/tensor.hpp"  // Error
#include "training/fs.hpp"

namespace pelab {

using ojson = nlohmann::ordered_json;

std::optional<double> LengthResult::metric(const std::string& name) const {
  auto it = metrics.find(name);
  if (!ok || it == metrics.end()) return std::nullopt;
  return it->second;
}

namespace {

ojson number_or_null(double x) { return std::isfinite(x) ? ojson(x) : ojson(nullptr); }

ojson value_json(const Value& v) {
  return std::visit([](const auto& x) { return ojson(x); }, v);
}

[[noreturn]] void bad(const std::string& file, const std::string& where, const std::string& what) {
  throw Error(file + ": " + where + ": " + what);
}

// Typed access with messages naming the file and the key's path.
struct Reader {
  const std::string& file;

  const ojson& need(const ojson& obj, const char* key, const std::string& where) const {
    auto it = obj.find(key);
    if (it == obj.end()) bad(file, where, std::string("missing key \"") + key + "\"");
    return *it;
  }
  std::size_t count(const ojson& obj, const char* key, const std::string& where, std::size_t min_value) const {
    const ojson& v = need(obj, key, where);
    if (!v.is_number_integer() || v.get<long long>() < static_cast<long long>(min_value))
      bad(file, where + "." + key, "expected an integer >= " + std::to_string(min_value) + ", got " + v.dump());
    return v.get<std::size_t>();
  }
  std::string string(const ojson& obj, const char* key, const std::string& where) const {
    const ojson& v = need(obj, key, where);
    if (!v.is_string()) bad(file, where + "." + key, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  bool boolean(const ojson& obj, const char* key, const std::string& where) const {
    const ojson& v = need(obj, key, where);
    if (!v.is_boolean()) bad(file, where + "." + key, "expected true or false, got " + v.dump());
    return v.get<bool>();
  }
  // null (what a non-finite double is written as) reads back as NaN.
  double number(const ojson& obj, const char* key, const std::string& where) const {
    const ojson& v = need(obj, key, where);
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) bad(file, where + "." + key, "expected a number or null, got " + v.dump());
    return v.get<double>();
  }
  Value value(const ojson& v, const std::string& where) const {
    if (v.is_boolean()) return Value(v.get<bool>());
    if (v.is_number_integer()) return Value(v.get<std::int64_t>());
    if (v.is_number_float()) return Value(v.get<double>());
    if (v.is_string()) return Value(v.get<std::string>());
    bad(file, where, "expected a string, number or bool, got " + v.dump());
  }

  LengthResult length_result(const ojson& e, const std::string& where) const {
    if (!e.is_object()) bad(file, where, "expected an object");
    LengthResult r;
    r.length = count(e, "length", where, 1);
    if (e.contains("len_a") || e.contains("len_b"))  // operand-grid cells
      r.len_a = count(e, "len_a", where, 1), r.len_b = count(e, "len_b", where, 1);
    r.in_distribution = boolean(e, "in_distribution", where);
    if (auto it = e.find("chance"); it != e.end() && !it->is_null()) {  // absent in older files
      if (!it->is_object()) bad(file, where + ".chance", "expected an object of metric -> value, got " + it->dump());
      for (auto c = it->begin(); c != it->end(); ++c) {
        try {
          find_metric(c.key());
        } catch (const Error& err) {
          bad(file, where + ".chance", err.what());
        }
        if (!c->is_number()) bad(file, where + ".chance." + c.key(), "expected a number, got " + c->dump());
        r.chance[c.key()] = c->get<double>();
      }
    }
    const std::string status = string(e, "status", where);
    if (status == "n/a") {
      r.ok = false;
      r.reason = string(e, "reason", where);
      return r;
    }
    if (status != "ok") bad(file, where + ".status", "expected \"ok\" or \"n/a\", got \"" + status + "\"");
    for (const auto& m : metric_table()) {
      auto it = e.find(m.name);
      if (it == e.end() || it->is_null()) continue;  // not reported for this task
      if (!it->is_number()) bad(file, where + "." + m.name, "expected a number or null, got " + it->dump());
      r.metrics[m.name] = it->get<double>();
    }
    r.samples = count(e, "samples", where, 0);
    const ojson& buckets = need(e, "buckets", where);
    if (!buckets.is_array()) bad(file, where + ".buckets", "expected an array");
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      const std::string bw = where + ".buckets[" + std::to_string(i) + "]";
      if (!buckets[i].is_object()) bad(file, bw, "expected an object");
      r.buckets.push_back({count(buckets[i], "from", bw, 0), count(buckets[i], "to", bw, 0),
                           number(buckets[i], "loss", bw)});
    }
    return r;
  }
};

}  // namespace

ojson to_json(const LengthResult& r) {
  ojson j;
  j["length"] = r.length;
  if (r.len_a && r.len_b) j["len_a"] = *r.len_a, j["len_b"] = *r.len_b;
  j["in_distribution"] = r.in_distribution;
  j["status"] = r.ok ? "ok" : "n/a";
  if (!r.chance.empty()) {
    ojson c = ojson::object();
    for (const auto& m : metric_table())
      if (auto it = r.chance.find(m.name); it != r.chance.end()) c[m.name] = it->second;  // finite: 1/k sums and products
    j["chance"] = c;
  }
  if (!r.ok) {
    j["reason"] = r.reason;
    return j;
  }
  for (const auto& m : metric_table()) {
    auto it = r.metrics.find(m.name);
    j[m.name] = it == r.metrics.end() ? ojson(nullptr) : number_or_null(it->second);
  }
  j["samples"] = r.samples;
  ojson b = ojson::array();
  for (const auto& bk : r.buckets) b.push_back({{"from", bk.from}, {"to", bk.to}, {"loss", number_or_null(bk.loss)}});
  j["buckets"] = b;
  return j;
}

OodScore ood_score(const std::vector<LengthResult>& results, std::size_t train_len) {
  OodScore s;
  std::map<std::string, double> sums;
  for (const LengthResult& r : results) {
    if (r.length <= train_len) continue;
    if (!r.ok) {
      ++s.n_a;
      continue;
    }
    s.lengths.push_back(r.length);
    for (const auto& [name, v] : r.metrics) sums[name] += v;
  }
  for (const auto& [name, sum] : sums) s.metrics[name] = sum / double(s.lengths.size());
  return s;
}

ojson to_json(const OodScore& s) {
  ojson j;
  j["lengths"] = s.lengths;
  j["n_a"] = s.n_a;
  for (const auto& m : metric_table())  // the table's order, as per-length results
    if (auto it = s.metrics.find(m.name); it != s.metrics.end()) j[m.name] = number_or_null(it->second);
  return j;
}

ojson to_json(const EvalResult& r) {
  ojson j;
  if (r.cell) j["cell"] = *r.cell;
  j["label"] = r.label;
  ojson a = ojson::object();
  for (const auto& [k, v] : r.assignment) a[k] = value_json(v);
  j["assignment"] = a;
  j["encoding"] = r.encoding;
  j["task"] = r.task;
  j["is_lm"] = r.is_lm;
  j["train_len"] = r.train_len;
  j["seed"] = r.seed;
  j["steps"] = r.steps;
  j["status"] = r.status;
  j["final_train_loss"] = number_or_null(r.final_train_loss);
  j["train_seconds"] = r.train_seconds;
  j["eval_seconds"] = r.eval_seconds;
  j["parameters"] = r.parameters;
  ojson rs = ojson::array();
  for (const auto& x : r.results) rs.push_back(to_json(x));
  j["results"] = rs;
  if (!r.operand_grid.empty()) {
    ojson g = ojson::array();
    for (const auto& x : r.operand_grid) g.push_back(to_json(x));
    j["operand_grid"] = g;
  }
  if (!r.eval_name.empty()) {
    j["eval_name"] = r.eval_name;
    j["eval_settings"] = r.eval_settings;
  }
  j["ood"] = to_json(ood_score(r.results, r.train_len));
  if (!r.provenance.is_null()) j["provenance"] = r.provenance;
  return j;
}

EvalResult eval_result_from_json(const ojson& j, const std::string& file) {
  const Reader rd{file};
  const std::string top = "top level";
  if (!j.is_object()) bad(file, top, "expected a JSON object");
  EvalResult r;
  if (j.contains("cell")) r.cell = rd.count(j, "cell", top, 0);
  r.label = rd.string(j, "label", top);
  const ojson& a = rd.need(j, "assignment", top);
  if (!a.is_object()) bad(file, "assignment", "expected an object of swept key -> value");
  for (auto it = a.begin(); it != a.end(); ++it) r.assignment.emplace_back(it.key(), rd.value(*it, "assignment." + it.key()));
  r.encoding = rd.string(j, "encoding", top);
  r.task = rd.string(j, "task", top);
  r.is_lm = rd.boolean(j, "is_lm", top);
  r.train_len = rd.count(j, "train_len", top, 1);
  const ojson& seed = rd.need(j, "seed", top);
  if (!seed.is_number_unsigned()) bad(file, "top level.seed", "expected an integer >= 0, got " + seed.dump());
  r.seed = seed.get<std::uint64_t>();
  r.steps = rd.count(j, "steps", top, 0);
  r.status = rd.string(j, "status", top);
  r.final_train_loss = rd.number(j, "final_train_loss", top);
  r.train_seconds = rd.number(j, "train_seconds", top);
  r.eval_seconds = rd.number(j, "eval_seconds", top);
  r.parameters = rd.count(j, "parameters", top, 0);
  if (auto p = j.find("provenance"); p != j.end()) {
    if (!p->is_object()) bad(file, "provenance", "expected an object, got " + p->dump());
    r.provenance = *p;
  }
  const ojson& results = rd.need(j, "results", top);
  if (!results.is_array()) bad(file, "results", "expected an array");
  std::set<std::size_t> seen;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const std::string where = "results[" + std::to_string(i) + "]";
    LengthResult lr = rd.length_result(results[i], where);
    if (!seen.insert(lr.length).second) bad(file, where, "length " + std::to_string(lr.length) + " appears twice");
    r.results.push_back(std::move(lr));
  }
  if (auto g = j.find("operand_grid"); g != j.end()) {  // [eval] operand_grid only
    if (!g->is_array()) bad(file, "operand_grid", "expected an array");
    for (std::size_t i = 0; i < g->size(); ++i) {
      const std::string where = "operand_grid[" + std::to_string(i) + "]";
      LengthResult lr = rd.length_result((*g)[i], where);
      if (!lr.len_a) bad(file, where, "expected len_a and len_b");
      r.operand_grid.push_back(std::move(lr));
    }
  }
    if (j.contains("eval_name")) {  // named re-evaluations only
    r.eval_name = rd.string(j, "eval_name", top);
    const ojson& st = rd.need(j, "eval_settings", top);
    if (!st.is_array()) bad(file, "eval_settings", "expected an array of strings");
    for (std::size_t i = 0; i < st.size(); ++i) {
      if (!st[i].is_string()) bad(file, "eval_settings[" + std::to_string(i) + "]", "expected a string, got " + st[i].dump());
      r.eval_settings.push_back(st[i].get<std::string>());
    }
  }
  return r;
}

EvalResult read_eval_result(const std::string& path) {
  ojson j;
  try {
    j = ojson::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": invalid JSON: " + e.what());
  }
  return eval_result_from_json(j, path);
}

}  // namespace pelab
