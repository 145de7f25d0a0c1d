#include "timeseries/rollup_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "bson/bson.h"
#include "bson/shell_json_test_util.h"
#include "storage/storage_test_util.h"
#include "timeseries/rollup_marks.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonObj;

BsonObj Doc(std::string_view relaxed) { return bson::testing::ShellDoc(relaxed); }

TimeseriesOptions Rollup() {
  TimeseriesOptions o;
  o.time_field = "time";
  o.meta_field = "tags";
  return o;
}

StatusWith<RollupSpec> Parse(std::string_view json) {
  BsonObj cmd = Doc("{\"rollupOf\": " + std::string(json) + "}");
  return ParseRollupSpec(cmd["rollupOf"], Rollup());
}

TEST(RollupSpecTest, EveryIsADurationThatTilesADay) {
  struct Case {
    const char* every;
    int64_t ms;  // 0: refused with BadValue
  } cases[] = {{"1s", 1000},
               {"90s", 90'000},
               {"15m", 900'000},
               {"1h", 3'600'000},
               {"8h", 28'800'000},
               {"1d", 86'400'000},
               {"7d", 604'800'000},
               {"7m", 0},
               {"5h", 0},
               {"25h", 0},
               {"0h", 0},
               {"h", 0},
               {"1", 0},
               {"1.5h", 0},
               {"-1h", 0},
               {"01h", 0},
               {"1H", 0},
               {"367d", 0},
               {"99999999999999999999h", 0}};
  for (const Case& c : cases) {
    auto spec =
        Parse(std::string("{source: 'cpu', every: '") + c.every + "', fields: {u: ['avg']}}");
    if (c.ms == 0) {
      ASSERT_FALSE(spec.ok()) << c.every;
      EXPECT_EQ(spec.status().code(), ErrorCode::kBadValue) << c.every;
    } else {
      ASSERT_TRUE(spec.ok()) << c.every << ": " << spec.status().ToString();
      EXPECT_EQ(spec.value().every_ms, c.ms) << c.every;
    }
  }
}

TEST(RollupSpecTest, BinsAlignAsDateTruncDoes) {
  RollupSpec hour = Parse("{source: 'cpu', every: '1h', fields: {u: ['avg']}}").value();
  EXPECT_EQ(hour.BinStart(3'600'000), 3'600'000);
  EXPECT_EQ(hour.BinStart(3'599'999), 0);
  EXPECT_EQ(hour.BinStart(-1), -3'600'000);  // floor before 1970
  // Near the smallest Date the bin start is no Date: the smallest one stands for it.
  EXPECT_EQ(hour.BinStart(INT64_MIN + 5), INT64_MIN);
  EXPECT_EQ(hour.BinStart(INT64_MAX), INT64_MAX - (INT64_MAX - 946'684'800'000) % 3'600'000);
  // Several days: from 2000-01-01T00:00:00Z, as $dateTrunc {unit: "day", binSize: 7}.
  RollupSpec week = Parse("{source: 'cpu', every: '7d', fields: {u: ['avg']}}").value();
  const int64_t y2000 = 946'684'800'000;
  EXPECT_EQ(week.BinStart(y2000 + 3 * 86'400'000LL), y2000);
  EXPECT_EQ(week.BinStart(y2000 - 1), y2000 - 7 * 86'400'000LL);
  // 1970-01-01 lies in the bin of 1969-12-27, a Saturday as 2000-01-01 is.
  EXPECT_EQ(week.BinStart(0), y2000 - 1566 * 7 * 86'400'000LL);
  EXPECT_EQ(week.BinStart(0), -432'000'000);
}

TEST(RollupSpecTest, StatisticsAreStoredInAFixedOrderAndAvgBringsSumAndCount) {
  RollupSpec spec =
      Parse("{source: 'cpu', every: '1h', fields: {u: ['max', 'avg'], n: ['count', 'min']}}")
          .value();
  EXPECT_EQ(spec.ToBson().ToJson(),
            Doc("{source: 'cpu', every: '1h', fields: {u: ['avg', 'max'], n: ['count', 'min']}}")
                .ToJson());
  EXPECT_EQ(RollupSpec::Stored(spec.fields[0].second),
            (std::vector<RollupStat>{RollupStat::kAvg, RollupStat::kSum, RollupStat::kCount,
                                     RollupStat::kMax}));
  auto back = RollupSpec::FromBson(spec.ToBson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.value().ToBson().ToJson(), spec.ToBson().ToJson());
  EXPECT_EQ(back.value().every_ms, 3'600'000);
}

TEST(RollupSpecTest, Refusals) {
  struct Case {
    const char* json;
    ErrorCode code;
  } cases[] = {
      {"{source: 'cpu', every: '1h', fields: {u: ['avg']}, x: 1}", ErrorCode::kLocation40415},
      {"{every: '1h', fields: {u: ['avg']}}", ErrorCode::kLocation40414},
      {"{source: 1, every: '1h', fields: {u: ['avg']}}", ErrorCode::kTypeMismatch},
      {"{source: '', every: '1h', fields: {u: ['avg']}}", ErrorCode::kInvalidNamespace},
      {"{source: 'cpu', every: '1h', fields: {u: 'avg'}}", ErrorCode::kTypeMismatch},
      {"{source: 'cpu', every: '1h', fields: {u: [1]}}", ErrorCode::kTypeMismatch},
      {"{source: 'cpu', every: '1h', fields: {u: ['median']}}", ErrorCode::kBadValue},
      {"{source: 'cpu', every: '1h', fields: {u: ['min', 'min']}}", ErrorCode::kBadValue},
      {"{source: 'cpu', every: '1h', fields: {u: []}}", ErrorCode::kInvalidOptions},
      {"{source: 'cpu', every: '1h', fields: {}}", ErrorCode::kInvalidOptions},
      {"{source: 'cpu', every: '1h', fields: {'$u': ['avg']}}", ErrorCode::kInvalidOptions},
      {"{source: 'cpu', every: '1h', fields: {tags: ['max']}}", ErrorCode::kInvalidOptions},
  };
  for (const Case& c : cases) {
    auto spec = Parse(c.json);
    ASSERT_FALSE(spec.ok()) << c.json;
    EXPECT_EQ(spec.status().code(), c.code) << c.json << ": " << spec.status().ToString();
  }
}

TEST(RollupSpecTest, SourceRules) {
  TimeseriesOptions source;
  source.time_field = "t";
  source.meta_field = "m";
  RollupSpec spec = Parse("{source: 'cpu', every: '1h', fields: {u: ['avg']}}").value();
  ASSERT_TRUE(CheckRollupSource(spec, Rollup(), source, false).ok());
  EXPECT_EQ(spec.group_by, std::optional<std::string>("m"));  // filled in
  EXPECT_EQ(CheckRollupSource(spec, Rollup(), source, true).code(), ErrorCode::kInvalidOptions);
  RollupSpec wrong =
      Parse("{source: 'cpu', every: '1h', groupBy: 'x', fields: {u: ['avg']}}").value();
  EXPECT_EQ(CheckRollupSource(wrong, Rollup(), source, false).code(), ErrorCode::kInvalidOptions);
  RollupSpec on_time = Parse("{source: 'cpu', every: '1h', fields: {t: ['max']}}").value();
  EXPECT_EQ(CheckRollupSource(on_time, Rollup(), source, false).code(), ErrorCode::kInvalidOptions);
  TimeseriesOptions no_meta = source;
  no_meta.meta_field.reset();
  EXPECT_EQ(CheckRollupSource(spec, Rollup(), no_meta, false).code(), ErrorCode::kInvalidOptions);
}

// -- the marks ------------------------------------------------------------------------------

class RollupMarksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = storage::testing::OpenOrDie(storage::testing::DiskOptions(dir_.path()));
    auto marks = RollupMarks::Open(engine_.get());
    ASSERT_TRUE(marks.ok()) << marks.status().ToString();
    marks_ = std::move(marks).value();
  }
  std::vector<DirtyRange> List(const std::string& rollup) {
    auto s = engine_->NewSession();
    auto l = marks_->List(*s, rollup);
    EXPECT_TRUE(l.ok());
    return l.ok() ? l.value() : std::vector<DirtyRange>{};
  }
  storage::testing::TempDir dir_;
  std::unique_ptr<storage::KvEngine> engine_;
  std::unique_ptr<RollupMarks> marks_;
};

TEST_F(RollupMarksTest, MarksOfOneTransactionMergeIntoOneRecord) {
  auto s = engine_->NewSession();
  {
    storage::WriteUnit wu(*s);
    ASSERT_TRUE(marks_->Mark(*s, "a", 100, 200).ok());
    ASSERT_TRUE(marks_->Mark(*s, "a", 150, 180).ok());  // inside
    ASSERT_TRUE(marks_->Mark(*s, "a", 50, 120).ok());   // widens to the left
    ASSERT_TRUE(marks_->Mark(*s, "b", 7, 8).ok());
    ASSERT_TRUE(wu.Commit().ok());
  }
  auto a = List("a");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].from, 50);
  EXPECT_EQ(a[0].to, 200);
  ASSERT_EQ(List("b").size(), 1u);
  // A rolled-back transaction leaves nothing; the next one takes a larger seq.
  {
    storage::WriteUnit wu(*s);
    ASSERT_TRUE(marks_->Mark(*s, "a", 1000, 2000).ok());
  }
  ASSERT_EQ(List("a").size(), 1u);
  ASSERT_TRUE(marks_->Mark(*s, "a", -500, -400).ok());  // outside a transaction: at once
  a = List("a");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_GT(a[1].seq, a[0].seq);
  EXPECT_EQ(a[1].from, -500);
}

TEST_F(RollupMarksTest, ClearForgetsOnlyTheListedMarksInsideTheRange) {
  auto s = engine_->NewSession();
  ASSERT_TRUE(marks_->Mark(*s, "a", 0, 1000).ok());
  std::vector<DirtyRange> listed = List("a");
  // Committed after the List, with an older seq than what may come: stays.
  auto t = engine_->NewSession();
  ASSERT_TRUE(t->Begin().ok());
  ASSERT_TRUE(marks_->Mark(*t, "a", 400, 500).ok());
  ASSERT_TRUE(t->Commit().ok());
  ASSERT_TRUE(marks_->Clear(*s, "a", 300, 600, &listed).ok());
  // `listed` now holds what is left of the listed marks.
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].from, 0);
  EXPECT_EQ(listed[0].to, 300);
  EXPECT_EQ(listed[1].from, 600);
  EXPECT_EQ(listed[1].to, 1000);
  auto left = MergeRanges(List("a"));
  ASSERT_EQ(left.size(), 3u);
  EXPECT_EQ(left[0].from, 0);
  EXPECT_EQ(left[0].to, 300);
  EXPECT_EQ(left[1].from, 400);
  EXPECT_EQ(left[1].to, 500);
  EXPECT_EQ(left[2].from, 600);
  EXPECT_EQ(left[2].to, 1000);
  // A second chunk clears the rest of the listed mark.
  ASSERT_TRUE(marks_->Clear(*s, "a", 600, 2000, &listed).ok());
  EXPECT_EQ(MergeRanges(List("a")).back().to, 500);
  auto rollups = marks_->MarkedRollups(*s);
  ASSERT_TRUE(rollups.ok());
  EXPECT_EQ(rollups.value(), std::vector<std::string>{"a"});
  ASSERT_TRUE(marks_->DropAll(*s, "a").ok());
  EXPECT_TRUE(List("a").empty());
}

TEST_F(RollupMarksTest, OneTransactionKeepsDisjointRangesApart) {
  auto s = engine_->NewSession();
  storage::WriteUnit wu(*s);
  ASSERT_TRUE(marks_->Mark(*s, "a", 0, 10).ok());
  ASSERT_TRUE(marks_->Mark(*s, "a", 100, 110).ok());  // a lagging series: apart
  ASSERT_TRUE(marks_->Mark(*s, "a", 10, 20).ok());    // touches the first
  ASSERT_TRUE(marks_->Mark(*s, "a", 5, 105).ok());    // joins them all
  ASSERT_TRUE(marks_->Mark(*s, "a", 200, 210).ok());
  ASSERT_TRUE(marks_->Mark(*s, "b", INT64_MIN, INT64_MAX).ok());  // clamped
  ASSERT_TRUE(wu.Commit().ok());
  auto a = List("a");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].from, 0);
  EXPECT_EQ(a[0].to, 110);
  EXPECT_EQ(a[1].from, 200);
  EXPECT_EQ(a[0].seq, a[1].seq);
  auto b = List("b");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].from, -(int64_t{1} << 60));
  EXPECT_EQ(b[0].to, int64_t{1} << 60);
}

TEST_F(RollupMarksTest, SeqsStayAboveTheStoredOnesAfterReopening) {
  auto s = engine_->NewSession();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(marks_->Mark(*s, "a", i, i + 1).ok());
  const uint64_t last = List("a").back().seq;
  s.reset();
  auto reopened = RollupMarks::Open(engine_.get());
  ASSERT_TRUE(reopened.ok());
  EXPECT_GT(reopened.value()->NextSeq(), last);
}

TEST(MergeRangesTest, MergesOverlappingAndTouchingRanges) {
  auto merged = MergeRanges({{10, 20, 1}, {0, 5, 2}, {5, 8, 3}, {15, 30, 4}, {40, 40, 5}});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].from, 0);
  EXPECT_EQ(merged[0].to, 8);
  EXPECT_EQ(merged[0].seq, 3u);
  EXPECT_EQ(merged[1].from, 10);
  EXPECT_EQ(merged[1].to, 30);
  EXPECT_EQ(merged[1].seq, 4u);
}

TEST(SubtractRangesTest, CutsPiecesOutOfEachRange) {
  auto left = SubtractRanges({{0, 100, 1}, {200, 300, 2}, {400, 500, 3}},
                             {{-10, 10, 0}, {50, 60, 0}, {90, 210, 0}, {450, 600, 0}});
  ASSERT_EQ(left.size(), 4u);
  EXPECT_EQ(left[0].from, 10);
  EXPECT_EQ(left[0].to, 50);
  EXPECT_EQ(left[1].from, 60);
  EXPECT_EQ(left[1].to, 90);
  EXPECT_EQ(left[2].from, 210);
  EXPECT_EQ(left[2].to, 300);
  EXPECT_EQ(left[2].seq, 2u);
  EXPECT_EQ(left[3].from, 400);
  EXPECT_EQ(left[3].to, 450);
  EXPECT_TRUE(SubtractRanges({{0, 10, 1}}, {{0, 10, 0}}).empty());
  EXPECT_EQ(SubtractRanges({{0, 10, 1}}, {}).size(), 1u);
}

TEST(CoalesceRangesTest, JoinsTheSmallestGapsFirst) {
  // Gaps: 10, 5, 30, 5.
  std::vector<DirtyRange> r = {{0, 10, 1}, {20, 30, 1}, {35, 40, 1}, {70, 80, 1}, {85, 90, 1}};
  EXPECT_EQ(CoalesceRanges(r, 5).size(), 5u);
  auto three = CoalesceRanges(r, 3);  // the two gaps of 5
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0].to, 10);
  EXPECT_EQ(three[1].from, 20);
  EXPECT_EQ(three[1].to, 40);
  EXPECT_EQ(three[2].from, 70);
  EXPECT_EQ(three[2].to, 90);
  auto four = CoalesceRanges(r, 4);  // one of the two gaps of 5: the first
  ASSERT_EQ(four.size(), 4u);
  EXPECT_EQ(four[1].to, 40);
  EXPECT_EQ(four[3].from, 85);
  auto one = CoalesceRanges(r, 0);  // at least one
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].from, 0);
  EXPECT_EQ(one[0].to, 90);
}

}  // namespace
}  // namespace hourglass::timeseries
