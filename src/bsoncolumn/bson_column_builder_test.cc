#include "bsoncolumn/bson_column_builder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>

#include "bsoncolumn/bson_column_decoder.h"
#include "bsoncolumn/bson_column_test_util.h"

namespace hourglass::bsoncolumn {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using testutil::Base64;
using testutil::Hex;
using testutil::ToHex;
using testutil::Word;

// A column under construction in a test: cells kept as one-field documents.
struct Column {
  std::vector<BsonObj> docs;  // {"": value}, or {} for missing
  template <class F>
  Column& Add(F&& f) {
    BsonBuilder b;
    f(b);
    docs.push_back(b.Obj());
    return *this;
  }
  Column& Missing() {
    docs.push_back(BsonObj());
    return *this;
  }
  Column& Double(double d) {
    return Add([&](BsonBuilder& b) { b.AppendDouble("", d); });
  }
  Column& Int32(int32_t v) {
    return Add([&](BsonBuilder& b) { b.AppendInt32("", v); });
  }
  Column& Int64(int64_t v) {
    return Add([&](BsonBuilder& b) { b.AppendInt64("", v); });
  }
  Column& Obj(const BsonObj& o) {
    return Add([&](BsonBuilder& b) { b.AppendObject("", o); });
  }
  std::string Encode() const {
    BsonColumnBuilder builder;
    for (const auto& d : docs) {
      EXPECT_TRUE(builder.Append(d.FirstElement()).ok());
    }
    return builder.Finish();
  }
};

// Decodes `binary` and checks every cell against `col`, byte for byte.
void ExpectDecodesTo(const std::string& binary, const Column& col) {
  auto decoded = DecodeBsonColumn(binary);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString() << "\n" << ToHex(binary);
  ASSERT_EQ(decoded.value().size(), col.docs.size()) << ToHex(binary);
  for (size_t i = 0; i < col.docs.size(); ++i) {
    const BsonElement want = col.docs[i].FirstElement();
    const ColumnCell& got = decoded.value()[i];
    if (want.eoo()) {
      ASSERT_TRUE(got.missing()) << "row " << i;
      continue;
    }
    ASSERT_FALSE(got.missing()) << "row " << i << "\n" << ToHex(binary);
    ASSERT_EQ(got.element().type(), want.type()) << "row " << i;
    ASSERT_EQ(std::string_view(got.element().value(), got.element().ValueSize()),
              std::string_view(want.value(), want.ValueSize()))
        << "row " << i << "\n"
        << ToHex(binary);
  }
}

void ExpectRoundTrip(const Column& col) { ExpectDecodesTo(col.Encode(), col); }

// Byte-exact against columns MongoDB wrote (from its public jstests).
TEST(BsonColumnBuilderTest, MatchesMongoThousandEqualDoubles) {
  Column col;
  for (int i = 0; i < 1000; ++i) col.Double(2.0);
  EXPECT_EQ(ToHex(col.Encode()),
            ToHex(Base64("AQAAAAAAAAAAQJN/AAAAAAAAAAIAAAAAAAAABwAAAAAAAAAOAAAAAAAAAAA=")));
}

TEST(BsonColumnBuilderTest, MatchesMongoTwoRowBuckets) {
  Column t;
  t.Add([](BsonBuilder& b) { b.AppendDate("", 1705438119448); });
  t.Add([](BsonBuilder& b) { b.AppendDate("", 1705438119448); });
  Column dates_from_mongo;
  auto decoded = DecodeBsonColumn(Base64("CQAYhggUjQEAAIAOAAAAAAAAAAA="));
  ASSERT_TRUE(decoded.ok());
  Column same;
  for (const auto& c : decoded.value()) {
    same.Add([&](BsonBuilder& b) { b.AppendElementAs(c.element(), ""); });
  }
  EXPECT_EQ(ToHex(same.Encode()), ToHex(Base64("CQAYhggUjQEAAIAOAAAAAAAAAAA=")));

  Column a;
  a.Double(0.0).Double(1.0);
  EXPECT_EQ(ToHex(a.Encode()), ToHex(Base64("AQAAAAAAAAAAAJAuAAAAAAAAAAA=")));

  Column id;
  bson::ObjectId o1, o2;
  auto raw = Hex("65a6eba7e6d2e848e08c3750");
  std::memcpy(o1.bytes, raw.data(), 12);
  raw = Hex("65a6eba7e6d2e848e08c3751");
  std::memcpy(o2.bytes, raw.data(), 12);
  id.Add([&](BsonBuilder& b) { b.AppendObjectId("", o1); });
  id.Add([&](BsonBuilder& b) { b.AppendObjectId("", o2); });
  EXPECT_EQ(ToHex(id.Encode()), ToHex(Base64("BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA")));

  Column s;
  s.Add([](BsonBuilder& b) { b.AppendString("", "preUpgrade"); });
  EXPECT_EQ(ToHex(s.Encode()), ToHex(Base64("AgALAAAAcHJlVXBncmFkZQAA")));
}

TEST(BsonColumnBuilderTest, Int32DeltasAndSkips) {
  // 1, 2, missing, 2: literal, then deltas +1 (zig-zag 2), skip, 0 in one selector-12 word?
  Column col;
  col.Int32(1).Int32(2).Missing().Int32(2);
  const std::string b = col.Encode();
  EXPECT_EQ(b.substr(0, 6), Hex("10 00 01 00 00 00"));
  EXPECT_EQ(static_cast<uint8_t>(b[6]), 0x80);
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, TypeChangeWritesLiteral) {
  Column col;
  col.Int32(1).Int64(1).Double(1.5).Add([](BsonBuilder& b) { b.AppendString("", "x"); });
  const std::string b = col.Encode();
  EXPECT_EQ(ToHex(b), ToHex(Hex("10 00 01 00 00 00") + Hex("12 00 01 00 00 00 00 00 00 00") +
                            Hex("01 00 00 00 00 00 00 00 f8 3f") + Hex("02 00 02 00 00 00 78 00") +
                            Hex("00")));
}

TEST(BsonColumnBuilderTest, DoubleScales) {
  // Values at every scale, and scale changes inside a run.
  Column col;
  for (double d : {1.0, 2.0, 2.5, 2.25, 2.125, 3.1416, 3.14159265, 1e-9, 7.0, 7.5, 8.0})
    col.Double(d);
  ExpectRoundTrip(col);
  Column c2;
  for (int i = 0; i < 200; ++i) c2.Double(i / 100.0);
  ExpectRoundTrip(c2);
  const std::string b = c2.Encode();
  EXPECT_LT(b.size(), 200u);  // hundredths compress to a few bits each
}

TEST(BsonColumnBuilderTest, SpecialDoubles) {
  Column col;
  for (double d :
       {0.0, -0.0, 0.0, std::numeric_limits<double>::quiet_NaN(),
        std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
        std::numeric_limits<double>::lowest(), 9007199254740992.0, 9007199254740993.0,
        -9007199254740992.0, 1e300, 1e-300}) {
    col.Double(d);
  }
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, Int64Extremes) {
  Column col;
  for (int64_t v : {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                    int64_t{0}, std::numeric_limits<int64_t>::min(), int64_t{-1},
                    std::numeric_limits<int64_t>::max(), int64_t{1} << 62}) {
    col.Int64(v);
  }
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, LongRunsUseRle) {
  Column col;
  for (int i = 0; i < 5000; ++i) col.Int32(7);
  for (int i = 0; i < 3000; ++i) col.Missing();
  for (int i = 0; i < 4000; ++i) col.Int32(7 + i);
  const std::string b = col.Encode();
  EXPECT_LT(b.size(), 400u);
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, InterleavedObjects) {
  Column col;
  for (int i = 0; i < 10; ++i) {
    BsonBuilder o;
    o.AppendInt32("a", i);
    if (i % 3 != 1) o.AppendDouble("b", i * 0.5);
    const size_t sub = o.OpenObject("c");
    o.AppendString("d", "s" + std::to_string(i));
    o.Close(sub);
    col.Obj(o.Obj());
  }
  const std::string b = col.Encode();
  EXPECT_EQ(static_cast<uint8_t>(b[0]), kInterleavedStartObject);
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, InterleavedArraysAndTypeChanges) {
  Column col;
  for (int i = 0; i < 8; ++i) {
    BsonBuilder a;
    a.AppendInt32("0", i).AppendInt32("1", 2 * i);
    col.Add([&](BsonBuilder& b) { b.AppendArray("", a.Obj()); });
  }
  col.Int32(5).Missing();
  BsonBuilder o;
  o.AppendInt32("x", 1);
  col.Obj(o.Obj()).Obj(o.Obj()).Missing();
  ExpectRoundTrip(col);
  EXPECT_EQ(static_cast<uint8_t>(col.Encode()[0]), kInterleavedStartArray);
}

TEST(BsonColumnBuilderTest, CodeWScopeIsRefused) {
  auto cws = bson::FromJson(R"js({"": {"$code": "f()", "$scope": {"x": 1}}})js");
  ASSERT_TRUE(cws.ok()) << cws.status().ToString();
  ASSERT_EQ(cws.value().FirstElement().type(), BsonType::kCodeWScope);
  BsonColumnBuilder b;
  Status st = b.Append(cws.value().FirstElement());
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  BsonBuilder nested;
  nested.AppendObject("", cws.value());
  const BsonObj doc = nested.Obj();
  st = b.Append(doc.FirstElement());
  EXPECT_EQ(st.code(), ErrorCode::kBadValue);
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.Finish(), std::string(1, '\0'));
}

TEST(BsonColumnBuilderTest, RootTypeChangeToObjectWithoutScalars) {
  // [1, 2] starts interleaving with an array root; {a: {}} has no scalars and must go to the
  // regular stream as a literal, not become a reference object without streams.
  Column col;
  BsonBuilder a;
  a.AppendInt32("0", 1).AppendInt32("1", 2);
  const BsonObj arr = a.Obj();
  col.Add([&](BsonBuilder& b) { b.AppendArray("", arr); });
  BsonBuilder o;
  const size_t sub = o.OpenObject("a");
  o.Close(sub);
  col.Obj(o.Obj());
  col.Obj(o.Obj());
  ExpectRoundTrip(col);
}

TEST(BsonColumnBuilderTest, FinishLeavesBuilderUsable) {
  BsonColumnBuilder b;
  Column col;
  for (int i = 0; i < 300; ++i) {
    col.Int64(i * i);
    ASSERT_TRUE(b.Append(col.docs.back().FirstElement()).ok());
    if (i % 37 == 0) ExpectDecodesTo(b.Finish(), col);
  }
  EXPECT_EQ(b.Finish(), col.Encode());
}

// Random columns of every type, with skips, runs, type changes, objects and arrays.
Column RandomColumn(std::mt19937_64& rng) {
  Column col;
  const int n = rng() % 400;
  auto pick_double = [&]() -> double {
    switch (rng() % 8) {
      case 0:
        return static_cast<double>(static_cast<int64_t>(rng() % 2000) - 1000) / 100;
      case 1:
        return std::ldexp(static_cast<double>(rng() % 1000000),
                          static_cast<int>(rng() % 200) - 100);
      case 2:
        return std::numeric_limits<double>::quiet_NaN();
      case 3:
        return (rng() % 2) ? -0.0 : 0.0;
      case 4: {
        double d;
        uint64_t bits = rng();
        std::memcpy(&d, &bits, 8);
        return d;
      }
      case 5:
        return static_cast<double>(rng() % 100) / 10000;
      default:
        return static_cast<double>(rng() % 50);
    }
  };
  int64_t base = static_cast<int64_t>(rng());
  int kind = rng() % 17;
  for (int i = 0; i < n; ++i) {
    if (rng() % 20 == 0) kind = rng() % 17;  // type change
    if (rng() % 12 == 0) {
      col.Missing();
      continue;
    }
    if (rng() % 25 == 0) {  // a run of repeats
      const int run = rng() % 300;
      if (!col.docs.empty()) {
        for (int r = 0; r < run; ++r) col.docs.push_back(col.docs.back());
      }
      continue;
    }
    const int64_t step = static_cast<int64_t>(rng() % 5);
    base += step;
    switch (kind) {
      case 0:
        col.Double(pick_double());
        break;
      case 1:
        col.Int32(static_cast<int32_t>(base % 100000));
        break;
      case 2:
        col.Int64((rng() % 10 == 0) ? static_cast<int64_t>(rng()) : base);
        break;
      case 3:
        col.Add([&](BsonBuilder& b) { b.AppendDate("", base); });
        break;
      case 4:
        col.Add([&](BsonBuilder& b) { b.AppendTimestamp("", static_cast<uint64_t>(base)); });
        break;
      case 5:
        col.Add([&](BsonBuilder& b) { b.AppendBool("", rng() % 2); });
        break;
      case 6: {
        bson::ObjectId oid{};
        const uint64_t t = static_cast<uint64_t>(base);
        std::memcpy(oid.bytes, &t, 4);
        oid.bytes[4] = static_cast<uint8_t>(rng() % 2);
        oid.bytes[11] = static_cast<uint8_t>(i);
        col.Add([&](BsonBuilder& b) { b.AppendObjectId("", oid); });
        break;
      }
      case 7: {
        std::string s = "v" + std::to_string(base % 1000);
        if (rng() % 5 == 0) s = std::string(rng() % 30, 'x');
        if (rng() % 10 == 0) s = std::string(1, '\0') + "z";
        col.Add([&](BsonBuilder& b) { b.AppendString("", s); });
        break;
      }
      case 8: {
        std::string payload(rng() % 3 == 0 ? rng() % 20 : 8, '\0');
        for (auto& c : payload) c = static_cast<char>(rng() % 4);
        col.Add([&](BsonBuilder& b) { b.AppendBinData("", rng() % 2 ? 0 : 0x80, payload); });
        break;
      }
      case 9: {
        bson::Decimal128 d{static_cast<uint64_t>(base), 0x3040000000000000ull};
        col.Add([&](BsonBuilder& b) { b.AppendDecimal("", d); });
        break;
      }
      case 10:
        col.Add([&](BsonBuilder& b) {
          switch (rng() % 5) {
            case 0:
              b.AppendNull("");
              break;
            case 1:
              b.AppendUndefined("");
              break;
            case 2:
              b.AppendMinKey("");
              break;
            case 3:
              b.AppendMaxKey("");
              break;
            default:
              b.AppendRegex("", "a.*b", "i");
          }
        });
        break;
      case 11:
        col.Add([&](BsonBuilder& b) { b.AppendCode("", "f" + std::to_string(base % 7)); });
        break;
      case 12:
      case 13: {
        // Objects with optional and nested fields.
        BsonBuilder o;
        if (rng() % 4) o.AppendInt64("t", base);
        if (rng() % 3) o.AppendDouble("v", pick_double());
        if (rng() % 2) {
          const size_t sub = o.OpenObject("m");
          if (rng() % 2) o.AppendString("host", "h" + std::to_string(rng() % 3));
          o.AppendInt32("n", static_cast<int32_t>(rng() % 5));
          o.Close(sub);
        }
        if (rng() % 7 == 0) o.AppendInt32("late", 1);
        if (rng() % 11 == 0) {
          const size_t e = o.OpenObject("empty");
          o.Close(e);
        }
        col.Obj(o.Obj());
        break;
      }
      case 15: {
        // Objects whose shape changes: fields from a small pool in varying order, scalars that
        // become objects or arrays, empty sub-documents.
        static const char* kNames[] = {"a", "b", "c", "d"};
        BsonBuilder o;
        const int fields = rng() % 5;
        int used = 0;
        for (int k = 0; k < fields; ++k) {
          int idx = rng() % 4;
          if (used & (1 << idx)) continue;
          used |= 1 << idx;
          switch (rng() % 6) {
            case 0: {
              const size_t sub = o.OpenObject(kNames[idx]);
              if (rng() % 3) o.AppendInt32("x", static_cast<int32_t>(rng() % 4));
              if (rng() % 3) o.AppendString("y", rng() % 2 ? "p" : "q");
              o.Close(sub);
              break;
            }
            case 1: {
              const size_t sub = o.OpenArray(kNames[idx]);
              const int len = rng() % 3;
              for (int m = 0; m < len; ++m) o.AppendInt64(std::to_string(m), base + m);
              o.Close(sub);
              break;
            }
            case 2:
              o.AppendDouble(kNames[idx], pick_double());
              break;
            default:
              o.AppendInt32(kNames[idx], static_cast<int32_t>(rng() % 3));
          }
        }
        col.Obj(o.Obj());
        break;
      }
      case 14: {
        BsonBuilder a;
        const int len = rng() % 4;
        for (int k = 0; k < len; ++k) a.AppendInt64(std::to_string(k), base + k);
        col.Add([&](BsonBuilder& b) { b.AppendArray("", a.Obj()); });
        break;
      }
      default:
        col.Add([&](BsonBuilder& b) { b.AppendInt32("", static_cast<int32_t>(rng())); });
        break;
    }
  }
  return col;
}

// HG_BSONCOLUMN_SEED and HG_BSONCOLUMN_ITERS run other or longer sequences.
uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(BsonColumnBuilderTest, RandomColumnsRoundTrip) {
  std::mt19937_64 rng(EnvOr("HG_BSONCOLUMN_SEED", 42));
  const uint64_t iters = EnvOr("HG_BSONCOLUMN_ITERS", 300);
  for (uint64_t iter = 0; iter < iters; ++iter) {
    SCOPED_TRACE(iter);
    ExpectRoundTrip(RandomColumn(rng));
    if (HasFatalFailure()) return;
  }
}

// Mutates valid encodings (bit flips, byte overwrites, truncation, insertion, duplicated
// chunks) and checks that the decoder answers every one with cells or an InvalidBSON status:
// sanitizers catch out-of-bounds reads, the test's time bound catches loops. `make fuzz` runs
// the same idea far longer with coverage feedback (bson_column_fuzz).
TEST(BsonColumnBuilderTest, DecoderSurvivesMutatedColumns) {
  std::mt19937_64 rng(7);
  int decoded_ok = 0, rejected = 0;
  for (int iter = 0; iter < 60; ++iter) {
    const std::string valid = RandomColumn(rng).Encode();
    for (int m = 0; m < 30; ++m) {
      std::string b = valid;
      const int edits = 1 + rng() % 4;
      for (int e = 0; e < edits && !b.empty(); ++e) {
        const size_t pos = rng() % b.size();
        switch (rng() % 6) {
          case 0:
            b[pos] = static_cast<char>(b[pos] ^ (1 << (rng() % 8)));
            break;
          case 1:
            b[pos] = static_cast<char>(rng());
            break;
          case 2:
            b.resize(pos);
            break;
          case 3:
            b.insert(pos, 1, static_cast<char>(rng()));
            break;
          case 4: {
            const size_t len = std::min<size_t>(b.size() - pos, 1 + rng() % 16);
            b.insert(pos, b.substr(pos, len));
            break;
          }
          default:
            b[pos] = static_cast<char>(
                std::vector<uint8_t>{0x00, 0x7F, 0x80, 0x8F, 0xF0, 0xF1, 0xF2, 0xFF}[rng() % 8]);
            break;
        }
      }
      auto r = DecodeBsonColumn(b);
      if (r.ok()) {
        ++decoded_ok;
      } else {
        ASSERT_EQ(r.status().code(), ErrorCode::kInvalidBSON) << r.status().ToString();
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(decoded_ok, 0);
}

// With HG_BSONCOLUMN_SEED_DIR set, writes a seed corpus for bson_column_fuzz there (how
// fuzz/corpus/bson_column was made).
TEST(BsonColumnBuilderTest, WriteFuzzSeeds) {
  const char* dir = std::getenv("HG_BSONCOLUMN_SEED_DIR");
  if (dir == nullptr) GTEST_SKIP() << "HG_BSONCOLUMN_SEED_DIR not set";
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 24; ++i) {
    Column col = RandomColumn(rng);
    if (col.docs.size() > 60) col.docs.resize(60);
    std::ofstream(std::string(dir) + "/random_" + std::to_string(i), std::ios::binary)
        << col.Encode();
  }
}

}  // namespace
}  // namespace hourglass::bsoncolumn
