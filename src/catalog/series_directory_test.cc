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

// Candidates: the series whose meta path holds one of the values (numbers compared across types),
// plus those the path's arrays or objects leave undecided; none without the path; positions in
// the snapshot's order; rebuilt for a new snapshot.
TEST(SeriesDirectoryTest, CandidatesForAnEqualityOnAMetaPath) {
  SeriesDirectory d;
  d.MarkComplete();
  const char* metas[] = {
      R"({"meta": {"host": "a", "rack": 1}})",                     // p0
      R"({"meta": {"host": "b", "rack": 2.0}})",                   // p1
      R"({"meta": {"host": ["a", "c"]}})",                         // p2: an array at the end
      R"({"meta": [{"host": "z"}]})",                              // p3: an array on the way
      R"({"meta": {"host": {"x": 1}}})",                           // p4: an object
      R"({"meta": {"rack": 2}})",                                  // p5: no host
      R"({"meta": 7})",                                            // p6: a scalar meta
      R"({})",                                                     // p7: no meta
      R"({"meta": {"host": "a", "rack": {"$numberLong": "2"}}})",  // p8
  };
  for (size_t i = 0; i < std::size(metas); ++i) {
    auto m = bson::FromJson(metas[i]);
    ASSERT_TRUE(m.ok());
    d.Add("p" + std::to_string(i), m.value().Owned()["meta"]);
  }
  auto list = d.Snapshot();
  ASSERT_EQ(list->size(), std::size(metas));
  auto values = [](const char* json) {
    static std::vector<bson::BsonObj> keep;
    keep.push_back(bson::FromJson(json).value());
    std::vector<bson::BsonElement> out;
    for (bson::BsonElement e : keep.back()) out.push_back(e);
    return out;
  };
  using V = std::vector<size_t>;
  EXPECT_EQ(d.Candidates(list, "meta.host", values(R"({"0": "a"})")), (V{0, 2, 3, 4, 8}));
  EXPECT_EQ(d.Candidates(list, "meta.host", values(R"({"0": "b", "1": "q"})")), (V{1, 2, 3, 4}));
  EXPECT_EQ(d.Candidates(list, "meta.rack", values(R"({"0": 2})")), (V{1, 3, 5, 8}));
  EXPECT_EQ(d.Candidates(list, "meta", values(R"({"0": 7})")), (V{0, 1, 2, 3, 4, 5, 6, 8}));
  // A series added later is found through the next snapshot.
  d.Add("p9", bson::FromJson(R"({"meta": {"host": "q"}})").value().Owned()["meta"]);
  auto next = d.Snapshot();
  EXPECT_EQ(d.Candidates(next, "meta.host", values(R"({"0": "q"})")), (V{2, 3, 4, 9}));
  EXPECT_EQ(d.Candidates(list, "meta.host", values(R"({"0": "q"})")), (V{2, 3, 4}));
}

}  // namespace
}  // namespace hourglass::catalog
