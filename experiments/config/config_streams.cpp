// Cross-key checks of the ids a task supplies beside its tokens: its own position ids ([train] / [eval]
// positions = "task" or "task_offset": position coupling) and digit indices (encodings that read them:
// abacus). Each pairing that would silently change nothing, or discard the task's ids, is an error.
#include <algorithm>

#include "experiments/config/config_schema.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"
#include "layers/positional/variant.hpp"

namespace pelab::config_detail {
namespace {

// The task parameter that turns its position ids on, where the config gives it (for the messages).
std::string coupled_key(const ExperimentConfig& cfg) { return "task." + cfg.task + ".coupled_positions"; }

// Every encoding the model runs: [encoding] name and the names of an [encoding] layers pattern.
std::vector<std::string> encodings_in_play(const ModelConfig& m) {
  std::vector<std::string> v = m.extra_encoding_names();
  v.push_back(m.encoding);
  return v;
}

// Encodings whose hooks never read the position ids (EncodingSpec::reads_position_ids), so that a task's
// ids would change nothing; abacus reads the digit indices instead.
bool ignores_position_ids(const std::string& name) {
  return !EncodingRegistry::instance().get(encoding_base_name(name)).reads_position_ids;
}

void check_task_positions(const ExperimentConfig& cfg, const Task& task, const ModelConfig& m) {
  const PositionMode train = cfg.train.positions, eval = eval_positions(cfg).mode;
  const std::string train_name = position_mode_name(train), eval_name = position_mode_name(eval);
  if ((is_task_mode(train) || is_task_mode(eval)) && !task.supplies_positions())
    fail(location_any(cfg, {is_task_mode(train) ? "train.positions" : "eval.positions", "task.name"}),
         std::string(is_task_mode(train) ? "[train] positions = \"" + train_name : "[eval] positions = \"" + eval_name) +
             "\" keeps the task's own position ids, but task '" + cfg.task + "' supplies none (it fills 0..T-1); "
             "expected a task that does (addition with coupled_positions = true), or contiguous, offset, randomized");
  if (!task.supplies_positions()) return;
  if (!is_task_mode(train) || !is_task_mode(eval))
    fail(location_any(cfg, {coupled_key(cfg), is_task_mode(train) ? "eval.positions" : "train.positions"}),
         "[task." + cfg.task + "] coupled_positions = true writes position ids tied to digit significance, but " +
             (is_task_mode(train) ? "[eval] positions = \"" + eval_name : "[train] positions = \"" + train_name) +
             "\" replaces them; expected [train] positions = \"task_offset\" (Cho et al. 2024: a random offset in "
             "training) or \"task\", and [eval] positions = \"train\", \"task\" or \"task_offset\"");
  const auto names = encodings_in_play(m);
  if (std::all_of(names.begin(), names.end(), ignores_position_ids))
    fail(location_any(cfg, {"encoding.name", "encoding.layers", "train.positions"}),
         "[encoding] name = \"" + cfg.encoding + "\"" + (m.layer_encodings.empty() ? "" : " with layers \"" + m.layer_encodings + "\"") +
             " reads no position ids, so the task's coupled ids ([train] positions = \"" + train_name +
             "\") would change nothing; expected an encoding that reads them (learned, rope, fire, alibi, ...), or "
             "coupled_positions = false");
}

void check_digit_index(const ExperimentConfig& cfg, const Task& task, const ModelConfig& m) {
  for (const std::string& name : encodings_in_play(m)) {
    if (!EncodingRegistry::instance().get(encoding_base_name(name)).reads_digit_index || task.supplies_digit_index())
      continue;
    fail(location_any(cfg, {"encoding.name", "task.name"}),
         "[encoding] name = \"" + name + "\" embeds each digit's index within its number, but task '" + cfg.task +
             "' supplies no digit indices; expected a task that does (addition), or another encoding");
  }
}

}  // namespace

std::vector<std::size_t> operand_grid_lengths(const ExperimentConfig& cfg) { return range_lengths(cfg.eval.operand_grid); }

void check_operand_grid(const ExperimentConfig& cfg, const Task& task) {
  const auto& g = cfg.eval.operand_grid;
  if (g.empty()) return;
  const std::string w = location(cfg, "eval.operand_grid");
  const std::string range = "[" + std::to_string(g[0]) + ", " + std::to_string(g[1]) + ", " + std::to_string(g[2]) + "]";
  if (!task.has_operands())
    fail(w, "[eval] operand_grid " + range + " evaluates every pair of operand lengths, but task '" + cfg.task +
                "' has no operands; expected a two-operand task (addition), or remove operand_grid");
  const std::vector<std::size_t> ls = operand_grid_lengths(cfg);
  constexpr std::size_t kMaxCells = 10000;
  if (ls.size() * ls.size() > kMaxCells)
    fail(w, "[eval] operand_grid " + range + " is " + std::to_string(ls.size() * ls.size()) +
                " cells; expected at most " + std::to_string(kMaxCells) + " (a larger step)");
  for (std::size_t a : ls)
    for (std::size_t b : ls) try {
        task.eval_batch_operands(cfg.eval.seed, 1, a, b);
      } catch (const Error& e) {
        fail(w, "[eval] operand_grid " + range + " includes operand lengths (" + std::to_string(a) + ", " +
                    std::to_string(b) + "), which task '" + cfg.task + "' cannot generate: " + e.what() +
                    "; expected a range the task can generate");
      }
}

void check_task_streams(const ExperimentConfig& cfg, const Task& task, const ModelConfig& m) {
  check_task_positions(cfg, task, m);
  check_digit_index(cfg, task, m);
}

}  // namespace pelab::config_detail
