#include "timeseries/bucket_field_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "collation/collator.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonObj;

BsonObj J(std::string_view json) {
  auto sw = bson::FromJson(json);
  EXPECT_TRUE(sw.ok()) << json;
  return sw.value();
}

// Byte equality: types (int vs long vs double) and field order both matter.
#define EXPECT_DOC(actual, expected_json)                                                  \
  do {                                                                                     \
    BsonObj a_ = (actual);                                                                 \
    BsonObj e_ = J(expected_json);                                                         \
    EXPECT_TRUE(a_.BinaryEqual(e_))                                                        \
        << "actual:   " << a_.ToCanonicalJson() << "\nexpected: " << e_.ToCanonicalJson(); \
  } while (0)

class BucketFieldTreeMinMaxTest : public ::testing::Test {
 protected:
  void Add(std::string_view json) { mm_.Update(J(json), "meta"); }
  BucketFieldTree mm_;
};

TEST_F(BucketFieldTreeMinMaxTest, EmptyBeforeFirstUpdate) {
  EXPECT_TRUE(mm_.IsEmpty());
  EXPECT_DOC(mm_.Min(), "{}");
  EXPECT_DOC(mm_.Max(), "{}");
}

TEST_F(BucketFieldTreeMinMaxTest, MetaFieldIsSkippedAtTopLevelOnly) {
  Add(R"({"meta": 1})");
  EXPECT_DOC(mm_.Min(), "{}");
  Add(R"({"meta": 2, "x": {"meta": 3}})");
  EXPECT_DOC(mm_.Min(), R"({"x": {"meta": 3}})");
  EXPECT_DOC(mm_.Max(), R"({"x": {"meta": 3}})");
}

TEST_F(BucketFieldTreeMinMaxTest, NumbersCompareAcrossWidthsAndKeepTheirType) {
  // The sequence of MongoDB's jstests/core/timeseries/timeseries_min_max.js.
  Add(R"({"a": 1.5})");
  EXPECT_DOC(mm_.Min(), R"({"a": 1.5})");
  EXPECT_DOC(mm_.Max(), R"({"a": 1.5})");
  Add(R"({"a": {"$numberLong": "2"}})");
  EXPECT_DOC(mm_.Min(), R"({"a": 1.5})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"$numberLong": "2"}})");
  Add(R"({"a": 1})");
  EXPECT_DOC(mm_.Min(), R"({"a": 1})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"$numberLong": "2"}})");
  Add(R"({"a": {"$numberDecimal": "2.5"}})");
  EXPECT_DOC(mm_.Min(), R"({"a": 1})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"$numberDecimal": "2.5"}})");
  Add(R"({"a": 0.5})");
  EXPECT_DOC(mm_.Min(), R"({"a": 0.5})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"$numberDecimal": "2.5"}})");
}

TEST_F(BucketFieldTreeMinMaxTest, EqualNumbersKeepTheFirstSeen) {
  Add(R"({"a": 1})");
  Add(R"({"a": 1.0})");
  Add(R"({"a": {"$numberLong": "1"}})");
  EXPECT_DOC(mm_.Min(), R"({"a": 1})");
  EXPECT_DOC(mm_.Max(), R"({"a": 1})");
}

TEST_F(BucketFieldTreeMinMaxTest, LargeIntegersCompareExactly) {
  Add(R"({"a": {"$numberLong": "9007199254740993"}})");
  Add(R"({"a": 9007199254740992.0})");
  EXPECT_DOC(mm_.Min(), R"({"a": 9007199254740992.0})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"$numberLong": "9007199254740993"}})");
}

TEST_F(BucketFieldTreeMinMaxTest, NaNIsBelowEveryNumber) {
  Add(R"({"a": 1})");
  Add(R"({"a": {"$numberDouble": "NaN"}})");
  Add(R"({"a": {"$numberDouble": "-Infinity"}})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"$numberDouble": "NaN"}})");
  EXPECT_DOC(mm_.Max(), R"({"a": 1})");
}

TEST_F(BucketFieldTreeMinMaxTest, StringsCompareBinary) {
  Add(R"({"s": "b"})");
  Add(R"({"s": "B"})");
  Add(R"({"s": "ba"})");
  Add(R"({"s": "a long string that does not fit a small buffer"})");
  EXPECT_DOC(mm_.Min(), R"({"s": "B"})");
  EXPECT_DOC(mm_.Max(), R"({"s": "ba"})");
}

TEST_F(BucketFieldTreeMinMaxTest, DatesAndTimeFieldLikeAnyOther) {
  Add(R"({"t": {"$date": "2021-05-18T00:00:10Z"}})");
  Add(R"({"t": {"$date": "2021-05-18T00:00:05Z"}})");
  Add(R"({"t": {"$date": "2021-05-18T00:00:20Z"}})");
  EXPECT_DOC(mm_.Min(), R"({"t": {"$date": "2021-05-18T00:00:05Z"}})");
  EXPECT_DOC(mm_.Max(), R"({"t": {"$date": "2021-05-18T00:00:20Z"}})");
  // Pre-1970 dates are negative milliseconds and sort first.
  Add(R"({"t": {"$date": {"$numberLong": "-1000"}}})");
  EXPECT_DOC(mm_.Min(), R"({"t": {"$date": {"$numberLong": "-1000"}}})");
}

TEST_F(BucketFieldTreeMinMaxTest, MixedScalarTypesFollowCanonicalOrder) {
  // null < numbers < string < objectId < bool < date < timestamp; MinKey/MaxKey at the ends.
  Add(R"({"v": "x", "w": true})");
  Add(R"({"v": 5, "w": {"$date": "2021-01-01T00:00:00Z"}})");
  Add(R"({"v": null, "w": {"$oid": "0123456789abcdef01234567"}})");
  Add(R"({"v": {"$timestamp": {"t": 1, "i": 1}}, "w": false})");
  EXPECT_DOC(mm_.Min(), R"({"v": null, "w": {"$oid": "0123456789abcdef01234567"}})");
  EXPECT_DOC(mm_.Max(),
             R"({"v": {"$timestamp": {"t": 1, "i": 1}}, "w": {"$date": "2021-01-01T00:00:00Z"}})");
  Add(R"({"v": {"$minKey": 1}, "w": {"$maxKey": 1}})");
  EXPECT_DOC(mm_.Min(), R"({"v": {"$minKey": 1}, "w": {"$oid": "0123456789abcdef01234567"}})");
  EXPECT_DOC(mm_.Max(), R"({"v": {"$timestamp": {"t": 1, "i": 1}}, "w": {"$maxKey": 1}})");
}

TEST_F(BucketFieldTreeMinMaxTest, SparseRowsOnlyAffectTheirFields) {
  Add(R"({"a": 1, "c": 1})");
  Add(R"({"b": 2})");
  Add(R"({"c": 3, "d": 3})");
  // Order of first appearance: a, c, then b, then d.
  EXPECT_DOC(mm_.Min(), R"({"a": 1, "c": 1, "b": 2, "d": 3})");
  EXPECT_DOC(mm_.Max(), R"({"a": 1, "c": 3, "b": 2, "d": 3})");
}

TEST_F(BucketFieldTreeMinMaxTest, FieldOrderIsFirstAppearanceEvenWhenRowsReorder) {
  Add(R"({"b": 1, "a": {"y": 1, "x": 1}})");
  Add(R"({"a": {"x": 0, "z": 5, "y": 2}, "c": 0, "b": 0})");
  EXPECT_DOC(mm_.Min(), R"({"b": 0, "a": {"y": 1, "x": 0, "z": 5}, "c": 0})");
  EXPECT_DOC(mm_.Max(), R"({"b": 1, "a": {"y": 2, "x": 1, "z": 5}, "c": 0})");
}

TEST_F(BucketFieldTreeMinMaxTest, ObjectsAndArraysMergeElementWise) {
  Add(R"({"a": {"x": 1, "y": 2}, "b": [1, 2]})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"x": 1, "y": 2}, "b": [1, 2]})");
  Add(R"({"a": {"x": 2, "y": 1}, "b": [2, 1]})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"x": 1, "y": 1}, "b": [1, 1]})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"x": 2, "y": 2}, "b": [2, 2]})");
}

TEST_F(BucketFieldTreeMinMaxTest, NestedObjectsAndArraysMergeRecursively) {
  Add(R"({"a": {"x": {"z": [3, 4]}}, "b": [{"x": 3, "y": 4}]})");
  Add(R"({"a": {"x": {"z": [4, 3]}}, "b": [{"x": 4, "y": 3}, 3, 1]})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"x": {"z": [3, 3]}}, "b": [{"x": 3, "y": 3}, 3, 1]})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"x": {"z": [4, 4]}}, "b": [{"x": 4, "y": 4}, 3, 1]})");
}

TEST_F(BucketFieldTreeMinMaxTest, EmptyObjectsCount) {
  Add(R"({"a": {}})");
  EXPECT_DOC(mm_.Min(), R"({"a": {}})");
  Add(R"({"a": {"x": {}}})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"x": {}}})");
  Add(R"({"a": {"x": {"y": 1}}})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"x": {"y": 1}}})");
  Add(R"({"a": {"x": {}}})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"x": {"y": 1}}})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"x": {"y": 1}}})");
}

TEST_F(BucketFieldTreeMinMaxTest, ArraysOfDifferentLengthsMergeByPosition) {
  Add(R"({"a": [1, 5]})");
  Add(R"({"a": [3]})");
  Add(R"({"a": [0, 2, 7]})");
  EXPECT_DOC(mm_.Min(), R"({"a": [0, 2, 7]})");
  EXPECT_DOC(mm_.Max(), R"({"a": [3, 5, 7]})");
  Add(R"({"a": []})");
  EXPECT_DOC(mm_.Min(), R"({"a": [0, 2, 7]})");
}

TEST_F(BucketFieldTreeMinMaxTest, ScalarBeatsObjectForMinObjectWinsMax) {
  Add(R"({"a": 5})");
  Add(R"({"a": {"x": 1}})");
  EXPECT_DOC(mm_.Min(), R"({"a": 5})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"x": 1}})");
  // The max object keeps merging its subfields; the min stays the scalar.
  Add(R"({"a": {"x": 0, "y": 3}})");
  EXPECT_DOC(mm_.Min(), R"({"a": 5})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"x": 1, "y": 3}})");
  // A string ranks below objects too, but above 5.
  Add(R"({"a": "s"})");
  EXPECT_DOC(mm_.Min(), R"({"a": 5})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"x": 1, "y": 3}})");
  Add(R"({"a": 4})");
  EXPECT_DOC(mm_.Min(), R"({"a": 4})");
}

TEST_F(BucketFieldTreeMinMaxTest, ObjectFirstThenScalar) {
  Add(R"({"a": {"x": 1}})");
  Add(R"({"a": 5})");
  EXPECT_DOC(mm_.Min(), R"({"a": 5})");
  EXPECT_DOC(mm_.Max(), R"({"a": {"x": 1}})");
  // Scalars above objects in the canonical order (binData, bool, date...) win the max.
  Add(R"({"a": true})");
  EXPECT_DOC(mm_.Max(), R"({"a": true})");
  Add(R"({"a": {"x": 9}})");
  EXPECT_DOC(mm_.Min(), R"({"a": 5})");
  EXPECT_DOC(mm_.Max(), R"({"a": true})");
}

TEST_F(BucketFieldTreeMinMaxTest, ArrayRanksAboveObject) {
  Add(R"({"a": [3, 4]})");
  Add(R"({"a": {"x": 1}})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"x": 1}})");
  EXPECT_DOC(mm_.Max(), R"({"a": [3, 4]})");
  // Arrays only reach the max side, objects only the min side.
  Add(R"({"a": [0, 9, 9]})");
  Add(R"({"a": {"x": 0, "y": 2}})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"x": 0, "y": 2}})");
  EXPECT_DOC(mm_.Max(), R"({"a": [3, 9, 9]})");
}

TEST_F(BucketFieldTreeMinMaxTest, SideThatSwitchesKindStartsAfresh) {
  Add(R"({"a": {"x": 1, "y": 1}})");
  Add(R"({"a": [7]})");
  // The max switched from the object to the array: no trace of x/y in it.
  EXPECT_DOC(mm_.Max(), R"({"a": [7]})");
  EXPECT_DOC(mm_.Min(), R"({"a": {"x": 1, "y": 1}})");
  Add(R"({"a": 2})");
  // And the min switched from the object to 2.
  EXPECT_DOC(mm_.Min(), R"({"a": 2})");
  EXPECT_DOC(mm_.Max(), R"({"a": [7]})");
}

TEST_F(BucketFieldTreeMinMaxTest, ObjectInsideArrayVersusScalar) {
  Add(R"({"a": [{"x": 1}, 2]})");
  Add(R"({"a": [3, {"y": 1}]})");
  // Position 0: min 3 (number < object), max {x:1}; position 1: min 2, max {y:1}.
  EXPECT_DOC(mm_.Min(), R"({"a": [3, 2]})");
  EXPECT_DOC(mm_.Max(), R"({"a": [{"x": 1}, {"y": 1}]})");
}

TEST_F(BucketFieldTreeMinMaxTest, ManyFieldsInShuffledOrder) {
  // Wider than the lock-step lookup's index threshold, fields shuffled per row.
  std::vector<int> order(40);
  for (int i = 0; i < 40; ++i) order[i] = i;
  std::mt19937 rng(7);
  for (int row = 0; row < 20; ++row) {
    if (row > 0) std::shuffle(order.begin(), order.end(), rng);
    bson::BsonBuilder b;
    for (int f : order) b.AppendInt32("f" + std::to_string(f), f * 100 + row);
    mm_.Update(b.Obj(), "meta");
  }
  BsonObj min = mm_.Min(), max = mm_.Max();
  EXPECT_EQ(min.NumFields(), 40);
  int i = 0;
  for (bson::BsonElement e : min) {
    // First row's order (0..39) is the output order.
    EXPECT_EQ(e.FieldName(), "f" + std::to_string(i));
    EXPECT_EQ(e.Int32(), i * 100);
    EXPECT_EQ(max["f" + std::to_string(i)].Int32(), i * 100 + 19);
    ++i;
  }
}

TEST_F(BucketFieldTreeMinMaxTest, FromBucketRoundTrips) {
  const char* rows[] = {
      R"({"t": {"$date": "2021-05-18T00:00:10Z"}, "a": 5, "b": {"x": 1, "y": [1, 2]}, "s": "q"})",
      R"({"t": {"$date": "2021-05-18T00:00:05Z"}, "a": {"k": 1}, "b": {"x": 0}, "c": null})",
      R"({"t": {"$date": "2021-05-18T00:00:30Z"}, "a": [2], "b": {"y": [0, 5, 6]}, "s": 1.5})",
      R"({"t": {"$date": "2021-05-18T00:00:20Z"}, "a": {"k": 0}, "c": true})"};
  for (const char* r : rows) Add(r);
  BsonObj min = mm_.Min(), max = mm_.Max();
  EXPECT_DOC(min,
             R"({"t": {"$date": "2021-05-18T00:00:05Z"}, "a": 5, "b": {"x": 0, "y": [0, 2, 6]},)"
             R"( "s": 1.5, "c": null})");
  EXPECT_DOC(max,
             R"({"t": {"$date": "2021-05-18T00:00:30Z"}, "a": [2], "b": {"x": 1, "y": [1, 5, 6]},)"
             R"( "s": "q", "c": true})");

  // Mixed kinds (a: 5 and [2]): FromBucket refuses the schema, the min/max alone come back.
  EXPECT_FALSE(BucketFieldTree::FromBucket(min, max, nullptr).ok());
  BucketFieldTree reopened;
  reopened.UpdateMinMax(min, {});
  reopened.UpdateMinMax(max, {});
  EXPECT_TRUE(reopened.Min().BinaryEqual(min)) << reopened.Min().ToCanonicalJson();
  EXPECT_TRUE(reopened.Max().BinaryEqual(max)) << reopened.Max().ToCanonicalJson();

  // Continuing on the reopened summaries gives what continuing on the original gives.
  const char* more[] = {R"({"a": -1, "b": {"x": 7, "z": 1}, "d": "new"})",
                        R"({"a": [3, 1], "b": {"y": [9]}, "c": false})"};
  for (const char* r : more) {
    Add(r);
    reopened.Update(J(r), "meta");
  }
  EXPECT_TRUE(reopened.Min().BinaryEqual(mm_.Min())) << reopened.Min().ToCanonicalJson();
  EXPECT_TRUE(reopened.Max().BinaryEqual(mm_.Max())) << reopened.Max().ToCanonicalJson();
  EXPECT_DOC(mm_.Min(),
             R"({"t": {"$date": "2021-05-18T00:00:05Z"}, "a": -1,)"
             R"( "b": {"x": 0, "y": [0, 2, 6], "z": 1}, "s": 1.5, "c": null, "d": "new"})");
  EXPECT_DOC(mm_.Max(),
             R"({"t": {"$date": "2021-05-18T00:00:30Z"}, "a": [3, 1],)"
             R"( "b": {"x": 7, "y": [9, 5, 6], "z": 1}, "s": "q", "c": true, "d": "new"})");
}

// FoldBounds folds a run of rows' per-field bounds as UpdateMinMax of each row would: random
// runs of rows with values of every scalar kind the canonical order mixes (numbers of three
// widths that compare equal across types, NaN, -0.0, strings, dates, bools, null), duplicate
// names, fields missing, objects and arrays (which FoldBounds leaves to UpdateMinMax), fields
// the tree has never seen: min and max must be byte-equal, field order included.
TEST(BucketFieldTreeFoldBoundsTest, FoldsAsUpdateMinMaxOfEachRow) {
  std::mt19937 rng(23);
  auto value = [&](bson::BsonBuilder& b, const std::string& name) {
    switch (rng() % 12) {
      case 0:
        b.AppendInt32(name, static_cast<int32_t>(rng() % 5));
        break;
      case 1:
        b.AppendInt64(name, static_cast<int64_t>(rng() % 5));
        break;
      case 2:
        b.AppendDouble(name, static_cast<double>(rng() % 5));
        break;
      case 3:
        b.AppendDouble(name, std::nan(""));
        break;
      case 4:
        b.AppendDouble(name, rng() % 2 ? -0.0 : 0.0);
        break;
      case 5:
        b.AppendString(name, std::string(1 + rng() % 3, static_cast<char>('a' + rng() % 3)));
        break;
      case 6:
        b.AppendDate(name, static_cast<int64_t>(rng() % 4));
        break;
      case 7:
        b.AppendBool(name, rng() % 2 != 0);
        break;
      case 8:
        b.AppendNull(name);
        break;
      case 9: {
        size_t t = b.OpenObject(name);
        b.AppendInt32("x", static_cast<int32_t>(rng() % 3));
        b.Close(t);
        break;
      }
      default:
        b.AppendDouble(name, static_cast<double>(rng() % 1000) / 7);
        break;
    }
  };
  auto row = [&](int fields) {
    bson::BsonBuilder b;
    for (int f = 0; f < fields; ++f) {
      if (rng() % 6 == 0) continue;  // missing
      value(b, "f" + std::to_string(f));
      if (rng() % 40 == 0) value(b, "f" + std::to_string(f));  // a duplicate name
    }
    return b.Obj();
  };
  int folded = 0, declined = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int fields = 1 + static_cast<int>(rng() % 6);
    BucketFieldTree by_rows, by_bounds;
    // Some runs start from a tree that has seen every field, some from one that has not.
    for (int i = 0, n = static_cast<int>(rng() % 3); i < n; ++i) {
      BsonObj first = row(rng() % 2 ? fields : fields - 1);
      by_rows.Update(first, {});
      by_bounds.Update(first, {});
    }
    std::vector<BsonObj> rows;
    for (int i = 0, n = 1 + static_cast<int>(rng() % 12); i < n; ++i) rows.push_back(row(fields));
    // Number fields by name, as a bucket document numbers its columns.
    std::vector<std::string> names;
    BucketFieldTree::RowBounds bounds;
    for (const BsonObj& r : rows) {
      by_rows.UpdateMinMax(r, {});
      for (bson::FieldCursor c(r.data()); c.Next();) {
        const std::string name(c.field().name);
        auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) it = names.insert(names.end(), name);
        bounds.Add(static_cast<size_t>(it - names.begin()), c.field());
      }
    }
    if (by_bounds.FoldBounds(bounds)) {
      ++folded;
    } else {
      ++declined;
      for (const BsonObj& r : rows) by_bounds.UpdateMinMax(r, {});
    }
    ASSERT_TRUE(by_bounds.Min().BinaryEqual(by_rows.Min()))
        << trial << "\n"
        << by_bounds.Min().ToCanonicalJson() << "\n"
        << by_rows.Min().ToCanonicalJson();
    ASSERT_TRUE(by_bounds.Max().BinaryEqual(by_rows.Max()))
        << trial << "\n"
        << by_bounds.Max().ToCanonicalJson() << "\n"
        << by_rows.Max().ToCanonicalJson();
  }
  // Both outcomes occur often enough to have been tested.
  EXPECT_GT(folded, 300);
  EXPECT_GT(declined, 300);
}

// A declined fold changes nothing: a field the tree lacks comes after one it holds.
TEST(BucketFieldTreeFoldBoundsTest, DeclinesWithoutChangingAnything) {
  BucketFieldTree tree;
  tree.Update(J(R"({"a": 5})"), {});
  BsonObj r = J(R"({"a": 1, "b": 2})");
  BucketFieldTree::RowBounds bounds;
  size_t slot = 0;
  for (bson::FieldCursor c(r.data()); c.Next();) bounds.Add(slot++, c.field());
  EXPECT_FALSE(tree.FoldBounds(bounds));
  EXPECT_DOC(tree.Min(), R"({"a": 5})");
  EXPECT_DOC(tree.Max(), R"({"a": 5})");
}

TEST_F(BucketFieldTreeMinMaxTest, ResetForgetsEverything) {
  Add(R"({"a": 1, "b": {"c": 2}})");
  EXPECT_FALSE(mm_.IsEmpty());
  mm_.Reset();
  EXPECT_TRUE(mm_.IsEmpty());
  EXPECT_DOC(mm_.Min(), "{}");
  Add(R"({"z": 3})");
  EXPECT_DOC(mm_.Min(), R"({"z": 3})");
}

TEST_F(BucketFieldTreeMinMaxTest, CopiesAreIndependent) {
  Add(R"({"a": 1})");
  BucketFieldTree copy = mm_;
  Add(R"({"a": 0})");
  EXPECT_DOC(copy.Min(), R"({"a": 1})");
  EXPECT_DOC(mm_.Min(), R"({"a": 0})");
}

TEST_F(BucketFieldTreeMinMaxTest, ApproxMemoryGrowsWithFieldsAndLongValues) {
  size_t empty = mm_.ApproxMemory();
  Add(R"({"a": 1, "b": 2})");
  size_t two = mm_.ApproxMemory();
  EXPECT_GT(two, empty);
  Add(R"({"s": "a string value well beyond any small-string buffer, so it lives on the heap"})");
  EXPECT_GT(mm_.ApproxMemory(), two + 2 * 70);
}

// Throughput on 11-field measurements (time, meta, _id, 4 doubles, int, long, string); run with
// --gtest_also_run_disabled_tests on a Release build. Target: > 1M measurements/s on one core.
TEST(BucketFieldTreeBenchmark, DISABLED_MeasurementsPerSecond) {
  std::vector<BsonObj> docs;
  std::mt19937 rng(1);
  for (int i = 0; i < 1000; ++i) {
    bson::BsonBuilder b;
    b.AppendDate("t", 1600000000000 + i * 1000);
    b.AppendString("meta", "sensor-1");
    b.AppendObjectId("_id", bson::ObjectId::Generate());
    for (int f = 0; f < 4; ++f) b.AppendDouble("d" + std::to_string(f), rng() / 1e6);
    b.AppendInt32("i0", static_cast<int32_t>(rng() % 1000));
    b.AppendInt64("l0", rng());
    b.AppendString("s0", rng() % 2 ? "ok" : "warn");
    docs.push_back(b.Obj());
  }
  BucketFieldTree mm;
  auto start = std::chrono::steady_clock::now();
  size_t n = 0;
  for (int rep = 0; rep < 1000; ++rep) {
    mm.Reset();
    for (const BsonObj& d : docs) mm.Update(d, "meta");
    n += docs.size();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("BucketFieldTree::Update: %.2f M measurements/s\n", n / secs / 1e6);
}

class BucketFieldTreeTest : public ::testing::Test {
 protected:
  void Add(std::string_view json) {
    ASSERT_TRUE(tree_.IsCompatible(J(json), "meta")) << json;
    tree_.Update(J(json), "meta");
  }
  bool Fits(std::string_view json) const { return tree_.IsCompatible(J(json), "meta"); }
  BucketFieldTree tree_;
};

TEST_F(BucketFieldTreeTest, EmptySchemaAcceptsAnything) {
  EXPECT_TRUE(tree_.IsEmpty());
  EXPECT_TRUE(Fits(R"({"a": 1, "b": {"c": [1, "x"]}})"));
}

TEST_F(BucketFieldTreeTest, NumbersAreOneClass) {
  Add(R"({"a": 1})");
  EXPECT_TRUE(Fits(R"({"a": 2.5})"));
  EXPECT_TRUE(Fits(R"({"a": {"$numberLong": "7"}})"));
  EXPECT_TRUE(Fits(R"({"a": {"$numberDecimal": "1.1"}})"));
  EXPECT_TRUE(Fits(R"({"a": {"$numberDouble": "NaN"}})"));
}

TEST_F(BucketFieldTreeTest, NumberToStringIsAChange) {
  Add(R"({"a": 1})");
  EXPECT_FALSE(Fits(R"({"a": "1"})"));
}

TEST_F(BucketFieldTreeTest, DistinctScalarBracketsAreChanges) {
  Add(R"({"s": "x", "d": {"$date": "2021-01-01T00:00:00Z"}, "n": null, "b": true,)"
      R"( "o": {"$oid": "0123456789abcdef01234567"}, "ts": {"$timestamp": {"t": 1, "i": 1}}})");
  EXPECT_TRUE(Fits(R"({"s": "y", "d": {"$date": "2022-01-01T00:00:00Z"}, "n": null, "b": false})"));
  EXPECT_FALSE(Fits(R"({"d": {"$timestamp": {"t": 1, "i": 1}}})"));
  EXPECT_FALSE(Fits(R"({"ts": {"$date": "2022-01-01T00:00:00Z"}})"));
  EXPECT_FALSE(Fits(R"({"n": 0})"));
  EXPECT_FALSE(Fits(R"({"b": 1})"));
  EXPECT_FALSE(Fits(R"({"o": "0123456789abcdef01234567"})"));
  EXPECT_FALSE(Fits(R"({"s": {"$binary": {"base64": "AAE=", "subType": "00"}}})"));
  EXPECT_FALSE(Fits(R"({"s": {"$regularExpression": {"pattern": "x", "options": ""}}})"));
  EXPECT_FALSE(Fits(R"({"n": {"$undefined": true}})"));
}

TEST_F(BucketFieldTreeTest, AbsentAndNewFieldsAreFine) {
  Add(R"({"a": 1, "b": "x"})");
  EXPECT_TRUE(Fits(R"({})"));
  EXPECT_TRUE(Fits(R"({"b": "y"})"));
  EXPECT_TRUE(Fits(R"({"c": true, "a": 3})"));
}

TEST_F(BucketFieldTreeTest, MetaFieldIsIgnored) {
  Add(R"({"meta": 1, "a": 1})");
  EXPECT_TRUE(Fits(R"({"meta": "now a string", "a": 2})"));
  // Only at the top level.
  Add(R"({"x": {"meta": 1}})");
  EXPECT_FALSE(Fits(R"({"x": {"meta": "s"}})"));
}

TEST_F(BucketFieldTreeTest, ObjectScalarAndArrayKindsDiffer) {
  Add(R"({"o": {"x": 1}, "s": 1, "r": [1]})");
  EXPECT_FALSE(Fits(R"({"o": 1})"));
  EXPECT_FALSE(Fits(R"({"o": [1]})"));
  EXPECT_FALSE(Fits(R"({"s": {"x": 1}})"));
  EXPECT_FALSE(Fits(R"({"s": [1]})"));
  EXPECT_FALSE(Fits(R"({"r": {"x": 1}})"));
  EXPECT_FALSE(Fits(R"({"r": 1})"));
  EXPECT_TRUE(Fits(R"({"o": {}, "s": 2.0, "r": []})"));
}

TEST_F(BucketFieldTreeTest, NestedPathChanges) {
  Add(R"({"a": {"b": 1, "c": {"d": "x"}}})");
  EXPECT_TRUE(Fits(R"({"a": {"b": 2}})"));
  EXPECT_TRUE(Fits(R"({"a": {"e": true}})"));
  EXPECT_FALSE(Fits(R"({"a": {"b": "2"}})"));
  EXPECT_FALSE(Fits(R"({"a": {"c": {"d": 1}}})"));
  EXPECT_FALSE(Fits(R"({"a": {"c": 5}})"));
  // A subfield seen once stays part of the schema even when later rows omit it.
  Add(R"({"a": {"e": true}})");
  EXPECT_FALSE(Fits(R"({"a": {"e": 1}})"));
}

TEST_F(BucketFieldTreeTest, ArraysRecurseByPosition) {
  Add(R"({"a": [1, 2]})");
  EXPECT_TRUE(Fits(R"({"a": [3]})"));
  EXPECT_TRUE(Fits(R"({"a": [3, 4, "new position"]})"));
  EXPECT_FALSE(Fits(R"({"a": ["x"]})"));
  EXPECT_FALSE(Fits(R"({"a": [1, {"x": 1}]})"));
  Add(R"({"a": [1, 2, "s"]})");
  EXPECT_FALSE(Fits(R"({"a": [1, 2, 3]})"));
}

TEST_F(BucketFieldTreeTest, ObjectsInsideArrays) {
  Add(R"({"a": [{"x": 1}]})");
  EXPECT_TRUE(Fits(R"({"a": [{"x": 2, "y": "s"}]})"));
  EXPECT_FALSE(Fits(R"({"a": [{"x": "s"}]})"));
}

TEST_F(BucketFieldTreeTest, IsCompatibleDoesNotModify) {
  Add(R"({"a": 1})");
  EXPECT_TRUE(Fits(R"({"b": "x"})"));
  // b was only checked, never recorded.
  EXPECT_TRUE(Fits(R"({"b": 1})"));
}

TEST_F(BucketFieldTreeTest, UpdateIfCompatible) {
  EXPECT_TRUE(tree_.UpdateIfCompatible(J(R"({"a": 1})"), ""));
  EXPECT_FALSE(tree_.UpdateIfCompatible(J(R"({"a": "x", "b": 1})"), ""));
  // The rejected row left nothing behind.
  EXPECT_TRUE(Fits(R"({"b": "y"})"));
}

TEST_F(BucketFieldTreeTest, ResetForgetsEverything) {
  Add(R"({"a": 1})");
  tree_.Reset();
  EXPECT_TRUE(tree_.IsEmpty());
  EXPECT_TRUE(Fits(R"({"a": "x"})"));
}

TEST_F(BucketFieldTreeTest, ApproxMemoryGrows) {
  size_t empty = tree_.ApproxMemory();
  Add(R"({"a": 1, "b": {"c": [1, 2, 3]}})");
  EXPECT_GT(tree_.ApproxMemory(), empty);
}

// A tree that last folded `json` (recording its shape).
BucketFieldTree AfterRow(std::string_view json) {
  BucketFieldTree tree;
  tree.UpdateRecordingShape(J(json), "meta");
  return tree;
}

TEST(BucketFieldTreeShapeTest, PathsAndKindsInOrderNotValues) {
  const BucketFieldTree tree =
      AfterRow(R"({"t": 1, "meta": {"h": 1}, "a": {"b": "x", "c": [1, 2]}})");
  std::vector<std::string> top;
  EXPECT_TRUE(tree.HasShapeOf(J(R"({"t": 2.5, "meta": "other", "a": {"b": "y", "c": [
                                  {"$numberLong": "3"}, {"$numberDecimal": "4"}]}})"),
                              "meta", [&](const bson::FieldView& f) { top.emplace_back(f.name); }));
  EXPECT_EQ(top, (std::vector<std::string>{"t", "a"}));  // the metaField is left out
  // Same paths, same kinds (numbers of any width are one kind; strings and symbols one): equal.
  EXPECT_TRUE(tree.HasShapeOf(J(R"({"t": 1, "a": {"b": "x", "c": [1, 2]}})"), "meta"));
  // A kind, a name, the order, the nesting or an array's length differs, or a field is missing
  // or added: not equal; every top-level field is still reported.
  for (const char* other :
       {R"({"t": "1", "a": {"b": "x", "c": [1, 2]}})",
        R"({"t": 1, "a": {"b": "x", "c": [1, "2"]}})", R"({"t": 1, "a": {"bb": "x", "c": [1, 2]}})",
        R"({"a": {"b": "x", "c": [1, 2]}, "t": 1})", R"({"t": 1, "a": {"b": "x"}, "c": [1, 2]})",
        R"({"t": 1, "a": {"b": "x", "c": [1, 2, 3]}})", R"({"t": 1, "a": {"b": "x", "c": [1]}})",
        R"({"t": 1, "a": {"b": "x", "c": {"0": 1, "1": 2}}})",
        R"({"t": 1, "a": {"b": null, "c": [1, 2]}})", R"({"t": 1})",
        R"({"t": 1, "a": {"b": "x", "c": [1, 2]}, "z": 0})"}) {
    int fields = 0;
    EXPECT_FALSE(tree.HasShapeOf(J(other), "meta", [&](const bson::FieldView&) { ++fields; }))
        << other;
    EXPECT_EQ(fields, J(other).NumFields()) << other;
  }
  EXPECT_FALSE(BucketFieldTree().HasShapeOf(J(R"({"t": 1})"), "meta"));  // none recorded
}

TEST(BucketFieldTreeShapeTest, TheLastFoldedShapeNeedsOnlyItsMinMax) {
  BucketFieldTree tree = AfterRow(R"({"a": 1, "b": "x"})");
  EXPECT_TRUE(tree.HasShapeOf(J(R"({"a": 7, "b": "y"})"), "meta"));
  // Folding a row of the recorded shape with UpdateMinMax gives what Update would have.
  BucketFieldTree full = tree;
  tree.UpdateMinMax(J(R"({"a": -3, "b": "z"})"), "meta");
  full.Update(J(R"({"a": -3, "b": "z"})"), "meta");
  EXPECT_TRUE(tree.Min().BinaryEqual(full.Min()));
  EXPECT_TRUE(tree.Max().BinaryEqual(full.Max()));
  // Update and UpdateMinMax keep the recorded shape; UpdateRecordingShape replaces it.
  EXPECT_TRUE(tree.HasShapeOf(J(R"({"a": 7, "b": "y"})"), "meta"));
  tree.UpdateRecordingShape(J(R"({"a": 1, "b": "x", "c": true})"), "meta");
  EXPECT_FALSE(tree.HasShapeOf(J(R"({"a": 7, "b": "y"})"), "meta"));
  EXPECT_TRUE(tree.HasShapeOf(J(R"({"a": 2, "b": "w", "c": false})"), "meta"));
  tree.Reset();
  EXPECT_FALSE(tree.HasShapeOf(J(R"({"a": 2, "b": "w", "c": false})"), "meta"));
}

TEST(BucketFieldTreeCollationTest, ValuesCompareUnderTheCollatorFieldNamesByBytes) {
  // MongoDB's timeseries_collation.js: strength 1 with numeric ordering.
  auto collator =
      collation::Collator::Make(J(R"({"locale": "en", "strength": 1, "numericOrdering": true})"));
  ASSERT_TRUE(collator.ok());
  BucketFieldTree tree;
  tree.SetCollator(collator.value());
  for (const char* r : {R"({"r": "s", "x": "5", "y": {"z": ["5"]}})",
                        R"({"r": "S", "x": "10", "X": "10", "Y": {"z": ["2"]}})",
                        R"({"x": "9", "w": ["b", "A"]})", R"({"w": ["B", "a"]})"}) {
    tree.Update(J(r), "meta");
  }
  // "s" and "S" are equal: the first is kept on both sides; "5" < "9" < "10" numerically; in
  // arrays position by position; "x" and "X" are two fields.
  EXPECT_DOC(tree.Min(), R"({"r": "s", "x": "5", "y": {"z": ["5"]}, "X": "10",
                             "Y": {"z": ["2"]}, "w": ["b", "A"]})");
  EXPECT_DOC(tree.Max(), R"({"r": "s", "x": "10", "y": {"z": ["5"]}, "X": "10",
                             "Y": {"z": ["2"]}, "w": ["b", "A"]})");
  // A bucket reopened from its control keeps comparing under the collation.
  auto reopened = BucketFieldTree::FromBucket(tree.Min(), tree.Max(), collator.value());
  ASSERT_TRUE(reopened.ok());
  reopened.value().Update(J(R"({"x": "100", "r": "R"})"), "meta");
  EXPECT_EQ(reopened.value().Max()["x"].Str(), "100");
  EXPECT_EQ(reopened.value().Max()["r"].Str(), "s");
  // Rows folded by bounds gathered in bytes order are refused under a collator.
  BucketFieldTree::RowBounds bounds;
  EXPECT_FALSE(tree.FoldBounds(bounds));
  // Without the collator, bytes order: "10" < "5" and "S" < "s".
  BucketFieldTree simple;
  simple.Update(J(R"({"r": "s", "x": "5"})"), "meta");
  simple.Update(J(R"({"r": "S", "x": "10"})"), "meta");
  EXPECT_DOC(simple.Min(), R"({"r": "S", "x": "10"})");
}

TEST(BucketFieldTreeFromBucketTest, DerivesTheSchemaOfTheRows) {
  BucketFieldTree mm;
  for (const char* r : {R"({"t": {"$date": "2021-01-01T00:00:00Z"}, "a": 1, "b": {"x": "s"}})",
                        R"({"t": {"$date": "2021-01-01T00:00:01Z"}, "a": 2.5, "c": [1, true]})",
                        R"({"t": {"$date": "2021-01-01T00:00:02Z"}, "b": {"y": null}})"}) {
    mm.Update(J(r), "");
  }
  auto sw = BucketFieldTree::FromBucket(mm.Min(), mm.Max(), nullptr);
  ASSERT_TRUE(sw.ok()) << sw.status().reason();
  const BucketFieldTree& schema = sw.value();
  EXPECT_TRUE(
      schema.IsCompatible(J(R"({"a": {"$numberLong": "3"}, "b": {"x": "t", "y": null}})"), ""));
  EXPECT_TRUE(schema.IsCompatible(J(R"({"c": [5, false, "new"]})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"a": "x"})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"b": {"x": 1}})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"b": {"y": 0}})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"c": [1, 1]})"), ""));
  EXPECT_FALSE(schema.IsCompatible(J(R"({"t": 5})"), ""));
}

TEST(BucketFieldTreeFromBucketTest, MixedSchemaBucketIsRejected) {
  // Rows {a: 1} and {a: "x"} (a pre-5.2 mixed bucket) give min {a: 1}, max {a: "x"}.
  auto sw = BucketFieldTree::FromBucket(J(R"({"a": 1})"), J(R"({"a": "x"})"), nullptr);
  EXPECT_FALSE(sw.ok());
  EXPECT_EQ(sw.status().code(), ErrorCode::kBadValue);
  // Object in some rows, scalar in others: min scalar, max object.
  sw = BucketFieldTree::FromBucket(J(R"({"a": 5})"), J(R"({"a": {"x": 1}})"), nullptr);
  EXPECT_FALSE(sw.ok());
  sw = BucketFieldTree::FromBucket(J(R"({"a": {"x": 1}})"), J(R"({"a": {"x": "s"}})"), nullptr);
  EXPECT_FALSE(sw.ok());
}

TEST_F(BucketFieldTreeTest, IsCompatibleHandsOverEveryTopLevelFieldButTheMeta) {
  Add(R"({"a": 1, "b": {"c": 2}})");
  std::vector<std::string> seen;
  auto collect = [&](const bson::FieldView& f) { seen.emplace_back(f.name); };
  EXPECT_FALSE(
      tree_.IsCompatible(J(R"({"a": "x", "meta": 1, "b": {"c": 3}, "d": 4})"), "meta", collect));
  // Even past the incompatible field.
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "d"}));
}

TEST_F(BucketFieldTreeTest, ResetMinMaxKeepsTheSchema) {
  Add(R"({"a": 1, "b": "x"})");
  tree_.ResetMinMax();
  EXPECT_DOC(tree_.Min(), "{}");
  EXPECT_DOC(tree_.Max(), "{}");
  EXPECT_FALSE(Fits(R"({"a": "now a string"})"));
  EXPECT_TRUE(Fits(R"({"b": "y"})"));
}

TEST_F(BucketFieldTreeTest, MinMaxAfterResetIsInTheOrderOfTheRowsFedSince) {
  Add(R"({"a": 1, "b": {"x": 1, "y": 2}, "c": 3})");
  tree_.ResetMinMax();
  tree_.UpdateMinMax(J(R"({"c": 5, "b": {"y": 0}, "z": true})"), "meta");
  Add(R"({"b": {"x": 7}, "a": 0})");
  // As a tree fed only the last two rows would have it.
  BucketFieldTree fresh;
  fresh.Update(J(R"({"c": 5, "b": {"y": 0}, "z": true})"), "meta");
  fresh.Update(J(R"({"b": {"x": 7}, "a": 0})"), "meta");
  EXPECT_DOC(tree_.Min(), R"({"c": 5, "b": {"y": 0, "x": 7}, "z": true, "a": 0})");
  EXPECT_TRUE(tree_.Min().BinaryEqual(fresh.Min()));
  EXPECT_TRUE(tree_.Max().BinaryEqual(fresh.Max()));
}

TEST_F(BucketFieldTreeTest, FieldsOnlyTheMinMaxSawAreNewToTheSchema) {
  tree_.UpdateMinMax(J(R"({"a": 1, "b": [1, 2]})"), "meta");
  EXPECT_TRUE(Fits(R"({"a": "x", "b": "y"})"));
  Add(R"({"a": "x", "b": ["s"]})");
  EXPECT_FALSE(Fits(R"({"a": 1})"));
  EXPECT_TRUE(Fits(R"({"b": ["t", 2]})"));
  EXPECT_FALSE(Fits(R"({"b": [1]})"));
  EXPECT_DOC(tree_.Min(), R"({"a": 1, "b": [1, 2]})");
  EXPECT_DOC(tree_.Max(), R"({"a": "x", "b": ["s", 2]})");
}

TEST_F(BucketFieldTreeTest, AppendMinReplacesTheDateField) {
  Add(R"({"t": {"$date": "2021-05-18T00:00:10Z"}, "v": 1})");
  bson::BsonBuilder b;
  tree_.AppendMin(b, "t", 0);
  EXPECT_DOC(b.Obj(), R"({"t": {"$date": "1970-01-01T00:00:00Z"}, "v": 1})");
  bson::BsonBuilder m;
  tree_.AppendMax(m);
  EXPECT_DOC(m.Obj(), R"({"t": {"$date": "2021-05-18T00:00:10Z"}, "v": 1})");
}

}  // namespace
}  // namespace hourglass::timeseries
