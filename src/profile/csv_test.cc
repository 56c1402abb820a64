#include "profile/csv.h"

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge::profile {
namespace {

TEST(Csv, QuotedFieldsWithCommasQuotesAndLineBreaks) {
  auto rows = parse_csv("\"a\",\"b, c\",\"say \"\"hi\"\"\"\r\n\"multi\nline\",,plain\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (CsvRow{"a", "b, c", "say \"hi\""}));
  EXPECT_EQ(rows[1], (CsvRow{"multi\nline", "", "plain"}));
}

TEST(Csv, BlankLinesSkippedAndLastLineWithoutNewline) {
  auto rows = parse_csv("x,y\n\n1,2");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1], (CsvRow{"1", "2"}));
}

TEST(Csv, EmptyQuotedFieldIsAField) {
  auto rows = parse_csv("\"\"\n");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (CsvRow{""}));
}

TEST(Csv, UnclosedQuoteIsAnError) { EXPECT_THROW(parse_csv("\"abc,def\n"), InputError); }

}  // namespace
}  // namespace kforge::profile
