// SeriesDirectory: nothing is listed until a walk marks it complete, series added before that
// are kept, each series is listed once in prefix order, a snapshot taken earlier is not changed
// by later additions, its metas lie together in its order, and past kMaxSeries the directory
// gives up for good.
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

// A read tests every series' meta: the snapshot holds them side by side, in its order, whatever
// order and time they were added in, and an earlier snapshot keeps its own.
TEST(SeriesDirectoryTest, SnapshotHoldsTheMetasTogetherInItsOrder) {
  SeriesDirectory d;
  d.MarkComplete();
  for (int i = 9; i >= 0; --i)
    d.Add("p" + std::to_string(i), Meta("h" + std::to_string(i)).FirstElement());
  auto list = d.Snapshot();
  ASSERT_EQ(list->size(), 10u);
  for (size_t i = 0; i < list->size(); ++i) {
    const auto& one = (*list)[i];
    EXPECT_EQ(one.meta["meta"].Str(), "h" + std::to_string(i));
    if (i > 0) {
      const auto& before = (*list)[i - 1].meta;
      EXPECT_EQ(one.meta.data(), before.data() + before.size()) << "meta " << i << " not packed";
    }
  }
  d.Add("p5a", Meta("h5a").FirstElement());
  auto next = d.Snapshot();
  ASSERT_EQ(next->size(), 11u);
  EXPECT_EQ((*next)[6].meta["meta"].Str(), "h5a");
  EXPECT_EQ((*next)[6].meta.data(), (*next)[5].meta.data() + (*next)[5].meta.size());
  EXPECT_EQ((*list)[6].meta["meta"].Str(), "h6");  // the earlier snapshot is intact
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
