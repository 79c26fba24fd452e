#include "experiments/tasks/sequence.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "layers/positional/encoding.hpp"  // default_positions

namespace pelab {
namespace seq {

std::size_t fed_length(std::size_t x_len, std::size_t y_len, const SequenceFormat& f) {
  if (f.blank()) return std::size_t(f.bos) + std::size_t(f.prompt) + x_len + std::size_t(f.sep) + y_len;
  const std::size_t len = std::size_t(f.bos) + std::size_t(f.prompt) + x_len + std::size_t(f.sep) + y_len +
                          std::size_t(f.eos != EosMode::absent);
  return len ? len - 1 : 0;
}

namespace {

// Whether the examples carry a stream (`has` of each): all of them or none, and with one entry per token.
bool all_have(const std::vector<Example>& examples, const char* what,
              bool (*has)(const Example&), bool (*sized)(const Example&)) {
  std::size_t n = 0;
  for (const auto& e : examples) {
    if (!has(e)) continue;
    ++n;
    if (!sized(e)) throw Error(std::string("seq::assemble: an example's ") + what + " does not match its tokens");
  }
  if (n != 0 && n != examples.size())
    throw Error(std::string("seq::assemble: some examples have ") + what + " and some do not");
  return n != 0;
}

// The stream of one row beside its sequence [BOS] [P] x [SEP] y [EOS]: `xs` and `ys` for x and y, `sep` at <SEP>, 0 elsewhere.
void stream_row(std::vector<std::int32_t>& out, const SequenceFormat& f, const std::vector<std::int32_t>& xs,
                std::int32_t sep, const std::vector<std::int32_t>& ys) {
  out.clear();
  if (f.bos) out.push_back(0);
  if (f.prompt) out.push_back(0);
  out.insert(out.end(), xs.begin(), xs.end());
  if (f.sep) out.push_back(sep);
  out.insert(out.end(), ys.begin(), ys.end());
  if (f.eos != EosMode::absent) out.push_back(0);
}

// The blanks row `e` gets in the blank format: `blanks`, or |y| when 0; never fewer than |y|.
std::size_t row_blanks(const Example& e, std::size_t blanks, std::size_t b) {
  if (blanks == 0) return e.y.size();
  if (e.y.size() > blanks)
    throw Error("seq::assemble: row " + std::to_string(b) + " has an answer of " + std::to_string(e.y.size()) +
                " tokens but only " + std::to_string(blanks) + " blanks");
  return blanks;
}

// Checks the ids a format needs; returns the fed length of the longest row (Error in the blank format
// unless every row has it).
std::size_t batch_length(const std::vector<Example>& examples, const SequenceFormat& f, std::int32_t prompt,
                         std::int32_t blank, std::size_t blanks) {
  if (f.prompt && prompt < kFirstSymbol) throw Error("seq::assemble: the format has a prompt but no prompt token id");
  if (f.blank() && (blank < kFirstSymbol || (f.prompt && blank == prompt)))
    throw Error("seq::assemble: the blank output format needs a blank token id of its own");
  if (f.blank() && f.eos != EosMode::absent)
    throw Error("seq::assemble: the blank output format has no <EOS> (eos = \"absent\")");
  std::size_t T = 0, shortest = std::size_t(-1);  // tokens fed: the longest sequence minus its last token
  for (std::size_t b = 0; b < examples.size(); ++b) {
    const Example& e = examples[b];
    const std::size_t L = fed_length(e.x.size(), f.blank() ? row_blanks(e, blanks, b) : e.y.size(), f);
    T = std::max(T, L), shortest = std::min(shortest, L);
  }
  // Padding would be read by a non-causal model (and by the blanks of a causal one that follow it).
  if (f.blank() && !examples.empty() && shortest != T)
    throw Error("seq::assemble: rows of " + std::to_string(shortest) + " and " + std::to_string(T) +
                " tokens in the blank output format, whose rows must all have one length (no padding for "
                "attention to read): one problem size per batch, x of one length at each size");
  return T;
}

}  // namespace

Batch assemble(const std::vector<Example>& examples, const SequenceFormat& f, std::int32_t prompt, std::int32_t blank,
               std::size_t blanks) {
  const std::size_t B = examples.size(), T = batch_length(examples, f, prompt, blank, blanks);
  const std::size_t shift = f.blank() ? 0 : 1;  // target t is sequence[t + shift]
  Batch out;
  out.tokens = IndexArray(Shape{B, T});
  out.targets = IndexArray(Shape{B, T});
  out.mask = Array(Shape{B, T});
  out.positions = default_positions(B, T);
  out.blank_answer = f.blank();
  std::fill(out.tokens.begin(), out.tokens.end(), kPad);
  std::fill(out.targets.begin(), out.targets.end(), -1);
  std::fill(out.mask.begin(), out.mask.end(), real(0));
  const bool pos = all_have(
      examples, "position ids", [](const Example& e) { return !e.x_pos.empty() || !e.y_pos.empty(); },
      [](const Example& e) { return e.x_pos.size() == e.x.size() && e.y_pos.size() == e.y.size(); });
  const bool digits = all_have(
      examples, "digit indices", [](const Example& e) { return !e.x_digit.empty() || !e.y_digit.empty(); },
      [](const Example& e) { return e.x_digit.size() == e.x.size() && e.y_digit.size() == e.y.size(); });
  if (pos) std::fill(out.positions.begin(), out.positions.end(), 0);
  if (digits) out.digit_index = IndexArray(Shape{B, T}, 0);
  std::vector<std::int32_t> stream;
  out.answer_begin.resize(B);
  out.answer_end.resize(B);
  std::vector<std::int32_t> s;
  for (std::size_t b = 0; b < B; ++b) {
    const Example& e = examples[b];
    s.clear();
    if (f.bos) s.push_back(kBos);
    if (f.prompt) s.push_back(prompt);
    s.insert(s.end(), e.x.begin(), e.x.end());
    if (f.sep) s.push_back(kSep);
    const std::size_t y0 = s.size();  // sequence index of y's first token (its first blank)
    if (f.blank()) s.insert(s.end(), row_blanks(e, blanks, b), blank);
    else s.insert(s.end(), e.y.begin(), e.y.end());
    if (f.eos != EosMode::absent) s.push_back(kEos);
    const std::size_t counted = e.y.size() + (f.eos == EosMode::scored ? 1 : 0);
    if (y0 == 0 || counted == 0)
      throw Error("seq::assemble: row " + std::to_string(b) + " has " +
                  (y0 == 0 ? "nothing before y to predict it from" : "no target to count"));
    std::int32_t* tok = out.tokens.data() + b * T;
    std::int32_t* tgt = out.targets.data() + b * T;
    real* m = out.mask.data() + b * T;
    const std::size_t L = s.size() - shift;
    std::copy_n(s.begin(), L, tok);
    if (f.blank()) std::copy(e.y.begin(), e.y.end(), tgt + y0);  // y_j at the j-th blank; the rest stays -1
    else
      for (std::size_t t = 0; t < L; ++t) tgt[t] = s[t + 1];
    auto copy_stream = [&](IndexArray& a) {
      stream.resize(std::max(stream.size(), L), 0);  // blanks past y: 0
      std::copy_n(stream.begin(), L, a.data() + b * T);
    };
    if (pos) stream_row(stream, f, e.x_pos, e.sep_pos, e.y_pos), copy_stream(out.positions);
    if (digits) stream_row(stream, f, e.x_digit, 0, e.y_digit), copy_stream(out.digit_index);
    // Teacher forced: target t is sequence[t + 1], so y's first target is t = y0 - 1 and a scored EOS is
    // the one after y. Blank: y's first target is at its first blank, y0.
    out.answer_begin[b] = y0 - shift;
    out.answer_end[b] = y0 - shift + counted;
    for (std::size_t t = out.answer_begin[b]; t < out.answer_end[b]; ++t) m[t] = 1;
  }
  return out;
}

Example decode(const Batch& batch, std::size_t b, const SequenceFormat& f, std::int32_t blank) {
  if (b >= batch.batch()) throw Error("row " + std::to_string(b) + " out of range for a batch of " +
                                      std::to_string(batch.batch()));
  if (batch.answer_end.size() != batch.batch() || batch.answer_begin.size() != batch.batch())
    throw Error("batch has no answer ranges: not a sequence-task batch");
  if (batch.blank_answer != f.blank())
    throw Error(std::string("a ") + (batch.blank_answer ? "blank" : "teacher-forced") +
                " output batch read with the format " + describe(f));
  const std::size_t T = batch.length(), a = batch.answer_begin[b], e = batch.answer_end[b];
  const std::size_t eos = f.eos == EosMode::scored ? 1 : 0, y0 = a + (f.blank() ? 0 : 1);
  const std::size_t x0 = std::size_t(f.bos) + std::size_t(f.prompt), x_end = y0 - std::size_t(f.sep);
  const std::int32_t* tok = batch.tokens.data() + b * T;
  const std::int32_t* tgt = batch.targets.data() + b * T;
  bool ok = a < e && e <= T && e - a > eos && y0 >= std::size_t(f.sep) && x0 < x_end && x_end <= T &&
            (!f.bos || tok[0] == kBos) && (!f.sep || tok[x_end] == kSep) && (!eos || tgt[e - 1] == kEos);
  if (ok && f.blank()) ok = blank >= kFirstSymbol && std::all_of(tok + a, tok + T, [&](std::int32_t v) { return v == blank; });
  if (!ok)
    throw Error("malformed sequence-task batch row " + std::to_string(b) + " for the format " + describe(f));
  Example out;
  out.x.assign(tok + x0, tok + x_end);
  out.y.assign(tgt + a, tgt + e - eos);
  return out;
}

std::string symbol_name(std::size_t i, std::size_t size) {
  if (size <= 10) return std::string(1, char('0' + i));
  if (size <= 52) return std::string(1, i < 26 ? char('a' + i) : char('A' + (i - 26)));
  return "s" + std::to_string(i);
}

void check_sample_args(const std::string& what, std::size_t batch, std::size_t min_len, std::size_t max_len) {
  if (batch == 0) throw Error(what + ": batch size must be at least 1");
  if (min_len < 1 || min_len > max_len)
    throw Error(what + ": problem sizes [" + std::to_string(min_len) + ", " + std::to_string(max_len) +
                "] must satisfy 1 <= min_len <= max_len");
}

}  // namespace seq

Batch SequenceTask::sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const {
  seq::check_sample_args("task '" + name_ + "'", batch, min_len, max_len);
  check_size(max_len);
  std::vector<seq::Example> ex;
  ex.reserve(batch);
  if (format_.blank()) {  // one size for the whole batch, drawn before the content
    const auto n = static_cast<std::size_t>(rng.range(std::int64_t(min_len), std::int64_t(max_len)));
    for (std::size_t b = 0; b < batch; ++b) ex.push_back(generate(rng, n));
    return seq::assemble(ex, format_, prompt_id(), blank_id(), blank_length(n));
  }
  for (std::size_t b = 0; b < batch; ++b) {
    const auto n = static_cast<std::size_t>(rng.range(std::int64_t(min_len), std::int64_t(max_len)));
    ex.push_back(generate(rng, n));
  }
  return seq::assemble(ex, format_, prompt_id());
}

std::size_t SequenceTask::typed_blanks(std::size_t x_len, std::size_t y_len) const {
  for (std::size_t n = 1; n <= x_len + 1; ++n)  // the problem size whose x has x_len tokens, if any
    if (x_length(n) == x_len) return std::max(blank_length(n), y_len);
  return y_len;
}

std::optional<Chance> SequenceTask::chance(std::size_t n) const {
  std::vector<std::size_t> support = answer_support(n);
  if (support.size() != y_length(n))
    throw Error("task '" + name_ + "': answer_support gives " + std::to_string(support.size()) +
                " positions for an answer of " + std::to_string(y_length(n)));
  if (format_.eos == EosMode::scored) support.push_back(1);  // the guesser always names <EOS> there
  Chance c;
  c.exact_match = 1;
  for (std::size_t k : support) {
    if (k == 0) throw Error("task '" + name_ + "': an answer position with no possible token");
    c.token_acc += 1.0 / double(k);
    c.exact_match /= double(k);
  }
  c.token_acc /= double(support.size());
  return c;
}

std::string SequenceTask::display(std::int32_t id) const {
  switch (id) {
    case seq::kPad: return "<PAD>";
    case seq::kBos: return "<BOS>";
    case seq::kSep: return "<SEP>";
    case seq::kEos: return "<EOS>";
  }
  if (format_.prompt && id == prompt_id()) return prompt_word_;
  if (format_.blank() && id == blank_id()) return "<BLANK>";
  if (id < 0 || std::size_t(id) >= base_vocab_size()) return "<?" + std::to_string(id) + ">";
  return token_name(id);
}

std::string SequenceTask::render(const Batch& batch, std::size_t b) const {
  seq::decode(batch, b, format_, blank_id());  // checks the row against the format
  if (format_.blank()) return render_blank(batch, b);
  const std::size_t T = batch.length(), a = batch.answer_begin[b], e = batch.answer_end[b];
  std::size_t L = T;  // the row's length: up to its last real target
  while (L > 0 && batch.targets(b, L - 1) < 0) --L;
  // sequence[i] = tokens[i] for i < L, then targets[L - 1]; target t is sequence[t + 1].
  std::string s;
  for (std::size_t i = 0; i <= L; ++i) {
    const std::int32_t id = i < L ? batch.tokens(b, i) : batch.targets(b, L - 1);
    if (i) s += ' ';
    if (i == a + 1) s += '[';
    s += display(id);
    if (i == e) s += ']';
  }
  return s;
}

// The whole row, then the targets at the blanks: "<BOS> 0 1 1 <BLANK> <BLANK> <BLANK> -> [1 1 0]", each
// unscored padding blank as "-" after the brackets.
std::string SequenceTask::render_blank(const Batch& batch, std::size_t b) const {
  const std::size_t T = batch.length(), a = batch.answer_begin[b], e = batch.answer_end[b];
  std::string s;
  for (std::size_t t = 0; t < T; ++t) s += (t ? " " : "") + display(batch.tokens(b, t));
  s += " -> [";
  for (std::size_t t = a; t < e; ++t) s += (t > a ? " " : "") + display(batch.targets(b, t));
  s += "]";
  for (std::size_t t = e; t < T; ++t) s += " -";
  return s;
}

Batch SequenceTask::parse_input(const std::string& text) const {
  // Names of the task's symbols (specials and the prompt word are added by the format, never typed).
  std::map<std::string, std::int32_t> ids;
  std::string allowed;
  for (std::int32_t id = seq::kFirstSymbol; std::size_t(id) < base_vocab_size(); ++id) {
    ids[token_name(id)] = id;
    allowed += (allowed.empty() ? "" : " ") + token_name(id);
  }
  const std::string what = "task '" + name_ + "': input \"" + text + "\"";
  std::vector<std::int32_t> x;
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (auto it = ids.find(w); it != ids.end()) {
      x.push_back(it->second);
      continue;
    }
    std::vector<std::int32_t> chars;  // "314" for 3 1 4 when every name is one character
    for (char c : w) {
      auto it = ids.find(std::string(1, c));
      if (it == ids.end()) {
        chars.clear();
        break;
      }
      chars.push_back(it->second);
    }
    if (chars.empty())
      throw Error(what + ": unknown token '" + w + "'; allowed: " + allowed +
                  " (separated by spaces; x only, the format adds <BOS>, <SEP>, <EOS>)");
    x.insert(x.end(), chars.begin(), chars.end());
  }
  if (x.empty()) throw Error(what + ": empty; type x, e.g. the part before <SEP> of `pelab show-task " + name_ + "`");
  try {
    const seq::Example e = complete(x);
    return seq::assemble({e}, format_, prompt_id(), blank_id(), format_.blank() ? typed_blanks(e.x.size(), e.y.size()) : 0);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
}

seq::Example SymbolTask::generate(Rng& rng, std::size_t n) const {
  seq::Example e;
  e.x.resize(n);
  for (auto& v : e.x) v = seq::kFirstSymbol + std::int32_t(rng.below(symbols_));
  e.y = f_(e.x);
  return e;
}

ParamSpec symbols_param(std::int64_t default_symbols) {
  return integer_param("symbols", default_symbols, "alphabet size of x").in(2.0, 100.0);
}

const char* const kSymbolVocabulary =
    "vocabulary: <PAD>=0 <BOS>=1 <SEP>=2 <EOS>=3, then the `symbols` symbols as ids 4.. (shown as digits\n"
    "0-9 for up to 10 symbols, letters a-z A-Z for up to 52, else s0 s1 ...), then the prompt token when\n"
    "prompt = true.\n";

const char* const kFormatKeys =
    "format ([task] keys, every sequence task): [<BOS>] [P] x [<SEP>] y [<EOS>]\n"
    "  bos = true | false          <BOS> first\n"
    "  prompt = false | true       the task's prompt token P before x (an anchor word, e.g. \"Copy:\"; the last id)\n"
    "  sep = true | false          <SEP> between x and y (without it the last x token predicts y's first)\n"
    "  eos = \"scored\" | \"unscored\" | \"absent\"\n"
    "                              <EOS> after y, counted by loss and metrics; present but not counted;\n"
    "                              not there (with causal attention unscored and absent score the same)\n"
    "  output = \"teacher_forced\" | \"blank\"\n"
    "                              y read and predicted token by token; or x then one <BLANK> per answer\n"
    "                              place, y predicted at the blanks in one pass (eos \"absent\"; one size per batch)\n"
    "  The loss, token accuracy and exact match count the targets in brackets below: y, and <EOS> when scored.\n"
    "  Papers: Kazemnejad et al. 2023: bos = false, prompt = true (sep, eos scored as default);\n"
    "  Ruoss et al. 2023 (autoregressive variant): bos = false, eos = \"absent\"; Deletang et al. 2023 and\n"
    "  Ruoss et al. 2023 (main results, with model.causal = false): bos = false, sep = false, output = \"blank\".\n"
    "chance: a guesser that picks each counted target uniformly among the tokens that can appear there\n"
    "(scored <EOS>: always right); its expected token accuracy and exact match are listed per length.\n";

}  // namespace pelab
