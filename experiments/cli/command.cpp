// What pelab's subcommands share (experiments/cli/command.hpp).
#include "experiments/cli/command.hpp"

#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "training/signals.hpp"

namespace pelab::cli {

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
