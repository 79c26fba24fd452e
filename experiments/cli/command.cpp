// What pelab's subcommands share (experiments/cli/command.hpp).
#include "experiments/cli/command.hpp"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>

#include <CLI/CLI.hpp>

#include "experiments/run/provenance.hpp"
#include "experiments/run/run.hpp"  // ExitCode
#include "training/distributed.hpp"
#include "training/signals.hpp"

namespace pelab::cli {

namespace {

// The subcommands, in the order of `pelab --help`.
const AddCommand kCommands[] = {add_train,     add_sweep,   add_eval,  add_report, add_list,
                                add_show_task, add_predict, add_probe, add_batches, add_abc};

std::string& executable_override() {
  static std::string path;
  return path;
}

}  // namespace

void add_commands(CLI::App& app, Commands& commands) {
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");
  app.set_version_flag("--version", version_text() + "\nMPI: " + dist::summary());
  for (const AddCommand add : kCommands) add(app, commands);
}

Failure describe_failure(const std::exception& e) {
  if (dynamic_cast<const Error*>(&e)) return {kBadInput, e.what()};
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return {kBadInput, "out of memory while " + current_phase() +
                           "; the estimate checked before the run did not foresee it (--memory-limit sets the "
                           "limit it is checked against)"};
  if (dynamic_cast<const std::filesystem::filesystem_error*>(&e))
    return {kBadInput, "while " + current_phase() + ": " + e.what()};
  return {kError, e.what()};
}

std::string pelab_executable() {
  if (!executable_override().empty()) return executable_override();
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("cannot locate the pelab executable (/proc/self/exe)");
  return std::string(buf, static_cast<std::size_t>(n));
}

void set_pelab_executable(const std::string& path) { executable_override() = path; }

void add_memory_limit(CLI::App& cmd, std::string& mb, const std::string& help_suffix) {
  const std::string help =
      "memory limit in MiB for the estimate checked before any work (default: MemAvailable of /proc/meminfo; 0: no check)";
  cmd.add_option("--memory-limit", mb, help + help_suffix);
}

MemoryLimit parse_memory_limit(const std::string& mb) {
  return memory_limit(parse_count("--memory-limit", mb, "a size in MiB (an integer >= 0; 0: no check)"));
}

void add_config_options(CLI::App& cmd, std::string& config_path, std::vector<std::string>& overrides) {
  cmd.add_option("config", config_path, "TOML config file")->required()->check(CLI::ExistingFile);
  cmd.add_option("--set", overrides, "override a key: section.key=value (repeatable)");
}

LoadedConfig load_train_config(const std::string& config_path, std::vector<std::string> overrides, int threads) {
  if (threads) overrides.push_back("train.threads=" + std::to_string(threads));
  set_phase("loading the config");
  LoadedConfig loaded = load_config(config_path, overrides);
  for (const auto& w : loaded.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return loaded;
}

std::string dir_source(const ExperimentConfig& cfg, const std::string& out_flag) {
  if (!out_flag.empty()) return "--out";
  auto it = cfg.locations.find("output.dir");
  if (it != cfg.locations.end()) return "output.dir at " + it->second;
  return "output.dir, by default " + cfg.output_dir + " from the config file's name";
}

std::optional<std::size_t> parse_count(const std::string& flag, const std::string& text, const std::string& allowed) {
  if (text.empty()) return std::nullopt;
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    if (text[0] != '-' && text[0] != '+') v = std::stoull(text, &pos);
  } catch (const std::exception&) {
  }
  if (pos == 0 || pos != text.size()) throw Error(flag + " " + text + ": expected " + allowed);
  return static_cast<std::size_t>(v);
}

}  // namespace pelab::cli
