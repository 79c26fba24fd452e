// Plots of a sweep: data (.dat) and gnuplot scripts (.gp) in SWEEP/plots, rendered to PNG by running
// gnuplot on the script, so users can edit a script and re-render with `cd SWEEP/plots && gnuplot X.gp`.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/tensor.hpp"
#include "experiments/report.hpp"
#include "training/metrics_table.hpp"
#include "training/fs.hpp"

namespace pelab {
namespace report_detail {
namespace {

namespace fs = std::filesystem;

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
const int kPoints[] = {7, 5, 9, 11, 13, 15};

std::string color(std::size_t i) { return kColors[i % (sizeof kColors / sizeof *kColors)]; }
int point_type(std::size_t i) { return kPoints[i % (sizeof kPoints / sizeof *kPoints)]; }

std::string gp_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.8g", x);
  return buf;
}

// Script preamble: output file overridable (`gnuplot -e "outfile='x.png'" s.gp`), pngcairo when present.
std::string preamble(const std::string& png, const std::string& title) {
  std::ostringstream os;
  os << "if (!exists(\"outfile\")) outfile = " << gp_string(png) << "\n"
     << "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
     << "  set terminal pngcairo size 1100,620 noenhanced font \"sans,11\"\n"
     << "} else {\n"
     << "  set terminal png size 1100,620 noenhanced\n"
     << "}\n"
     << "set output outfile\n"
     << "set title " << gp_string(title) << "\n"
     << "set grid lc rgb \"#dddddd\"\n"
     << "set key outside right top box opaque\n";
  return os.str();
}

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string cand = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return "";
}

// Runs `gnuplot -e "outfile='NAME.png.tmp'" NAME.gp` inside the plots dir, then renames the PNG into place
// (never a half-written PNG). Returns "" on success, else what went wrong.
std::string render(const std::string& gnuplot, const fs::path& dir, const std::string& name) {
  const std::string tmp_png = name + ".png.tmp", log = name + ".gnuplot.log";
  const std::string outfile = "outfile='" + tmp_png + "'", script = name + ".gp";
  const std::string dir_s = dir.string(), log_path = (dir / log).string();
  const pid_t pid = ::fork();
  if (pid < 0) return "cannot start gnuplot (fork failed)";
  if (pid == 0) {  // child: only async-signal-safe calls until exec
    if (::chdir(dir_s.c_str()) != 0) ::_exit(126);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const char* argv[] = {gnuplot.c_str(), "-e", outfile.c_str(), script.c_str(), nullptr};
    ::execv(gnuplot.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string log_text;
  try {
    log_text = read_file(log_path);
  } catch (const Error&) {
  }
  std::error_code ec;
  fs::remove(log_path, ec);
  const fs::path tmp = dir / tmp_png, png = dir / (name + ".png");
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && fs::exists(tmp) && fs::file_size(tmp, ec) > 0;
  if (!ok) {
    fs::remove(tmp, ec);
    if (log_text.size() > 600) log_text = log_text.substr(0, 600) + "...";
    return "gnuplot failed on " + (dir / script).string() +
           (WIFEXITED(status) ? " (exit status " + std::to_string(WEXITSTATUS(status)) + ")" : " (killed)") +
           (log_text.empty() ? "" : ": " + log_text);
  }
  fsync_path(tmp.string());
  fs::rename(tmp, png, ec);
  if (ec) return "cannot rename " + tmp.string() + " to " + png.string() + ": " + ec.message();
  fsync_path(dir.string());
  return "";
}

struct Script {
  std::string name, dat, gp;
};

Script length_plot(const Sweep& s, const std::string& metric) {
  const MetricSpec& m = find_metric(metric);
  const bool pct = m.percent;
  std::ostringstream dat;
  dat << "# " << m.title << " vs eval length, mean and sample std over seeds; n/a lengths omitted\n"
      << "# one block per group (gnuplot index); columns: length mean std n band_lo band_hi\n";
  std::vector<std::pair<std::size_t, std::size_t>> blocks;  // (group, gnuplot index)
  double lo_mean = 0, hi_mean = 0;
  bool any = false;
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    std::ostringstream block;
    int points = 0;
    for (std::size_t len : s.lengths) {
      const CellStats c = cell_stats(s.groups[i], len, metric);
      if (c.n == 0) continue;
      const double k = pct ? 100.0 : 1.0, mean = k * c.mean, sd = k * c.std;
      double lo = mean - sd, hi = mean + sd;
      if (pct) {
        lo = std::max(lo, 0.0);
        hi = std::min(hi, 100.0);
      } else if (lo <= 0) {
        lo = mean / 10;  // keeps the band drawable on a log axis
      }
      block << len << " " << num(mean) << " " << num(sd) << " " << c.n << " " << num(lo) << " " << num(hi) << "\n";
      lo_mean = any ? std::min(lo_mean, mean) : mean;
      hi_mean = any ? std::max(hi_mean, mean) : mean;
      any = true;
      ++points;
    }
    if (points == 0) continue;
    if (!blocks.empty()) dat << "\n\n";
    dat << "# " << s.groups[i].label << "\n" << block.str();
    blocks.emplace_back(i, blocks.size());
  }

  std::set<std::size_t> train_lens;
  std::set<std::string> tasks;
  for (const Run& r : s.runs) {
    train_lens.insert(r.train_len);
    tasks.insert(r.task);
  }
  std::string task_text;
  for (const std::string& t : tasks) task_text += (task_text.empty() ? "" : " + ") + t;
  std::ostringstream gp;
  gp << "# Length generalization: " << m.title << " vs eval length.\n"
     << "# Re-render: cd to this directory and run `gnuplot length_generalization.gp`.\n"
     << preamble("length_generalization.png",
                 task_text + ": " + m.title + " vs eval length (mean ± std over seeds)")
     << "set xlabel \"eval length (log2 scale)\"\n"
     << "set ylabel " << gp_string(m.title) << "\n"
     << "set logscale x 2\n";
  std::size_t xmin = s.lengths.front(), xmax = s.lengths.back();
  for (std::size_t t : train_lens) {
    xmin = std::min(xmin, t);
    xmax = std::max(xmax, t);
  }
  gp << "set xrange [" << num(xmin / 1.25) << ":" << num(xmax * 1.25) << "]\n";
  gp << "set xtics (";
  for (std::size_t j = 0; j < s.lengths.size(); ++j) gp << (j ? ", " : "") << s.lengths[j];
  gp << ")\n";
  if (pct) {
    gp << "set yrange [-2:102]\n";
  } else if (any && lo_mean > 0 && hi_mean / lo_mean > 20) {
    gp << "set logscale y\n";
  }
  for (std::size_t t : train_lens) {
    gp << "set arrow from " << t << ", graph 0 to " << t << ", graph 1 nohead dt 2 lw 1.5 lc rgb \"#555555\"\n";
    gp << "set label " << gp_string(train_lens.size() == 1 ? "train length" : "train length " + std::to_string(t))
       << " at " << t << ", graph 0.5 center rotate by 90 offset -1,0 textcolor rgb \"#555555\"\n";
  }
  gp << "set style fill transparent solid 0.18 noborder\n";
  if (blocks.empty()) {
    gp << "set label \"no data: every length is n/a\" at graph 0.5, graph 0.5 center\n"
       << "plot NaN notitle\n";
  } else {
    gp << "plot \\\n";
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const auto [g, idx] = blocks[b];
      const std::string file = b == 0 ? "\"length_generalization.dat\"" : "\"\"";
      gp << "  " << file << " index " << idx << " using 1:5:6 with filledcurves lc rgb \"" << color(g)
         << "\" notitle, \\\n"
         << "  \"\" index " << idx << " using 1:2 with linespoints lw 2 pt " << point_type(g) << " ps 1.2 lc rgb \""
         << color(g) << "\" title " << gp_string(s.groups[g].label) << (b + 1 < blocks.size() ? ", \\\n" : "\n");
    }
  }
  return {"length_generalization", dat.str(), gp.str()};
}

// Mean training loss over a group's seeds at each logged step; empty when nothing was logged.
std::optional<Script> training_plot(const Sweep& s) {
  std::ostringstream dat;
  dat << "# training loss (split train) vs step, mean over the group's runs that logged the step\n"
      << "# one block per group (gnuplot index); columns: step mean_loss runs\n";
  std::vector<std::pair<std::size_t, std::size_t>> blocks;
  for (std::size_t i = 0; i < s.groups.size(); ++i) {
    std::map<long, std::pair<double, int>> at;
    for (const Run* r : s.groups[i].runs)
      for (const auto& [step, loss] : r->train_loss) {
        at[step].first += loss;
        at[step].second += 1;
      }
    if (at.empty()) continue;
    if (!blocks.empty()) dat << "\n\n";
    dat << "# " << s.groups[i].label << "\n";
    for (const auto& [step, sc] : at) dat << step << " " << num(sc.first / sc.second) << " " << sc.second << "\n";
    blocks.emplace_back(i, blocks.size());
  }
  if (blocks.empty()) return std::nullopt;
  std::set<std::string> tasks;
  for (const Run& r : s.runs) tasks.insert(r.task);
  std::string task_text;
  for (const std::string& t : tasks) task_text += (task_text.empty() ? "" : " + ") + t;
  std::ostringstream gp;
  gp << "# Training curves: training loss vs step, mean over seeds.\n"
     << "# Re-render: cd to this directory and run `gnuplot training_curves.gp`.\n"
     << preamble("training_curves.png", task_text + ": training loss (mean over seeds)")
     << "set xlabel \"step\"\n"
     << "set ylabel \"training loss (log scale)\"\n"
     << "set logscale y\n"
     << "set autoscale xfix\n"
     << "plot \\\n";
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const auto [g, idx] = blocks[b];
    gp << "  " << (b == 0 ? "\"training_curves.dat\"" : "\"\"") << " index " << idx
       << " using 1:2 with lines lw 2 lc rgb \"" << color(g) << "\" title " << gp_string(s.groups[g].label)
       << (b + 1 < blocks.size() ? ", \\\n" : "\n");
  }
  return Script{"training_curves", dat.str(), gp.str()};
}

}  // namespace

std::vector<std::string> write_plots(const Sweep& s, const std::string& metric, const ReportOptions& opt,
                                     ReportResult& out) {
  const fs::path dir = fs::path(s.dir) / "plots";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message());

  std::vector<Script> scripts = {length_plot(s, metric)};
  if (auto t = training_plot(s)) scripts.push_back(*t);
  else out.warnings.push_back("no training loss in any metrics.jsonl: training_curves.png not drawn");
  for (const Script& sc : scripts) {
    for (const auto& [ext, text] : {std::pair<std::string, std::string>{".dat", sc.dat}, {".gp", sc.gp}}) {
      const std::string path = (dir / (sc.name + ext)).string();
      write_file_atomic(path, text);
      out.files_written.push_back(path);
    }
  }

  const std::string gnuplot = find_program(opt.gnuplot);
  if (gnuplot.empty()) {
    out.warnings.push_back("gnuplot not found ('" + opt.gnuplot + "'): plots not rendered; scripts and data are in " +
                           dir.string() + " (install gnuplot, then run gnuplot on each .gp there)");
    return {};
  }
  std::vector<std::string> pngs;
  for (const Script& sc : scripts) {
    const std::string err = render(gnuplot, dir, sc.name);
    if (!err.empty()) {
      out.warnings.push_back(err);
      continue;
    }
    const std::string png = (dir / (sc.name + ".png")).string();
    out.files_written.push_back(png);
    pngs.push_back(png);
  }
  return pngs;
}

}  // namespace report_detail
}  // namespace pelab
