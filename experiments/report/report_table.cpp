// summary.csv rows and the per-length metric tables (a Table, drawn as markdown and HTML).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "experiments/report/report_detail.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {

CellStats cell_stats(const Group& g, std::size_t length, const std::string& metric) {
  CellStats c;
  std::vector<double> xs;
  for (const Run* r : g.runs) {
    for (const LengthResult& lr : r->results) {
      if (lr.length != length) continue;
      if (!c.present) c.in_distribution = lr.in_distribution;
      c.present = true;
      if (!c.chance)
        if (auto it = lr.chance.find(metric); it != lr.chance.end()) c.chance = it->second;
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
    const MeanStd m = mean_std(xs);
    c.mean = m.mean, c.std = m.std;
  }
  return c;
}

MeanStd mean_std(const std::vector<double>& xs) {
  MeanStd m;
  double sum = 0;
  for (double x : xs) sum += x;
  m.mean = sum / double(xs.size());
  if (xs.size() > 1) {
    double ss = 0;
    for (double x : xs) ss += (x - m.mean) * (x - m.mean);
    m.std = std::sqrt(ss / double(xs.size() - 1));
  }
  return m;
}

std::string mean_std_cell(const MeanStd& m, const std::function<std::string(double)>& number, const std::string& count) {
  return number(m.mean) + " ± " + number(m.std) + (count.empty() ? "" : " (" + count + ")");
}

namespace {

std::string num(double x, const char* fmt) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

// Losses span orders of magnitude: fixed decimals when readable, scientific when tiny.
std::string loss_text(double x) {
  if (x == 0) return "0";
  if (x >= 100) return num(x, "%.1f");
  if (x >= 0.01) return num(x, "%.3f");
  return num(x, "%.2e");
}

// n/a reasons differing only in numbers (position 130 vs 258) share one footnote.
std::string reason_key(const std::string& reason) {
  std::string k;
  for (char c : reason)
    if (!std::isdigit(static_cast<unsigned char>(c))) k += c;
    else if (k.empty() || k.back() != '#') k += '#';
  return k;
}

std::string join_unique(std::vector<std::string> xs, const char* sep) {
  std::vector<std::string> u;
  for (auto& x : xs)
    if (std::find(u.begin(), u.end(), x) == u.end()) u.push_back(x);
  std::string out;
  for (std::size_t i = 0; i < u.size(); ++i) out += (i ? sep : "") + u[i];
  return out;
}

}  // namespace

std::string value_text(double x, const std::string& metric) {
  return find_metric(metric).percent ? num(100 * x, "%.1f") : loss_text(x);
}

std::string full_precision(double x) { return num(x, "%.17g"); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string title_line(const Sweep& s) {
  std::vector<std::string> tasks;
  for (const Run& r : s.runs) tasks.push_back(r.task);
  return join_unique(tasks, " + ") + ", train_len " + train_len_text(s);
}

std::string train_len_text(const Sweep& s) {
  std::vector<std::size_t> sorted;
  for (const Run& r : s.runs) sorted.push_back(r.train_len);
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> lens;
  for (std::size_t l : sorted) lens.push_back(std::to_string(l));
  return join_unique(lens, "/");
}

std::string summary_csv(const Sweep& s, const std::vector<std::string>& metrics) {
  std::ostringstream os;
  for (const std::string& k : s.group_keys) os << csv_field(k) << ",";
  os << "length,in_distribution,metric,mean,std,n,n_na,chance\n";
  for (const Group& g : s.groups) {
    for (std::size_t len : s.lengths) {
      for (const std::string& m : metrics) {
        const CellStats c = cell_stats(g, len, m);
        if (!c.present) continue;
        for (const std::string& v : g.values) os << csv_field(v) << ",";
        os << len << "," << (c.in_distribution ? "true" : "false") << "," << m << ",";
        if (c.n > 0) os << full_precision(c.mean) << "," << full_precision(c.std);
        else os << ",";
        os << "," << c.n << "," << c.n_na << "," << (c.chance ? full_precision(*c.chance) : "") << "\n";
      }
    }
  }
  return os.str();
}

std::vector<ChanceLine> chance_lines(const Sweep& s, const std::string& metric) {
  std::vector<ChanceLine> out;
  std::vector<std::vector<std::size_t>> members;  // groups per line
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    std::vector<std::optional<double>> at;
    bool any = false;
    for (std::size_t len : s.lengths) {
      at.push_back(cell_stats(s.groups[i], len, metric).chance);
      any = any || at.back().has_value();
    }
    if (!any) continue;
    std::size_t k = 0;
    while (k < out.size() && out[k].at != at) ++k;
    if (k == out.size()) {
      out.push_back({"chance", at});
      members.emplace_back();
    }
    members[k].push_back(i);
  }
  if (out.size() < 2) return out;
  // Several: named by task when the tasks tell them apart, else by their groups.
  std::vector<std::string> task_of;
  for (const auto& m : members) {
    std::vector<std::string> tasks;
    for (std::size_t gi : m) tasks.push_back(s.groups[gi].runs.front()->task);
    task_of.push_back(join_unique(tasks, " + "));
  }
  bool by_task = true;
  for (std::size_t a = 0; a < out.size(); ++a)
    for (std::size_t b = 0; b < out.size(); ++b)
      by_task = by_task && task_of[a].find(" + ") == std::string::npos && (a == b || task_of[a] != task_of[b]);
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::vector<std::string> labels;
    for (std::size_t gi : members[k]) labels.push_back(s.groups[gi].label);
    out[k].label += " (" + (by_task ? task_of[k] : join_unique(labels, "; ")) + ")";
  }
  return out;
}

namespace {

// The evaluated length nearest to x (the smaller one on a tie).
std::size_t nearest_length(const std::vector<std::size_t>& ls, std::size_t x) {
  const auto it = std::lower_bound(ls.begin(), ls.end(), x);
  if (it == ls.end()) return ls.back();
  if (it == ls.begin() || *it == x) return *it;
  return x - *(it - 1) <= *it - x ? *(it - 1) : *it;
}

}  // namespace

std::vector<std::size_t> table_lengths(const Sweep& s) {
  const std::vector<std::size_t>& ls = s.lengths;  // sorted, distinct
  if (ls.size() <= kTableLengths) return ls;
  std::set<std::size_t> fixed{ls.front(), ls.back()};
  for (const Run& r : s.runs)
    if (std::binary_search(ls.begin(), ls.end(), r.train_len)) fixed.insert(r.train_len);
  for (std::size_t scale = 1;; scale *= 10)
    for (std::size_t mult : {1, 2, 5}) {
      const std::size_t step = mult * scale;
      std::set<std::size_t> pick = fixed;
      for (std::size_t x = (ls.front() / step + 1) * step; x < ls.back(); x += step) pick.insert(nearest_length(ls, x));
      if (pick.size() <= kTableLengths || step > ls.back()) return {pick.begin(), pick.end()};
    }
}

std::string length_list_text(const std::vector<std::size_t>& ls) {
  if (ls.empty()) return "-";
  std::string out;
  if (ls.size() <= kTableLengths) {
    for (std::size_t i = 0; i < ls.size(); ++i) out += (i ? ", " : "") + std::to_string(ls[i]);
    return out;
  }
  return std::to_string(ls.front()) + "..." + std::to_string(ls.back()) + " (" + std::to_string(ls.size()) + ")";
}

Table length_table(const Sweep& s, const std::string& metric) {
  Table t;
  t.id = "metric-" + metric;
  t.title = find_metric(metric).title + ": " + title_line(s);
  t.n_left = s.group_keys.size();

  const std::vector<std::size_t> lengths = table_lengths(s);
  // Column marker "*" when every group agrees a length is in-distribution; otherwise marked per cell.
  std::vector<int> col_in(lengths.size(), -1);  // -1 unknown, 0 out, 1 in, 2 mixed
  std::vector<std::vector<CellStats>> cells;
  for (const Group& g : s.groups) {
    cells.emplace_back();
    for (std::size_t j = 0; j < lengths.size(); ++j) {
      cells.back().push_back(cell_stats(g, lengths[j], metric));
      const CellStats& c = cells.back().back();
      if (!c.present) continue;
      const int v = c.in_distribution ? 1 : 0;
      col_in[j] = (col_in[j] == -1 || col_in[j] == v) ? v : 2;
    }
  }

  std::vector<std::string> reason_keys;
  auto footnote = [&](const std::string& reason) {
    const std::string key = reason_key(reason);
    auto it = std::find(reason_keys.begin(), reason_keys.end(), key);
    if (it == reason_keys.end()) {
      reason_keys.push_back(key);
      t.footnotes.push_back("n/a: " + reason);
      it = reason_keys.end() - 1;
    }
    return " [" + std::to_string(it - reason_keys.begin() + 1) + "]";
  };

  t.header = s.group_keys;
  for (std::size_t j = 0; j < lengths.size(); ++j)
    t.header.push_back(std::to_string(lengths[j]) + (col_in[j] == 1 ? "*" : ""));
  bool any_in = false;
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    std::vector<std::string> row = s.groups[i].values;
    for (std::size_t j = 0; j < lengths.size(); ++j) {
      const CellStats& c = cells[i][j];
      std::string x;
      if (!c.present || (c.n == 0 && c.n_na == 0)) {
        x = "-";
      } else if (c.n == 0) {
        x = "n/a" + footnote(c.reason);
      } else {
        std::string count = std::to_string(c.n);
        if (c.n_na > 0) count += "; " + std::to_string(c.n_na) + " n/a" + footnote(c.reason);
        x = mean_std_cell({c.mean, c.std}, [&metric](double v) { return value_text(v, metric); }, count);
      }
      if (c.present && c.in_distribution && col_in[j] == 2) x += " *";
      any_in = any_in || (c.present && c.in_distribution);
      row.push_back(x);
    }
    t.rows.push_back(row);
    t.reference.push_back(false);
  }

  const std::vector<ChanceLine> chance = chance_lines(s, metric);
  for (const ChanceLine& cl : chance) {
    std::vector<std::string> row(s.group_keys.size(), "");
    row[0] = cl.label;
    for (std::size_t len : lengths) {  // cl.at is per s.lengths
      const auto& v = cl.at[std::lower_bound(s.lengths.begin(), s.lengths.end(), len) - s.lengths.begin()];
      row.push_back(v ? value_text(*v, metric) : "-");
    }
    t.rows.push_back(row);
    t.reference.push_back(true);
  }

  if (any_in) {
    std::size_t lo = s.runs.front().train_len, hi = lo;
    for (const Run& r : s.runs) {
      lo = std::min(lo, r.train_len);
      hi = std::max(hi, r.train_len);
    }
    t.notes.push_back("Lengths marked * are in-distribution (≤ train_len " +
                      (lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi)) +
                      "); the others test length generalization.");
  }
  if (lengths.size() < s.lengths.size())
    t.notes.push_back("The columns are " + std::to_string(lengths.size()) + " of the " +
                      std::to_string(s.lengths.size()) + " evaluated lengths, " + std::to_string(s.lengths.front()) +
                      " to " + std::to_string(s.lengths.back()) +
                      ": the first and last, the training length and round lengths between; summary.csv, "
                      "results.csv and the plot have every length, and the score beyond the training length "
                      "averages all of those above it.");
  if (!chance.empty())
    t.notes.push_back("The chance row is the expected " + find_metric(metric).name +
                      " of a guesser picking each counted target uniformly among the tokens that can appear there "
                      "(eval.json's chance, per length).");
  return t;
}

}  // namespace report_detail
}  // namespace pelab
