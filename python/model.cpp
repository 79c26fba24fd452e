// pelab.Model: a trained run's model at one of its checkpoints, loaded as `pelab eval` loads it
// (experiments/run/trained_run.hpp), and its forward pass on arrays: logits, attention maps, generation.
// Arguments are checked before any work (ValueError naming the argument); the forward pass runs without
// the GIL, its output moved into the numpy array it returns (no copy).
#include <algorithm>
#include <limits>
#include <numeric>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "core/tape.hpp"
#include "experiments/eval/evaluate.hpp"
#include "experiments/eval/predict.hpp"
#include "experiments/run/estimate.hpp"
#include "experiments/run/resources.hpp"
#include "experiments/run/trained_run.hpp"
#include "experiments/tasks/task.hpp"
#include "layers/positional/encoding.hpp"  // EncodingRegistry: which encodings read digit indices
#include "layers/positional/variant.hpp"
#include "python/arrays.hpp"
#include "python/bindings.hpp"
#include "python/convert.hpp"
#include "python/insides.hpp"
#include "python/stop.hpp"
#include "training/positions.hpp"
#include "training/signals.hpp"

namespace pelab::python {

std::mutex& gemm_mutex() {
  static std::mutex mu;
  return mu;
}

namespace {

// The GEMM path is the process's (core/blas.hpp), and two models loaded here may name different ones
// ([train] gemm): each forward holds gemm_mutex() and switches to its run's path, so a model computes on
// the path it trained with even after another model was loaded or while one runs on another thread.
struct RunGemm {
  std::lock_guard<std::mutex> lock{gemm_mutex()};
  explicit RunGemm(const TrainedRun& run) { use_gemm_path(run.spec.config); }
};

// load_trained_run switches the path too, so it runs under the lock; the GIL is released first, as
// everywhere the lock is taken, so that no thread waits for the lock while holding the GIL.
TrainedRun load_locked(const std::string& dir, const std::vector<std::string>& sets, std::optional<std::size_t> step) {
  py::gil_scoped_release unlocked;
  std::lock_guard<std::mutex> lock(gemm_mutex());
  return load_trained_run(dir, sets, step);
}

static_assert(std::is_same<real, float>::value, "the module returns float32 arrays");

// task->eval_batch(seed, count, n) on a worker thread while this one polls the stop flag: a draw has no
// safe point of its own, so on Ctrl-C this raises at once (Interrupted) and the worker finishes in the
// background, its batch dropped (it holds the task; the size check before bounds its work).
Batch draw_stoppable(std::shared_ptr<const Task> task, std::uint64_t seed, std::size_t count, std::size_t n) {
  auto job = std::make_shared<std::packaged_task<Batch()>>([task, seed, count, n] { return task->eval_batch(seed, count, n); });
  std::future<Batch> drawn = job->get_future();
  std::thread([job] { (*job)(); }).detach();
  while (drawn.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) throw_if_stopped("drawing examples");
  return drawn.get();
}

constexpr std::size_t kMaxProblemSize = std::size_t(1) << 48;  // model.examples' n

class Model {
 public:
  Model(const std::string& dir, std::optional<std::size_t> step, const std::vector<std::string>& sets)
      : run_(load_locked(dir, sets, step)) {}

  py::array_t<float> logits(const py::object& tokens, const py::object& positions, const py::object& digit_index) {
    Inputs in = inputs(tokens, positions, digit_index, false);
    return to_numpy(forward(in, nullptr));  // (B, T, V)
  }

  py::array_t<float> attention(const py::object& tokens, long layer, const py::object& positions,
                               const py::object& digit_index) {
    const long L = static_cast<long>(run_.spec.model.n_layers);
    if (layer < -L || layer >= L)
      value_error("layer", std::to_string(layer) + " is not a layer of this model (0.." + std::to_string(L - 1) +
                               ", or -1 for the last)");
    Inputs in = inputs(tokens, positions, digit_index, true);
    std::vector<Array> maps;
    forward(in, &maps);
    return to_numpy(std::move(maps.at(static_cast<std::size_t>(layer < 0 ? layer + L : layer))));  // (B, H, T, T)
  }

  py::array_t<std::int32_t> generate(const py::object& prompt, std::size_t max_new, double temperature,
                                     std::uint64_t seed) {
    if (!(temperature >= 0)) value_error("temperature", "expected a number >= 0 (0: greedy), got " + std::to_string(temperature));
    if (run_.spec.config.format.output == OutputMode::blank)  // nothing is fed back in that format
      value_error("prompt", "this run answers in the blank format ([task] output = \"blank\": x, then one blank per "
                  "answer place, all predicted in one pass), so there is nothing to generate; use `pelab predict` or "
                  "logits() at the blanks of model.examples(n)");
    if (const auto name = digit_reader())  // the new tokens' digit indices would be unknown
      value_error("prompt", "this model's encoding '" + *name + "' reads each digit's index within its number, which "
                  "generation cannot supply; use `pelab predict` (it decodes with the task's digit indices) or logits()");
    std::vector<std::int32_t> ids = prompt_ids(prompt);
    check_memory("model.generate: a forward of " + std::to_string(ids.size() + max_new) + " tokens",
                 forward_bytes(run_.spec.model, 1, ids.size() + max_new), "max_new", memory_limit(std::nullopt));
    std::string stopped;
    std::vector<std::int32_t> added;
    {
      py::gil_scoped_release unlocked;
      const StopScope stop;  // each token's forward polls between layers
      std::lock_guard<std::mutex> lock(mu_);
      const RunGemm gemm(run_);
      Rng rng(seed);
      added = continue_tokens(*run_.model, ids, max_new, temperature, rng, stopped);
      throw_if_stopped("generating");
    }
    if (!stopped.empty())
      PyErr_WarnEx(PyExc_RuntimeWarning, ("generation stopped after " + std::to_string(added.size()) + " tokens: " + stopped).c_str(), 1);
    py::array_t<std::int32_t> out(static_cast<py::ssize_t>(added.size()));
    std::copy(added.begin(), added.end(), out.mutable_data());
    return out;
  }

  // The tokens as text in the task's notation: characters run together for a language model, tokens
  // separated by spaces otherwise.
  std::string decode(const py::object& ids) const {
    const auto a = integer_array(ids, "ids", 1);
    const Task& task = *run_.spec.task;
    const bool lm = task.is_language_model();
    std::string s;
    for (py::ssize_t i = 0; i < a.size(); ++i) {
      const std::int64_t id = a.data()[i];
      if (id < 0 || id >= std::int64_t(vocab())) value_error("ids", "id " + std::to_string(id) + " is not below the vocabulary size " + std::to_string(vocab()));
      s += (lm || s.empty() ? "" : " ") + task.token_text(static_cast<std::int32_t>(id));
    }
    return s;
  }

  // `count` held-out examples of problem size n as `pelab eval` draws them (eval.seed unless `seed`),
  // with their position ids per [eval] positions: tokens, targets, positions (B, T) and mask (B, T).
  py::dict examples(std::size_t n, std::size_t count, std::optional<std::uint64_t> seed) const {
    if (n == 0) value_error("n", "expected a problem size >= 1");
    if (n > kMaxProblemSize)  // a task's sequence length of such an n could overflow before the size check
      value_error("n", std::to_string(n) + " is too large: expected a problem size up to 2^48 (" +
                           std::to_string(kMaxProblemSize) + ")");
    if (count == 0) value_error("count", "expected at least 1 example");
    const ExperimentConfig& cfg = run_.spec.config;
    const std::uint64_t s = seed ? *seed : cfg.eval.seed;
    check_memory("model.examples: " + std::to_string(count) + " example(s) of size " + std::to_string(n),
                 examples_bytes(n, count), "n, count", memory_limit(std::nullopt));
    Batch b;
    {
      py::gil_scoped_release unlocked;
      const StopScope stop;
      b = draw_stoppable(run_.spec.task, s, count, n);
      Rng position_rng(s, 4);
      assign_positions(b, eval_positions(cfg), position_rng);
      throw_if_stopped("drawing examples");
    }
    const auto ints = [](const IndexArray& a) {
      py::array_t<std::int64_t> out({static_cast<py::ssize_t>(a.shape()[0]), static_cast<py::ssize_t>(a.shape()[1])});
      std::copy(a.data(), a.data() + a.size(), out.mutable_data());
      return out;
    };
    py::dict d;
    d["tokens"] = ints(b.tokens);
    d["targets"] = ints(b.targets);
    d["positions"] = ints(b.positions);
    d["mask"] = to_numpy(Array(b.mask));
    if (b.has_digit_index()) d["digit_index"] = ints(b.digit_index);  // tasks that supply them (addition)
    return d;
  }

  // Seconds of each of `repeats` forward passes on inputs converted once, timed around the C++ call alone:
  // the C++ side of bench/bench_python_logits.py.
  std::vector<double> forward_seconds(const py::object& tokens, const py::object& positions,
                                      const py::object& digit_index, int repeats) {
    const Inputs in = inputs(tokens, positions, digit_index, false);
    std::vector<double> seconds;
    py::gil_scoped_release unlocked;
    const StopScope stop;
    std::lock_guard<std::mutex> lock(mu_);
    const RunGemm gemm(run_);
    NoGrad ng;
    for (int r = 0; r < repeats; ++r) {
      throw_if_stopped("timing forward passes");
      const auto t0 = std::chrono::steady_clock::now();
      ForwardOptions opt;
      if (in.has_digits) opt.digit_index = &in.digits;
      const Tensor logits = run_.model->forward(in.tokens, in.positions, opt);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return seconds;
  }

  // name -> a copy of each parameter (the checkpoint's names).
  py::dict weights() {
    py::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    py::gil_scoped_acquire locked;
    return parameter_arrays(*run_.model);
  }

  // Every parameter's value from name -> array (weights() of this or another model of the same shapes):
  // all names and shapes checked before anything changes.
  void set_weights(const py::dict& weights) {
    const auto values = checked_weights(*run_.model, weights);
    py::gil_scoped_release unlocked;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [t, a] : values) std::copy(a.data(), a.data() + a.size(), Tensor(t).mutable_value().data());
  }

  // The forward's insides (python/insides.hpp): with targets the loss as training computes it (and with
  // `gradients` every gradient), with `capture` every layer's activations on the split attention path.
  py::dict insides(const py::object& tokens, const py::object& targets, const py::object& mask,
                   const py::object& positions, const py::object& digit_index, bool capture, bool gradients) {
    Inputs in = inputs(tokens, positions, digit_index, false, capture || !targets.is_none());
    const std::size_t B = in.tokens.shape()[0], T = in.tokens.shape()[1];
    IndexArray target_ids;
    Array mask_values;
    InsideBatch batch{in.tokens, in.positions, in.has_digits ? &in.digits : nullptr, nullptr, nullptr};
    if (!targets.is_none()) {
      const auto t = integer_array(targets, "targets", 2);
      if (std::size_t(t.shape(0)) != B || std::size_t(t.shape(1)) != T)
        value_error("targets", "expected shape (B, T) = (" + std::to_string(B) + ", " + std::to_string(T) + ") as tokens, got " + shape_text(t));
      target_ids.resize({B, T});
      copy_checked(t, target_ids, "targets", std::int64_t(vocab()), "the vocabulary size is " + std::to_string(vocab()));
      batch.targets = &target_ids;
    } else if (gradients) {
      value_error("targets", "gradients need the targets (B, T) of the loss, e.g. model.examples(n)[\"targets\"]");
    }
    if (!mask.is_none()) {
      if (targets.is_none()) value_error("mask", "a mask weighs the targets' loss: pass targets too");
      py::array_t<float, py::array::c_style | py::array::forcecast> m = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(mask);
      if (!m || m.ndim() != 2 || std::size_t(m.shape(0)) != B || std::size_t(m.shape(1)) != T)
        value_error("mask", "expected a float array of shape (B, T) = (" + std::to_string(B) + ", " + std::to_string(T) + ") as tokens");
      mask_values.resize({B, T});
      std::copy(m.data(), m.data() + m.size(), mask_values.data());
      if (!(std::accumulate(mask_values.begin(), mask_values.end(), 0.0) > 0))
        value_error("mask", "no target counts (the mask sums to 0 or less): the loss would be undefined");
      batch.mask = &mask_values;
    }
    check_memory("model." + std::string(capture ? "activations" : "gradients") + " of " + std::to_string(B) + " x " +
                 std::to_string(T) + " tokens", insides_bytes(run_.spec.model, B, T, in.shared, capture), "tokens",
                 memory_limit(std::nullopt));
    Insides out;
    {
      py::gil_scoped_release unlocked;
      const StopScope stop;
      std::lock_guard<std::mutex> lock(mu_);
      const RunGemm gemm(run_);
      out = compute_insides(*run_.model, batch, capture, gradients);
    }
    return insides_dict(std::move(out));
  }

  std::size_t vocab() const { return run_.spec.model.vocab; }
  const TrainedRun& run() const { return run_; }

 private:
  // What model.examples(n, count) holds at once: the batch (tokens, targets, positions, digit indices
  // as int32, the mask as float) and the numpy arrays made from it (int64, the mask float32), per token;
  // in double, so that an enormous n gives an enormous estimate rather than an overflow.
  std::size_t examples_bytes(std::size_t n, std::size_t count) const {
    const double tokens = double(run_.spec.task->sequence_length(n)) * double(count);
    const double bytes = tokens * (5 * 4 + 4 * 8 + 4);
    return bytes >= 1.8e19 ? std::numeric_limits<std::size_t>::max() : std::size_t(bytes);
  }

  struct Inputs {
    IndexArray tokens, positions;  // (B, T)
    IndexArray digits;             // (B, T) each digit's index within its number (Batch::digit_index)
    bool has_digits = false;
    bool shared = true;            // every row has the same position ids
  };

  // The first encoding of the model that reads digit indices (abacus), if any.
  std::optional<std::string> digit_reader() const {
    std::vector<std::string> names = run_.spec.model.extra_encoding_names();
    names.push_back(run_.spec.model.encoding);
    for (const std::string& n : names)
      if (EncodingRegistry::instance().get(encoding_base_name(n)).reads_digit_index) return n;
    return std::nullopt;
  }

  // digit_index: required by a model whose encoding reads it (else its forward would read every token as
  // a non-digit), refused by any other (it would be ignored).
  void read_digits(const py::object& digit_index, std::size_t B, std::size_t T, Inputs& in) const {
    const auto reader = digit_reader();
    if (digit_index.is_none()) {
      if (reader)
        value_error("digit_index", "this model's encoding '" + *reader + "' reads each digit's index within its "
                    "number: pass digit_index (B, T) as the task makes it, e.g. model.examples(n)[\"digit_index\"]");
      return;
    }
    if (!reader) value_error("digit_index", "this model reads no digit indices (only abacus does); leave it None");
    const auto d = integer_array(digit_index, "digit_index", 2);
    if (std::size_t(d.shape(0)) != B || std::size_t(d.shape(1)) != T)
      value_error("digit_index", "expected shape (B, T) = (" + std::to_string(B) + ", " + std::to_string(T) +
                                     ") as tokens, got " + shape_text(d));
    in.digits.resize({B, T});
    copy_checked(d, in.digits, "digit_index", std::int64_t(INT32_MAX), "digit indices are non-negative int32");
    const std::int32_t top = *std::max_element(in.digits.data(), in.digits.data() + in.digits.size());
    if (auto why = run_.model->encoding().unsupported_digits(top)) value_error("digit_index", *why);
    in.has_digits = true;
  }

  // `on_tape`: the caller checks the memory of its forward on a tape itself (insides_bytes).
  Inputs inputs(const py::object& tokens, const py::object& positions, const py::object& digit_index,
                bool attention_maps, bool on_tape = false) const {
    Inputs in;
    const auto t = integer_array(tokens, "tokens", 2);
    const std::size_t B = static_cast<std::size_t>(t.shape(0)), T = static_cast<std::size_t>(t.shape(1));
    in.tokens.resize({B, T});
    copy_checked(t, in.tokens, "tokens", std::int64_t(vocab()), "the vocabulary size is " + std::to_string(vocab()));
    in.positions.resize({B, T});
    bool shared = true;
    if (positions.is_none()) {
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < T; ++i) in.positions.data()[b * T + i] = static_cast<std::int32_t>(i);
    } else {
      shared = read_positions(positions, B, T, in.positions);
    }
    const std::int32_t top = *std::max_element(in.positions.data(), in.positions.data() + in.positions.size());
    if (auto why = run_.model->encoding().unsupported(top)) value_error("positions", *why);  // the largest id
    read_digits(digit_index, B, T, in);
    in.shared = shared;
    if (!on_tape) check_memory("a forward pass of " + std::to_string(B) + " x " + std::to_string(T) + " tokens",
                 forward_bytes(run_.spec.model, B, T, attention_maps, shared), "tokens", memory_limit(std::nullopt));
    return in;
  }

  // (B, T) ids, or (T,) ids for every row (returns true then: the rows share their ids).
  static bool read_positions(const py::object& positions, std::size_t B, std::size_t T, IndexArray& out) {
    py::array a = py::array::ensure(positions);
    const std::string want = "expected shape (B, T) = (" + std::to_string(B) + ", " + std::to_string(T) +
                             ") as tokens, or (T,) = (" + std::to_string(T) + ",) for every row";
    if (!a) value_error("positions", want);
    const bool one_row = a.ndim() == 1 && std::size_t(a.shape(0)) == T;
    const bool per_row = a.ndim() == 2 && std::size_t(a.shape(0)) == B && std::size_t(a.shape(1)) == T;
    if (!one_row && !per_row) value_error("positions", want + ", got shape " + shape_text(a));
    const auto p = integer_array(a, "positions", one_row ? 1 : 2);
    IndexArray row(Shape{one_row ? std::size_t(1) : B, T});
    copy_checked(p, row, "positions", std::int64_t(INT32_MAX), "position ids are non-negative int32");
    for (std::size_t b = 0; b < B; ++b) std::copy_n(row.data() + (one_row ? 0 : b * T), T, out.data() + b * T);
    return one_row || B == 1;
  }

  // The prompt's token ids: a string in the task's notation (its input up to the answer, for a sequence
  // task: what the model reads before answering), or the ids themselves.
  std::vector<std::int32_t> prompt_ids(const py::object& prompt) const {
    if (py::isinstance<py::str>(prompt)) {
      const Batch b = run_.spec.task->parse_input(prompt.cast<std::string>());
      const std::size_t n = b.answer_begin.empty() ? b.length() : b.answer_begin[0] + 1;
      return std::vector<std::int32_t>(b.tokens.data(), b.tokens.data() + n);
    }
    const auto a = integer_array(prompt, "prompt", 1);
    IndexArray ids(Shape{std::size_t(a.size())});
    copy_checked(a, ids, "prompt", std::int64_t(vocab()), "the vocabulary size is " + std::to_string(vocab()));
    return std::vector<std::int32_t>(ids.data(), ids.data() + ids.size());
  }

  Array forward(const Inputs& in, std::vector<Array>* maps) {
    py::gil_scoped_release unlocked;
    const StopScope stop;
    std::lock_guard<std::mutex> lock(mu_);
    const RunGemm gemm(run_);
    NoGrad ng;
    ForwardOptions opt;
    opt.attention_maps = maps;
    if (in.has_digits) opt.digit_index = &in.digits;
    // A long forward (logits on (1, 300000)) prints its time estimate and progress on stderr as
    // `pelab predict` does (experiments/run/estimate.hpp; issue #38 item 9); a short one prints nothing.
    const std::size_t B = in.tokens.shape()[0], T = in.tokens.shape()[1], L = run_.spec.model.n_layers;
    const double flops = forward_flops(run_.model->config(), B, T);
    JobProgress progress("a forward pass of " + std::to_string(B) + " row(s) of " + std::to_string(T) + " tokens",
                         flops, worth_measuring(flops) ? measure_forward_rate(*run_.model, T) : 0.0);
    std::size_t layer = 0;
    opt.between_layers = [&] {
      throw_if_stopped("computing a forward pass");
      progress.add(flops / double(L), "computing a forward pass: layer " + std::to_string(++layer) + " of " +
                                          std::to_string(L));
    };
    Tensor logits = run_.model->forward(in.tokens, in.positions, opt);
    throw_if_stopped("computing a forward pass");
    return std::move(logits.mutable_value());
  }

  TrainedRun run_;
  std::mutex mu_;
};

}  // namespace

void bind_model(py::module_& m) {
  py::class_<Model>(m, "Model", "A trained run's model at one checkpoint, loaded as `pelab eval` loads it.")
      .def(py::init<const std::string&, std::optional<std::size_t>, const std::vector<std::string>&>(), py::arg("dir"),
           py::arg("step") = py::none(), py::arg("sets") = std::vector<std::string>{})
      .def("logits", &Model::logits, py::arg("tokens"), py::arg("positions") = py::none(),
           py::arg("digit_index") = py::none(),
           "float32 logits (B, T, V) of integer tokens (B, T) at position ids (B, T) or (T,) (default 0..T-1); "
           "digit_index (B, T): each digit's index within its number, for a model that reads them (abacus)")
      .def("attention", &Model::attention, py::arg("tokens"), py::arg("layer"), py::arg("positions") = py::none(),
           py::arg("digit_index") = py::none(),
           "float32 attention probabilities (B, H, T, T) of one layer (digit_index as for logits)")
      .def("generate", &Model::generate, py::arg("prompt"), py::arg("max_new"), py::arg("temperature") = 0.0,
           py::arg("seed") = 0,
           "the next max_new token ids after a prompt (text in the task's notation, or ids), read at positions 0, 1, ...: "
           "greedy at temperature 0, else sampled from softmax(logits / temperature)")
      .def("_forward_seconds", &Model::forward_seconds, py::arg("tokens"), py::arg("positions") = py::none(),
           py::arg("digit_index") = py::none(), py::arg("repeats") = 1, "seconds of each C++ forward pass alone (bench/bench_python_logits.py)")
      .def("weights", &Model::weights, "the parameters, name -> float32 array (a copy), named as in the checkpoint")
      .def("set_weights", &Model::set_weights, py::arg("weights"),
           "every parameter's value from name -> array (as weights() gives them); names and shapes checked first")
      .def("_insides", &Model::insides, py::arg("tokens"), py::arg("targets") = py::none(), py::arg("mask") = py::none(),
           py::arg("positions") = py::none(), py::arg("digit_index") = py::none(), py::arg("capture") = false,
           py::arg("gradients") = false, "the forward's insides (pelab.Model.activations, .gradients wrap it)")
      .def("activations", [](Model& m, const py::object& tokens, const py::object& positions, const py::object& digit_index,
                             const py::object& targets, const py::object& mask) {
        py::dict d = m.insides(tokens, targets, mask, positions, digit_index, true, false);
        py::dict out = d["activations"];
        out["logits"] = d["logits"];
        if (d.contains("loss")) out["loss"] = d["loss"];
        return out;
      }, py::arg("tokens"), py::arg("positions") = py::none(), py::arg("digit_index") = py::none(),
         py::arg("targets") = py::none(), py::arg("mask") = py::none(),
         "each layer's activations for (B, T) tokens through the C++ forward on the split attention path: "
         "{embeddings, layers: [{residual, q, k, v, weights, attention, mlp_hidden}], final_residual, logits "
         "(and loss, with targets)}")
      .def("gradients", [](Model& m, const py::object& tokens, const py::object& targets, const py::object& mask,
                           const py::object& positions, const py::object& digit_index, bool capture) {
        return m.insides(tokens, targets, mask, positions, digit_index, capture, true);
      }, py::arg("tokens"), py::arg("targets"), py::arg("mask") = py::none(), py::arg("positions") = py::none(),
         py::arg("digit_index") = py::none(), py::arg("capture") = false,
         "the loss of (B, T) tokens against targets (mask: which count) as training computes it, and its backward: "
         "{loss, logits, grads: {name: array}, embeddings_grad (B, T, C)} (and activations, with capture)")
      .def("decode", &Model::decode, py::arg("ids"), "token ids as text in the task's notation")
      .def("examples", &Model::examples, py::arg("n"), py::arg("count") = 1, py::arg("seed") = py::none(),
           "held-out examples of problem size n as evaluation draws them: tokens, targets, positions, mask, and "
           "digit_index when the task supplies them")
      .def_property_readonly("vocab", &Model::vocab)
      .def_property_readonly("n_layers", [](const Model& m) { return m.run().spec.model.n_layers; })
      .def_property_readonly("n_heads", [](const Model& m) { return m.run().spec.model.n_heads; })
      .def_property_readonly("d_model", [](const Model& m) { return m.run().spec.model.d_model; })
      .def_property_readonly("encoding", [](const Model& m) { return m.run().spec.model.encoding; })
      .def_property_readonly("task", [](const Model& m) { return m.run().spec.config.task; })
      .def_property_readonly("train_len", [](const Model& m) { return m.run().spec.config.train_len; })
      .def_property_readonly("train_seq_len", [](const Model& m) { return m.run().spec.model.train_seq_len; })
      .def("sequence_length", [](const Model& m, std::size_t n) { return m.run().spec.task->sequence_length(n); },
           py::arg("n"), "tokens of an example of problem size n")
      .def_property_readonly("checkpoint", [](const Model& m) { return m.run().checkpoint; })
      .def_property_readonly("dir", [](const Model& m) { return m.run().dir; })
      .def("__repr__", [](const Model& m) {
        return "<pelab.Model " + m.run().dir + " (" + m.run().spec.model.encoding + ", " + m.run().spec.config.task +
               "), checkpoint " + m.run().checkpoint + ">";
      });
}

}  // namespace pelab::python
