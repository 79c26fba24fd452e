// The ABC bias file and the calibration arithmetic (abc_bias.hpp).
#include "layers/positional/abc_bias.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pelab {

namespace {

constexpr const char* kMagic = "pelab-abc-bias";
constexpr const char* kLayout =
    "a bias file written by `pelab abc`: `pelab-abc-bias 1`, `n_heads H`, then per head k = 0..H-1 a line "
    "`head k masked M` followed by `distance D V` lines (docs/encodings.md#attention-bias-calibration)";

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

// Reads the file line by line, keeping the line number for every message.
class BiasParser {
 public:
  BiasParser(const std::string& text, const std::string& path) : in_(text), path_(path) {}

  AbcBias parse() {
    expect_header();
    const std::int64_t H = integer(next_words("n_heads", 2).at(1), "n_heads", 1, 4096);
    AbcBias b;
    b.heads.resize(std::size_t(H));
    std::vector<std::string> w = next_words("head", 4);
    for (std::int64_t k = 0; k < H; ++k) {
      head_line(w, k);
      b.heads[std::size_t(k)].masked = real_value(w[3], "masked");
      w = distances(b.heads[std::size_t(k)], k + 1 < H);
    }
    if (!w.empty()) fail("'" + w[0] + "' after the last head (" + std::to_string(H) + " heads, as n_heads says)");
    return b;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("bias file " + path_ + ":" + std::to_string(line_) + ": " + what + "; expected " + kLayout);
  }

  // The next line with words (comments and blank lines skipped), or none at the end of the file.
  std::vector<std::string> next() {
    for (std::string s; std::getline(in_, s);) {
      ++line_;
      const std::vector<std::string> w = words_of(s.substr(0, s.find('#')));
      if (!w.empty()) return w;
    }
    ++line_;
    return {};
  }

  std::vector<std::string> next_words(const std::string& key, std::size_t n) {
    std::vector<std::string> w = next();
    if (w.empty()) fail("the file ends where a line `" + key + " ...` should be");
    if (w[0] != key) fail("'" + w[0] + "' where a line `" + key + " ...` should be");
    if (w.size() != n) fail("`" + key + "` takes " + std::to_string(n - 1) + " value(s), this line has " +
                            std::to_string(w.size() - 1));
    return w;
  }

  void expect_header() {
    const std::vector<std::string> w = next();
    if (w.empty()) fail("the file is empty");
    if (w[0] != kMagic) fail("it does not start with `pelab-abc-bias 1` (found '" + w[0] + "')");
    if (w.size() != 2 || w[1] != "1")
      fail("format version " + (w.size() > 1 ? "'" + w[1] + "'" : std::string("missing")) + ", this pelab reads 1");
  }

  void head_line(const std::vector<std::string>& w, std::int64_t k) {
    if (w.size() != 4 || w[0] != "head" || w[2] != "masked") fail("expected `head " + std::to_string(k) + " masked M`");
    if (integer(w[1], "head", 0, 4095) != k) fail("head " + w[1] + " where head " + std::to_string(k) + " comes next");
  }

  // The `distance` lines of one head; returns the line after them (the next head's, or none).
  std::vector<std::string> distances(AbcHead& h, bool more_heads) {
    for (;;) {
      std::vector<std::string> w = next();
      if (w.empty()) {
        if (more_heads) fail("the file ends before every head of n_heads has its `head k masked M` line");
        return w;
      }
      if (w[0] != "distance") {
        if (w[0] != "head") fail("'" + w[0] + "' where `distance D V` or the next `head` line should be");
        return w;
      }
      if (w.size() != 3) fail("`distance` takes 2 values (D V), this line has " + std::to_string(w.size() - 1));
      const std::int64_t d = integer(w[1], "distance", -1000000, 1000000);  // a dense table per head (abc.cpp)
      if (h.kept.count(d)) fail("distance " + w[1] + " twice in one head");
      h.kept[d] = real_value(w[2], "a distance's value");
    }
  }

  std::int64_t integer(const std::string& s, const std::string& what, std::int64_t lo, std::int64_t hi) const {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
      fail(what + " '" + s + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }

  double real_value(const std::string& s, const std::string& what) const {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(v)) fail(what + " '" + s + "' is not a finite number");
    return v;
  }

  std::istringstream in_;
  std::string path_;
  std::size_t line_ = 0;
};

std::string g17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

AbcBias parse_abc_bias(const std::string& text, const std::string& path) { return BiasParser(text, path).parse(); }

AbcBias read_abc_bias(const std::string& path) {
  if (path.empty()) throw Error("bias file: no path given; expected the path of " + std::string(kLayout));
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  std::ifstream f(path, std::ios::binary);
  std::ostringstream text;
  if (regular && f) text << f.rdbuf();
  if (!regular || !f || f.bad())
    throw Error("bias file " + path + " cannot be read (" +
                (!std::filesystem::exists(path, ec) ? std::string("no such file")
                 : !regular                          ? std::string("not a regular file")
                                                     : std::string(std::strerror(errno))) +
                "); expected the path of " + kLayout + ", e.g. OUT/abc_bias.txt of `pelab abc CONFIG --out OUT`");
  return parse_abc_bias(text.str(), path);
}

std::string abc_bias_text(const AbcBias& bias, const std::vector<std::string>& comments) {
  std::string s;
  for (const auto& c : comments) s += "# " + c + "\n";
  s += std::string(kMagic) + " 1\nn_heads " + std::to_string(bias.heads.size()) + "\n";
  for (std::size_t k = 0; k < bias.heads.size(); ++k) {
    s += "head " + std::to_string(k) + " masked " + g17(bias.heads[k].masked) + "\n";
    for (const auto& [d, v] : bias.heads[k].kept) s += "distance " + std::to_string(d) + " " + g17(v) + "\n";
  }
  return s;
}

void accumulate_abc_lines(AbcLines& lines, const Array& probs, const IndexArray& positions, const Array& rows,
                          bool causal) {
  const std::size_t B = probs.shape()[0], H = probs.shape()[1], T = probs.shape()[2];
  if (lines.heads == 0) lines.heads = H;
  if (lines.heads != H || probs.shape()[3] != T || positions.shape()[0] != B || positions.shape()[1] != T)
    throw Error("accumulate_abc_lines: shapes do not match");
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < T; ++i) {
      if (rows(b, i) == 0) continue;
      for (std::size_t j = 0; j < (causal ? i + 1 : T); ++j) {
        const std::int64_t d = std::int64_t(positions(b, i)) - std::int64_t(positions(b, j));
        std::vector<double>& s = lines.sum[d];
        s.resize(H, 0.0);
        for (std::size_t h = 0; h < H; ++h) s[h] += double(probs(b, h, i, j));
        ++lines.count[d];
      }
    }
}

AbcBias calibrate_abc(const AbcLines& lines, double lambda, double masked) {
  if (!(lambda >= 0) || !std::isfinite(masked)) throw Error("calibrate_abc: lambda must be >= 0 and masked finite");
  AbcBias out;
  out.heads.resize(lines.heads);
  for (std::size_t h = 0; h < lines.heads; ++h) {
    std::map<std::int64_t, double> mean;  // 2.1: d_l, the mean of line l
    for (const auto& [d, s] : lines.sum) mean[d] = s[h] / double(lines.count.at(d));
    double mu = 0, var = 0, top = -INFINITY;
    for (const auto& [d, v] : mean) mu += v / double(mean.size()), top = std::max(top, v);
    for (const auto& [d, v] : mean) var += (v - mu) * (v - mu) / double(mean.size());
    const double threshold = mu + lambda * std::sqrt(var);  // the dropout threshold mu + lambda sigma
    AbcHead& head = out.heads[h];
    for (const auto& [d, v] : mean)
      if (v > threshold) head.kept[d] = v - top;  // 2.2: d_l - d_max where kept, -inf (masked) elsewhere
    head.masked = head.kept.empty() ? 0.0 : masked;  // 2.4: nothing kept -> a transparent head
  }
  return out;
}

}  // namespace pelab
