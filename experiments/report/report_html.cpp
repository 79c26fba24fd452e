// report.html: one self-contained page (plots inlined as data: URIs, no script, no external resource;
// a Content-Security-Policy forbids loading any) with the tables, the plots, the probes side by side, every
// run's resolved config.toml and relative links to its logs, so it opens from disk with no server.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/tensor.hpp"
#include "experiments/report/report_detail.hpp"
#include "training/fs.hpp"

namespace pelab {
namespace report_detail {

namespace fs = std::filesystem;

std::string base64(const std::string& bytes) {
  static const char* const k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += k[v & 63];
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (two ? static_cast<unsigned char>(bytes[i + 1]) << 8 : 0u);
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += two ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string url_path(const std::string& rel) {
  static const char* const hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : rel) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

namespace {

const char* const kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em 2em; color: #222;
       line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
h3 { font-size: 1.05em; margin: 1.2em 0 .4em; }
nav a { margin-right: 1.2em; }
table { border-collapse: collapse; margin: .4em 0; font-variant-numeric: tabular-nums; font-size: .9em; }
th, td { border: 1px solid #ccc; padding: .2em .55em; }
th { background: #f2f2f2; }
td.num, th.num { text-align: right; white-space: nowrap; }
tr.ref td { color: #666; font-style: italic; background: #fafafa; }
.pair { display: flex; flex-wrap: wrap; gap: 0 2.5em; align-items: flex-start; }
.pair > section { width: min-content; }  /* as wide as its table; the notes wrap inside */
.note, figcaption, .footnotes { font-size: .88em; color: #444; max-width: 70em; }
.footnotes { margin: .2em 0 0; padding-left: 1.2em; }
figure { margin: 1em 0 1.5em; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
.probe-grid { display: grid; gap: .8em; }
.probe-grid figure { margin: 0; }
.probe-grid .missing { color: #888; font-size: .88em; border: 1px dashed #ccc; padding: 1em; }
pre { background: #f7f7f7; padding: .6em .8em; overflow: auto; font-size: .82em; max-height: 40em; }
details { margin: .25em 0; }
summary { cursor: pointer; }
code { font-size: .92em; }
.warn { color: #a40; }
.headline { font-size: 1.08em; max-width: 70em; margin: .3em 0 .6em; }
.headline p { margin: .25em 0; }
.headline .note { font-size: .8em; }
#plot-length_generalization { margin-top: .4em; }
)";

std::string table_html(const Table& t) {
  std::ostringstream os;
  os << "<section id=\"" << html_escape(t.id) << "\">\n<h3>" << html_escape(t.title) << "</h3>\n<table>\n<thead><tr>";
  for (std::size_t j = 0; j < t.header.size(); ++j)
    os << "<th" << (j >= t.n_left ? " class=\"num\"" : "") << ">" << html_escape(t.header[j]) << "</th>";
  os << "</tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    os << "<tr" << (i < t.reference.size() && t.reference[i] ? " class=\"ref\"" : "") << ">";
    for (std::size_t j = 0; j < t.header.size(); ++j)
      os << "<td" << (j >= t.n_left ? " class=\"num\"" : "") << ">"
         << html_escape(j < t.rows[i].size() ? t.rows[i][j] : "") << "</td>";
    os << "</tr>\n";
  }
  os << "</tbody>\n</table>\n";
  for (const std::string& n : t.notes) os << "<p class=\"note\">" << html_escape(n) << "</p>\n";
  if (!t.footnotes.empty()) {
    os << "<ol class=\"footnotes\">\n";
    for (const std::string& f : t.footnotes) os << "<li>" << html_escape(f) << "</li>\n";
    os << "</ol>\n";
  }
  os << "</section>\n";
  return os.str();
}

// The width in the PNG's IHDR chunk (bytes 16..19, big-endian; RFC 2083 §4.1.1); 0 when too short.
int png_width(const std::string& png) {
  if (png.size() < 24) return 0;
  unsigned w = 0;
  for (int i = 16; i < 20; ++i) w = (w << 8) | static_cast<unsigned char>(png[i]);
  return w > 100000 ? 0 : static_cast<int>(w);
}

int png_file_width(const std::string& path) {
  try {
    return png_width(read_file(path));
  } catch (const Error&) {
    return 0;  // img_tag reports it
  }
}

// A PNG as an <img> with a data: URI; "" (and a warning) when the file is missing or not a PNG.
std::string img_tag(const std::string& path, const std::string& alt, std::vector<std::string>& warnings) {
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const Error& e) {
    warnings.push_back(std::string("report.html: ") + e.what());
    return "";
  }
  if (bytes.size() < 8 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    warnings.push_back("report.html: " + path + " is not a PNG file; left out");
    return "";
  }
  // Shown at shown_width (plot_font_pt sized the plot's text for it); narrower windows shrink it further.
  const int width = png_width(bytes);
  return "<img src=\"data:image/png;base64," + base64(bytes) + "\" alt=\"" + html_escape(alt) + "\"" +
         (width > 0 ? " width=\"" + std::to_string(shown_width(width)) + "\"" : "") + ">";
}

std::string figure_html(const Figure& f, std::vector<std::string>& warnings) {
  std::ostringstream os;
  const std::string img = f.png.empty() ? "" : img_tag(f.png, f.name, warnings);
  if (img.empty()) {
    os << "<p class=\"note warn\">" << html_escape(f.name) << ".png was not rendered (see the report's warnings); "
       << "its data and gnuplot script: <a href=\"plots/" << url_path(f.name) << ".dat\">plots/" << html_escape(f.name)
       << ".dat</a>, <a href=\"plots/" << url_path(f.name) << ".gp\">plots/" << html_escape(f.name) << ".gp</a>.</p>\n";
    return os.str();
  }
  os << "<figure id=\"plot-" << html_escape(f.name) << "\">" << img << "<figcaption>" << html_escape(f.caption)
     << " Data and script: <a href=\"plots/" << url_path(f.name) << ".dat\">" << html_escape(f.name)
     << ".dat</a>, <a href=\"plots/" << url_path(f.name) << ".gp\">" << html_escape(f.name)
     << ".gp</a>.</figcaption></figure>\n";
  return os.str();
}

std::string links(const std::vector<std::string>& files) {
  std::string out;
  for (const std::string& f : files) {
    const std::string name = fs::path(f).filename().string();
    out += (out.empty() ? "" : " · ") + std::string("<a href=\"") + url_path(f) + "\">" + html_escape(name) + "</a>";
  }
  return out;
}

std::string fixed(double x, const char* f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string probes_html(const Sweep& s, std::vector<std::string>& warnings) {
  std::vector<std::pair<const Group*, const Run*>> cols;
  std::vector<std::string> names;
  for (const Group& g : s.groups) {
    int with = 0;
    const Run* first = nullptr;
    for (const Run* r : g.runs)
      if (!r->probes.empty()) {
        ++with;
        if (!first) first = r;
      }
    if (!first) continue;
    cols.emplace_back(&g, first);
    for (const ProbeFile& p : first->probes)
      if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  }
  std::ostringstream os;
  os << "<h2 id=\"probes\">Probes</h2>\n";
  if (cols.empty()) {
    os << "<p class=\"note\">No run has probes (<code>RUN/" << kProbeDir << "/NAME.png</code>, with NAME.json / "
       << "NAME.csv beside it); they appear here side by side per group once written.</p>\n";
    return os.str();
  }
  std::sort(names.begin(), names.end(), natural_less);
  os << "<p class=\"note\">Per group, the probes of its first run (grid order) that has any: ";
  for (std::size_t i = 0; i < cols.size(); ++i)
    os << (i ? "; " : "") << html_escape(cols[i].first->label) << ": <code>" << html_escape(cols[i].second->dir_name)
       << "</code>";
  os << ".</p>\n";
  for (const std::string& name : names) {
    std::string title = name;
    for (const auto& [g, r] : cols)
      for (const ProbeFile& p : r->probes)
        if (p.name == name && p.title != p.name) title = p.title;
    // Two to a row, or one where a PNG is wider than kHalfShownMax: the width its text was sized for.
    std::size_t per_row = std::min<std::size_t>(2, cols.size());
    for (const auto& [g, r] : cols)
      for (const ProbeFile& q : r->probes)
        if (q.name == name && png_file_width((fs::path(s.dir) / q.png).string()) > kHalfShownMax) per_row = 1;
    os << "<h3 id=\"probe-" << html_escape(name) << "\">" << html_escape(title) << "</h3>\n"
       << "<div class=\"probe-grid\" style=\"grid-template-columns: repeat(" << per_row << ", minmax(0, 1fr))\">\n";
    for (const auto& [g, r] : cols) {
      const ProbeFile* p = nullptr;
      for (const ProbeFile& q : r->probes)
        if (q.name == name) p = &q;
      if (!p) {
        os << "<div class=\"missing\">" << html_escape(g->label) << ": no " << html_escape(name) << "</div>\n";
        continue;
      }
      const std::string img = img_tag((fs::path(s.dir) / p->png).string(), g->label + ": " + name, warnings);
      std::vector<std::string> data;
      if (!p->json.empty()) data.push_back(p->json);
      if (!p->csv.empty()) data.push_back(p->csv);
      os << "<figure>" << (img.empty() ? "<div class=\"missing\">" + html_escape(p->png) + " is not a PNG</div>" : img)
         << "<figcaption>" << html_escape(g->label) << " (seed " << r->seed << ")"
         << (data.empty() ? "" : " · " + links(data)) << "</figcaption></figure>\n";
    }
    os << "</div>\n";
  }
  return os.str();
}

std::string runs_html(const Sweep& s) {
  std::ostringstream os;
  os << "<h2 id=\"runs\">Runs</h2>\n<table>\n<thead><tr><th>run</th><th>group</th><th class=\"num\">seed</th>"
     << "<th>status</th><th class=\"num\">steps</th><th class=\"num\">steps to target</th>"
     << "<th class=\"num\">train s</th><th class=\"num\">parameters</th><th>files</th></tr></thead>\n<tbody>\n";
  for (const Group& g : s.groups) {
    for (const Run* r : g.runs) {
      const TargetResult t = steps_to_target(*r);
      std::string st = "-";
      if (t.has_target) st = t.step ? std::to_string(*t.step) : "not reached";
      os << "<tr><td><code>" << html_escape(r->dir_name) << "</code></td><td>" << html_escape(g.label)
         << "</td><td class=\"num\">" << r->seed << "</td><td>" << html_escape(r->status) << "</td><td class=\"num\">"
         << r->steps << "</td><td class=\"num\">" << html_escape(st) << "</td><td class=\"num\">"
         << fixed(r->train_seconds, "%.1f") << "</td><td class=\"num\">" << r->parameters << "</td><td>"
         << links(r->files) << "</td></tr>\n";
    }
  }
  os << "</tbody>\n</table>\n";
  if (!s.unfinished.empty()) {
    os << "<h3>Unfinished runs</h3>\n<ul>\n";
    for (const Unfinished& u : s.unfinished)
      os << "<li><code>" << html_escape(u.dir_name) << "</code>: " << html_escape(u.status)
         << (u.files.empty() ? "" : " · " + links(u.files)) << "</li>\n";
    os << "</ul>\n";
  }
  os << "<h3 id=\"configs\">Resolved configuration of every run (config.toml)</h3>\n";
  for (const Group& g : s.groups)
    for (const Run* r : g.runs)
      os << "<details><summary><code>" << html_escape(r->dir_name) << "</code></summary><pre>"
         << html_escape(r->config_toml.empty() ? "(no config.toml in this run directory)" : r->config_toml)
         << "</pre></details>\n";
  for (const Unfinished& u : s.unfinished)
    if (!u.config_toml.empty())
      os << "<details><summary><code>" << html_escape(u.dir_name) << "</code> (unfinished)</summary><pre>"
         << html_escape(u.config_toml) << "</pre></details>\n";
  return os.str();
}

const Figure* find_figure(const HtmlInput& in, const std::string& name) {
  for (const Figure& f : in.figures)
    if (f.name == name) return &f;
  return nullptr;
}

// The plots of the lengths beyond training over steps (beyond_plots), two per row, or why there are none.
std::string beyond_html(const HtmlInput& in, std::vector<std::string>& warnings) {
  std::ostringstream os;
  os << "<h3 id=\"beyond\">Beyond the training length, during training</h3>\n";
  std::vector<const Figure*> figs;
  for (const Figure& f : in.figures)
    if (f.name.compare(0, 7, "beyond_") == 0) figs.push_back(&f);
  const std::string why = "no length beyond training has values at two or more held-out evaluations "
                          "(metrics.jsonl <code>\"beyond\"</code>, written when <code>[eval] beyond_samples</code> and "
                          "<code>[train] eval_every</code> are above 0; runs from before it have none, and a length "
                          "the encoding cannot represent has no values)";
  if (figs.empty()) {
    os << "<p class=\"note\">No plot: " << why << ".</p>\n";
    return os.str();
  }
  if (!in.beyond_undrawn.empty()) {
    std::string groups;
    for (const std::string& g : in.beyond_undrawn) groups += (groups.empty() ? "" : ", ") + html_escape(g);
    os << "<p class=\"note\">Not drawn for " << groups << ": " << why << ".</p>\n";
  }
  os << "<div class=\"probe-grid\" style=\"grid-template-columns: repeat(" << std::min<std::size_t>(2, figs.size())
     << ", minmax(0, 1fr))\">\n";
  for (const Figure* f : figs) os << figure_html(*f, warnings);
  os << "</div>\n";
  return os.str();
}

// The operand-length heatmaps (operand_grid_plots), two per row; nothing for runs without [eval] operand_grid.
std::string operand_grid_html(const HtmlInput& in, std::vector<std::string>& warnings) {
  std::vector<const Figure*> figs;
  for (const Figure& f : in.figures)
    if (f.name.compare(0, 13, "operand_grid_") == 0) figs.push_back(&f);
  if (figs.empty()) return "";
  std::ostringstream os;
  os << "<h3 id=\"operand-grid\">Operand lengths (len_a × len_b)</h3>\n"
     << "<div class=\"probe-grid\" style=\"grid-template-columns: minmax(0, 1fr)\">\n";
  for (const Figure* f : figs) os << figure_html(*f, warnings);
  os << "</div>\n";
  return os.str();
}

// Metrics that read 0 for every group beyond training, folded away below the informative tables.
std::string zero_tables_html(const HtmlInput& in) {
  if (in.zero_tables.empty()) return "";
  std::string names;
  for (const Table& t : in.zero_tables)
    if (t.id.compare(0, 4, "ood-") != 0) names += (names.empty() ? "" : ", ") + t.title.substr(0, t.title.find(':'));
  std::ostringstream os;
  os << "<details id=\"zero-tables\"><summary>" << html_escape(names)
     << ": 0 for every group beyond the training length (tables folded)</summary>\n";
  for (const Table& t : in.zero_tables) os << table_html(t);
  os << "</details>\n";
  return os.str();
}

}  // namespace

std::string report_html(const Sweep& s, const HtmlInput& in, std::vector<std::string>& warnings) {
  std::ostringstream os;
  const std::string title = title_line(s);
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        "style-src 'unsafe-inline'\">\n"
     << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
     << "<title>pelab report: " << html_escape(title) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n";
  os << "<h1>Sweep report: " << html_escape(title) << "</h1>\n";
  // The answer first (issue #43): the headline, then the main plot, then the tables.
  if (!in.headline.empty()) {
    os << "<div id=\"headline\" class=\"headline\">";
    for (const std::string& h : in.headline) os << "<p>" << html_escape(h) << "</p>";
    os << "<p class=\"note\">" << html_escape(tie_rule_text()) << "</p></div>\n";
  }
  if (const Figure* f = find_figure(in, "length_generalization")) os << figure_html(*f, warnings);
  os << "<p>" << s.runs.size() << " finished run(s) in " << s.groups.size() << " group(s)";
  if (!s.unfinished.empty()) os << ", " << s.unfinished.size() << " unfinished";
  os << ". Cells are mean ± sample std over seeds (n runs); accuracies are in percent. Written by <code>pelab "
        "report</code>; the numbers are also in <a href=\"summary.csv\">summary.csv</a> (full precision), "
        "<a href=\"steps_to_target.csv\">steps_to_target.csv</a> and <a href=\"results.csv\">results.csv</a> "
        "(every run, length and metric: one long table).</p>\n";
  const bool lm_plot = find_figure(in, "loss_by_position") != nullptr;
  os << "<nav><a href=\"#results\">Results</a><a href=\"#training\">Training</a>"
     << (in.ranks.empty() ? "" : "<a href=\"#ranks\">Ranks</a>") << (lm_plot ? "<a href=\"#lm\">Loss per position</a>" : "")
     << "<a href=\"#probes\">Probes</a><a href=\"#runs\">Runs</a><a href=\"#configs\">Configs</a></nav>\n";

  os << "<h2 id=\"results\">Results by eval length</h2>\n";
  // The first two tables (token accuracy and exact match for sequence tasks) side by side when they fit.
  os << "<div class=\"pair\">\n";
  for (std::size_t i = 0; i < in.metric_tables.size() && i < 2; ++i) os << table_html(in.metric_tables[i]);
  os << "</div>\n";
  for (std::size_t i = 2; i < in.metric_tables.size(); ++i) os << table_html(in.metric_tables[i]);
  os << zero_tables_html(in);
  os << operand_grid_html(in, warnings);

  os << "<h2 id=\"training\">Training</h2>\n";
  if (in.steps) os << table_html(*in.steps);
  else os << "<p class=\"note\">No run has an early-stop target ([train] early_stop_metric), so there is no "
             "steps-to-target table.</p>\n";
  bool any_training_plot = false;
  for (const char* name : {"held_out_curves", "training_curves"})
    if (const Figure* f = find_figure(in, name)) {
      os << figure_html(*f, warnings);
      any_training_plot = true;
    }
  if (!any_training_plot && !in.figures.empty())
    os << "<p class=\"note\">No training or held-out curve: the runs' metrics.jsonl have no records to draw.</p>\n";
  if (!in.figures.empty()) os << beyond_html(in, warnings);

  if (!in.ranks.empty()) {
    os << "<h2 id=\"ranks\">Ranks across tasks</h2>\n";
    for (const Table& t : in.ranks) os << table_html(t);
  }
  if (lm_plot) os << "<h2 id=\"lm\">Loss per position</h2>\n" << figure_html(*find_figure(in, "loss_by_position"), warnings);
  if (in.figures.empty()) os << "<p class=\"note\">Plots were not requested (--no-plots).</p>\n";

  os << probes_html(s, warnings);
  os << runs_html(s);
  os << "</body>\n</html>\n";
  return os.str();
}

}  // namespace report_detail
}  // namespace pelab
