#include "core/text_format.h"

#include <algorithm>
#include <cstdio>

namespace edgeopt {

std::string HumanBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  // Three significant digits; "1024 KiB" style rounding artefacts are avoided by the >= above.
  if (v < 10) {
    std::snprintf(buf, sizeof(buf), "%.2f %s", v, kUnits[u]);
  } else if (v < 100) {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f %s", v, kUnits[u]);
  }
  return buf;
}

std::string GroupDigits(int64_t value) {
  const bool negative = value < 0;
  // Work on the unsigned magnitude so INT64_MIN is handled.
  uint64_t mag = negative ? ~static_cast<uint64_t>(value) + 1 : static_cast<uint64_t>(value);
  std::string digits = std::to_string(mag);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

std::string Printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

TextTable::TextTable(std::vector<std::string> header) : header_(std::move(header)) {}

void TextTable::AlignRight(size_t column) {
  if (right_.size() <= column) right_.resize(column + 1, false);
  right_[column] = true;
}

void TextTable::AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

std::string TextTable::Render(const std::string& indent) const {
  std::vector<size_t> width;
  auto measure = [&](const std::vector<std::string>& row) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  };
  if (!header_.empty()) measure(header_);
  for (const auto& r : rows_) measure(r);

  std::string out;
  auto emit = [&](const std::vector<std::string>& row) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool right = c < right_.size() && right_[c];
      const size_t pad = width[c] - row[c].size();
      if (c > 0) line += "  ";
      if (right) line.append(pad, ' ');
      line += row[c];
      if (!right && c + 1 < row.size()) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  if (!header_.empty()) emit(header_);
  for (const auto& r : rows_) emit(r);
  return out;
}

}  // namespace edgeopt
