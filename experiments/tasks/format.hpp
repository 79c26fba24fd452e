// The layout of a sequence-task example: which special tokens surround x and y and whether EOS is scored.
// [task] keys bos, eos, sep and prompt; shared by every sequence task (experiments/tasks/sequence.hpp).
#pragma once

#include <string>

namespace pelab {

// How EOS ends a sequence-task example: present and counted by loss and metrics, present as the last
// target but not counted, or not there at all.
enum class EosMode { scored, unscored, absent };
const char* eos_mode_name(EosMode m);      // "scored" | "unscored" | "absent"
EosMode parse_eos_mode(const std::string& name);  // Error listing the allowed names

// How y is asked for ([task] output): teacher forced (the model reads y shifted by one and predicts each
// next token) or blank (the model reads x and then one blank token per answer place, and predicts all of y
// at the blanks in one pass: Deletang et al. 2023's and Ruoss et al. 2023's main setting).
enum class OutputMode { teacher_forced, blank };
const char* output_mode_name(OutputMode m);          // "teacher_forced" | "blank"
OutputMode parse_output_mode(const std::string& name);  // Error listing the allowed names

// The layout of a sequence-task example, [task] keys bos, eos, sep, prompt shared by every sequence task:
//     [<BOS>] [P] x [<SEP>] y [<EOS>]
// P is the task's own prompt token ("Copy:", "Sort:", ...), a fixed anchor before x. The model reads the
// sequence minus its last token and predicts each next one; the loss counts the predictions of y and, when
// eos = scored, of <EOS>. The default is pelab's `<BOS> x <SEP> y <EOS>` with EOS scored.
// The papers' formats:
//   Kazemnejad et al. 2023 (decoder-only; "Copy: x [SEP] y </s>", loss on y and </s>, no BOS):
//       bos = false, prompt = true, sep = true, eos = "scored"
//   Ruoss et al. 2023, its autoregressive variant (x, one output marker, then y; loss on y only; no BOS,
//   no EOS): bos = false, prompt = false, sep = true, eos = "absent".
// output = "blank" (the main setting of Deletang et al. 2023 and Ruoss et al. 2023) lays an example out as
//     [<BOS>] [P] x [<SEP>] <BLANK> ... <BLANK>
// with one <BLANK> per answer place (the task's blank_length(n), y padded to it as the authors pad their
// outputs) and the target y_j AT the j-th blank, not one token later: the model never reads y. Their code
// (google-deepmind/neural_networks_chomsky_hierarchy @ 2b8eb4b, experiments/utils.py,
// make_model_with_empty_targets) is bos = false, sep = false. eos must be "absent" there. Every batch then
// has one problem size and all its rows one length, so a non-causal model never reads padding.
// With causal attention, eos = "unscored" and eos = "absent" give the same loss and metrics (the
// unscored EOS is only a target, never read); they differ in sequence length (learned position tables,
// which lengths are n/a) and under causal = false.
struct SequenceFormat {
  bool bos = true;
  EosMode eos = EosMode::scored;
  bool sep = true;
  bool prompt = false;
  OutputMode output = OutputMode::teacher_forced;
  bool blank() const { return output == OutputMode::blank; }
  bool operator==(const SequenceFormat& o) const {
    return bos == o.bos && eos == o.eos && sep == o.sep && prompt == o.prompt && output == o.output;
  }
  bool operator!=(const SequenceFormat& o) const { return !(*this == o); }
};
// "bos = true, eos = \"scored\", sep = true, prompt = false", then ", output = \"blank\"" when blank
std::string describe(const SequenceFormat& f);

}  // namespace pelab
