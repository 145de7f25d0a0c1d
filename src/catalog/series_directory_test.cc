// SeriesDirectory: nothing is listed until a walk marks it complete, series added before that
// are kept, each series is listed once in prefix order, a snapshot taken earlier is not changed
// by later additions, and past kMaxSeries the directory gives up for good.
#include "catalog/series_directory.h"

#include <gtest/gtest.h>

#include <string>

namespace hourglass::catalog {
namespace {

bson::BsonObj Meta(const std::string& host) {
  bson::BsonBuilder b;
  b.AppendString("meta", host);
  return b.Obj();
}

TEST(SeriesDirectoryTest, ListsEachSeriesOnceInPrefixOrderOnceComplete) {
  SeriesDirectory d;
  d.Add("b", Meta("host-b").FirstElement());
  EXPECT_EQ(d.Snapshot(), nullptr);  // not walked yet
  d.Add("a", Meta("host-a").FirstElement());
  d.Add("b", Meta("host-b").FirstElement());
  d.Add("none", bson::BsonElement());  // a bucket without meta
  d.MarkComplete();
  auto list = d.Snapshot();
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].prefix, "a");
  EXPECT_EQ((*list)[0].meta["meta"].Str(), "host-a");
  EXPECT_EQ((*list)[1].prefix, "b");
  EXPECT_EQ((*list)[2].prefix, "none");
  EXPECT_TRUE((*list)[2].meta.IsEmpty());
  // Added later: in the next snapshot, not in the one already handed out.
  d.Add("aa", Meta("host-aa").FirstElement());
  auto next = d.Snapshot();
  ASSERT_EQ(next->size(), 4u);
  EXPECT_EQ((*next)[1].prefix, "aa");
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(d.Snapshot(), next);  // nothing new: the same list
}

TEST(SeriesDirectoryTest, GivesUpPastItsLimit) {
  SeriesDirectory d;
  d.MarkComplete();
  for (size_t i = 0; i < SeriesDirectory::kMaxSeries; ++i) {
    d.Add(std::to_string(i), bson::BsonElement());
  }
  ASSERT_NE(d.Snapshot(), nullptr);
  EXPECT_EQ(d.Snapshot()->size(), SeriesDirectory::kMaxSeries);
  d.Add("one more", bson::BsonElement());
  EXPECT_EQ(d.Snapshot(), nullptr);
  d.MarkComplete();
  d.Add("x", bson::BsonElement());
  EXPECT_EQ(d.Snapshot(), nullptr);  // for good
}

}  // namespace
}  // namespace hourglass::catalog
