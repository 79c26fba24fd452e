// `pelab show-task NAME`: a few samples of a task, its format and its chance level.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/rng.hpp"
#include "experiments/cli/cli_args.hpp"
#include "experiments/cli/command.hpp"
#include "experiments/config/config.hpp"
#include "experiments/run/run.hpp"
#include "experiments/tasks/format.hpp"
#include "experiments/tasks/stream.hpp"
#include "experiments/tasks/task.hpp"
#include "training/batch.hpp"

namespace pelab::cli {

namespace {

struct ShowTaskArgs {
  std::string task_name;
  std::vector<std::string> overrides;  // --set
  std::size_t n_show = 3, len = 8;
  std::uint64_t seed = 0;
};

// Built through the config loader: the same checks and messages as a config's [task.NAME].
RunSpec task_spec(const ShowTaskArgs& a) {
  const std::string len = std::to_string(a.len);
  std::vector<std::string> sets = {"task.name=" + a.task_name, "task.train_len=" + len, "task.min_len=" + len,
                                   "eval.lengths=[" + len + "]"};
  for (const auto& kv : a.overrides) {
    const std::string key = kv.substr(0, kv.find('='));  // format keys live in [task] itself
    const bool format_key = key == "bos" || key == "eos" || key == "sep" || key == "prompt" || key == "output";
    sets.push_back((format_key ? "task." : "task." + a.task_name + ".") + kv);
  }
  return parse_config("", "show-task", sets).runs.at(0);
}

int cmd_show_task(const ShowTaskArgs& a) {
  const RunSpec spec = task_spec(a);
  const auto& info = TaskRegistry::instance().get(a.task_name);
  std::printf("%s: %s\n\n%s\nvocabulary size %zu\n\n", info.name.c_str(), info.summary.c_str(),
              info.format.c_str(), spec.task->vocab_size());
  const std::size_t n = spec.config.train_len;
  if (!spec.task->is_language_model()) {
    const bool stream = dynamic_cast<const StreamTask*>(spec.task.get()) != nullptr;  // no [task] format keys
    std::printf("format: %s\n\nchance level (uniform guesser, see above):\n%8s  %10s  %12s\n",
                stream ? "<BOS> then the task's tokens (a stream task: no format keys)" : describe(spec.config.format).c_str(),
                "n", "token_acc", "exact_match");
    for (std::size_t k : {n / 2, n, 2 * n, 4 * n}) {  // the default eval lengths
      if (k == 0) continue;
      try {
        const Chance c = *spec.task->chance(k);
        std::printf("%8zu  %9.2f%%  %12.4g\n", k, 100 * c.token_acc, c.exact_match);
      } catch (const Error& e) {  // a length the task cannot generate (e.g. addition's field_width)
        std::printf("%8zu  n/a: %s\n", k, e.what());
      }
    }
  }
  std::printf("\nsamples (n = %zu; counted targets in brackets%s):\n", n,
              spec.config.format.blank() ? ", predicted at the blanks in order; - = an unscored padding blank" : "");
  Rng rng(a.seed);
  const Batch b = spec.task->sample(rng, a.n_show, n, n);
  for (std::size_t i = 0; i < b.batch(); ++i) std::printf("%s\n", spec.task->render(b, i).c_str());
  return kOk;
}

}  // namespace

void add_show_task(CLI::App& app, Commands& commands) {
  auto a = std::make_shared<ShowTaskArgs>();
  auto* c = app.add_subcommand("show-task", "print a few samples of a task and its format");
  c->add_option("name", a->task_name, "task name (see pelab list)")->required();
  c->add_option("--set", a->overrides,
                "task parameter or format key: key=value, e.g. reverse_digits=true, bos=false, eos=absent, output=blank "
                "(repeatable)");
  c->add_option("-n", a->n_show, "samples")->check(CLI::Range(1, 100));
  c->add_option("--len", a->len, "problem size (default 8)")
      ->check(CLI::Validator(check_positive_text, "N"));
  c->add_option("--seed", a->seed, "seed")->check(CLI::Validator(check_unsigned_text, "UINT"));
  commands.push_back({c, [a](const Invocation&) { return cmd_show_task(*a); }});
}

}  // namespace pelab::cli
