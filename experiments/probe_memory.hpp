// A rough upper estimate of the memory one inference forward pass needs, so that `pelab probe` and
// `pelab predict` refuse an absurd length before any work with a message naming the amount. Local to the
// inspection commands (experiments/resources.hpp may later provide the project-wide estimate).
#pragma once

#include <cstdint>
#include <string>

#include "layers/transformer.hpp"

namespace pelab {

// Bytes for a forward of `batch` rows of T tokens without gradients: the activations of every layer
// kept alive by the forward (about 16 d_model values per token and layer: qkv, attention output, the
// MLP's 4x hidden twice, residuals), one (T, T) score buffer per head, the logits and, when
// keep_maps, every layer's (B, H, T, T) probabilities.
inline double probe_forward_bytes(const ModelConfig& m, std::size_t batch, std::size_t T, bool keep_maps) {
  const double B = double(batch), t = double(T), C = double(m.d_model), L = double(m.n_layers),
               H = double(m.n_heads), V = double(m.vocab), ff = double(m.d_ff ? m.d_ff : 4 * m.d_model);
  double values = B * t * L * (8 * C + 2 * ff) + 2 * H * t * t + B * t * V;
  if (keep_maps) values += B * H * t * t * L;
  return values * double(sizeof(real));
}

// The default ceiling (GiB) of --max-memory.
constexpr double kProbeDefaultMaxGiB = 4.0;

// Throws Error unless probe_forward_bytes(...) fits in max_gib; `what` names the request.
inline void check_probe_memory(const ModelConfig& m, std::size_t batch, std::size_t T, bool keep_maps,
                               double max_gib, const std::string& what) {
  const double need = probe_forward_bytes(m, batch, T, keep_maps), gib = double(1ull << 30);
  if (need <= max_gib * gib) return;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %zu row(s) of %zu tokens would need about %.1f GiB (activations%s of %zu layers x %zu heads), "
                "over the limit of %.1f GiB; use a shorter length or fewer samples, or raise --max-memory (GiB)",
                what.c_str(), batch, T, need / gib, keep_maps ? " and attention maps" : "", m.n_layers, m.n_heads,
                max_gib);
  throw Error(buf);
}

}  // namespace pelab
