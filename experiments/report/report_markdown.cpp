// A report Table as markdown: padded to column widths so it also reads well in a terminal.
#include <algorithm>
#include <sstream>

#include "experiments/report/report_detail.hpp"

namespace pelab {
namespace report_detail {

std::string markdown(const Table& t) {
  auto width = [](const std::string& x) {  // display columns: "±" and "≥" are one column, several bytes
    std::size_t w = 0;
    for (unsigned char ch : x) w += (ch & 0xC0) != 0x80;
    return w;
  };
  std::vector<std::vector<std::string>> rows = {t.header};
  rows.insert(rows.end(), t.rows.begin(), t.rows.end());
  std::vector<std::size_t> w(t.header.size(), 3);
  for (const auto& r : rows)
    for (std::size_t j = 0; j < r.size() && j < w.size(); ++j) w[j] = std::max(w[j], width(r[j]));
  std::ostringstream os;
  os << "## " << t.title << "\n\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    os << "|";
    for (std::size_t j = 0; j < w.size(); ++j) {
      const std::string cell = j < rows[i].size() ? rows[i][j] : "";
      const std::string pad(w[j] - width(cell), ' ');
      os << " " << (j < t.n_left ? cell + pad : pad + cell) << " |";
    }
    os << "\n";
    if (i == 0) {
      os << "|";
      for (std::size_t j = 0; j < w.size(); ++j)
        os << (j < t.n_left ? " " + std::string(w[j], '-') + " |" : " " + std::string(w[j] - 1, '-') + ": |");
      os << "\n";
    }
  }
  os << "\n";
  for (std::size_t i = 0; i < t.notes.size(); ++i) os << (i ? "\n" : "") << t.notes[i] << "\n";
  if (!t.notes.empty() && !t.footnotes.empty()) os << "\n";
  for (std::size_t k = 0; k < t.footnotes.size(); ++k) os << "- [" << k + 1 << "] " << t.footnotes[k] << "\n";
  return os.str();
}

}  // namespace report_detail
}  // namespace pelab
