// pelab's subcommands, one file each in experiments/cli/. Each file keeps its options in a struct of its
// own and adds itself with an add_NAME function; main.cpp lists those functions in one table, whose order
// is the order of `pelab --help`. What the commands share: --memory-limit, the train/sweep config, parse_count.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "experiments/config/config.hpp"
#include "experiments/run/resources.hpp"

namespace CLI {
class App;
}

namespace pelab::cli {

// The command line as typed (train writes its resume command from it).
struct Invocation {
  int argc = 0;
  char** argv = nullptr;
};

// A registered subcommand: its CLI11 node and what runs when the command line names it (returns the exit
// code; throws Error and the like, which main maps to exit codes).
struct Command {
  CLI::App* app = nullptr;
  std::function<int(const Invocation&)> run;
};
using Commands = std::vector<Command>;
using AddCommand = void (*)(CLI::App& app, Commands& commands);

// Every subcommand, in the order of `pelab --help` (train, sweep, eval, ...), and the top level: one command
// required, --help-all, --version. What main.cpp and the Python module (python/) parse command lines with.
void add_commands(CLI::App& app, Commands& commands);

// What the command line reports for an exception a command threw: the exit code and the message after
// "error: " (an Error's own text; for std::bad_alloc and std::filesystem::filesystem_error, the phase it
// happened in, training/signals.hpp).
struct Failure {
  int code = 0;
  std::string message;
};
Failure describe_failure(const std::exception& e);

// The pelab executable `pelab sweep` starts for each cell: this process's own (/proc/self/exe) unless
// set_pelab_executable chose another (the Python module: its process is the interpreter).
std::string pelab_executable();
void set_pelab_executable(const std::string& path);

void add_train(CLI::App& app, Commands& commands);
void add_sweep(CLI::App& app, Commands& commands);
void add_eval(CLI::App& app, Commands& commands);
void add_report(CLI::App& app, Commands& commands);
void add_list(CLI::App& app, Commands& commands);
void add_show_task(CLI::App& app, Commands& commands);
void add_predict(CLI::App& app, Commands& commands);
void add_probe(CLI::App& app, Commands& commands);
void add_batches(CLI::App& app, Commands& commands);
void add_abc(CLI::App& app, Commands& commands);

// Seconds within which a read-only command (eval, predict, probe) ends after SIGINT/SIGTERM when no poll
// is reached first (training/signals.hpp, arm_stop_deadline).
constexpr double kStopDeadline = 0.5;

// --memory-limit MB on `cmd` (its help text, then `help_suffix`); the estimate of experiments/run/resources.hpp
// that train, sweep, eval, predict and probe run check before any work.
void add_memory_limit(CLI::App& cmd, std::string& mb, const std::string& help_suffix = "");
MemoryLimit parse_memory_limit(const std::string& mb);

// The config file (positional) and --set of train and sweep.
void add_config_options(CLI::App& cmd, std::string& config_path, std::vector<std::string>& overrides);
// train and sweep: the config with the --set overrides and --threads (as train.threads); prints its warnings.
LoadedConfig load_train_config(const std::string& config_path, std::vector<std::string> overrides, int threads);
// The flag or key that chose an output directory, for messages.
std::string dir_source(const ExperimentConfig& cfg, const std::string& out_flag);

// A non-negative integer option given as text (CLI11's range checks print the type's whole range):
// nullopt when empty, else the value; throws Error("FLAG TEXT: expected ALLOWED").
std::optional<std::size_t> parse_count(const std::string& flag, const std::string& text, const std::string& allowed);

}  // namespace pelab::cli
