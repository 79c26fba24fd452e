// summary.csv rows and the markdown tables of summary.md.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

#include "experiments/report.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

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

std::string value_text(double x, const std::string& metric) {
  return find_metric(metric).percent ? num(100 * x, "%.1f") : loss_text(x);
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

std::string title_line(const Sweep& s) {
  std::vector<std::string> tasks, lens;
  std::vector<std::size_t> sorted_lens;
  for (const Run& r : s.runs) {
    tasks.push_back(r.task);
    sorted_lens.push_back(r.train_len);
  }
  std::sort(sorted_lens.begin(), sorted_lens.end());
  for (std::size_t l : sorted_lens) lens.push_back(std::to_string(l));
  return join_unique(tasks, " + ") + ", train_len " + join_unique(lens, "/");
}

std::string summary_csv(const Sweep& s, const std::vector<std::string>& metrics) {
  std::ostringstream os;
  for (const std::string& k : s.group_keys) os << csv_field(k) << ",";
  os << "length,in_distribution,metric,mean,std,n,n_na\n";
  for (const Group& g : s.groups) {
    for (std::size_t len : s.lengths) {
      for (const std::string& m : metrics) {
        const CellStats c = cell_stats(g, len, m);
        if (!c.present) continue;
        for (const std::string& v : g.values) os << csv_field(v) << ",";
        os << len << "," << (c.in_distribution ? "true" : "false") << "," << m << ",";
        if (c.n > 0) os << num(c.mean, "%.10g") << "," << num(c.std, "%.10g");
        else os << ",";
        os << "," << c.n << "," << c.n_na << "\n";
      }
    }
  }
  return os.str();
}

std::string metric_table(const Sweep& s, const std::string& metric) {
  // Column marker "*" when every group agrees a length is in-distribution; otherwise marked per cell.
  std::vector<int> col_in(s.lengths.size(), -1);  // -1 unknown, 0 out, 1 in, 2 mixed
  std::vector<std::vector<CellStats>> cells;
  for (const Group& g : s.groups) {
    cells.emplace_back();
    for (std::size_t j = 0; j < s.lengths.size(); ++j) {
      cells.back().push_back(cell_stats(g, s.lengths[j], metric));
      const CellStats& c = cells.back().back();
      if (!c.present) continue;
      const int v = c.in_distribution ? 1 : 0;
      col_in[j] = (col_in[j] == -1 || col_in[j] == v) ? v : 2;
    }
  }

  std::vector<std::string> reasons, reason_keys;
  auto footnote = [&](const std::string& reason) {
    const std::string key = reason_key(reason);
    auto it = std::find(reason_keys.begin(), reason_keys.end(), key);
    if (it == reason_keys.end()) {
      reason_keys.push_back(key);
      reasons.push_back(reason);
      it = reason_keys.end() - 1;
    }
    return " [" + std::to_string(it - reason_keys.begin() + 1) + "]";
  };

  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = s.group_keys;
  for (std::size_t j = 0; j < s.lengths.size(); ++j)
    header.push_back(std::to_string(s.lengths[j]) + (col_in[j] == 1 ? "*" : ""));
  rows.push_back(header);
  bool any_in = false;
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    std::vector<std::string> row = s.groups[i].values;
    for (std::size_t j = 0; j < s.lengths.size(); ++j) {
      const CellStats& c = cells[i][j];
      std::string t;
      if (!c.present || (c.n == 0 && c.n_na == 0)) {
        t = "-";
      } else if (c.n == 0) {
        t = "n/a" + footnote(c.reason);
      } else {
        t = value_text(c.mean, metric) + " ± " + value_text(c.std, metric) + " (" + std::to_string(c.n);
        if (c.n_na > 0) t += "; " + std::to_string(c.n_na) + " n/a" + footnote(c.reason);
        t += ")";
      }
      if (c.present && c.in_distribution && col_in[j] == 2) t += " *";
      any_in = any_in || (c.present && c.in_distribution);
      row.push_back(t);
    }
    rows.push_back(row);
  }

  // Pad to column widths so the table reads well in a terminal too ("±" is one column, two bytes).
  auto width = [](const std::string& x) {
    std::size_t w = 0;
    for (unsigned char ch : x) w += (ch & 0xC0) != 0x80;
    return w;
  };
  std::vector<std::size_t> w(header.size(), 3);
  for (const auto& r : rows)
    for (std::size_t j = 0; j < r.size(); ++j) w[j] = std::max(w[j], width(r[j]));
  const std::size_t nkeys = s.group_keys.size();
  std::ostringstream os;
  os << "## " << find_metric(metric).title << ": " << title_line(s) << "\n\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    os << "|";
    for (std::size_t j = 0; j < rows[i].size(); ++j) {
      const std::string pad(w[j] - width(rows[i][j]), ' ');
      os << " " << (j < nkeys ? rows[i][j] + pad : pad + rows[i][j]) << " |";
    }
    os << "\n";
    if (i == 0) {
      os << "|";
      for (std::size_t j = 0; j < w.size(); ++j)
        os << (j < nkeys ? " " + std::string(w[j], '-') + " |" : " " + std::string(w[j] - 1, '-') + ": |");
      os << "\n";
    }
  }
  os << "\n";
  std::size_t train_len_min = s.runs.front().train_len, train_len_max = train_len_min;
  for (const Run& r : s.runs) {
    train_len_min = std::min(train_len_min, r.train_len);
    train_len_max = std::max(train_len_max, r.train_len);
  }
  if (any_in) {
    os << "Lengths marked * are in-distribution (≤ train_len "
       << (train_len_min == train_len_max ? std::to_string(train_len_min)
                                          : std::to_string(train_len_min) + ".." + std::to_string(train_len_max))
       << "); the others test length generalization.\n";
  }
  if (any_in && !reasons.empty()) os << "\n";
  for (std::size_t k = 0; k < reasons.size(); ++k) os << "- [" << k + 1 << "] n/a: " << reasons[k] << "\n";
  return os.str();
}

}  // namespace report_detail
}  // namespace pelab
