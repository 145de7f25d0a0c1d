// The line protocol as InfluxDB 1.x documents it: escaping, every field type, timestamps at every
// precision, and bad lines among good ones (each reported, the others kept).
#include "lineprotocol/line_protocol.h"

#include <gtest/gtest.h>

#include <limits>

namespace hourglass::lineprotocol {
namespace {

Point One(std::string_view line) {
  ParseResult r = Parse(line);
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.points.size(), 1u);
  return r.points.empty() ? Point{} : r.points[0];
}

std::string OneError(std::string_view line) {
  ParseResult r = Parse(line);
  EXPECT_TRUE(r.points.empty());
  EXPECT_EQ(r.errors.size(), 1u);
  return r.errors.empty() ? "" : r.errors[0];
}

TEST(LineProtocolTest, MeasurementTagsFieldsAndTimestamp) {
  Point p = One("cpu,host=a,region=west usage_user=12.5,usage_idle=80 1465839830100400200");
  EXPECT_EQ(p.measurement, "cpu");
  ASSERT_EQ(p.tags.size(), 2u);
  EXPECT_EQ(p.tags[0], (std::pair<std::string, std::string>{"host", "a"}));
  EXPECT_EQ(p.tags[1], (std::pair<std::string, std::string>{"region", "west"}));
  ASSERT_EQ(p.fields.size(), 2u);
  EXPECT_EQ(p.fields[0].first, "usage_user");
  EXPECT_EQ(p.fields[0].second.f, 12.5);
  EXPECT_EQ(p.fields[1].second.f, 80.0);
  ASSERT_TRUE(p.timestamp.has_value());
  EXPECT_EQ(*p.timestamp, 1465839830100400200);
}

TEST(LineProtocolTest, TagsAreSortedByKeyAndTheTimestampIsOptional) {
  Point p = One("m,z=1,a=2,m=3 v=1");
  ASSERT_EQ(p.tags.size(), 3u);
  EXPECT_EQ(p.tags[0].first, "a");
  EXPECT_EQ(p.tags[1].first, "m");
  EXPECT_EQ(p.tags[2].first, "z");
  EXPECT_FALSE(p.timestamp.has_value());
}

TEST(LineProtocolTest, EscapesInEveryPosition) {
  Point p = One(R"(my\ meas\,ure=x,tag\ k\=ey=v\,a\ l\=ue fi\,eld\=k\ ey="a \"quoted\" \\ str" 1)");
  EXPECT_EQ(p.measurement, "my meas,ure=x");  // '=' needs no escape in a measurement
  ASSERT_EQ(p.tags.size(), 1u);
  EXPECT_EQ(p.tags[0].first, "tag k=ey");
  EXPECT_EQ(p.tags[0].second, "v,a l=ue");
  ASSERT_EQ(p.fields.size(), 1u);
  EXPECT_EQ(p.fields[0].first, "fi,eld=k ey");
  EXPECT_EQ(p.fields[0].second.s, R"(a "quoted" \ str)");
  // A backslash before anything else stays, and a string keeps commas, spaces and newlines.
  Point q = One("m,t=a\\b f=\"x, y\nz\\n\"");
  EXPECT_EQ(q.tags[0].second, "a\\b");
  EXPECT_EQ(q.fields[0].second.s, "x, y\nz\\n");
}

TEST(LineProtocolTest, EveryFieldType) {
  Point p =
      One("m f1=1,f2=-1.5e3,f3=.5,f4=42i,f5=-9223372036854775808i,f6=18446744073709551615u,f7=t,"
          "f8=FALSE,f9=True,f10=\"s\",f11=+2");
  ASSERT_EQ(p.fields.size(), 11u);
  using K = FieldValue::Kind;
  EXPECT_EQ(p.fields[0].second.kind, K::kFloat);
  EXPECT_EQ(p.fields[0].second.f, 1.0);
  EXPECT_EQ(p.fields[1].second.f, -1500.0);
  EXPECT_EQ(p.fields[2].second.f, 0.5);
  EXPECT_EQ(p.fields[3].second.kind, K::kInteger);
  EXPECT_EQ(p.fields[3].second.i, 42);
  EXPECT_EQ(p.fields[4].second.i, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(p.fields[5].second.kind, K::kUnsigned);
  EXPECT_EQ(p.fields[5].second.u, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(p.fields[6].second.kind, K::kBoolean);
  EXPECT_TRUE(p.fields[6].second.b);
  EXPECT_FALSE(p.fields[7].second.b);
  EXPECT_TRUE(p.fields[8].second.b);
  EXPECT_EQ(p.fields[9].second.kind, K::kString);
  EXPECT_EQ(p.fields[10].second.f, 2.0);
}

TEST(LineProtocolTest, BadLinesAreReportedAndTheOthersKept) {
  ParseResult r = Parse(
      "# a comment\n"
      "cpu v=1 10\n"
      "\n"
      "cpu v= 11\n"
      "  cpu v=2 12\r\n"
      "cpu,host v=1\n"
      "cpu v=1i2\n"
      "cpu v=3 13");
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(*r.points[0].timestamp, 10);
  EXPECT_EQ(*r.points[1].timestamp, 12);
  EXPECT_EQ(*r.points[2].timestamp, 13);
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0], "unable to parse 'cpu v= 11': missing field value");
  EXPECT_EQ(r.errors[1], "unable to parse 'cpu,host v=1': missing tag value");
  EXPECT_EQ(r.errors[2], "unable to parse 'cpu v=1i2': invalid number");
}

TEST(LineProtocolTest, EachReasonABadLineCanHave) {
  EXPECT_EQ(OneError("cpu"), "unable to parse 'cpu': missing fields");
  EXPECT_EQ(OneError("cpu "), "unable to parse 'cpu ': missing fields");
  EXPECT_EQ(OneError(",t=1 v=1"), "unable to parse ',t=1 v=1': missing measurement");
  EXPECT_EQ(OneError("cpu,=a v=1"), "unable to parse 'cpu,=a v=1': missing tag key");
  EXPECT_EQ(OneError("cpu,t= v=1"), "unable to parse 'cpu,t= v=1': missing tag value");
  EXPECT_EQ(OneError("cpu,t=a,t=b v=1"), "unable to parse 'cpu,t=a,t=b v=1': duplicate tags");
  EXPECT_EQ(OneError("cpu =1"), "unable to parse 'cpu =1': missing field key");
  EXPECT_EQ(OneError("cpu v"), "unable to parse 'cpu v': missing field value");
  EXPECT_EQ(OneError("cpu v=\"abc"), "unable to parse 'cpu v=\"abc': unbalanced quotes");
  EXPECT_EQ(OneError("cpu v=yes"), "unable to parse 'cpu v=yes': invalid boolean");
  EXPECT_EQ(OneError("cpu v=1e"), "unable to parse 'cpu v=1e': invalid number");
  EXPECT_EQ(OneError("cpu v=-u"), "unable to parse 'cpu v=-u': invalid number");
  EXPECT_EQ(OneError("cpu v=-1u"), "unable to parse 'cpu v=-1u': invalid number");
  EXPECT_EQ(OneError("cpu v=9223372036854775808i"),
            "unable to parse 'cpu v=9223372036854775808i': integer out of range");
  EXPECT_EQ(OneError("cpu v=1 12x"), "unable to parse 'cpu v=1 12x': bad timestamp");
  EXPECT_EQ(OneError("cpu v=1 12 13"), "unable to parse 'cpu v=1 12 13': bad timestamp");
  EXPECT_EQ(OneError("cpu v=1\"x\""), "unable to parse 'cpu v=1\"x\"': invalid number");
  EXPECT_EQ(OneError("cpu v=1,"), "unable to parse 'cpu v=1,': missing fields");
  EXPECT_EQ(OneError("cpu v=1=2"), "unable to parse 'cpu v=1=2': invalid number");
  EXPECT_EQ(OneError("cpu f=\t1"), "unable to parse 'cpu f=\t1': missing field value");
}

TEST(LineProtocolTest, DuplicateFieldKeysKeepTheLastValue) {
  Point p = One("m a=1,b=2,a=3");
  ASSERT_EQ(p.fields.size(), 2u);
  EXPECT_EQ(p.fields[0].first, "b");
  EXPECT_EQ(p.fields[1].first, "a");
  EXPECT_EQ(p.fields[1].second.f, 3.0);
  // Many fields, many repeats: each kept once, in time linear in the line.
  std::string line = "m ";
  for (int i = 0; i < 200000; ++i)
    line += "f" + std::to_string(i % 1000) + "=" + std::to_string(i) + ",";
  line.pop_back();
  Point many = One(line);
  ASSERT_EQ(many.fields.size(), 1000u);
  EXPECT_EQ(many.fields[0].first, "f0");
  EXPECT_EQ(many.fields[0].second.f, 199000.0);
  EXPECT_EQ(many.fields[999].second.f, 199999.0);
}

TEST(LineProtocolTest, Precisions) {
  EXPECT_EQ(ParsePrecision("", false).value(), Precision::kNanoseconds);
  EXPECT_EQ(ParsePrecision("n", false).value(), Precision::kNanoseconds);
  EXPECT_EQ(ParsePrecision("u", false).value(), Precision::kMicroseconds);
  EXPECT_EQ(ParsePrecision("us", true).value(), Precision::kMicroseconds);
  EXPECT_EQ(ParsePrecision("ms", true).value(), Precision::kMilliseconds);
  EXPECT_EQ(ParsePrecision("s", true).value(), Precision::kSeconds);
  EXPECT_EQ(ParsePrecision("m", false).value(), Precision::kMinutes);
  EXPECT_EQ(ParsePrecision("h", false).value(), Precision::kHours);
  EXPECT_FALSE(ParsePrecision("m", true).ok());  // v2 has no minutes or hours
  EXPECT_FALSE(ParsePrecision("h", true).ok());
  Status bad = ParsePrecision("d", false).status();
  EXPECT_EQ(bad.code(), ErrorCode::kBadValue);
  EXPECT_NE(bad.reason().find("\"d\""), std::string::npos);
}

int64_t TimeOf(std::string_view line, Precision precision) {
  auto doc = ToDocument(One(line), precision, 0);
  EXPECT_TRUE(doc.ok()) << doc.status().ToString();
  return doc.ok() ? doc.value()["time"].DateMillis() : -1;
}

TEST(LineProtocolTest, TimestampsAtEveryPrecisionBecomeMilliseconds) {
  EXPECT_EQ(TimeOf("m v=1 1465839830100400200", Precision::kNanoseconds), 1465839830100);
  EXPECT_EQ(TimeOf("m v=1 1465839830100400", Precision::kMicroseconds), 1465839830100);
  EXPECT_EQ(TimeOf("m v=1 1465839830100", Precision::kMilliseconds), 1465839830100);
  EXPECT_EQ(TimeOf("m v=1 1465839830", Precision::kSeconds), 1465839830000);
  EXPECT_EQ(TimeOf("m v=1 24430663", Precision::kMinutes), 24430663LL * 60000);
  EXPECT_EQ(TimeOf("m v=1 407164", Precision::kHours), 407164LL * 3600000);
  // Before 1970, the floor: -1 ns is in the millisecond before the epoch.
  EXPECT_EQ(TimeOf("m v=1 -1", Precision::kNanoseconds), -1);
  EXPECT_EQ(TimeOf("m v=1 -1000000", Precision::kNanoseconds), -1);
  EXPECT_EQ(TimeOf("m v=1 -1000001", Precision::kNanoseconds), -2);
  // Without a timestamp: the request's time.
  auto now = ToDocument(One("m v=1"), Precision::kSeconds, 1234);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now.value()["time"].DateMillis(), 1234);
  // Beyond int64 milliseconds.
  auto far = ToDocument(One("m v=1 9223372036854775807"), Precision::kHours, 0);
  EXPECT_EQ(far.status().code(), ErrorCode::kBadValue);
}

TEST(LineProtocolTest, TheDocumentOfAPoint) {
  auto doc = ToDocument(One("cpu,z=2,host=a u=1.5,n=3i,big=18446744073709551615u,s=\"x\",b=t 5"),
                        Precision::kMilliseconds, 0);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const bson::BsonObj& d = doc.value();
  std::vector<std::string> names;
  for (const bson::BsonElement& e : d) names.emplace_back(e.FieldName());
  EXPECT_EQ(names, (std::vector<std::string>{"time", "tags", "u", "n", "big", "s", "b"}));
  EXPECT_EQ(d["time"].DateMillis(), 5);
  bson::BsonObj tags = d["tags"].Obj();
  std::vector<std::string> tag_names;
  for (const bson::BsonElement& e : tags) tag_names.emplace_back(e.FieldName());
  EXPECT_EQ(tag_names, (std::vector<std::string>{"host", "z"}));
  EXPECT_EQ(tags["host"].Str(), "a");
  EXPECT_EQ(d["u"].Double(), 1.5);
  EXPECT_EQ(d["n"].type(), bson::BsonType::kInt64);
  EXPECT_EQ(d["n"].Int64(), 3);
  EXPECT_EQ(d["big"].type(), bson::BsonType::kDecimal128);
  EXPECT_EQ(d["big"].Decimal().ToString(), "18446744073709551615");
  EXPECT_EQ(d["s"].Str(), "x");
  EXPECT_TRUE(d["b"].Bool());
  // No tags, no metaField; a small unsigned value is an int64.
  auto bare = ToDocument(One("m v=7u 1"), Precision::kSeconds, 0);
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare.value()["tags"].eoo());
  EXPECT_EQ(bare.value()["v"].type(), bson::BsonType::kInt64);
}

TEST(LineProtocolTest, KeysThatClashWithTheTimeOrMetaFieldAreRefused) {
  auto field = ToDocument(One("cpu time=1"), Precision::kSeconds, 0);
  EXPECT_EQ(field.status().reason(),
            "invalid field name: input field \"time\" on measurement \"cpu\" is invalid");
  auto tag = ToDocument(One("cpu,time=a v=1"), Precision::kSeconds, 0);
  EXPECT_EQ(tag.status().reason(),
            "invalid tag key: input tag \"time\" on measurement \"cpu\" is invalid");
  auto meta = ToDocument(One("cpu tags=1"), Precision::kSeconds, 0);
  EXPECT_EQ(meta.status().code(), ErrorCode::kBadValue);
  EXPECT_NE(meta.status().reason().find("metaField"), std::string::npos);
}

TEST(LineProtocolTest, InvalidUtf8IsRefused) {
  auto doc = ToDocument(One("m,t=\xff v=1"), Precision::kSeconds, 0);
  EXPECT_EQ(doc.status().code(), ErrorCode::kBadValue);
  EXPECT_NE(doc.status().reason().find("UTF-8"), std::string::npos);
  // Overlong, surrogate and truncated forms too; real multi-byte text passes.
  for (std::string_view line :
       {"m v=\"\xc0\xaf\"", "m v=\"\xed\xa0\x80\"", "m,t=\xe2\x82 v=1", "m \xf4\x90\x80\x80=1"}) {
    EXPECT_EQ(ToDocument(One(line), Precision::kSeconds, 0).status().code(), ErrorCode::kBadValue)
        << line;
  }
  auto text = ToDocument(One("temp\xc3\xa9rature,lieu=\xe2\x82\xac v=\"\xf0\x9f\x98\x80\""),
                         Precision::kSeconds, 0);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text.value()["v"].Str(), "\xf0\x9f\x98\x80");
}

}  // namespace
}  // namespace hourglass::lineprotocol
