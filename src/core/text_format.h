// Plain-text helpers for human-readable reports (edgeopt inspect/convert, tools): byte sizes,
// digit grouping, and column-aligned tables. The CLI re-exports these through cli_util.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgeopt {

// "0 B", "512 B", "1.5 KiB", "1.80 MiB", "2.00 GiB" (binary units, 3 significant digits).
std::string HumanBytes(uint64_t bytes);
// "1,234,567".
std::string GroupDigits(int64_t value);
// "12.3%" of `part` in `whole` ("-" when whole is 0).
std::string Percent(uint64_t part, uint64_t whole);

// Control characters (from untrusted names) replaced by '?', so a report cannot drive the terminal.
std::string Printable(std::string_view text);

// Column-aligned table: columns are padded to their widest cell and separated by two spaces.
//   TextTable t({"name", "size"});
//   t.AlignRight(1);
//   t.AddRow({"weights", "1.2 MiB"});
//   std::string s = t.Render("  ");
class TextTable {
 public:
  // An empty header renders no header line.
  explicit TextTable(std::vector<std::string> header = {});
  void AlignRight(size_t column);
  void AddRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  // Each line starts with `indent` and ends with '\n'; trailing spaces are trimmed.
  std::string Render(const std::string& indent = "") const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;
};

}  // namespace edgeopt
