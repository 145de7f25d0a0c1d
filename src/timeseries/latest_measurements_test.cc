#include "timeseries/latest_measurements.h"

#include <gtest/gtest.h>

#include <map>

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;

BsonObj Meta(const std::string& host) {
  BsonBuilder b;
  b.AppendString("meta", host);
  return b.Obj();
}

BsonObj Row(int64_t t, double v) {
  BsonBuilder b;
  b.AppendDate("t", t);
  b.AppendDouble("v", v);
  return b.Obj();
}

// What Read serves: host -> (time, values of v), or nullopt when it does not serve.
using View = std::map<std::string, std::pair<int64_t, std::vector<double>>>;
std::optional<View> Serve(LatestMeasurements& c, uint64_t untracked,
                          LatestMeasurements::Ticket* ticket) {
  View v;
  bool served = c.Read(
      untracked,
      [&](const LatestMeasurements::Series& s) {
        auto& [time, values] = v[std::string(s.meta["meta"].Str())];
        time = s.time;
        for (const BsonObj& r : s.rows) values.push_back(r["v"].Double());
      },
      ticket);
  if (!served) return std::nullopt;
  return v;
}

LatestMeasurements::Series Found(const std::string& host, int64_t t, std::vector<double> vs) {
  LatestMeasurements::Series s;
  s.meta = Meta(host);
  s.time = t;
  for (double v : vs) s.rows.push_back(Row(t, v));
  return s;
}

TEST(LatestMeasurementsTest, ServesOnlyOnceFilledAndFollowsCommits) {
  LatestMeasurements c;
  LatestMeasurements::Ticket ticket;
  // Before any reader, reports are dropped.
  c.Committed(Meta("z")["meta"], 99, {Row(99, 0)}, 0);
  EXPECT_EQ(c.NumSeries(), 0u);
  // A commit alone does not make the cache complete: other series may exist in the buckets.
  EXPECT_FALSE(Serve(c, 0, &ticket));
  c.Committed(Meta("a")["meta"], 50, {Row(50, 1)}, 0);
  EXPECT_FALSE(Serve(c, 0, &ticket));
  // The reader's fill merges with what was committed meanwhile: later time wins per series.
  c.Fill(ticket, 0, {Found("a", 40, {9}), Found("b", 30, {2})});
  auto v = Serve(c, 0, &ticket);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (View{{"a", {50, {1}}}, {"b", {30, {2}}}}));
  // Later commits: a newer time replaces, the same time adds, an older time is ignored.
  c.Committed(Meta("b")["meta"], 35, {Row(35, 3)}, 0);
  c.Committed(Meta("a")["meta"], 50, {Row(50, 4), Row(50, 5)}, 0);
  c.Committed(Meta("a")["meta"], 20, {Row(20, 6)}, 0);
  c.Committed(Meta("c")["meta"], 10, {Row(10, 7)}, 0);
  v = Serve(c, 0, &ticket);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (View{{"a", {50, {1, 4, 5}}}, {"b", {35, {3}}}, {"c", {10, {7}}}}));
}

TEST(LatestMeasurementsTest, UntrackedWritesMakeItStaleUntilRefilled) {
  LatestMeasurements c;
  LatestMeasurements::Ticket ticket;
  EXPECT_FALSE(Serve(c, 0, &ticket));
  c.Fill(ticket, 0, {Found("a", 40, {1})});
  ASSERT_TRUE(Serve(c, 0, &ticket));
  // A delete (say) committed: the count moved, nothing is served and what was held is dropped.
  EXPECT_FALSE(Serve(c, 1, &ticket));
  EXPECT_EQ(c.NumSeries(), 0u);
  // A fill whose reader saw the count move again is refused.
  LatestMeasurements::Ticket t1 = ticket;
  c.Fill(t1, 2, {Found("a", 30, {2})});
  EXPECT_FALSE(Serve(c, 1, &ticket));
  // So is one during which a writer reported with a count the cache had not seen: that writer's
  // rows may be what the untracked write removed.
  LatestMeasurements::Ticket t2 = ticket;
  c.Committed(Meta("a")["meta"], 60, {Row(60, 3)}, 0);
  c.Fill(t2, 1, {Found("a", 30, {2})});
  EXPECT_FALSE(Serve(c, 1, &ticket));
  // A clean fill is taken.
  c.Fill(ticket, 1, {Found("a", 30, {2})});
  auto v = Serve(c, 1, &ticket);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (View{{"a", {30, {2}}}}));
  // A ticket issued before the count moved on (to 2) cannot fill.
  EXPECT_FALSE(Serve(c, 2, &ticket));
  c.Fill(LatestMeasurements::Ticket{1, ticket.generation}, 1, {Found("a", 30, {2})});
  EXPECT_FALSE(Serve(c, 2, &ticket));
}

TEST(LatestMeasurementsTest, GivesUpBeyondItsBounds) {
  LatestMeasurements c;
  LatestMeasurements::Ticket ticket;
  EXPECT_FALSE(Serve(c, 0, &ticket));
  std::vector<double> many(LatestMeasurements::kMaxRowsPerSeries + 1, 1.0);
  c.Fill(ticket, 0, {Found("a", 10, many)});
  EXPECT_FALSE(Serve(c, 0, &ticket));
  c.Fill(ticket, 0, {Found("a", 10, {1})});
  EXPECT_FALSE(Serve(c, 0, &ticket));  // for good
  EXPECT_EQ(c.NumSeries(), 0u);
}

}  // namespace
}  // namespace hourglass::timeseries
