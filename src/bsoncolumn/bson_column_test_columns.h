// Test columns for the bsoncolumn tests: a column under construction (cells as one-field
// documents), random columns of every kind, and a decoding check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson.h"
#include "bsoncolumn/bson_column_builder.h"
#include "bsoncolumn/bson_column_decoder.h"
#include "bsoncolumn/bson_column_test_util.h"

namespace hourglass::bsoncolumn::testutil {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

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
    // Finish() finishes a scratch copy of the pending part; Release() finishes the builder
    // itself: both must give the same bytes.
    std::string out = builder.Finish();
    EXPECT_EQ(out, BsonColumnBuilder(builder).Release());
    return out;
  }
};

// Decodes `binary` and checks every cell against `col`, byte for byte.
inline void ExpectDecodesTo(const std::string& binary, const Column& col) {
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

// Random columns of every type, with skips, runs, type changes, objects and arrays.
inline Column RandomColumn(std::mt19937_64& rng) {
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
inline uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace hourglass::bsoncolumn::testutil
