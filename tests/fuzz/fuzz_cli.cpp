// libFuzzer target: the command lines of `pelab predict`, `pelab probe` and `pelab eval` through their
// parsers (experiments/cli/: CLI11 with pelab's checks, e.g. check_unsigned_text) and the value parsers
// the commands run first (parse_positive_list, parse_count). An input is the words after `pelab`, separated
// by NUL bytes. Every input must parse or be refused with CLI::Error or pelab::Error; any other exception,
// crash or sanitizer report is a bug. Nothing runs: the commands are registered and parsed, not executed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "experiments/cli/cli_args.hpp"
#include "experiments/cli/command.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words = {"pelab"};
  std::string word;
  for (std::size_t i = 0; i < size && words.size() < 64; ++i) {
    if (data[i] == 0) words.push_back(word), word.clear();
    else word += char(data[i]);
  }
  words.push_back(word);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(&w[0]);
  CLI::App app{"fuzz"};
  pelab::cli::Commands commands;
  for (const pelab::cli::AddCommand add : {pelab::cli::add_predict, pelab::cli::add_probe, pelab::cli::add_eval})
    add(app, commands);
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::Error&) {
  }
  for (std::size_t i = 1; i < words.size(); ++i) {
    try {
      (void)pelab::parse_positive_list("--lengths", words[i], 1024, "a positive integer");
      (void)pelab::cli::parse_count("--memory-limit", words[i], "a size in MiB");
      (void)pelab::cli::parse_memory_limit(words[i]);
    } catch (const pelab::Error&) {
    }
  }
  return 0;
}
