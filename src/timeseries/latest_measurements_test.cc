#include "timeseries/latest_measurements.h"

#include <gtest/gtest.h>

#include <limits>
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
// For n > 1, the values of the rows it serves (at or after `from`), in their order.
std::optional<View> Serve(LatestMeasurements& c, uint64_t untracked,
                          LatestMeasurements::Ticket* ticket, int64_t n = 1) {
  View v;
  bool served = c.Read(
      untracked, n, /*will_fill=*/true,
      [&](const LatestMeasurements::Series& s, int64_t from) {
        auto& [time, values] = v[std::string(s.meta["meta"].Str())];
        time = s.time;
        for (const BsonObj& r : s.rows) {
          if (r["t"].DateMillis() >= from) values.push_back(r["v"].Double());
        }
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
  c.Committed(Meta("z")["meta"], 99, {Row(99, 0)}, 0, 1);
  EXPECT_EQ(c.NumSeries(), 0u);
  // A commit alone does not make the cache complete: other series may exist in the buckets.
  EXPECT_FALSE(Serve(c, 0, &ticket));
  c.Committed(Meta("a")["meta"], 50, {Row(50, 1)}, 0, 1);
  EXPECT_FALSE(Serve(c, 0, &ticket));
  // The reader's fill merges with what was committed meanwhile: later time wins per series.
  c.Fill(ticket, 0, {Found("a", 40, {9}), Found("b", 30, {2})});
  auto v = Serve(c, 0, &ticket);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (View{{"a", {50, {1}}}, {"b", {30, {2}}}}));
  // Later commits: a newer time replaces, the same time adds, an older time is ignored.
  c.Committed(Meta("b")["meta"], 35, {Row(35, 3)}, 0, 1);
  c.Committed(Meta("a")["meta"], 50, {Row(50, 4), Row(50, 5)}, 0, 1);
  c.Committed(Meta("a")["meta"], 20, {Row(20, 6)}, 0, 1);
  c.Committed(Meta("c")["meta"], 10, {Row(10, 7)}, 0, 1);
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
  c.Committed(Meta("a")["meta"], 60, {Row(60, 3)}, 0, 1);
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

// Rows (t, v) of one series, as a fill or a report gives them.
std::vector<BsonObj> Rows(std::vector<std::pair<int64_t, double>> tv) {
  std::vector<BsonObj> out;
  for (auto [t, v] : tv) out.push_back(Row(t, v));
  return out;
}

TEST(LatestMeasurementsTest, KeepsTheLatestNOnceAReaderAsksForThem) {
  LatestMeasurements c;
  LatestMeasurements::Ticket ticket;
  EXPECT_EQ(c.Depth(), 1);
  EXPECT_FALSE(Serve(c, 0, &ticket));
  c.Fill(ticket, 0, {Found("a", 40, {1})});
  ASSERT_TRUE(Serve(c, 0, &ticket));
  // A reader of the latest 3 that will not fill it leaves it as it is.
  EXPECT_FALSE(c.Read(
      0, 3, /*will_fill=*/false, [](const auto&, int64_t) {}, &ticket));
  EXPECT_EQ(c.Depth(), 1);
  ASSERT_TRUE(Serve(c, 0, &ticket));
  // A reader of the latest 3 empties it for a fill at that depth.
  EXPECT_FALSE(Serve(c, 0, &ticket, 3));
  EXPECT_TRUE(ticket.fill_wanted);
  EXPECT_EQ(c.Depth(), 3);
  EXPECT_EQ(c.NumSeries(), 0u);
  // A report built at the old depth may lack rows: the fill in progress is refused.
  LatestMeasurements::Ticket stale = ticket;
  c.Committed(Meta("a")["meta"], 50, Rows({{50, 2}}), 0, 1);
  c.Fill(stale, 0, {{Meta("a"), 40, Rows({{40, 1}, {30, 0}, {20, -1}}), {}}});
  EXPECT_FALSE(Serve(c, 0, &ticket, 3));
  // A fill by a reader of fewer than the depth is refused too.
  LatestMeasurements::Ticket shallow = ticket;
  shallow.n = 1;
  c.Fill(shallow, 0, {Found("a", 50, {2})});
  EXPECT_FALSE(Serve(c, 0, &ticket, 3));
  // A fill from two buckets of a series, then reports: each series keeps its 3 latest times.
  c.Fill(ticket, 0,
         {{Meta("a"), 40, Rows({{40, 1}, {30, 0}}), {}},
          {Meta("a"), 20, Rows({{20, -1}}), {}},
          {Meta("b"), 10, Rows({{10, 5}}), {}}});
  c.Committed(Meta("a")["meta"], 60, Rows({{50, 2}, {60, 3}}), 0, 3);
  c.Committed(Meta("a")["meta"], 35, Rows({{35, 9}}), 0, 3);  // late, but not among the 3
  c.Committed(Meta("b")["meta"], 12, Rows({{12, 6}, {11, 7}}), 0, 3);
  auto v = Serve(c, 0, &ticket, 3);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (View{{"a", {60, {1, 2, 3}}}, {"b", {12, {5, 6, 7}}}}));
  // Fewer than the depth: the latest n of those kept.
  v = Serve(c, 0, &ticket, 2);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (View{{"a", {60, {2, 3}}}, {"b", {12, {6, 7}}}}));
  v = Serve(c, 0, &ticket);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (View{{"a", {60, {3}}}, {"b", {12, {6}}}}));
  // A tie among a series' latest n: served for n = 1 (either row may come first), not for more.
  c.Committed(Meta("b")["meta"], 12, Rows({{12, 8}}), 0, 3);
  EXPECT_FALSE(Serve(c, 0, &ticket, 3));
  EXPECT_FALSE(ticket.fill_wanted);  // complete and current: a fill would change nothing
  EXPECT_FALSE(Serve(c, 0, &ticket, 2));
  v = Serve(c, 0, &ticket);
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)["b"], (std::pair<int64_t, std::vector<double>>{12, {6, 8}}));
  // More than kMaxDepth is kept at kMaxDepth (such readers read the buckets).
  EXPECT_FALSE(Serve(c, 0, &ticket, LatestMeasurements::kMaxDepth + 5));
  EXPECT_EQ(c.Depth(), LatestMeasurements::kMaxDepth);
  // Once it must be filled anyway (here after an untracked write), the next filler sets the
  // depth, shallower too.
  EXPECT_FALSE(Serve(c, 1, &ticket, 2));
  EXPECT_EQ(c.Depth(), 2);
  c.Fill(ticket, 1, {{Meta("a"), 40, Rows({{40, 1}, {30, 0}}), {}}});
  v = Serve(c, 1, &ticket, 2);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (View{{"a", {40, {1, 0}}}}));
}

TEST(LatestMeasurementsTest, NthLargest) {
  EXPECT_EQ(LatestMeasurements::NthLargest({}, 2), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(LatestMeasurements::NthLargest({5, 9, 7}, 1), 9);
  EXPECT_EQ(LatestMeasurements::NthLargest({5, 9, 7}, 2), 7);
  EXPECT_EQ(LatestMeasurements::NthLargest({5, 9, 7}, 3), 5);
  EXPECT_EQ(LatestMeasurements::NthLargest({5, 9, 7}, 8), 5);
  EXPECT_EQ(LatestMeasurements::NthLargest({9, 9, 7}, 2), 9);
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
