// `pelab probe`: looking inside encodings and trained models. Each probe writes DIR/NAME.png (gnuplot),
// DIR/NAME.csv (the numbers behind it), DIR/NAME.json (title, settings, summary figures) and the
// DIR/NAME.gp script (re-render with `gnuplot NAME.gp`). `pelab report` shows RUN/probe/NAME.png side by side.
//
//   encoding-only (`pelab probe encoding NAME`, an untrained encoding; no model):
//     similarity        <PE(i), PE(j)> of the input-side vectors (heatmap)      encodings that change x
//     similarity_profile  row c = T/2 of it against the signed distance j - c (remote decay, symmetry)
//     rotary_similarity <R_i 1, R_j 1> of a rotated all-ones q and k, head 0     encodings that rotate q, k
//     rotary_decay      its profile against distance, normalized, with RoFormer's bound (Su et al. §3.4.3)
//     bias_by_distance  the attention bias of the last query against distance, one line per head
//     relative_key_by_distance  q . a^K[bucket] of an all-ones q against distance (Shaw's relative keys)
//   (encodings that scale x rather than add to it, multiplicative, show encode_input(1) - 1 as PE(t))
//   trained-model (`pelab probe run RUN_DIR`, into RUN_DIR/probe):
//     attention_{1x,2x} attention maps, every layer (rows) and head (columns), of one held-out sample
//     entropy           attention entropy per query position (mean over samples, heads and layers), one
//                       line per length (1x, 2x, 4x the training size), with the uniform maximum log(t+1)
//     position_accuracy token accuracy per answer position (teacher forced, as token_acc), one line per length
//     qk_positions      p_i^T W_Q^T W_K p_j of the first layer for absolute encodings (input-side vectors)
//   spectrum (`pelab probe spectrum --encoding NAME | --run RUN_DIR`; experiments/probe/spectrum_probe.cpp):
//     spectrum          singular values (and eigenvalues of symmetric ones), entropy effective rank and
//                       Toeplitz-ness of the position-position matrices: the Gram matrix of input-side vectors,
//                       the rotation kernel, the bias per head, relative keys; trained: also layer 0's mean
//                       attention per head and p_i^T W_Q^T W_K p_j per head (docs/reports.md, "Spectrum")
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.hpp"
#include "experiments/config/config.hpp"
#include "experiments/probe/spectrum.hpp"
#include "experiments/run/resources.hpp"
#include "training/batch.hpp"

namespace CLI {
class App;
}

namespace pelab {

// ---- the numbers (tested in tests/experiments/test_probe.cpp) ----

// Entropy (nats) of each query row of attention probabilities (B, H, T, T), averaged over B and H: (T).
// Causal rows hold zeros past the diagonal; 0 log 0 counts as 0.
std::vector<double> attention_entropy(const Array& probs);

// Per answer position j (t - answer_begin of the row; every t for a language model): the fraction of rows
// whose argmax of logits (B, T, V) equals the target, over the counted targets (mask > 0).
struct PositionAccuracy {
  std::vector<double> acc;         // per position
  std::vector<std::size_t> count;  // counted targets per position
};
PositionAccuracy position_accuracy(const Array& logits, const Batch& batch);

// (T, d) rows -> (T, T) Gram matrix <v_i, v_j>, in double.
std::vector<std::vector<double>> gram_matrix(const Array& rows);

// RoFormer §3.4.3: with theta_k = base^(-2k/d), k < d/2, and S_j = sum_{k<j} e^{i m theta_k}, the logit
// at relative distance m is bounded by max|h_{k+1} - h_k| * sum_{j=1}^{d/2} |S_j|. Returns
// (1 / (d/2)) sum_j |S_j| for m = 0..max_distance (the paper's Figure 2 curve).
std::vector<double> rope_decay_bound(std::size_t d, double base, std::size_t max_distance);

// ---- the probes ----

struct EncodingProbeArgs {
  std::string name;                  // encoding
  std::vector<std::string> sets;     // encoding parameters key=value
  std::size_t len = 64;              // positions 0..len-1
  std::size_t d_model = 64, n_heads = 4;
  std::string out_dir;               // default runs/probe-encoding/NAME
  MemoryLimit memory;                // checked before anything is built or written
};
// Writes the encoding's probes; returns the files written. Throws Error on bad arguments, and when the
// probe would not fit in args.memory (naming --len, --d-model, --heads and the encoding's parameters).
std::vector<std::string> probe_encoding(const EncodingProbeArgs& args);

struct RunProbeArgs {
  std::string run_dir;
  std::vector<std::size_t> factors = {1, 2, 4};  // lengths as multiples of train_len
  std::size_t samples = 0;  // 0 = the run's [probe] samples
  std::uint64_t seed = 0;
  MemoryLimit memory;  // --memory-limit (experiments/cli/probe.cpp); default-constructed: no check
  std::string out_dir;  // default RUN_DIR/probe
};
// The trained-model probes of one finished run; returns the files written. Lengths the encoding cannot
// represent (learned tables) are skipped with a note in the JSON; an absurd length throws Error (naming
// the memory it would need) before any forward.
std::vector<std::string> probe_run(const RunProbeArgs& args);

struct SpectrumProbeArgs {
  std::string encoding;              // --encoding NAME: an untrained encoding, or
  std::string run_dir;               // --run DIR: a trained run (exactly one of the two)
  std::vector<std::string> sets;     // encoding parameters key=value (--encoding)
  std::size_t length = 64;           // positions 0..length-1 (--encoding)
  std::size_t d_model = 64, n_heads = 4;  // (--encoding)
  std::size_t factor = 1;            // the length as a multiple of train_len (--run)
  std::size_t samples = 0;           // held-out samples for the attention (--run); 0 = the run's [probe] samples
  std::uint64_t seed = 0;            // (--run)
  MemoryLimit memory;                // (--run)
  std::string out_dir;  // default runs/probe-encoding/NAME or RUN_DIR/probe
};
struct SpectrumReport {
  std::vector<MatrixSpectrum> matrices;
  std::vector<std::string> not_defined;  // the kinds of matrix the encoding does not define, with the reason
  std::vector<std::string> files;
};
// Writes spectrum.{csv,json,gp,dat,png}; throws Error on bad arguments or when an encoding defines no matrix.
SpectrumReport probe_spectrum(const SpectrumProbeArgs& args);
// The summary table `pelab probe spectrum` prints: one line per matrix.
std::string spectrum_table(const SpectrumReport& r);

// `pelab sweep --probe`: probe_run on every finished cell of a sweep directory (cells with eval.json);
// failures are printed and counted, not thrown. Returns the number of cells that failed.
int probe_sweep_cells(const std::string& sweep_dir, const std::vector<std::string>& cell_dirs,
                      const MemoryLimit& memory);

// The registration (one call in experiments/cli/probe.cpp) and the command.
struct ProbeCommand {
  CLI::App* app = nullptr;
  CLI::App* encoding = nullptr;
  CLI::App* run = nullptr;
  CLI::App* spectrum = nullptr;
  EncodingProbeArgs enc;
  RunProbeArgs run_args;
  SpectrumProbeArgs spectrum_args;
  std::string factors_csv;
};
void add_probe_command(CLI::App& app, ProbeCommand& c);
int run_probe_command(ProbeCommand& c);

}  // namespace pelab
