// The allocation-free decoding paths (DecodeBsonColumnElements, DecodeBsonColumnValues,
// VisitBsonColumn, and the decoder's whole-block fast path for numeric streams) against
// DecodeBsonColumn: the same cells for valid columns, the same error for corrupt ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bsoncolumn/bson_column_decoder.h"
#include "bsoncolumn/bson_column_test_columns.h"
#include "bsoncolumn/simple8b.h"

namespace hourglass::bsoncolumn {
namespace {

using testutil::Column;
using testutil::EnvOr;
using testutil::RandomColumn;

// Records what a visitor sees, as ColumnCells.
class RecordingVisitor : public CellVisitor {
 public:
  std::vector<ColumnCell> cells;
  void Missing() override { cells.emplace_back(); }
  void Value(bson::BsonType type, std::string_view value) override {
    std::string e;
    e.push_back(static_cast<char>(type));
    e.push_back('\0');
    e.append(value);
    cells.emplace_back(std::move(e));
  }
};

// The one type of the present cells when it is one DecodeBsonColumnValues takes, else EOO.
bson::BsonType NumberType(const std::vector<ColumnCell>& cells) {
  bson::BsonType type = bson::BsonType::kEOO;
  for (const ColumnCell& c : cells) {
    if (c.missing()) continue;
    const bson::BsonType t = c.element().type();
    if (type != bson::BsonType::kEOO && t != type) return bson::BsonType::kEOO;
    type = t;
  }
  const bool number = type == bson::BsonType::kDouble || type == bson::BsonType::kInt32 ||
                      type == bson::BsonType::kInt64 || type == bson::BsonType::kDate;
  return number ? type : bson::BsonType::kEOO;
}

// DecodeBsonColumnValues against DecodeBsonColumn: the same numbers (bit for bit: NaN, -0.0)
// and missing cells when the column is one of numbers, no typed form otherwise, and the same
// error for a corrupt column unless it gave up on a cell of another type before the corruption.
void ExpectSameValues(std::string_view binary, ColumnValues* values) {
  auto want = DecodeBsonColumn(binary);
  Status st = DecodeBsonColumnValues(binary, values, want.ok() ? want.value().size() : 7);
  if (!st.ok()) {
    ASSERT_FALSE(want.ok()) << st.ToString();
    EXPECT_EQ(st.reason(), want.status().reason());
    EXPECT_EQ(values->type, bson::BsonType::kEOO);
    return;
  }
  if (!want.ok()) {
    // Given up before the corruption.
    EXPECT_EQ(values->type, bson::BsonType::kEOO);
    return;
  }
  const auto& cells = want.value();
  ASSERT_EQ(values->type, NumberType(cells));
  if (values->type == bson::BsonType::kEOO) return;
  ASSERT_EQ(values->size(), cells.size());
  size_t missing = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    const bool present = values->missing == 0 || values->present[i] != 0;
    ASSERT_EQ(present, !cells[i].missing()) << "row " << i;
    if (!present) {
      ++missing;
      continue;
    }
    const bson::BsonElement e = cells[i].element();
    uint64_t bits = 0;
    if (e.type() == bson::BsonType::kInt32) {
      bits = static_cast<uint64_t>(int64_t{e.Int32()});
    } else {
      std::memcpy(&bits, e.value(), 8);
    }
    ASSERT_EQ(values->values[i], bits) << "row " << i;
  }
  EXPECT_EQ(values->missing, missing);
}

// Decodes `binary` the four ways and expects the same answer from each.
void ExpectSameDecoding(std::string_view binary, ColumnElements* reused = nullptr) {
  ColumnValues values;
  ExpectSameValues(binary, &values);
  if (::testing::Test::HasFatalFailure()) return;
  auto want = DecodeBsonColumn(binary);
  ColumnElements fresh;
  ColumnElements* elements = reused != nullptr ? reused : &fresh;
  Status st = DecodeBsonColumnElements(binary, elements, want.ok() ? want.value().size() : 7);
  RecordingVisitor visitor;
  Status visited = VisitBsonColumn(binary, visitor);
  ASSERT_EQ(st.ok(), want.ok()) << st.ToString();
  ASSERT_EQ(visited.ok(), want.ok()) << visited.ToString();
  if (!want.ok()) {
    EXPECT_EQ(st.code(), ErrorCode::kInvalidBSON);
    EXPECT_EQ(st.reason(), want.status().reason());
    EXPECT_EQ(visited.reason(), want.status().reason());
    EXPECT_EQ(elements->size(), 0u);  // nothing handed out for a corrupt column
    return;
  }
  const auto& cells = want.value();
  ASSERT_EQ(elements->size(), cells.size());
  ASSERT_EQ(visitor.cells.size(), cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    ASSERT_EQ(visitor.cells[i], cells[i]) << "row " << i;
    ASSERT_EQ(elements->missing(i), cells[i].missing()) << "row " << i;
    if (cells[i].missing()) {
      ASSERT_TRUE(elements->element(i).eoo());
      continue;
    }
    const bson::BsonElement e = elements->element(i);
    ASSERT_EQ(e.FieldName(), "");
    ASSERT_EQ(std::string_view(e.raw(), 2 + e.ValueSize()), cells[i].bytes()) << "row " << i;
  }
}

// Long numeric columns: what the fast path decodes (random walks at every double scale, int64,
// int32 up to its limits, dates), with skips, runs (RLE) and type changes inside.
// With `mixed`, a few cells of another type (a string) break the column's type.
Column NumericColumn(std::mt19937_64& rng, bool mixed = true) {
  Column col;
  const int n = 1 + static_cast<int>(rng() % 2000);
  const int kind = static_cast<int>(rng() % 5);
  double d = static_cast<double>(rng() % 1000) / (1 + rng() % 3 == 0 ? 1 : 100);
  int64_t i64 = static_cast<int64_t>(rng() % 100000) - 50000;
  int32_t i32 = 0;
  int64_t date = 1700000000000;
  const double steps[] = {1, 0.1, 0.01, 0.0001, 1e-8, 1.0 / 3};
  const double step = steps[rng() % 6];
  for (int r = 0; r < n; ++r) {
    const int dice = static_cast<int>(rng() % 100);
    if (dice < 5) {
      col.Missing();
      continue;
    }
    if (dice < 7 && mixed) {  // a type change inside the column
      col.Add([&](bson::BsonBuilder& b) { b.AppendString("", "x"); });
      continue;
    }
    const bool repeat = dice < 40;  // runs long enough for RLE words
    switch (kind) {
      case 0:
        if (!repeat) d += step * (static_cast<double>(rng() % 21) - 10);
        col.Double(d);
        break;
      case 1:
        if (!repeat) i64 += static_cast<int64_t>(rng() % 2001) - 1000;
        col.Int64(i64);
        break;
      case 2:
        if (!repeat) {
          i32 = dice < 45 ? (dice % 2 ? INT32_MAX : INT32_MIN) : (i32 > 1000000 ? 0 : i32 + 7);
        }
        col.Int32(i32);
        break;
      case 3:
        if (!repeat) date += 10000 + static_cast<int64_t>(rng() % 3);
        col.Add([&](bson::BsonBuilder& b) { b.AppendDate("", date); });
        break;
      default:
        col.Double(dice < 50 ? std::nan("") : (dice < 60 ? -0.0 : d * 1e300));
        break;
    }
  }
  return col;
}

TEST(BsonColumnElementsTest, RandomColumnsDecodeAlike) {
  std::mt19937_64 rng(EnvOr("HG_BSONCOLUMN_SEED", 42));
  const uint64_t iters = EnvOr("HG_BSONCOLUMN_ITERS", 300);
  ColumnElements reused;
  for (uint64_t iter = 0; iter < iters; ++iter) {
    SCOPED_TRACE(iter);
    const Column col = iter % 2 ? RandomColumn(rng) : NumericColumn(rng, iter % 4 == 0);
    const std::string binary = col.Encode();
    testutil::ExpectDecodesTo(binary, col);
    ExpectSameDecoding(binary, iter % 3 ? &reused : nullptr);
    if (HasFatalFailure()) return;
  }
}

// Numeric columns of one type (with missing cells, runs, NaN, -0.0, the int32 limits and int64s
// past 2^53) decode to numbers, into a reused ColumnValues as into a fresh one; a column of two
// numeric types, or with one cell of another type, has no typed form.
TEST(BsonColumnElementsTest, ColumnsOfNumbers) {
  std::mt19937_64 rng(EnvOr("HG_BSONCOLUMN_SEED", 5));
  ColumnValues reused;
  int typed = 0;
  for (int iter = 0; iter < 200; ++iter) {
    SCOPED_TRACE(iter);
    const std::string binary = NumericColumn(rng, /*mixed=*/false).Encode();
    ColumnValues fresh;
    ExpectSameValues(binary, iter % 2 ? &reused : &fresh);
    if (HasFatalFailure()) return;
    typed += (iter % 2 ? reused : fresh).type != bson::BsonType::kEOO;
  }
  EXPECT_GT(typed, 150);  // all but the columns whose every cell is missing

  Column big;
  big.Int64(INT64_MAX).Int64(INT64_MIN).Missing().Int64((int64_t{1} << 53) + 1).Int64(-1);
  Column nan;
  nan.Double(std::nan("")).Double(-0.0).Double(0.0).Missing().Double(-std::nan("")).Double(1e308);
  for (const Column* c : {&big, &nan}) {
    ColumnValues values;
    ExpectSameValues(c->Encode(), &values);
    EXPECT_NE(values.type, bson::BsonType::kEOO);
    EXPECT_EQ(values.missing, 1u);
  }
  Column two_types;
  two_types.Int32(1).Int32(2).Int64(3);
  Column other;
  other.Double(1).Double(2).Add([](bson::BsonBuilder& b) { b.AppendString("", "x"); }).Double(3);
  Column all_missing;
  all_missing.Missing().Missing();
  for (const Column* c : {&two_types, &other, &all_missing}) {
    ColumnValues values;
    ExpectSameValues(c->Encode(), &values);
    EXPECT_EQ(values.type, bson::BsonType::kEOO);
  }
}

// Corrupt columns (bytes overwritten, bits flipped, truncated) give the same error, or the same
// cells, from every path: the fast path validates as the general one does.
TEST(BsonColumnElementsTest, CorruptColumnsRejectedAlike) {
  std::mt19937_64 rng(EnvOr("HG_BSONCOLUMN_SEED", 7));
  const uint64_t iters = EnvOr("HG_BSONCOLUMN_ITERS", 300);
  ColumnElements reused;
  for (uint64_t iter = 0; iter < iters; ++iter) {
    SCOPED_TRACE(iter);
    const Column col = iter % 2 ? RandomColumn(rng) : NumericColumn(rng);
    const std::string good = col.Encode();
    for (int m = 0; m < 8; ++m) {
      std::string bad = good;
      if (bad.empty()) break;
      const size_t at = rng() % bad.size();
      switch (rng() % 4) {
        case 0:
          bad[at] = static_cast<char>(rng());
          break;
        case 1:
          bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
          break;
        case 2:
          bad.resize(at);
          break;
        default:
          // A whole word's worth of garbage: invalid selectors, values too wide.
          for (size_t k = at; k < bad.size() && k < at + 8; ++k) bad[k] = static_cast<char>(rng());
          break;
      }
      ExpectSameDecoding(bad, m % 2 ? &reused : nullptr);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(BsonColumnElementsTest, KnownCorruptInputs) {
  // A double literal, then a block whose word has selector 0.
  std::string bad("\x01\x00\x00\x00\x00\x00\x00\x00\xf0\x3f\x80", 11);
  bad.append(8, '\0');
  bad.push_back('\0');
  ExpectSameDecoding(bad);
  // An int32 literal followed by a delta that leaves int32's range.
  Column c;
  c.Int32(INT32_MAX).Int32(INT32_MAX - 1);
  std::string enc = c.Encode();
  ExpectSameDecoding(enc);
  ExpectSameDecoding("");
  ExpectSameDecoding(std::string(1, '\0'));
}

// A cell cap stops both paths at the same cell with the same error: columns of every kind,
// capped below, at and above their length.
TEST(BsonColumnElementsTest, CellCapAlike) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 300; ++iter) {
    SCOPED_TRACE(iter);
    const Column col = iter % 2 ? RandomColumn(rng) : NumericColumn(rng);
    const std::string binary = col.Encode();
    const size_t n = col.docs.size();
    for (size_t cap : {size_t{0}, n / 3, n > 0 ? n - 1 : 0, n, n + 1}) {
      auto want = DecodeBsonColumn(binary, cap);
      ColumnElements elements;
      Status st = DecodeBsonColumnElements(binary, &elements, n, cap);
      ColumnValues values;
      Status vst = DecodeBsonColumnValues(binary, &values, n, cap);
      if (!vst.ok()) {
        EXPECT_EQ(vst.reason(), want.status().reason()) << "cap " << cap;
      }
      if (values.type != bson::BsonType::kEOO) {
        EXPECT_TRUE(want.ok());
        EXPECT_EQ(values.size(), n);
      }
      ASSERT_EQ(st.ok(), want.ok()) << "cap " << cap << ": " << st.ToString();
      ASSERT_EQ(want.ok(), cap >= n) << "cap " << cap;
      if (!want.ok()) {
        EXPECT_EQ(st.reason(), want.status().reason()) << "cap " << cap;
        EXPECT_EQ(elements.size(), 0u);
      } else {
        EXPECT_EQ(elements.size(), n);
      }
    }
  }
  // A few bytes of RLE standing for ~30,000 cells, capped at 10: refused before they are built.
  Column runs;
  for (int i = 0; i < 30000; ++i) runs.Double(1.5);
  const std::string binary = runs.Encode();
  ASSERT_LT(binary.size(), 200u);
  ColumnElements elements;
  Status st = DecodeBsonColumnElements(binary, &elements, 10, 11);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidBSON);
  EXPECT_NE(st.reason().find("more than the 11 cells expected"), std::string::npos) << st.reason();
  EXPECT_LT(elements.bytes.size(), 100000u);
}

// The 64-bit word decoder of the fast path against the general one, on random words of every
// selector (and invalid ones).
TEST(BsonColumnElementsTest, Simple8bWord64MatchesGeneral) {
  std::mt19937_64 rng(3);
  for (int iter = 0; iter < 200000; ++iter) {
    uint64_t word = rng();
    if (iter % 3 == 0) word = (word & ~uint64_t{0xF}) | (7 + rng() % 2);  // extended selectors
    if (iter % 3 == 1) {
      // A base selector with one slot of all ones (a skip) planted among random ones, or none.
      const uint64_t selector = 1 + rng() % 14;
      const int bits = simple8b::kBitsPerValue[simple8b::kBase][selector];
      const int count = simple8b::kValuesPerWord[simple8b::kBase][selector];
      word = (word & ~uint64_t{0xF}) | selector;
      if (rng() % 2 == 0) {
        const uint64_t ones = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
        word |= ones << (4 + bits * static_cast<int>(rng() % static_cast<uint64_t>(count)));
      }
    }
    Simple8bSlot<uint128> slots[60];
    int rle = -1, rle64 = -1;
    auto general = DecodeSimple8bWord(word, false, slots, &rle);
    uint64_t values[60];
    uint64_t skips = 0;
    auto fast = DecodeSimple8bWord64(word, values, &skips, &rle64);
    ASSERT_EQ(fast.ok(), general.ok()) << std::hex << word;
    if (!general.ok()) {
      ASSERT_EQ(fast.status().reason(), general.status().reason());
      continue;
    }
    ASSERT_EQ(fast.value(), general.value()) << std::hex << word;
    if (general.value() == 0) {
      ASSERT_EQ(rle64, rle);
      continue;
    }
    for (int i = 0; i < general.value(); ++i) {
      ASSERT_EQ(((skips >> i) & 1) != 0, slots[i].skip) << std::hex << word << " slot " << i;
      if (!slots[i].skip) {
        ASSERT_EQ(values[i], static_cast<uint64_t>(slots[i].value));
      }
    }
  }
}

}  // namespace
}  // namespace hourglass::bsoncolumn
