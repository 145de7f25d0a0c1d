#include "query/regex.h"

#include <gtest/gtest.h>

#include "query/query_errors.h"

namespace hourglass::query {
namespace {

TEST(RegexTest, OptionsChangeMatching) {
  EXPECT_FALSE(Regex::Compile("^abc$", "").value().Matches("ABC"));
  EXPECT_TRUE(Regex::Compile("^abc$", "i").value().Matches("ABC"));
  EXPECT_FALSE(Regex::Compile("^b", "").value().Matches("a\nb"));
  EXPECT_TRUE(Regex::Compile("^b", "m").value().Matches("a\nb"));
  EXPECT_FALSE(Regex::Compile("a.b", "").value().Matches("a\nb"));
  EXPECT_TRUE(Regex::Compile("a.b", "s").value().Matches("a\nb"));
  EXPECT_TRUE(Regex::Compile("a b # comment", "x").value().Matches("ab"));
  // UTF-8 mode: '.' is one code point, not one byte.
  EXPECT_TRUE(Regex::Compile("^.$", "u").value().Matches("\xc3\xa9"));
}

TEST(RegexTest, CompileErrorsCarryQueryCodes) {
  auto bad_option = Regex::Compile("a", "q");
  ASSERT_FALSE(bad_option.ok());
  EXPECT_EQ(bad_option.status().code(), kBadRegexOptionCode);
  EXPECT_NE(bad_option.status().reason().find('q'), std::string::npos);
  auto bad_pattern = Regex::Compile("(a", "");
  ASSERT_FALSE(bad_pattern.ok());
  EXPECT_EQ(bad_pattern.status().code(), kBadRegexCode);
  auto embedded_nul = Regex::Compile(std::string_view("a\0b", 3), "");
  ASSERT_FALSE(embedded_nul.ok());
  EXPECT_EQ(embedded_nul.status().code(), kBadRegexCode);
}

TEST(RegexTest, FindReportsGroupsAndUnsetGroups) {
  Regex re = Regex::Compile("(a)|(b)", "").value();
  EXPECT_EQ(re.CaptureCount(), 2);
  int error = -1;
  auto m = re.Find("xxb", 0, &error);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(error, 0);
  ASSERT_EQ(m->groups.size(), 3u);
  EXPECT_EQ(m->groups[0], std::make_pair(size_t{2}, size_t{3}));
  EXPECT_EQ(m->groups[1].first, std::string_view::npos);  // (a) did not participate
  EXPECT_EQ(m->groups[2], std::make_pair(size_t{2}, size_t{3}));
  EXPECT_FALSE(re.Find("xxb", 3, &error).has_value());
  EXPECT_EQ(error, 0);
}

}  // namespace
}  // namespace hourglass::query
