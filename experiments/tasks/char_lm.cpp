// char_lm: byte-level language modelling on a text file. Training windows come from the first part of
// the file, evaluation windows from the held-out tail, so longer eval contexts test extrapolation on
// unseen text. Default corpus: Debian's fortunes-min "literature" quotes (installed by setup).
#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "experiments/tasks/sequence.hpp"
#include "training/checksum.hpp"
#include "layers/positional/encoding.hpp"  // default_positions

#ifndef PELAB_SOURCE_DIR
#define PELAB_SOURCE_DIR "."
#endif

namespace pelab {
namespace {

const char* const kWhat = "task 'char_lm'";

// A directory's text: its regular files (not links) in byte order of name, concatenated, skipping any file
// with a NUL byte (binary: fortune's .dat indexes beside each text). For corpora a package ships as many
// files: Debian's `fortunes` has 2.6 MB in /usr/share/games/fortunes, enough for 16384-character
// held-out windows (docs/tasks.md). Empty when nothing qualifies.
std::string read_directory(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string part((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw Error(std::string(kWhat) + ": error reading '" + f.string() + "' (task.char_lm.path)");
    if (part.find('\0') == std::string::npos) text += part;
  }
  return text;
}

// Relative paths are tried as given (from the working directory), then from the source tree, so a
// config can name a corpus shipped with the repository. A directory stands for its text files.
std::string read_text(const std::string& path, std::string* found = nullptr) {
  if (path.empty()) throw Error(std::string(kWhat) + ": task.char_lm.path is empty; give a text file");
  std::vector<std::string> tries{path};
  if (path[0] != '/') tries.push_back(std::string(PELAB_SOURCE_DIR) + "/" + path);
  int first_errno = 0;
  for (const auto& p : tries) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::string text = read_directory(p);
      if (text.empty())
        throw Error(std::string(kWhat) + ": directory '" + p + "' (task.char_lm.path) has no text file");
      if (found) *found = p;
      return text;
    }
    errno = 0;
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      if (p == path) first_errno = errno;
      continue;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw Error(std::string(kWhat) + ": error reading '" + p + "' (task.char_lm.path)");
    if (text.empty()) throw Error(std::string(kWhat) + ": text file '" + p + "' (task.char_lm.path) is empty");
    if (found) *found = p;
    return text;
  }
  throw Error(std::string(kWhat) + ": cannot read text file '" + path + "' (task.char_lm.path): " +
              (first_errno ? std::strerror(first_errno) : "cannot open") +
              "; the default corpus comes from Debian's fortunes-min package");
}

std::string escape(unsigned char c) {
  switch (c) {
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case '\\': return "\\\\";
  }
  if (c < 0x20 || c >= 0x7f) {  // control bytes, and bytes past ASCII (alone they are not UTF-8: corpus.json)
    const char* hex = "0123456789abcdef";
    return std::string("\\x") + hex[c >> 4] + hex[c & 15];
  }
  return std::string(1, char(c));
}

class CharLm : public Task {
 public:
  CharLm(const TaskCommon& common, std::string path, double holdout) : path_(std::move(path)), holdout_(holdout) {
    const std::string text = read_text(path_, &record_.path);
    record_.key = "task.char_lm.path";
    record_.bytes = text.size();
    record_.crc32c = crc32c_hex(crc32c(text));
    std::array<bool, 256> seen{};
    for (unsigned char c : text) seen[c] = true;
    id_of_.fill(-1);
    bytes_.push_back(0);  // id 0 is PAD
    for (int c = 0; c < 256; ++c)
      if (seen[c]) id_of_[c] = std::int32_t(bytes_.size()), bytes_.push_back(static_cast<unsigned char>(c));
    for (std::size_t id = 1; id < bytes_.size(); ++id) record_.vocabulary += escape(bytes_[id]);
    record_.symbols = bytes_.size() - 1;
    ids_.reserve(text.size());
    for (unsigned char c : text) ids_.push_back(id_of_[c]);
    const auto held = static_cast<std::size_t>(std::llround(holdout * double(text.size())));
    train_end_ = text.size() - std::min(held, text.size());
    if (train_end_ < common.train_len + 1)
      throw Error(std::string(kWhat) + ": the training split of '" + path_ + "' has " + std::to_string(train_end_) +
                  " characters, fewer than train_len + 1 = " + std::to_string(common.train_len + 1) +
                  "; use a longer file (task.char_lm.path), a smaller holdout or a smaller train_len");
  }

  std::size_t vocab_size() const override { return bytes_.size(); }
  bool is_language_model() const override { return true; }
  std::size_t sequence_length(std::size_t n) const override { return n; }

  // One context length L per batch (LM batches are unpadded), uniform random windows of the training split.
  Batch sample(Rng& rng, std::size_t batch, std::size_t min_len, std::size_t max_len) const override {
    seq::check_sample_args(kWhat, batch, min_len, max_len);
    const auto L = static_cast<std::size_t>(rng.range(std::int64_t(min_len), std::int64_t(max_len)));
    if (train_end_ < L + 1)
      throw Error(std::string(kWhat) + ": the training split of '" + path_ + "' has " + std::to_string(train_end_) +
                  " characters, too short for a window of " + std::to_string(L + 1));
    std::vector<std::size_t> starts(batch);
    for (auto& s : starts) s = rng.below(train_end_ - L);
    return windows(starts, L);
  }

  // Evenly spaced windows over the held-out split; the seed rotates the whole comb.
  Batch eval_batch(std::uint64_t seed, std::size_t batch, std::size_t n) const override {
    if (batch == 0 || n == 0) throw Error(std::string(kWhat) + ": eval batch and length must be at least 1");
    const std::size_t held = ids_.size() - train_end_;
    if (held < n + 1)
      throw Error(std::string(kWhat) + ": the held-out split of '" + path_ + "' (last " + format_value(Value(holdout_)) +
                  " of the file) has " + std::to_string(held) + " characters, too short for eval length n = " +
                  std::to_string(n) + " (windows of n + 1 = " + std::to_string(n + 1) +
                  "); use a longer file, a larger task.char_lm.holdout or shorter eval lengths");
    const std::size_t span = held - n;  // number of valid window starts
    Rng rng(seed);
    const std::size_t shift = rng.below(span);
    std::vector<std::size_t> starts(batch);
    for (std::size_t i = 0; i < batch; ++i) starts[i] = train_end_ + (shift + i * span / batch) % span;
    return windows(starts, n);
  }

  std::string render(const Batch& batch, std::size_t b) const override {
    if (b >= batch.batch()) throw Error(std::string(kWhat) + ": row " + std::to_string(b) + " out of range");
    const std::size_t T = batch.length();
    std::string s;
    auto put = [&](std::int32_t id) {
      if (id > 0 && std::size_t(id) < bytes_.size()) s += escape(bytes_[std::size_t(id)]);
      else s += "<" + std::to_string(id) + ">";
    };
    for (std::size_t t = 0; t < T; ++t) put(batch.tokens(b, t));
    if (T > 0) put(batch.targets(b, T - 1));
    return s;
  }

  std::optional<DataRecord> data_record() const override { return record_; }

  std::string token_text(std::int32_t id) const override {
    return id > 0 && std::size_t(id) < bytes_.size() ? escape(bytes_[std::size_t(id)]) : "<" + std::to_string(id) + ">";
  }

  Batch parse_input(const std::string& text) const override {
    if (text.empty()) throw Error(std::string(kWhat) + ": the prompt is empty; give at least one character");
    const std::size_t L = text.size();
    Batch out;
    out.tokens = IndexArray(Shape{1, L});
    out.targets = IndexArray(Shape{1, L});
    out.mask = Array(Shape{1, L});
    out.positions = default_positions(1, L);
    for (std::size_t t = 0; t < L; ++t) {
      const std::int32_t id = id_of_[static_cast<unsigned char>(text[t])];
      if (id < 0)
        throw Error(std::string(kWhat) + ": byte " + std::to_string(static_cast<unsigned char>(text[t])) +
                    (static_cast<unsigned char>(text[t]) < 0x80 ? " ('" + escape(static_cast<unsigned char>(text[t])) + "')" : "") +
                    " at offset " + std::to_string(t) +
                    " of the prompt) never occurs in '" + path_ + "', so the model has no token for it");
      out.tokens(0, t) = id;
      if (t) out.targets(0, t - 1) = id, out.mask(0, t - 1) = 1;
    }
    out.targets(0, L - 1) = -1;
    out.mask(0, L - 1) = 0;
    return out;
  }

 private:
  Batch windows(const std::vector<std::size_t>& starts, std::size_t L) const {
    const std::size_t B = starts.size();
    Batch out;
    out.tokens = IndexArray(Shape{B, L});
    out.targets = IndexArray(Shape{B, L});
    out.mask = Array(Shape{B, L});
    out.positions = default_positions(B, L);
    std::fill(out.mask.begin(), out.mask.end(), real(1));
    for (std::size_t b = 0; b < B; ++b) {
      const std::int32_t* w = ids_.data() + starts[b];
      std::copy(w, w + L, out.tokens.data() + b * L);
      std::copy(w + 1, w + L + 1, out.targets.data() + b * L);
    }
    return out;
  }

  std::string path_;
  DataRecord record_;
  double holdout_;
  std::array<std::int32_t, 256> id_of_{};
  std::vector<unsigned char> bytes_;  // id -> byte (bytes_[0] unused: PAD)
  std::vector<std::int32_t> ids_;     // the whole file as ids
  std::size_t train_end_ = 0;         // ids_[0, train_end_) train, the rest held out
};

}  // namespace

PELAB_REGISTER_TASK(char_lm, TaskSpec{
    "char_lm",
    "byte-level language modelling on a text file (held-out tail for evaluation)",
    "vocabulary: <PAD>=0, then every distinct byte of the file in ascending byte order as ids 1.. (byte\n"
    "level, so any UTF-8 text works; vocab_size = 1 + number of distinct bytes).\n"
    "training: windows w of L+1 consecutive bytes from the first (1 - holdout) of the file, one L per batch\n"
    "drawn from [min_len, train_len]; tokens = w[:-1], targets = w[1:], every target counts.\n"
    "evaluation at length n: windows of n+1 bytes at evenly spaced offsets of the held-out last `holdout`\n"
    "of the file (which must be at least n+1 bytes long).\n"
    "example (L=8): tokens \"To be or\" -> targets \"o be or \"",
    {string_param("path", "/usr/share/games/fortunes/literature",
        "text file, or a directory of them (relative paths: working directory, then the source tree)"),
     number_param("holdout", 0.1, "fraction of the file, at its end, held out for eval").in(0.01, 0.5)},
    [](const TaskCommon& c, const Params& p) -> std::unique_ptr<Task> {
      return std::make_unique<CharLm>(c, p.get_string("path"), p.get_number("holdout"));
    }});

}  // namespace pelab
