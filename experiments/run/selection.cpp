#include "experiments/run/selection.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "experiments/run/validation.hpp"
#include "training/fs.hpp"
#include "training/metrics_table.hpp"

namespace pelab {

namespace {

bool is_selected(const std::vector<std::string>& selected, const std::string& k) {
  return std::find(selected.begin(), selected.end(), k) != selected.end();
}

std::string join_assignment(const CellInfo& cell, const std::vector<std::string>& selected, bool want_selected) {
  std::string out;
  for (const auto& [k, v] : cell.assignment)
    if (k != "train.seed" && is_selected(selected, k) == want_selected)
      out += (out.empty() ? "" : ",") + k + "=" + label_text(v);
  return out;
}

// Mean and sample sd of one row's values; fills row.seeds.
void summarize(SelectionRow& row, const std::vector<double>& x) {
  row.seeds = x.size();
  if (x.empty()) return;
  double m = 0;
  for (double v : x) m += v;
  m /= double(x.size());
  row.mean = m;
  if (x.size() < 2) return;
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  row.sd = std::sqrt(ss / double(x.size() - 1));
}

// Marks the best complete row of each group (strictly better than the rows before it: a tie keeps the first).
void mark_selected(std::vector<SelectionRow>& rows) {
  std::map<std::string, SelectionRow*> best;
  for (SelectionRow& r : rows) {
    if (r.missing || !r.mean) continue;
    const bool lower = find_metric(r.metric).lower_is_better;
    SelectionRow*& b = best[r.group];
    if (!b || (lower ? *r.mean < *b->mean : *r.mean > *b->mean)) b = &r;
  }
  for (auto& [g, r] : best) r->selected = true;
}

std::string number(const std::optional<double>& x) {
  if (!x) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", *x);
  return buf;
}

}  // namespace

std::vector<SelectionRow> select_settings(const std::vector<RunSpec>& cells, const std::string& root,
                                          const std::vector<std::string>& selected) {
  std::vector<SelectionRow> rows;
  std::map<std::pair<std::string, std::string>, std::size_t> at;
  std::vector<std::vector<double>> values, steps;
  for (const RunSpec& c : cells) {
    const std::string group = join_assignment(c.config.cell, selected, false);
    const std::string choice = join_assignment(c.config.cell, selected, true);
    auto [it, fresh] = at.emplace(std::make_pair(group, choice), rows.size());
    if (fresh) {
      SelectionRow row;
      row.group = group;
      row.choice = choice;
      rows.push_back(row);
      values.emplace_back();
      steps.emplace_back();
    }
    SelectionRow& row = rows[it->second];
    const auto rec = read_validation(root + "/" + c.dir_name);
    if (!rec) {
      ++row.missing;
      continue;
    }
    row.metric = rec->metric;
    steps[it->second].push_back(double(rec->steps));
    if (rec->value) values[it->second].push_back(*rec->value);
    else ++row.missing;  // n/a at train_len: never chosen
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    summarize(rows[i], values[i]);
    for (double s : steps[i]) rows[i].steps += s / double(steps[i].size());
  }
  mark_selected(rows);
  return rows;
}

std::string selection_csv(const std::vector<SelectionRow>& rows) {
  std::ostringstream os;
  os << "group,choice,metric,seeds,missing,validation_mean,validation_sd,steps_mean,selected\n";
  for (const SelectionRow& r : rows)
    os << '"' << r.group << "\",\"" << r.choice << "\"," << r.metric << "," << r.seeds << "," << r.missing << ","
       << number(r.mean) << "," << number(r.sd) << "," << number(r.steps) << "," << (r.selected ? "true" : "false")
       << "\n";
  return os.str();
}

std::string selection_markdown(const std::vector<SelectionRow>& rows) {
  std::ostringstream os;
  os << "| group | choice | validation (mean ± sd over seeds) | seeds | missing | steps used (mean) | |\n"
     << "|---|---|---:|---:|---:|---:|---|\n";
  for (const SelectionRow& r : rows) {
    char v[96] = "n/a";
    if (r.mean) std::snprintf(v, sizeof v, "%s %.4f", r.metric.c_str(), *r.mean);
    if (r.mean && r.sd) std::snprintf(v, sizeof v, "%s %.4f ± %.4f", r.metric.c_str(), *r.mean, *r.sd);
    char s[32];
    std::snprintf(s, sizeof s, "%.0f", r.steps);
    os << "| " << (r.group.empty() ? "(all)" : r.group) << " | " << r.choice << " | " << v << " | " << r.seeds << " | "
       << r.missing << " | " << s << " | " << (r.selected ? "**selected**" : "") << " |\n";
  }
  return os.str();
}

void write_selection(const LoadedConfig& loaded, const std::string& root) {
  const std::vector<std::string> keys = selected_keys(loaded.config);
  if (keys.empty()) return;
  const std::vector<SelectionRow> rows = select_settings(loaded.runs, root, keys);
  write_file_atomic(root + "/selection.csv", selection_csv(rows));
  std::printf("\nselection on the validation split ([protocol] select = %s; %s/selection.csv):\n%s",
              loaded.config.protocol.select.c_str(), root.c_str(), selection_markdown(rows).c_str());
}

}  // namespace pelab
