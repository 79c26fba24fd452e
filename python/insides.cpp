// pelab.Model's insides (python/insides.hpp): capture, loss and gradients through the C++ forward and
// backward that training runs.
#include "python/insides.hpp"

#include <algorithm>

#include <pybind11/numpy.h>

#include "core/ops/cross_entropy.hpp"
#include "core/tape.hpp"
#include "experiments/run/resources.hpp"
#include "layers/dry_run.hpp"
#include "python/arrays.hpp"
#include "python/bindings.hpp"
#include "python/convert.hpp"
#include "training/signals.hpp"

namespace pelab::python {

namespace {

// forward_capture() set for one scope, reset however it ends.
struct CaptureScope {
  explicit CaptureScope(ForwardCapture* c) { forward_capture() = c; }
  ~CaptureScope() { forward_capture() = nullptr; }
};

// The tape and the model's gradients empty, before and after.
struct CleanTape {
  explicit CleanTape(Transformer& m) : model(m) { clear(); }
  ~CleanTape() { clear(); }
  void clear() {
    Tape::current().clear();
    model.zero_grad();
  }
  Transformer& model;
};

}  // namespace

Insides compute_insides(Transformer& model, const InsideBatch& batch, bool capture, bool gradients) {
  Insides out;
  const CleanTape clean(model);
  std::optional<NoGrad> no_tape;
  if (!batch.targets) no_tape.emplace();
  out.capture.emplace();  // the embeddings always (their gradient); the layers only when asked
  out.capture->layers_too = capture;
  ForwardOptions fo;
  fo.digit_index = batch.digits;
  fo.between_layers = [] { throw_if_stopped("computing a forward pass"); };
  Tensor logits;
  {
    const CaptureScope scope(&*out.capture);
    logits = model.forward(batch.tokens, batch.positions, fo);  // (B, T, V)
  }
  throw_if_stopped("computing a forward pass");
  if (batch.targets) {
    const Tensor loss = cross_entropy(logits, *batch.targets, batch.mask);  // as Trainer::train_step
    out.loss = loss.item();
    if (gradients) {
      loss.backward();
      throw_if_stopped("computing gradients");
      for (const Parameter& p : model.parameters()) {
        Array g = p.tensor.has_grad() ? p.tensor.grad() : Array(p.tensor.shape());
        if (!p.tensor.has_grad()) g.fill(0);  // not reached by this loss (none in pelab's models today)
        out.grads.emplace_back(p.name, std::move(g));
      }
      const Tensor& emb = out.capture->embeddings;
      if (emb.defined() && emb.has_grad()) out.embedding_grad = emb.grad();
    }
  }
  out.logits = logits.value();
  out.capture->embeddings = Tensor(out.capture->embeddings.value());  // the value, off the tape
  if (!capture) out.capture.reset();
  return out;
}

// One training step of the model run shape-only (layers/dry_run.hpp: weights, gradients and activations
// at their peak), plus what the capture copies out beside it and the logits' copy.
std::size_t insides_bytes(const ModelConfig& m, std::size_t B, std::size_t T, bool shared_positions, bool capture) {
  DryRunShape s;
  s.batch = B, s.tokens = T, s.training = true, s.shared_positions = shared_positions, s.attention_maps = capture;
  const double run = double(dry_run(m, s).summary.peak_system_bytes);
  const double N = double(B) * double(T), C = double(m.d_model), F = double(m.d_ff ? m.d_ff : 4 * m.d_model);
  const double H = double(m.n_heads), V = double(m.vocab), L = double(m.n_layers);
  // captured per layer: residual, attention, q, k, v (q and k up to twice as wide: PoPE), weights, hidden;
  // then the embeddings and their gradient, the final residual, the logits' copy and every gradient
  const double captured = capture ? L * (N * C * 7 + B * H * double(T) * double(T) + N * F) + N * C * 3 : 0;
  const double bytes = run + (captured + N * V) * 4;
  return bytes >= 1.8e19 ? std::size_t(-1) : std::size_t(bytes);
}

namespace py = pybind11;

py::dict insides_dict(Insides&& in) {
  py::dict d;
  d["logits"] = to_numpy(std::move(in.logits));
  if (in.loss) d["loss"] = *in.loss;
  if (!in.grads.empty()) {
    py::dict g;
    for (auto& [name, a] : in.grads) g[py::str(name)] = to_numpy(std::move(a));
    d["grads"] = g;
  }
  if (in.embedding_grad.size() > 0) d["embeddings_grad"] = to_numpy(std::move(in.embedding_grad));
  if (in.capture) {
    ForwardCapture& c = *in.capture;
    py::dict a;
    a["embeddings"] = to_numpy(Array(c.embeddings.value()));
    py::list layers;
    for (LayerCapture& l : c.layers) {
      py::dict x;
      x["residual"] = to_numpy(std::move(l.residual));
      x["q"] = to_numpy(std::move(l.q));
      x["k"] = to_numpy(std::move(l.k));
      x["v"] = to_numpy(std::move(l.v));
      x["weights"] = to_numpy(std::move(l.weights));
      x["attention"] = to_numpy(std::move(l.attention));
      x["mlp_hidden"] = to_numpy(std::move(l.mlp_hidden));
      layers.append(x);
    }
    a["layers"] = layers;
    a["final_residual"] = to_numpy(std::move(c.final_residual));
    d["activations"] = a;
  }
  return d;
}

py::dict parameter_arrays(const Module& model) {
  py::dict d;
  for (const Parameter& p : model.parameters()) d[py::str(p.name)] = to_numpy(Array(p.tensor.value()));
  return d;
}

CheckedWeights checked_weights(const Module& model, const py::dict& weights) {
  using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
  CheckedWeights out;
  std::vector<std::string> names;
  for (const Parameter& p : model.parameters()) {
    names.push_back(p.name);
    if (!weights.contains(p.name)) value_error("weights", "no array for parameter '" + p.name + "'");
    FloatArray a = FloatArray::ensure(weights[py::str(p.name)]);
    const Shape& want = p.tensor.shape();
    const auto same = [](std::size_t w, py::ssize_t g) { return py::ssize_t(w) == g; };
    if (!a || std::size_t(a.ndim()) != want.size() || !std::equal(want.begin(), want.end(), a.shape(), same))
      value_error("weights", "'" + p.name + "': expected a float array of shape " + shape_str(want) +
                                 (a ? ", got " + shape_text(a) : std::string()));
    out.emplace_back(p.tensor, a);
  }
  for (const auto& item : weights) {
    const std::string name = py::str(item.first);
    if (std::find(names.begin(), names.end(), name) == names.end())
      value_error("weights", "'" + name + "' is not a parameter of this model");
  }
  return out;
}

}  // namespace pelab::python
