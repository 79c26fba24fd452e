// write_report: the files of `pelab report`, in order: summary.csv, steps_to_target.csv, results.csv,
// plots/*, summary.md, report.html.
#include "experiments/report/report.hpp"

#include <filesystem>
#include <sstream>

#include "core/tensor.hpp"
#include "experiments/report/report_detail.hpp"
#include "training/fs.hpp"
#include "training/metrics_table.hpp"

namespace pelab {
namespace report_detail {
namespace {

namespace fs = std::filesystem;

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

// The metrics of the CSV files: every metric reported, those the task kinds present show first.
std::vector<std::string> csv_metric_names(const Sweep& s) {
  std::vector<std::string> shown, rest;
  for (const auto& m : metric_table()) {
    if ((s.any_seq && m.shown_for_sequence) || (s.any_lm && m.shown_for_lm)) shown.push_back(m.name);
    else if (s.any_seq || m.for_lm) rest.push_back(m.name);
  }
  shown.insert(shown.end(), rest.begin(), rest.end());
  return shown;
}

// Every group with a score beyond training scores exactly 0 on `metric` there (and some group has one).
bool zero_beyond_training(const Sweep& s, const std::string& metric) {
  bool any = false;
  for (const Group& g : s.groups) {
    const SeedStats st = ood_seed_stats(g, metric);
    if (!st.mean) continue;
    if (*st.mean != 0 || st.std != 0) return false;
    any = true;
  }
  return any;
}

// Per group, the run whose probes are shown: its first in grid order with any.
std::vector<std::pair<const Group*, const Run*>> probe_runs(const Sweep& s) {
  std::vector<std::pair<const Group*, const Run*>> out;
  for (const Group& g : s.groups)
    for (const Run* r : g.runs)
      if (!r->probes.empty()) {
        out.emplace_back(&g, r);
        break;
      }
  return out;
}

std::string md_probes(const Sweep& s) {
  const auto pr = probe_runs(s);
  if (pr.empty()) return "";
  std::ostringstream md;
  md << "## Probes\n\nPer group, the probes of one run (`RUN/" << kProbeDir << "/*.png`; report.html shows them side "
     << "by side):\n\n";
  for (const auto& [g, r] : pr) {
    md << "- " << g->label << " (`" << r->dir_name << "`):";
    for (std::size_t i = 0; i < r->probes.size(); ++i)
      md << (i ? "," : "") << " [" << r->probes[i].name << "](" << url_path(r->probes[i].png) << ")";
    md << "\n";
  }
  return md.str() + "\n";
}

}  // namespace
}  // namespace report_detail

ReportResult write_report(const std::string& sweep_dir, const ReportOptions& opt) {
  using namespace report_detail;
  namespace fs = std::filesystem;
  ReportResult out;
  const Sweep s = load_sweep(sweep_dir);
  const std::string metric = resolve_metric(s, opt, out.warnings);

  // Tables: the chosen metric first, then those the task kinds present show.
  std::vector<std::string> tables = {metric};
  for (const auto& m : metric_table()) {
    const bool shown = (s.any_seq && m.shown_for_sequence) || (s.any_lm && m.shown_for_lm);
    if (shown && m.name != metric) tables.push_back(m.name);
  }
  const std::vector<std::string> csv_metrics = csv_metric_names(s);

  const fs::path root(sweep_dir);
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"summary.csv", summary_csv(s, csv_metrics)},
                                   {"steps_to_target.csv", steps_csv(s)},
                                   {"results.csv", results_csv(results_table(s, csv_metrics))}}) {
    const std::string path = (root / name).string();
    write_file_atomic(path, text);
    out.files_written.push_back(path);
  }

  HtmlInput html;
  html.headline = headline(s, metric);
  for (const std::string& m : tables) {
    std::vector<Table>& to = m != metric && zero_beyond_training(s, m) ? html.zero_tables : html.metric_tables;
    to.push_back(length_table(s, m));
    if (auto t = ood_table(s, m)) to.push_back(*t);
  }
  html.steps = steps_table(s);
  std::vector<Table> ranks;
  for (const std::string& m : tables)
    if (auto t = rank_table(s, m)) ranks.push_back(*t);

  std::vector<Script> scripts;
  if (opt.plots) {
    scripts.push_back(length_plot(s, metric));
    for (Script& sc : operand_grid_plots(s)) scripts.push_back(std::move(sc));
    if (auto t = held_out_plot(s, metric)) scripts.push_back(*t);
    for (Script& sc : beyond_plots(s, metric, &html.beyond_undrawn)) scripts.push_back(std::move(sc));
    if (auto t = training_plot(s)) scripts.push_back(*t);
    else out.warnings.push_back("no training loss in any metrics.jsonl: training_curves.png not drawn");
    if (auto t = lm_position_plot(s)) scripts.push_back(*t);
    const std::vector<std::string> pngs = render_scripts(s, scripts, opt, out);
    for (std::size_t i = 0; i < scripts.size(); ++i) html.figures.push_back({scripts[i].name, pngs[i], scripts[i].caption});
  }

  std::ostringstream md;
  md << "# Sweep report: " << title_line(s) << "\n\n";
  md << s.runs.size() << " finished run(s) in " << s.groups.size() << " group(s)";
  if (!s.unfinished.empty()) md << ", " << s.unfinished.size() << " unfinished";
  md << ". Cells are mean ± sample std over seeds (n runs); accuracies are in percent.\n\n";
  for (const std::string& h : html.headline) md << "**" << h << "**\n\n";
  if (!html.headline.empty()) md << tie_rule_text() << "\n\n";
  for (std::size_t i = 0; i < html.metric_tables.size(); ++i) {
    const std::string t = markdown(html.metric_tables[i]);
    if (i == 0) out.table_markdown = t;
    md << t << "\n";
  }
  for (const Table& t : html.zero_tables) md << markdown(t) << "\n";
  if (html.steps) md << markdown(*html.steps) << "\n";
  for (const Table& t : ranks) md << markdown(t) << "\n";
  html.ranks = ranks;
  if (!s.unfinished.empty()) {
    md << "## Unfinished runs\n\n";
    for (const Unfinished& u : s.unfinished) md << "- `" << u.dir_name << "`: " << u.status << "\n";
    md << "\n";
  }
  if (opt.plots) {
    md << "## Plots\n\n";
    bool any_png = false;
    for (const Figure& f : html.figures) {
      if (f.png.empty()) continue;
      any_png = true;
      md << "- [" << f.name << ".png](plots/" << f.name << ".png) (script: `plots/" << f.name << ".gp`): " << f.caption
         << "\n";
    }
    if (!any_png) md << "No plot rendered (see warnings); the gnuplot scripts and data are in `plots/`.\n";
    md << "\n";
  }
  md << md_probes(s);
  md << "The same tables, the plots, every run's resolved config.toml and links to its logs: report.html.\n";
  const std::string md_path = (root / "summary.md").string();
  write_file_atomic(md_path, md.str());
  out.files_written.push_back(md_path);

  const std::string html_path = (root / "report.html").string();
  write_file_atomic(html_path, report_html(s, html, out.warnings));
  out.files_written.push_back(html_path);
  return out;
}

ResultsTable results_table(const std::string& sweep_dir) {
  const report_detail::Sweep s = report_detail::load_sweep(sweep_dir);
  return report_detail::results_table(s, report_detail::csv_metric_names(s));
}

}  // namespace pelab
