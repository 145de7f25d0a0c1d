// Time zones and calendar arithmetic behind the date operators (date_time.cc): DST transitions,
// month-end clamping, dateDiff boundary counting, ISO weeks.
#include <gtest/gtest.h>

#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {
namespace {

constexpr int64_t kHour = 3600000;

int64_t Utc(int64_t y, int m, int d, int h = 0, int mi = 0, int s = 0) {
  return FromCivil(y, m, d, h, mi, s, 0);
}

TimeZone Zone(std::string_view name) {
  auto tz = ParseTimeZone(Value::String(name));
  EXPECT_TRUE(tz.ok()) << name;
  return tz.ok() ? tz.value() : TimeZone();
}

TEST(TimeZoneTest, ParsesOffsetsAndOlsonNames) {
  EXPECT_EQ(Zone("+05:30").OffsetAt(0), 5 * kHour + 30 * 60000);
  EXPECT_EQ(Zone("+0530").OffsetAt(0), 5 * kHour + 30 * 60000);
  EXPECT_EQ(Zone("-03").OffsetAt(0), -3 * kHour);
  EXPECT_TRUE(Zone("UTC").utc());
  EXPECT_TRUE(Zone("GMT").utc());
  EXPECT_FALSE(Zone("Europe/London").fixed());
  for (const char* bad : {"Mars/Olympus", "+5", "+05:3", "+123", "", "05:00"}) {
    auto tz = ParseTimeZone(Value::String(bad));
    ASSERT_FALSE(tz.ok()) << bad;
    EXPECT_EQ(static_cast<int>(tz.status().code()), 40485) << bad;
  }
  auto not_string = ParseTimeZone(Value::Int(5));
  ASSERT_FALSE(not_string.ok());
  EXPECT_EQ(static_cast<int>(not_string.status().code()), 40517);
}

TEST(TimeZoneTest, OffsetFollowsDaylightSavingTransitions) {
  TimeZone ny = Zone("America/New_York");
  // Spring forward at 2020-03-08T07:00Z (02:00 EST -> 03:00 EDT).
  EXPECT_EQ(ny.OffsetAt(Utc(2020, 3, 8, 6, 59, 59)), -5 * kHour);
  EXPECT_EQ(ny.OffsetAt(Utc(2020, 3, 8, 7)), -4 * kHour);
  // Fall back at 2020-11-01T06:00Z (02:00 EDT -> 01:00 EST).
  EXPECT_EQ(ny.OffsetAt(Utc(2020, 11, 1, 5, 59, 59)), -4 * kHour);
  EXPECT_EQ(ny.OffsetAt(Utc(2020, 11, 1, 6)), -5 * kHour);
  TimeZone london = Zone("Europe/London");
  EXPECT_EQ(london.OffsetAt(Utc(2020, 7, 1)), kHour);
  EXPECT_EQ(london.OffsetAt(Utc(2020, 1, 1)), 0);
  // Southern hemisphere: Sydney is on daylight time (+11) in January.
  EXPECT_EQ(Zone("Australia/Sydney").OffsetAt(Utc(2021, 1, 15)), 11 * kHour);
}

TEST(TimeZoneTest, LocalTimesInGapsAndOverlaps) {
  TimeZone ny = Zone("America/New_York");
  EXPECT_EQ(ny.FromLocal(Utc(2020, 7, 1, 12)), Utc(2020, 7, 1, 16));
  // 02:30 does not exist on 2020-03-08: the pre-gap offset (-5) applies, i.e. 03:30 EDT.
  EXPECT_EQ(ny.FromLocal(Utc(2020, 3, 8, 2, 30)), Utc(2020, 3, 8, 7, 30));
  // 01:30 happens twice on 2020-11-01: the earlier instant (EDT) is chosen.
  EXPECT_EQ(ny.FromLocal(Utc(2020, 11, 1, 1, 30)), Utc(2020, 11, 1, 5, 30));
}

TEST(DateAddTest, MonthsClampToTheLastDay) {
  TimeZone utc;
  EXPECT_EQ(DateAdd(Utc(2020, 1, 31), TimeUnit::kMonth, 1, utc).value(), Utc(2020, 2, 29));
  EXPECT_EQ(DateAdd(Utc(2021, 1, 31), TimeUnit::kMonth, 1, utc).value(), Utc(2021, 2, 28));
  EXPECT_EQ(DateAdd(Utc(2020, 2, 29), TimeUnit::kYear, 1, utc).value(), Utc(2021, 2, 28));
  EXPECT_EQ(DateAdd(Utc(2021, 3, 31, 10), TimeUnit::kMonth, -1, utc).value(), Utc(2021, 2, 28, 10));
  EXPECT_EQ(DateAdd(Utc(2021, 11, 30), TimeUnit::kQuarter, 1, utc).value(), Utc(2022, 2, 28));
}

TEST(DateAddTest, DaysKeepWallClockHoursDoNot) {
  TimeZone ny = Zone("America/New_York");
  // 07:00 EST on March 7th plus one day is 07:00 EDT on March 8th: 23 elapsed hours.
  EXPECT_EQ(DateAdd(Utc(2020, 3, 7, 12), TimeUnit::kDay, 1, ny).value(), Utc(2020, 3, 8, 11));
  EXPECT_EQ(DateAdd(Utc(2020, 3, 7, 12), TimeUnit::kHour, 24, ny).value(), Utc(2020, 3, 8, 12));
  EXPECT_EQ(DateAdd(Utc(2020, 11, 1, 5, 50), TimeUnit::kHour, 1, ny).value(),
            Utc(2020, 11, 1, 6, 50));
  // A month across the fall-back transition keeps 12:00 local.
  EXPECT_EQ(DateAdd(Utc(2020, 10, 15, 16), TimeUnit::kMonth, 1, ny).value(), Utc(2020, 11, 15, 17));
  auto overflow = DateAdd(1, TimeUnit::kMillisecond, INT64_MAX, TimeZone());
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(static_cast<int>(overflow.status().code()), 5166406);
}

TEST(DateDiffTest, CountsBoundariesNotElapsedUnits) {
  TimeZone utc;
  const int64_t a = Utc(2020, 12, 31, 23, 59), b = Utc(2021, 1, 1, 0, 1);
  EXPECT_EQ(DateDiff(a, b, TimeUnit::kYear, utc, 0), 1);
  EXPECT_EQ(DateDiff(a, b, TimeUnit::kQuarter, utc, 0), 1);
  EXPECT_EQ(DateDiff(a, b, TimeUnit::kMonth, utc, 0), 1);
  EXPECT_EQ(DateDiff(a, b, TimeUnit::kDay, utc, 0), 1);
  EXPECT_EQ(DateDiff(a, b, TimeUnit::kHour, utc, 0), 1);
  EXPECT_EQ(DateDiff(a, b, TimeUnit::kMinute, utc, 0), 2);
  EXPECT_EQ(DateDiff(a, b, TimeUnit::kSecond, utc, 0), 120);
  EXPECT_EQ(DateDiff(b, a, TimeUnit::kYear, utc, 0), -1);
  EXPECT_EQ(DateDiff(Utc(2021, 1, 1), Utc(2021, 12, 31, 23), TimeUnit::kYear, utc, 0), 0);
  // Weeks: Saturday -> Sunday crosses a Sunday boundary but not a Monday one.
  EXPECT_EQ(DateDiff(Utc(2021, 1, 2), Utc(2021, 1, 3), TimeUnit::kWeek, utc, 0), 1);
  EXPECT_EQ(DateDiff(Utc(2021, 1, 2), Utc(2021, 1, 3), TimeUnit::kWeek, utc, 1), 0);
  EXPECT_EQ(DateDiff(Utc(2021, 1, 3), Utc(2021, 1, 16), TimeUnit::kWeek, utc, 0), 1);
  EXPECT_EQ(DateDiff(Utc(2021, 1, 3), Utc(2021, 1, 17), TimeUnit::kWeek, utc, 0), 2);
}

TEST(DateDiffTest, TimeZonesAndDaylightSaving) {
  TimeZone ny = Zone("America/New_York");
  // 23:00 and 01:00 local are on different days in New York, the same day in UTC.
  EXPECT_EQ(DateDiff(Utc(2021, 1, 1, 4), Utc(2021, 1, 1, 6), TimeUnit::kDay, ny, 0), 1);
  EXPECT_EQ(DateDiff(Utc(2021, 1, 1, 4), Utc(2021, 1, 1, 6), TimeUnit::kDay, TimeZone(), 0), 0);
  // 01:30 EDT -> 01:30 EST is one elapsed hour although the wall clock shows the same time.
  EXPECT_EQ(DateDiff(Utc(2020, 11, 1, 5, 30), Utc(2020, 11, 1, 6, 30), TimeUnit::kHour, ny, 0), 1);
  EXPECT_EQ(DateDiff(Utc(2020, 11, 1, 5, 30), Utc(2020, 11, 1, 6, 30), TimeUnit::kMinute, ny, 0),
            60);
  // Across spring-forward: 01:00 EST -> 03:00 EDT is one hour.
  EXPECT_EQ(DateDiff(Utc(2020, 3, 8, 6), Utc(2020, 3, 8, 7), TimeUnit::kHour, ny, 0), 1);
  EXPECT_EQ(DateDiff(Utc(2020, 3, 7, 12), Utc(2020, 3, 8, 11), TimeUnit::kDay, ny, 0), 1);
}

TEST(IsoWeekTest, WeekOneHoldsJanuaryFourth) {
  IsoWeekDate w = ToIsoWeek(Utc(2021, 1, 1));
  EXPECT_EQ(w.year, 2020);
  EXPECT_EQ(w.week, 53);
  EXPECT_EQ(w.day_of_week, 5);
  w = ToIsoWeek(Utc(2019, 12, 30));
  EXPECT_EQ(w.year, 2020);
  EXPECT_EQ(w.week, 1);
  EXPECT_EQ(w.day_of_week, 1);
  EXPECT_EQ(FromIsoWeek(2017, 6, 3), Utc(2017, 2, 8));
  EXPECT_EQ(FromIsoWeek(2020, 53, 5), Utc(2021, 1, 1));
}

}  // namespace
}  // namespace hourglass::pipeline::internal
