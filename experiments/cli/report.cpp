// `pelab report SWEEP_DIR`: the tables (summary.md, summary.csv) and plots of a sweep directory.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/cli/command.hpp"
#include "experiments/report/report.hpp"
#include "experiments/run/run.hpp"
#include "training/metrics_table.hpp"

namespace pelab::cli {

namespace {

struct ReportArgs {
  std::string sweep_dir, metric = "auto";
  bool no_plots = false;
};

int cmd_report(const ReportArgs& a) {
  ReportOptions ro;
  ro.metric = a.metric;
  ro.plots = !a.no_plots;
  const ReportResult r = write_report(a.sweep_dir, ro);
  std::printf("%s\n", r.table_markdown.c_str());
  for (const auto& f : r.files_written) std::printf("wrote %s\n", f.c_str());
  for (const auto& w : r.warnings) std::printf("warning: %s\n", w.c_str());
  return kOk;
}

}  // namespace

void add_report(CLI::App& app, Commands& commands) {
  auto a = std::make_shared<ReportArgs>();
  auto* c = app.add_subcommand("report", "tables (summary.md, summary.csv) and plots for a sweep directory");
  c->add_option("sweep_dir", a->sweep_dir, "sweep directory")->required()->check(CLI::ExistingDirectory);
  std::vector<std::string> metric_choices = metric_names();
  metric_choices.insert(metric_choices.begin(), "auto");
  std::string metric_help;
  for (const auto& m : metric_choices) metric_help += (metric_help.empty() ? "" : " | ") + m;
  c->add_option("--metric", a->metric, metric_help)->check(CLI::IsMember(metric_choices));
  c->add_flag("--no-plots", a->no_plots, "tables only");
  commands.push_back({c, [a](const Invocation&) { return cmd_report(*a); }});
}

}  // namespace pelab::cli
