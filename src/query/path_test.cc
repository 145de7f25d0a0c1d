#include "query/path.h"

#include <gtest/gtest.h>

namespace hourglass::query {
namespace {

TEST(PathTest, PathStartsWithComparesWholeComponents) {
  EXPECT_TRUE(PathStartsWith("a", "a"));
  EXPECT_TRUE(PathStartsWith("a.b", "a"));
  EXPECT_TRUE(PathStartsWith("a.b.c", "a.b"));
  EXPECT_FALSE(PathStartsWith("ab", "a"));
  EXPECT_FALSE(PathStartsWith("ab.c", "a"));
  EXPECT_FALSE(PathStartsWith("a", "a.b"));
  EXPECT_FALSE(PathStartsWith("b.a", "a"));
  EXPECT_FALSE(PathStartsWith("", "a"));
}

TEST(PathTest, PathIsBelowExcludesThePrefixItself) {
  EXPECT_TRUE(PathIsBelow("a.b", "a"));
  EXPECT_TRUE(PathIsBelow("meta.x.y", "meta"));
  EXPECT_FALSE(PathIsBelow("a", "a"));
  EXPECT_FALSE(PathIsBelow("ab", "a"));
  EXPECT_FALSE(PathIsBelow("a", "a.b"));
}

}  // namespace
}  // namespace hourglass::query
