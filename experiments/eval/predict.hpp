// `pelab predict RUN_DIR`: what a trained model outputs. Sequence tasks: held-out samples of a chosen size
// (or one typed input), each shown as input, target and the model's greedy output (decoded token by
// token from the input, as a user of the model would get it), wrong positions marked; language models:
// a prompt continued greedily or by seeded temperature sampling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/run/estimate.hpp"
#include "experiments/run/resources.hpp"
#include "experiments/run/trained_run.hpp"

namespace CLI {
class App;
}

namespace pelab {

struct PredictArgs {
  std::string run_dir;
  std::size_t len = 0;       // problem size (sequence tasks; default train_len)
  std::size_t count = 3;     // samples
  std::uint64_t seed = 0;
  std::string input;         // typed x (sequence tasks) or prompt (LM)
  std::string prompt;        // LM prompt
  std::size_t tokens = 200;  // LM: characters to generate
  double temperature = 0;    // LM: 0 = greedy
  bool json = false;
  MemoryLimit memory;  // --memory-limit (experiments/cli/predict.cpp); default-constructed: no check
};

// One decoded example of a sequence task.
struct Prediction {
  std::size_t n = 0;                       // problem size (0 for typed input)
  std::vector<std::int32_t> input;         // what the model reads before answering: [BOS] [P] x [SEP] (and the blanks)
  std::vector<std::int32_t> target, output;  // the counted answer (y and a scored EOS) and the greedy one
  std::vector<bool> correct;               // per answer position
};

// Greedy decoding of row b of `batch` (positions as assigned in it): the row's prefix up to its first
// counted target, then one token at a time, each fed back. Needs answer_begin/answer_end (sequence tasks).
// A blank-format batch (Batch::blank_answer) is read whole in one pass, the answer the argmax at its blanks.
// `progress` (optional) is told each forward pass's FLOPs.
Prediction greedy_decode(Transformer& model, const Batch& batch, std::size_t b, JobProgress* progress = nullptr);

// Continues `ids` (read at positions 0, 1, ...) by up to `count` tokens, each fed back: greedily
// (temperature 0) or drawn from softmax(logits / temperature) with `rng`. Stops early, with the reason in
// `stopped`, at a position the encoding cannot represent. Returns the new tokens. NoGrad inside.
std::vector<std::int32_t> continue_tokens(Transformer& model, std::vector<std::int32_t> ids, std::size_t count,
                                          double temperature, Rng& rng, std::string& stopped,
                                          JobProgress* progress = nullptr);

// The registration (one call in experiments/cli/predict.cpp) and the command.
CLI::App* add_predict_command(CLI::App& app, PredictArgs& args);
int run_predict(const PredictArgs& args);

}  // namespace pelab
