// The pelab command line: train, sweep, eval, report, list, show-task, predict, probe (one file each in
// experiments/cli/, listed in command.cpp's table).
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "core/blas_coretype.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/run/run.hpp"
#include "training/distributed.hpp"
#include "training/signals.hpp"

using namespace pelab;

namespace {

// CLI11 reports an unknown first word as "A subcommand is required": name it (and the commands).
// False, after printing that error, when the first word is neither an option nor a command.
bool known_command(const CLI::App& app, int argc, char** argv) {
  if (argc <= 1 || argv[1][0] == '-') return true;
  std::string list;
  bool known = false;
  for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; })) {
    list += (list.empty() ? "" : ", ") + c->get_name();
    known = known || c->get_name() == argv[1];
  }
  if (!known) std::fprintf(stderr, "error: unknown command '%s'; commands: %s (pelab --help for more)\n", argv[1], list.c_str());
  return known;
}

// Prints the error and ends with `code`; under MPI it ends the whole job (a rank that stops alone would
// leave the others waiting). Ranks other than 0 wait a moment first: rank 0 usually meets the same
// error, and its message (and the end of the job) should come once.
int fail(int code, const char* what) {
  if (dist::size() > 1 && dist::rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
  if (dist::size() > 1) std::fprintf(stderr, "error (rank %d): %s\n", dist::rank(), what);
  else std::fprintf(stderr, "error: %s\n", what);
  return dist::abort_job(code);
}

// Runs the command the line named (CLI11 requires exactly one); its exceptions become exit codes.
int run_command(const cli::Commands& commands, const cli::Invocation& line) {
  try {
    set_phase("starting");
    for (const cli::Command& c : commands)
      if (c.app->parsed()) {
        const int rc = c.run(line);
        return rc == kInterrupted ? stop_exit_code() : rc;  // 130 for SIGINT, 143 for SIGTERM
      }
    throw std::logic_error("no command was parsed");
  } catch (const Interrupted& e) {  // a read-only command stopped at a poll (training/signals.hpp)
    std::fprintf(stderr, "%s\n", e.what());
    return stop_exit_code();
  } catch (const std::exception& e) {
    const cli::Failure f = cli::describe_failure(e);
    return fail(f.code, f.message.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  blas::select_coretype(argv);  // may re-execute with OPENBLAS_CORETYPE set: before anything else
  const dist::Session mpi(&argc, &argv);  // MPI only under mpirun / srun (training/distributed.hpp)
  CLI::App app{"pelab: train small transformers and compare positional encodings in and beyond the training length"};
  cli::Commands commands;
  cli::add_commands(app, commands);
  if (!known_command(app, argc, argv)) return kBadInput;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, or the error with a hint
    return rc == 0 ? kOk : kBadInput;
  }
  return run_command(commands, {argc, argv});
}
