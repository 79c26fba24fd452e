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

// The layout of a sequence-task example, [task] keys bos, eos, sep, prompt shared by every sequence task:
//     [<BOS>] [P] x [<SEP>] y [<EOS>]
// P is the task's own prompt token ("Copy:", "Sort:", ...), a fixed anchor before x. The model reads the
// sequence minus its last token and predicts each next one; the loss counts the predictions of y and, when
// eos = scored, of <EOS>. The default is pelab's `<BOS> x <SEP> y <EOS>` with EOS scored.
// The papers' formats:
//   Kazemnejad et al. 2023 (decoder-only; "Copy: x [SEP] y </s>", loss on y and </s>, no BOS):
//       bos = false, prompt = true, sep = true, eos = "scored"
//   Ruoss et al. 2023, its autoregressive variant (x, one output marker, then y; loss on y only; no BOS,
//   no EOS): bos = false, prompt = false, sep = true, eos = "absent". Their main results use an
//   encoder that reads x followed by |y| blank tokens and predicts y at those positions all at once (not
//   teacher forced); pelab has no blank-output format (see docs/tasks.md, "Task formats and chance levels").
// With causal attention, eos = "unscored" and eos = "absent" give the same loss and metrics (the
// unscored EOS is only a target, never read); they differ in sequence length (learned position tables,
// which lengths are n/a) and under causal = false.
struct SequenceFormat {
  bool bos = true;
  EosMode eos = EosMode::scored;
  bool sep = true;
  bool prompt = false;
  bool operator==(const SequenceFormat& o) const {
    return bos == o.bos && eos == o.eos && sep == o.sep && prompt == o.prompt;
  }
  bool operator!=(const SequenceFormat& o) const { return !(*this == o); }
};
// "bos = true, eos = \"scored\", sep = true, prompt = false"
std::string describe(const SequenceFormat& f);

}  // namespace pelab
