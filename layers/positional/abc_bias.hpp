// Attention bias calibration (ABC; Duan, Shi and Xu, "From Interpolation to Extrapolation: Complete Length
// Generalization for Arithmetic Transformers", arXiv 2310.11984, Section 5 and Algorithm 1): the biases a
// model that interpolates has learned, as a file. Three pieces, each testable alone:
//   AbcLines       the attention probabilities of the calibration model summed per line of the attention
//                  matrix (a diagonal: one id difference p_i - p_j), over examples of the training length;
//   calibrate_abc  the paper's steps 2.1-2.4 per head: the mean of each line, d_l - d_max for the lines above
//                  mean + lambda std of all lines, `masked` for every other line and for every line the
//                  training length never had (the extension), a transparent head (all 0) when none is kept;
//   the bias file  read_abc_bias / abc_bias_text: the text the `pelab abc` command writes and the `abc`
//                  encoding (abc.cpp) reads, refused at PATH:LINE when it is not that text.
// docs/encodings.md#attention-bias-calibration says which choices the paper leaves open and what pelab took.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.hpp"

namespace pelab {

// One head's bias: kept[d] for the id differences d = p_query - p_key it keeps, `masked` for any other.
struct AbcHead {
  double masked = 0;
  std::map<std::int64_t, double> kept;
  double at(std::int64_t d) const {
    const auto it = kept.find(d);
    return it == kept.end() ? masked : it->second;
  }
};

struct AbcBias {
  std::vector<AbcHead> heads;  // one per attention head the encoding runs in
};

// The bias file, format 1 (docs/encodings.md): `#` comments and blank lines anywhere, then
//   pelab-abc-bias 1
//   n_heads H
//   head 0 masked M        one block per head, in order 0..H-1
//   distance D V           zero or more per head: integer D (unique in its head), finite V
// Throws Error "bias file PATH:LINE: what; what is allowed" (PATH alone when it cannot be read).
AbcBias read_abc_bias(const std::string& path);
// Parses `text` as if it were the file `path` (the same checks and messages).
AbcBias parse_abc_bias(const std::string& text, const std::string& path);
// The file's text: `comments` first (each line prefixed with "# "), then the bias with every value
// printed to round trip (%.17g).
std::string abc_bias_text(const AbcBias& bias, const std::vector<std::string>& comments);

// Per head and line: the sum of the attention probabilities on it and how many there were.
struct AbcLines {
  std::size_t heads = 0;
  std::map<std::int64_t, std::vector<double>> sum;              // d -> per head
  std::map<std::int64_t, std::size_t> count;                    // d -> (example, query, key) entries, every head alike
};

// Adds one layer's probabilities probs (B, H, T, T) of a batch with ids positions (B, T): every query row
// i of example b with rows(b, i) != 0 and every key j it may attend to (j <= i when causal, any j else)
// adds probs[b, h, i, j] to the line d = p_i - p_j of head h.
void accumulate_abc_lines(AbcLines& lines, const Array& probs, const IndexArray& positions, const Array& rows,
                          bool causal);

// The paper's steps 2.1-2.4 (see the top of this file) for every head; `lambda` >= 0, `masked` finite.
AbcBias calibrate_abc(const AbcLines& lines, double lambda, double masked);

}  // namespace pelab
