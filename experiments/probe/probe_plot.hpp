// Writing one probe: NAME.csv, NAME.json, NAME.gp (+ NAME.dat for gnuplot) and NAME.png rendered by
// gnuplot (experiments/report/report_gnuplot.cpp). Internal to experiments/probe_*.cpp.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pelab {
namespace probe_detail {

struct Output {
  std::string dir;
  std::string gnuplot;                 // path, "" when not installed (then no PNGs, a warning)
  std::vector<std::string> files, warnings;
  bool created = false;                // open_output made dir (it did not exist before)
};
Output open_output(const std::string& dir);  // creates dir; finds gnuplot
// Removes the directory open_output made when nothing was written into it, so that a probe that fails
// after opening its output leaves no empty directory behind; a directory that existed is left alone.
void discard_if_unused(const Output& o);

struct Plot {
  std::string name;   // NAME
  std::string title;  // the plot's title
  std::string caption;  // the JSON's "title" (the report's heading for this probe across runs); "" = title
  std::string csv;    // the numbers, with a header line
  std::string dat;    // gnuplot data ("" = the script reads NAME.csv)
  std::string gp;     // the script body after the preamble
  int width = 1000, height = 600;
  nlohmann::ordered_json json = nlohmann::ordered_json::object();  // extra fields (title is added)
};
void write_plot(Output& out, const Plot& p);

using Matrix = std::vector<std::vector<double>>;
// One gnuplot image block "j i value" (NaN where `hide_upper` and j > i), rows separated by blank lines.
std::string image_block(const Matrix& m, bool hide_upper);
// Script lines drawing heatmaps `index k` of NAME.dat in a rows x cols multiplot titled `title` (wrapped to
// a PNG `width` px wide), panels titled `titles`, axes labelled, a colour bar on each with `colorbox`.
std::string image_grid(const std::string& name, const std::string& title, std::size_t rows, std::size_t cols,
                       const std::vector<std::string>& titles, const std::string& cb_range, bool colorbox,
                       std::size_t T, int width);
// x and y ranges of a T x T heatmap, row 0 at the top.
std::string square_ranges(std::size_t T);
std::string num(double x);  // %.9g

}  // namespace probe_detail
}  // namespace pelab
