#include "experiments/probe/probe_plot.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "experiments/report/report_detail.hpp"
#include "training/fs.hpp"
#include "training/signals.hpp"

namespace pelab {
namespace probe_detail {

namespace fs = std::filesystem;
using report_detail::gp_string;

Output open_output(const std::string& dir) {
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir + ": " + ec.message());
  Output o;
  o.dir = dir;
  o.created = !existed;
  o.gnuplot = report_detail::find_program("gnuplot");
  if (o.gnuplot.empty())
    o.warnings.push_back("gnuplot not found: no PNGs rendered; the data (.csv) and scripts (.gp) are in " + dir +
                         " (install gnuplot, then run gnuplot on each .gp there)");
  return o;
}

void discard_if_unused(const Output& o) {
  std::error_code ec;
  if (o.created && o.files.empty() && fs::is_empty(o.dir, ec) && !ec) fs::remove(o.dir, ec);
}

std::string num(double x) {
  if (std::isnan(x)) return "NaN";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

void write_plot(Output& out, const Plot& p) {
  const std::string base = (fs::path(out.dir) / p.name).string();
  std::ostringstream gp;
  gp << "if (!exists(\"outfile\")) outfile = " << gp_string(p.name + ".png") << "\n"
     << report_detail::plot_terminal(p.width, p.height)
     << "set output outfile\n"
     << "set datafile separator " << (p.dat.empty() ? "\",\"" : "whitespace") << "\n"
     << p.gp;
  nlohmann::ordered_json j;
  j["title"] = p.caption.empty() ? p.title : p.caption;
  for (auto it = p.json.begin(); it != p.json.end(); ++it) j[it.key()] = it.value();
  std::vector<std::pair<std::string, std::string>> files = {{".csv", p.csv}, {".json", j.dump(2) + "\n"}, {".gp", gp.str()}};
  if (!p.dat.empty()) files.push_back({".dat", p.dat});
  for (const auto& [ext, text] : files) {
    write_file_atomic(base + ext, text);
    out.files.push_back(base + ext);
  }
  if (out.gnuplot.empty()) return;
  const std::string err = report_detail::render_gnuplot(out.gnuplot, out.dir, p.name);
  if (!err.empty()) out.warnings.push_back(err);
  else out.files.push_back(base + ".png");
}

std::string square_ranges(std::size_t T) {
  const std::string hi = num(double(T) - 0.5);
  return "set xrange [-0.5:" + hi + "]\nset yrange [" + hi + ":-0.5]\n";
}

std::string image_block(const Matrix& m, bool hide_upper) {
  std::string s;
  for (std::size_t i = 0; i < m.size(); ++i) {
    throw_if_stopped("writing a plot");
    for (std::size_t j = 0; j < m[i].size(); ++j)
      s += std::to_string(j) + " " + std::to_string(i) + " " + (hide_upper && j > i ? "NaN" : num(m[i][j])) + "\n";
    s += "\n";
  }
  return s;
}

std::string image_grid(const std::string& name, const std::string& title, std::size_t rows, std::size_t cols,
                       const std::vector<std::string>& titles, const std::string& cb_range, bool colorbox,
                       std::size_t T, int width) {
  std::ostringstream gp;
  // Axis labels and (with `colorbox`) a colour bar on every panel, so that all panels keep one size; every
  // text in the terminal's font (report_detail::plot_font_pt: readable where report.html shows it), the
  // title wrapped to the width, tics every `step` positions so that their labels do not run together.
  std::size_t step = 1;
  for (std::size_t k = 1; T / step > 5; k *= 10)
    for (std::size_t m : {1, 2, 5})
      if (T / step > 5) step = m * k;
  gp << "set palette defined (0 \"#ffffff\", 0.35 \"#6baed6\", 1 \"#08306b\")\n"
     << "set cbrange " << cb_range << "\n"
     << (colorbox ? "set colorbox\nset cblabel \"weight\"\n" : "unset colorbox\n")
     << "set size ratio -1\n" << square_ranges(T) << "set tics out scale 0.5\nset xtics " << step << "\nset ytics "
     << step << "\nunset key\n"
     << "set xlabel \"key position j\"\nset ylabel \"query position i\"\n"
     << "set multiplot layout " << rows << "," << cols << " title "
     << report_detail::gp_wrapped(title, report_detail::title_chars(width)) << "\n";
  for (std::size_t k = 0; k < rows * cols; ++k)
    gp << "set title " << gp_string(titles.at(k)) << "\n"
       << "plot " << gp_string(name + ".dat") << " index " << k << " using 1:2:3 with image\n";
  gp << "unset multiplot\n";
  return gp.str();
}

}  // namespace probe_detail
}  // namespace pelab
