#include "experiments/eval/predict.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/tape.hpp"
#include "experiments/cli/cli_args.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/run/run.hpp"
#include "experiments/tasks/stream.hpp"
#include "training/positions.hpp"
#include "training/signals.hpp"

namespace pelab {

namespace {

// Logits of the last position for tokens/positions (1, P).
// `digits`: the digit indices of the ids (Batch::digit_index), or null when the task supplies none.
std::vector<real> last_logits(Transformer& model, const std::vector<std::int32_t>& ids,
                              const std::vector<std::int32_t>& pos, const std::int32_t* digits = nullptr) {
  const std::size_t P = ids.size();
  IndexArray t(Shape{1, P}), p(Shape{1, P}), d;
  std::copy(ids.begin(), ids.end(), t.data());
  std::copy(pos.begin(), pos.end(), p.data());
  ForwardOptions fo;
  if (digits) {
    d = IndexArray(Shape{1, P});
    std::copy(digits, digits + P, d.data());
    fo.digit_index = &d;
  }
  fo.between_layers = [] { throw_if_stopped("decoding"); };
  const Tensor logits = model.forward(t, p, fo);  // (1, P, V)
  const std::size_t V = logits.value().shape()[2];
  const real* row = logits.value().data() + (P - 1) * V;
  return std::vector<real>(row, row + V);
}

// The estimate of decoding every row of `batch` (greedy_decode: one forward per answer token over the
// prefix read so far; a blank-format row, one forward of the whole row).
JobProgress decoding_progress(Transformer& model, const Batch& batch) {
  set_phase("estimating the time");
  const ModelConfig& m = model.config();
  double flops = 0;
  for (std::size_t b = 0; b < batch.batch() && b < batch.answer_begin.size(); ++b) {
    const std::size_t a = batch.answer_begin[b], e = batch.answer_end[b];
    flops += batch.blank_answer ? forward_flops(m, 1, batch.length()) : decoding_flops(m, a + 1, e - a);
  }
  const double rate = worth_measuring(flops) ? measure_forward_rate(model, batch.length()) : 0;
  return JobProgress("decoding " + std::to_string(batch.batch()) + " row(s) of " + std::to_string(batch.length()) +
                         " tokens", flops, rate);
}

std::int32_t argmax(const std::vector<real>& v) {
  return std::int32_t(std::max_element(v.begin(), v.end()) - v.begin());  // first maximum on ties
}

std::int32_t sample_token(const std::vector<real>& logits, double temperature, Rng& rng) {
  const double mx = *std::max_element(logits.begin(), logits.end());
  std::vector<double> w(logits.size());
  double sum = 0;
  for (std::size_t i = 0; i < w.size(); ++i) sum += w[i] = std::exp((double(logits[i]) - mx) / temperature);
  double u = rng.uniform() * sum;
  for (std::size_t i = 0; i < w.size(); ++i)
    if ((u -= w[i]) < 0) return std::int32_t(i);
  return std::int32_t(w.size() - 1);
}

void check_positions(Transformer& model, const std::vector<std::int32_t>& pos, const std::string& what) {
  const std::int64_t mx = pos.empty() ? 0 : *std::max_element(pos.begin(), pos.end()) + 1;
  if (auto why = model.encoding().unsupported(mx)) throw Error(what + ": " + *why);
}

std::string join_tokens(const Task& task, const std::vector<std::int32_t>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : " ") + task.token_text(id);
  return s;
}

// Target and output aligned column by column, wrong outputs in *stars*, and a marker row.
std::string aligned(const Task& task, const Prediction& p) {
  std::string t = "target ", o = "output ", m = "       ";
  for (std::size_t j = 0; j < p.target.size(); ++j) {
    const std::string a = task.token_text(p.target[j]);
    const std::string b = p.correct[j] ? task.token_text(p.output[j]) : "*" + task.token_text(p.output[j]) + "*";
    const std::size_t w = std::max(a.size(), b.size());
    t += " " + a + std::string(w - a.size(), ' ');
    o += " " + b + std::string(w - b.size(), ' ');
    m += " " + std::string(p.correct[j] ? "." : "X") + std::string(w - 1, ' ');
  }
  return t + "\n" + o + "\n" + m + "\n";
}

nlohmann::ordered_json ids_json(const Task& task, const std::vector<std::int32_t>& ids) {
  auto j = nlohmann::ordered_json::array();
  for (auto id : ids) j.push_back(task.token_text(id));
  return j;
}

int predict_sequence(TrainedRun& run, const PredictArgs& a) {
  const Task& task = *run.spec.task;
  const ExperimentConfig& cfg = run.spec.config;
  Batch batch;
  std::size_t n = 0;
  if (!a.input.empty()) {
    batch = task.parse_input(a.input);
  } else {
    n = a.len ? a.len : cfg.train_len;
    batch = task.eval_batch(a.seed, a.count, n);
  }
  // Decoded one row at a time: one row of the batch's length.
  check_memory("pelab predict: a forward of " + std::to_string(batch.length()) + " tokens",
               forward_bytes(run.spec.model, 1, batch.length()), a.input.empty() ? "--len" : "--input", a.memory);
  Rng position_rng(a.seed, 4);
  assign_positions(batch, eval_positions(cfg), position_rng);
  NoGrad ng;
  std::vector<Prediction> preds;
  for (std::size_t b = 0; b < batch.batch(); ++b) {
    std::vector<std::int32_t> pos(batch.positions.data() + b * batch.length(),
                                  batch.positions.data() + (b + 1) * batch.length());
    check_positions(*run.model, pos, "pelab predict: problem size " + std::to_string(n ? n : 0));
  }
  JobProgress progress = decoding_progress(*run.model, batch);
  set_phase("decoding");
  for (std::size_t b = 0; b < batch.batch(); ++b) {
    preds.push_back(greedy_decode(*run.model, batch, b, &progress));
    preds.back().n = n;
  }
  std::size_t right = 0, total = 0, exact = 0;
  for (const auto& p : preds) {
    const auto r = std::size_t(std::count(p.correct.begin(), p.correct.end(), true));
    right += r, total += p.correct.size(), exact += r == p.correct.size();
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["run"] = run.dir;
    j["checkpoint"] = run.checkpoint;
    j["task"] = cfg.task;
    j["train_len"] = cfg.train_len;
    j["samples"] = nlohmann::ordered_json::array();
    for (const auto& p : preds) {
      nlohmann::ordered_json s;
      if (p.n) s["n"] = p.n;
      s["input"] = ids_json(task, p.input);
      s["target"] = ids_json(task, p.target);
      s["output"] = ids_json(task, p.output);
      s["correct"] = p.correct;
      s["exact_match"] = std::count(p.correct.begin(), p.correct.end(), false) == 0;
      j["samples"].push_back(s);
    }
    j["token_acc"] = total ? double(right) / double(total) : 0.0;
    j["exact_match"] = preds.empty() ? 0.0 : double(exact) / double(preds.size());
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  std::printf("%s (checkpoint %s): task %s, train_len %zu\n", run.dir.c_str(), run.checkpoint.c_str(),
              cfg.task.c_str(), cfg.train_len);
  if (n) std::printf("%zu held-out sample(s) of size %zu (%s), seed %llu; greedy decoding\n", preds.size(), n,
                     n <= cfg.train_len && n >= cfg.min_len ? "in distribution" : "beyond the training sizes",
                     static_cast<unsigned long long>(a.seed));
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const Prediction& p = preds[i];
    const auto r = std::size_t(std::count(p.correct.begin(), p.correct.end(), true));
    const auto first = std::find(p.correct.begin(), p.correct.end(), false);
    std::printf("\n#%zu input  %s\n%s", i + 1, join_tokens(task, p.input).c_str(), aligned(task, p).c_str());
    std::printf("   %zu/%zu correct%s\n", r, p.correct.size(),
                first == p.correct.end() ? ", exact match"
                                         : (", first error at answer position " +
                                            std::to_string(first - p.correct.begin() + 1)).c_str());
  }
  std::printf("\ntoken accuracy %.1f%%, exact match %zu/%zu\n", total ? 100.0 * double(right) / double(total) : 0.0,
              exact, preds.size());
  return kOk;
}

int predict_lm(TrainedRun& run, const PredictArgs& a) {
  const Task& task = *run.spec.task;
  const std::string text = !a.prompt.empty() ? a.prompt : a.input;
  if (text.empty()) throw Error("pelab predict: " + run.spec.config.task + " is a language model: give --prompt TEXT");
  const Batch b = task.parse_input(text);
  std::vector<std::int32_t> ids(b.tokens.data(), b.tokens.data() + b.length());
  check_memory("pelab predict: a forward of " + std::to_string(ids.size() + a.tokens) + " tokens (prompt and generated)",
               forward_bytes(run.spec.model, 1, ids.size() + a.tokens), "--tokens", a.memory);
  Rng rng(a.seed);
  std::string out, stopped;
  std::vector<std::string> pieces;
  set_phase("estimating the time");
  const double flops = decoding_flops(run.spec.model, ids.size(), a.tokens);
  JobProgress progress("generating " + std::to_string(a.tokens) + " characters after a prompt of " +
                           std::to_string(ids.size()), flops,
                       worth_measuring(flops) ? measure_forward_rate(*run.model, ids.size() + a.tokens) : 0);
  set_phase("generating");
  const std::vector<std::int32_t> added =
      continue_tokens(*run.model, ids, a.tokens, a.temperature, rng, stopped, &progress);
  for (const std::int32_t id : added) {
    pieces.push_back(task.token_text(id));
    out += pieces.back();
  }
  if (!stopped.empty()) stopped = "stopped after " + std::to_string(added.size()) + " characters: " + stopped;
  if (a.json) {
    nlohmann::ordered_json j;
    j["run"] = run.dir;
    j["checkpoint"] = run.checkpoint;
    j["prompt"] = text;
    j["temperature"] = a.temperature;
    j["seed"] = a.seed;
    j["continuation"] = pieces;
    if (!stopped.empty()) j["stopped"] = stopped;
    std::printf("%s\n", j.dump(2).c_str());
    return kOk;
  }
  std::printf("%s (checkpoint %s), %s, train context %zu\n", run.dir.c_str(), run.checkpoint.c_str(),
              a.temperature > 0 ? ("temperature " + format_value(Value(a.temperature)) + ", seed " + std::to_string(a.seed)).c_str()
                                : "greedy",
              run.spec.config.train_len);
  std::printf("prompt:       %s\ncontinuation: %s\n", text.c_str(), out.c_str());
  if (!stopped.empty()) std::printf("(%s)\n", stopped.c_str());
  return kOk;
}

}  // namespace

std::vector<std::int32_t> continue_tokens(Transformer& model, std::vector<std::int32_t> ids, std::size_t count,
                                          double temperature, Rng& rng, std::string& stopped, JobProgress* progress) {
  NoGrad ng;
  std::vector<std::int32_t> added;
  for (std::size_t k = 0; k < count; ++k) {
    std::vector<std::int32_t> pos(ids.size());
    for (std::size_t t = 0; t < pos.size(); ++t) pos[t] = std::int32_t(t);
    if (auto why = model.encoding().unsupported(std::int64_t(ids.size()))) {
      stopped = *why;
      break;
    }
    const auto logits = last_logits(model, ids, pos);
    if (progress)
      progress->add(forward_flops(model.config(), 1, ids.size()),
                    "generating token " + std::to_string(k + 1) + " of " + std::to_string(count));
    const std::int32_t next = temperature > 0 ? sample_token(logits, temperature, rng) : argmax(logits);
    ids.push_back(next);
    added.push_back(next);
  }
  return added;
}

Prediction greedy_decode(Transformer& model, const Batch& batch, std::size_t b, JobProgress* progress) {
  if (batch.answer_begin.size() <= b) throw Error("greedy_decode: the batch has no answer span (not a sequence task)");
  const std::size_t T = batch.length(), a = batch.answer_begin[b], e = batch.answer_end[b];
  Prediction p;
  const std::int32_t* tok = batch.tokens.data() + b * T;
  const std::int32_t* pos = batch.positions.data() + b * T;
  // The answer's digit indices follow from its place, as its position ids do: read from the batch.
  const std::int32_t* digits = batch.has_digit_index() ? batch.digit_index.data() + b * T : nullptr;
  p.target.assign(batch.targets.data() + b * T + a, batch.targets.data() + b * T + e);
  NoGrad ng;
  if (batch.blank_answer) {  // the blank format: one pass over the whole row, the answer read at its blanks
    p.input.assign(tok, tok + T);
    IndexArray t(Shape{1, T}), ps(Shape{1, T}), d;
    std::copy_n(tok, T, t.data());
    std::copy_n(pos, T, ps.data());
    ForwardOptions fo;
    if (digits) d = IndexArray(Shape{1, T}), std::copy_n(digits, T, d.data()), fo.digit_index = &d;
    fo.between_layers = [] { throw_if_stopped("decoding"); };
    const Tensor logits = model.forward(t, ps, fo);  // (1, T, V)
    if (progress) progress->add(forward_flops(model.config(), 1, T), "decoding row " + std::to_string(b + 1));
    const std::size_t V = logits.value().shape()[2];
    for (std::size_t j = a; j < e; ++j) {
      const real* row = logits.value().data() + j * V;
      p.output.push_back(argmax(std::vector<real>(row, row + V)));
      p.correct.push_back(p.output.back() == p.target[j - a]);
    }
    return p;
  }
  p.input.assign(tok, tok + a + 1);  // target a is the first counted one: read through token a
  std::vector<std::int32_t> seq = p.input;
  for (std::size_t j = 0; j < p.target.size(); ++j) {
    const std::vector<std::int32_t> ps(pos, pos + seq.size());
    const std::int32_t next = argmax(last_logits(model, seq, ps, digits));
    if (progress)
      progress->add(forward_flops(model.config(), 1, seq.size()), "decoding row " + std::to_string(b + 1) + ", token " +
                                                                     std::to_string(j + 1) + " of " +
                                                                     std::to_string(p.target.size()));
    p.output.push_back(next);
    p.correct.push_back(next == p.target[j]);
    if (a + 1 + j < T) seq.push_back(next);  // the last answer token is never read
  }
  return p;
}

CLI::App* add_predict_command(CLI::App& app, PredictArgs& a) {
  auto* c = app.add_subcommand("predict", "show a trained model's outputs on task samples or on typed input");
  c->add_option("run_dir", a.run_dir, "run directory (holds config.toml and checkpoints/)")->required()->check(CLI::ExistingDirectory);
  c->add_option("--len", a.len, "problem size of the samples (default: the training length)")->check(CLI::Range(1, 1 << 20));
  c->add_option("--count,-n", a.count, "samples")->check(CLI::Range(1, 1000));
  c->add_option("--seed", a.seed, "seed of the samples (and of sampling)")->check(CLI::Validator(check_unsigned_text, "UINT"));
  c->add_option("--input", a.input, "x typed in the task's notation, e.g. \"3 1 4 1 5\" (see pelab show-task)");
  c->add_option("--prompt", a.prompt, "language models: the text to continue");
  c->add_option("--tokens", a.tokens, "language models: characters to generate")->check(CLI::Range(1, 100000));
  c->add_option("--temperature", a.temperature, "language models: 0 = greedy, else sample from softmax(logits / T)")
      ->check(CLI::Validator(check_finite_text, "FLOAT") & CLI::Range(0.0, 100.0));
  c->add_flag("--json", a.json, "print JSON instead of text");
  return c;
}

int run_predict(const PredictArgs& a) {
  set_phase("loading the run");
  TrainedRun run = load_trained_run(a.run_dir);
  if (run.spec.task->is_language_model()) return predict_lm(run, a);
  if (!a.prompt.empty()) throw Error("pelab predict: --prompt is for language models; " + run.spec.config.task +
                                     " takes --input \"x in its notation\"");
  if (dynamic_cast<const StreamTask*>(run.spec.task.get()))  // nothing to decode: targets are never fed back
    throw Error("pelab predict: task '" + run.spec.config.task + "' scores chosen positions of one sequence "
                "(experiments/tasks/stream.hpp), with no answer to decode token by token; its predictions at "
                "those positions are one teacher-forced pass: `pelab eval " + a.run_dir + "`");
  return predict_sequence(run, a);
}

}  // namespace pelab
