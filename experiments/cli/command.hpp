// pelab's subcommands, one file each in experiments/cli/. Each file keeps its options in a struct of its
// own and adds itself with an add_NAME function that main.cpp calls in the order of `pelab --help`.
#pragma once

#include <functional>
#include <string>
#include <vector>

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

void add_report(CLI::App& app, Commands& commands);
void add_list(CLI::App& app, Commands& commands);
void add_show_task(CLI::App& app, Commands& commands);

}  // namespace pelab::cli
