// A model's insides through the C++ forward and backward (pelab.Model.weights, .activations, .gradients;
// docs/python.md): its parameters, each layer's activations (layers/capture.hpp) and, for a batch with
// targets, the loss as training computes it and every gradient.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "layers/capture.hpp"
#include "layers/transformer.hpp"

namespace pelab::python {

// The batch of one call, checked by the caller (python/model.cpp).
struct InsideBatch {
  IndexArray tokens, positions;  // (B, T)
  const IndexArray* digits = nullptr;   // (B, T) or null
  const IndexArray* targets = nullptr;  // (B, T) or null: no loss, no gradients
  const Array* mask = nullptr;          // (B, T) or null: every target counts
};

struct Insides {
  Array logits;                 // (B, T, V)
  std::optional<double> loss;   // with targets: the masked cross-entropy, as training computes it
  std::vector<std::pair<std::string, Array>> grads;  // with targets and gradients: every parameter's
  Array embedding_grad;         // with gradients: d loss / d token embeddings (B, T, C_tok)
  std::optional<ForwardCapture> capture;  // with capture
};

// One forward (on the tape when there are targets, in evaluation mode: no dropout), with capture on
// when `capture`; then the loss and, when `gradients`, the backward. Polls the stop flag between layers.
// Runs without the GIL; the model's gradients and the tape are cleared before and after.
Insides compute_insides(Transformer& model, const InsideBatch& batch, bool capture, bool gradients);

// Bytes compute_insides needs for a (B, T) batch past the weights: the forward on a tape (and its
// backward), the gradients and what is captured. An upper bound, for the check before the call.
std::size_t insides_bytes(const ModelConfig& m, std::size_t B, std::size_t T, bool shared_positions, bool capture);

// As Python objects (takes the GIL): {"logits", "loss", "grads": {name: array}, "embeddings_grad",
// "activations": {"embeddings", "layers": [{"residual", "q", "k", "v", "weights", "attention",
// "mlp_hidden"}], "final_residual"}}, each key present when computed. The arrays are moved, not copied.
pybind11::dict insides_dict(Insides&& in);

// name -> a copy of the parameter's value, in parameters() order (the checkpoint's names).
pybind11::dict parameter_arrays(const Module& model);

// The arrays of `weights` (name -> array) for every parameter of `model`, each checked: ValueError naming
// `weights` for a missing name, an unknown one or a wrong shape. Nothing is assigned.
using CheckedWeights = std::vector<std::pair<Tensor, pybind11::array_t<float, pybind11::array::c_style | pybind11::array::forcecast>>>;
CheckedWeights checked_weights(const Module& model, const pybind11::dict& weights);

}  // namespace pelab::python
