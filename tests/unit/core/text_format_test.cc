#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/text_format.h"

namespace edgeopt {
namespace {

TEST(TextFormat, HumanBytes) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1024), "1.00 KiB");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
  EXPECT_EQ(HumanBytes(1882904), "1.80 MiB");
  EXPECT_EQ(HumanBytes(uint64_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(HumanBytes(150 * 1024), "150 KiB");
}

TEST(TextFormat, GroupDigitsAndPercent) {
  EXPECT_EQ(GroupDigits(0), "0");
  EXPECT_EQ(GroupDigits(999), "999");
  EXPECT_EQ(GroupDigits(1000), "1,000");
  EXPECT_EQ(GroupDigits(-1234567), "-1,234,567");
  EXPECT_EQ(GroupDigits(std::numeric_limits<int64_t>::min()), "-9,223,372,036,854,775,808");
  EXPECT_EQ(Percent(1, 3), "33.3%");
  EXPECT_EQ(Percent(1, 0), "-");
}

TEST(TextFormat, TableAlignsColumns) {
  TextTable t({"name", "n"});
  t.AlignRight(1);
  t.AddRow({"a", "1"});
  t.AddRow({"long name", "100"});
  EXPECT_EQ(t.Render("  "), "  name         n\n  a            1\n  long name  100\n");
  TextTable headless;
  headless.AddRow({"x", ""});
  EXPECT_EQ(headless.Render(), "x\n");  // trailing spaces trimmed
}

TEST(TextFormat, Printable) { EXPECT_EQ(Printable("a\nb\x1b[31m"), "a?b?[31m"); }

}  // namespace
}  // namespace edgeopt
