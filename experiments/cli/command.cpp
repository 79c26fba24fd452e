// What pelab's subcommands share (experiments/cli/command.hpp).
#include "experiments/cli/command.hpp"

#include <exception>

#include <CLI/CLI.hpp>

namespace pelab::cli {

void add_memory_limit(CLI::App& cmd, std::string& mb, const std::string& help_suffix) {
  const std::string help =
      "memory limit in MiB for the estimate checked before any work (default: MemAvailable of /proc/meminfo; 0: no check)";
  cmd.add_option("--memory-limit", mb, help + help_suffix);
}

MemoryLimit parse_memory_limit(const std::string& mb) {
  return memory_limit(parse_count("--memory-limit", mb, "a size in MiB (an integer >= 0; 0: no check)"));
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
