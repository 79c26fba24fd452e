// Readable plots (issue #43 item 5), tested on the settings, not the pixels: every script's text at the
// width report.html shows its PNG is >= 11 px (font pt x shown / rendered width, pt counted as px, a lower
// bound for pngcairo), no script sets a smaller font, every key is outside the plot area (or unset), more
// than 8 lines go to panels of at most 8, and the attention maps of `pelab probe` have axis labels and a
// colour bar.
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "experiments/probe/probe_plot.hpp"
#include "experiments/report/report.hpp"
#include "experiments/report/report_detail.hpp"
#include "report_fixture.hpp"

using namespace pelab;
using namespace pelab::test;
using Catch::Contains;
namespace rd = pelab::report_detail;

namespace {

struct Terminal {
  int width = 0, height = 0, font = 0;
};

Terminal terminal_of(const std::string& gp) {
  std::smatch m;
  Terminal t;
  if (std::regex_search(gp, m, std::regex("set terminal pngcairo size (\\d+),(\\d+) noenhanced font \"sans,(\\d+)\""))) {
    t.width = std::stoi(m[1]);
    t.height = std::stoi(m[2]);
    t.font = std::stoi(m[3]);
  }
  return t;
}

// Every `font ",N"` or `font "sans,N"` in a script (the terminal's included).
std::vector<int> fonts_of(const std::string& gp) {
  std::vector<int> out;
  const std::regex re("font \"[a-zA-Z]*,(\\d+)\"");
  for (auto it = std::sregex_iterator(gp.begin(), gp.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back(std::stoi((*it)[1]));
  return out;
}

// Every `set key ...` line of a script is outside the plot area.
void check_keys_outside(const std::string& gp) {
  std::istringstream in(gp);
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, 8, "set key ") == 0) {
      INFO(line);
      CHECK_THAT(line, Contains(" outside"));
    }
}

// The width="N" of the <img> in report.html's figure id="plot-NAME" (0 when none).
int shown_width_in_page(const std::string& html, const std::string& name) {
  const std::size_t at = html.find("<figure id=\"plot-" + name + "\">");
  if (at == std::string::npos) return 0;
  const std::size_t w = html.find(" width=\"", at), end = html.find("</figure>", at);
  if (w == std::string::npos || w > end) return 0;
  return std::stoi(html.substr(w + 8));
}

// `groups` encodings x 2 seeds, token accuracy falling with the eval length.
void build(const fs::path& dir, int groups) {
  for (int g = 0; g < groups; ++g)
    for (int seed : {1, 2}) {
      FakeRun f;
      f.encoding = "enc" + std::to_string(g);
      f.seed = seed;
      f.acc = {{8, 1.0}, {16, 0.9}, {32, 0.05 * g + 0.01 * seed}};
      f.chance = {{8, 0.1}, {16, 0.1}, {32, 0.1}};
      f.held_out = {{100, 0.5}, {200, 0.95}};
      write_fake_run(dir, f, {8, 16, 32});
    }
}

}  // namespace

TEST_CASE("plot text size: font pt x shown / rendered width >= 11 px at every width", "[report][plots]") {
  for (int w : {300, 640, 760, 1000, 1001, 1100, 1260, 2400}) {
    INFO(w);
    const int shown = rd::shown_width(w);
    CHECK(shown <= w);  // never drawn larger than rendered (that would blur)
    CHECK(rd::plot_font_pt(w) * shown >= 11 * w);
    CHECK((rd::plot_font_pt(w) - 1) * shown < 11 * w);  // and no larger than needed
    const Terminal t = terminal_of(rd::plot_terminal(w, 400));
    CHECK(t.width == w);
    CHECK(t.font == rd::plot_font_pt(w));
  }
  CHECK(rd::shown_width(640) == 640);
  CHECK(rd::shown_width(1100) == 1100);
  CHECK(rd::shown_width(1260) == 1100);
}

TEST_CASE("report plots: text >= 11 px where the page shows them, keys outside, at most 8 lines a panel",
          "[report][plots]") {
  TempDir t;
  build(t.dir, 9);  // 9 groups: more than 8 lines
  ReportOptions opt;
  opt.gnuplot = have_gnuplot() ? "gnuplot" : "no-such-gnuplot";
  write_report(t.dir.string(), opt);
  const std::string html = slurp(t.dir / "report.html");
  int scripts = 0;
  for (const auto& e : fs::directory_iterator(t.dir / "plots")) {
    if (e.path().extension() != ".gp") continue;
    ++scripts;
    const std::string gp = slurp(e.path()), name = e.path().stem().string();
    INFO(name);
    const Terminal term = terminal_of(gp);
    REQUIRE(term.width > 0);
    for (int f : fonts_of(gp)) CHECK(f >= term.font);  // nothing smaller than the terminal's font
    check_keys_outside(gp);
    CHECK(gp.find("set key outside") != std::string::npos);
    if (have_gnuplot()) {
      const int shown = shown_width_in_page(html, name);
      REQUIRE(shown > 0);
      CHECK(term.font * shown >= 11 * term.width);
    }
    // 9 groups: two panels, the first with 8 titled lines.
    if (name == "length_generalization" || name == "held_out_curves" || name == "training_curves") {
      CHECK_THAT(gp, Contains("set multiplot layout 2,1\n"));
      const std::string first = gp.substr(gp.find("plot \\"), gp.find("plot \\", gp.find("plot \\") + 1) - gp.find("plot \\"));
      std::size_t titled = 0;
      for (int g = 0; g < 9; ++g) titled += first.find("title \"enc" + std::to_string(g) + "\"") != std::string::npos;
      CHECK(titled == 8);
    }
  }
  CHECK(scripts >= 3);
}

TEST_CASE("report plots: 8 lines or fewer stay one plot", "[report][plots]") {
  TempDir t;
  build(t.dir, 8);
  ReportOptions opt;
  opt.gnuplot = "no-such-gnuplot";
  write_report(t.dir.string(), opt);
  CHECK(slurp(t.dir / "plots" / "length_generalization.gp").find("multiplot") == std::string::npos);
}

TEST_CASE("probe attention maps: axis labels, a colour bar, text readable where the report shows them",
          "[report][plots]") {
  const std::string gp = probe_detail::image_grid("attention_1x", "attention", 2, 4,
                                                  {"a", "b", "c", "d", "e", "f", "g", "h"}, "[0:1]", true, 10, 1580);
  CHECK_THAT(gp, Contains("set xlabel \"key position j\""));
  CHECK_THAT(gp, Contains("set ylabel \"query position i\""));
  CHECK_THAT(gp, Contains("set cblabel \"weight\""));
  CHECK_THAT(gp, Contains("set colorbox\n"));
  CHECK(gp.find("unset colorbox") == std::string::npos);
  CHECK_THAT(gp, Contains("set xtics 2\nset ytics 2\n"));  // 10 positions: a tic every 2
  CHECK(fonts_of(gp).empty());                 // every text in the terminal's font
  // A probe's terminal: the same rule as the report's plots (one probe per row above 1000 px).
  TempDir t;
  probe_detail::Output out;
  out.dir = t.dir.string();
  probe_detail::Plot p;
  p.name = "x";
  p.title = "x";
  p.csv = "a\n1\n";
  p.gp = "plot NaN\n";
  p.width = 1260;
  p.height = 620;
  probe_detail::write_plot(out, p);
  const Terminal term = terminal_of(slurp(t.dir / "x.gp"));
  CHECK(term.width == 1260);
  CHECK(term.font * rd::shown_width(1260) >= 11 * 1260);
}
