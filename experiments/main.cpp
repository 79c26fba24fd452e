// The pelab command line: train, sweep, eval, report, list, show-task, predict, probe (all but
// predict and probe in experiments/cli/).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <new>
#include <thread>

#include <CLI/CLI.hpp>

#include "core/blas_coretype.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/predict.hpp"
#include "experiments/probe.hpp"
#include "experiments/run.hpp"
#include "training/distributed.hpp"
#include "training/signals.hpp"

using namespace pelab;

namespace {

// Prints the error and ends with `code`; under MPI it ends the whole job (a rank that stops alone would
// leave the others waiting). Ranks other than 0 wait a moment first: rank 0 usually meets the same
// error, and its message (and the end of the job) should come once.
int fail(int code, const char* what) {
  if (dist::size() > 1 && dist::rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
  if (dist::size() > 1) std::fprintf(stderr, "error (rank %d): %s\n", dist::rank(), what);
  else std::fprintf(stderr, "error: %s\n", what);
  return dist::abort_job(code);
}

}  // namespace

int main(int argc, char** argv) {
  blas::select_coretype(argv);  // may re-execute with OPENBLAS_CORETYPE set: before anything else
  const dist::Session mpi(&argc, &argv);  // MPI only under mpirun / srun (training/distributed.hpp)
  CLI::App app{"pelab: train small transformers and compare positional encodings in and beyond the training length"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");
  app.set_version_flag("--version", "pelab\nMPI: " + dist::summary());
  cli::Commands commands;
  cli::add_train(app, commands);
  cli::add_sweep(app, commands);
  cli::add_eval(app, commands);
  cli::add_report(app, commands);
  cli::add_list(app, commands);
  cli::add_show_task(app, commands);

  std::string memory_mb;
  PredictArgs predict_args;
  auto* predict = add_predict_command(app, predict_args);
  ProbeCommand probe;
  add_probe_command(app, probe);
  // The inspection commands check the same estimate (experiments/resources.hpp) as train, sweep and eval.
  cli::add_memory_limit(*predict, memory_mb);
  cli::add_memory_limit(*probe.run, memory_mb);

  // CLI11 reports an unknown first word as "A subcommand is required": name it (and the commands).
  if (argc > 1 && argv[1][0] != '-') {
    std::string list;
    bool known = false;
    for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; })) {
      list += (list.empty() ? "" : ", ") + c->get_name();
      known = known || c->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr, "error: unknown command '%s'; commands: %s (pelab --help for more)\n", argv[1], list.c_str());
      return kBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, or the error with a hint
    return rc == 0 ? kOk : kBadInput;
  }

  try {
    set_phase("starting");
    const cli::Invocation line{argc, argv};
    for (const cli::Command& c : commands)
      if (c.app->parsed()) return c.run(line);
    const MemoryLimit limit = cli::parse_memory_limit(memory_mb);
    predict_args.memory = probe.run_args.memory = limit;
    if (*predict) return run_predict(predict_args);
    return run_probe_command(probe);  // the one command left (CLI11 requires one)
  } catch (const Error& e) {
    return fail(kBadInput, e.what());
  } catch (const std::bad_alloc&) {
    const std::string msg = "out of memory while " + current_phase() +
                            "; the estimate checked before the run did not foresee it (--memory-limit sets the "
                            "limit it is checked against)";
    return fail(kBadInput, msg.c_str());
  } catch (const std::filesystem::filesystem_error& e) {
    const std::string msg = "while " + current_phase() + ": " + e.what();
    return fail(kBadInput, msg.c_str());
  } catch (const std::exception& e) {
    return fail(kError, e.what());
  }
}
