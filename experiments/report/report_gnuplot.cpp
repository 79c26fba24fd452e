// Rendering the report's plots: data (.dat) and gnuplot scripts (.gp) in SWEEP/plots, rendered to PNG by
// running gnuplot on the script, so users can edit a script and re-render with `cd SWEEP/plots && gnuplot X.gp`.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/tensor.hpp"
#include "experiments/report/report_detail.hpp"
#include "training/fs.hpp"

namespace pelab {
namespace report_detail {

namespace fs = std::filesystem;

namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
const int kPoints[] = {7, 5, 9, 11, 13, 15};

}  // namespace

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
std::string render_gnuplot(const std::string& gnuplot, const std::string& dir_path, const std::string& name) {
  const fs::path dir(dir_path);
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
  if (const std::string why = replace_refusal(png.string()); !why.empty()) {  // training/fs.hpp: one rule
    fs::remove(tmp, ec);
    return why;
  }
  fsync_path(tmp.string());
  fs::rename(tmp, png, ec);
  if (ec) return "cannot rename " + tmp.string() + " to " + png.string() + ": " + ec.message();
  fsync_path(dir.string());
  return "";
}

std::string plot_color(std::size_t i) { return kColors[i % (sizeof kColors / sizeof *kColors)]; }
int plot_point_type(std::size_t i) { return kPoints[i % (sizeof kPoints / sizeof *kPoints)]; }

int plot_dash_type(const Sweep& s, std::size_t g) {
  if (s.group_keys.size() < 2 || s.groups[g].values.empty()) return 1;
  std::vector<std::string> firsts;  // distinct first values, in group order
  for (const Group& other : s.groups)
    if (!other.values.empty() && std::find(firsts.begin(), firsts.end(), other.values[0]) == firsts.end())
      firsts.push_back(other.values[0]);
  const auto at = std::find(firsts.begin(), firsts.end(), s.groups[g].values[0]) - firsts.begin();
  return 1 + int(at % 5);  // gnuplot's dash types 1..5
}

std::string gp_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string gp_num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.8g", x);
  return buf;
}

int shown_width(int png_width) {
  return std::min(png_width, png_width > kHalfShownMax ? kFullShownWidth : kHalfShownWidth);
}

int plot_font_pt(int png_width) {
  const int shown = shown_width(png_width);
  return (kMinTextPx * png_width + shown - 1) / shown;
}

std::string plot_terminal(int width, int height) {
  const std::string size = std::to_string(width) + "," + std::to_string(height);
  return "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
         "  set terminal pngcairo size " + size + " noenhanced font \"sans," + std::to_string(plot_font_pt(width)) +
         "\"\n} else {\n  set terminal png size " + size + " noenhanced\n}\n";
}

// Script preamble: output file overridable (`gnuplot -e "outfile='x.png'" s.gp`), pngcairo when present.
std::string plot_preamble(const std::string& png, const std::string& title, PlotSize size) {
  std::ostringstream os;
  os << "if (!exists(\"outfile\")) outfile = " << gp_string(png) << "\n"
     << plot_terminal(size.width, size.height)
     << "set output outfile\n"
     << "set title " << gp_string(title) << "\n"
     << "set grid lc rgb \"#dddddd\"\n"
     << "set key outside right top box opaque\n";
  return os.str();
}

std::string split_plot(const std::string& dat_file, const std::vector<std::vector<std::string>>& lines,
                       const std::vector<std::string>& shared) {
  const std::size_t panels = plot_panels(lines.size());
  std::string out = panels > 1 ? "set multiplot layout " + std::to_string(panels) + ",1\n" : "";
  for (std::size_t p = 0; p < panels; ++p) {
    std::vector<std::string> parts;
    for (std::size_t i = p * kMaxLines; i < std::min(lines.size(), (p + 1) * kMaxLines); ++i)
      parts.insert(parts.end(), lines[i].begin(), lines[i].end());
    parts.insert(parts.end(), shared.begin(), shared.end());
    if (parts.empty()) continue;
    if (parts.front().compare(0, 2, "\"\"") == 0) parts.front().replace(0, 2, gp_string(dat_file));
    out += "plot \\\n";
    for (std::size_t i = 0; i < parts.size(); ++i) out += "  " + parts[i] + (i + 1 < parts.size() ? ", \\\n" : "\n");
  }
  return out + (panels > 1 ? "unset multiplot\n" : "");
}

std::string gp_wrapped(const std::string& text, std::size_t width) {
  std::vector<std::string> lines(1);
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (!lines.back().empty() && lines.back().size() + 1 + w.size() > width) lines.emplace_back();
    lines.back() += (lines.back().empty() ? "" : " ") + w;
  }
  std::string out;
  for (const std::string& l : lines) {
    const std::string q = gp_string(l);
    out += out.empty() ? q.substr(0, q.size() - 1) : "\\n" + q.substr(1, q.size() - 2);
  }
  return out + "\"";
}

std::string task_text(const Sweep& s) {
  std::string out;
  for (const std::string& t : s.tasks) out += (out.empty() ? "" : " + ") + t;
  return out;
}

std::vector<std::string> render_scripts(const Sweep& s, const std::vector<Script>& scripts, const ReportOptions& opt,
                                        ReportResult& out) {
  const fs::path dir = fs::path(s.dir) / "plots";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir.string() + ": " + ec.message());
  for (const Script& sc : scripts) {
    for (const auto& [ext, text] : {std::pair<std::string, std::string>{".dat", sc.dat}, {".gp", sc.gp}}) {
      const std::string path = (dir / (sc.name + ext)).string();
      write_file_atomic(path, text);
      out.files_written.push_back(path);
    }
  }
  std::vector<std::string> pngs(scripts.size());
  const std::string gnuplot = find_program(opt.gnuplot);
  if (gnuplot.empty()) {
    out.warnings.push_back("gnuplot not found ('" + opt.gnuplot + "'): plots not rendered; scripts and data are in " +
                           dir.string() + " (install gnuplot, then run gnuplot on each .gp there)");
    return pngs;
  }
  for (std::size_t i = 0; i < scripts.size(); ++i) {
    const std::string err = render_gnuplot(gnuplot, dir.string(), scripts[i].name);
    if (!err.empty()) {
      out.warnings.push_back(err);
      continue;
    }
    pngs[i] = (dir / (scripts[i].name + ".png")).string();
    out.files_written.push_back(pngs[i]);
  }
  return pngs;
}

}  // namespace report_detail
}  // namespace pelab
