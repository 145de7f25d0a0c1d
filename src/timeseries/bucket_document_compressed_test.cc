// BucketDocument's compressed layout (spec timeseries.md 3.2, MongoDB 8.0's always-compressed
// buckets): the document a first write inserts, the byte-range edits later writes make, and a
// stored compressed bucket continued. Every state reached by edits is compared with the document
// built in one go from all the rows, and decoded by the compressed-bucket reader
// (DecompressBucket) back to the rows; the edits also go through a real WiredTiger table.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "storage/kv_engine.h"
#include "storage/storage_test_util.h"
#include "timeseries/bucket_compression.h"
#include "timeseries/bucket_document.h"
#include "timeseries/bucket_document_test_util.h"
#include "timeseries/bucket_unpacker.h"
#include "timeseries/mongo_bucket_test_data.h"

namespace hourglass::timeseries {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::ObjectId;
using testing::ApplyEdits;
using testing::ApplyWrite;
using testing::Edits;
using testing::J;

const ObjectId kId = J(R"({"x": {"$oid": "64b7f0000000000000000001"}})")["x"].Oid();

// The version-1 control a caller passes ({version: 1, min, max}); its size varies with `tag`.
BsonObj Control(int tag) {
  BsonBuilder b;
  b.AppendInt32("version", 1);
  size_t mn = b.OpenObject("min");
  b.AppendDate("t", 0);
  b.AppendString("pad", std::string(static_cast<size_t>(tag % 7), 'x'));
  b.Close(mn);
  size_t mx = b.OpenObject("max");
  b.AppendDate("t", 0);
  b.AppendInt32("n", tag);
  b.Close(mx);
  return b.Obj();
}

std::string BuildFresh(const BsonElement& meta, const std::vector<BsonObj>& rows,
                       const BsonObj& control, std::string_view skip = "") {
  BucketDocument doc = BucketDocument::Compressed(kId, meta, "t");
  doc.StageRows(rows, skip);
  std::string full;
  Edits edits;
  doc.Prepare(control, &full, &edits);
  EXPECT_TRUE(edits.empty());
  EXPECT_TRUE(bson::ValidateBson(full).ok()) << bson::ValidateBson(full).ToString();
  return full;
}

// The rows `bucket` holds, as the unpacker yields them (time, then the columns in order, the
// missing cells left out), without the meta.
std::vector<std::string> Unpacked(const BsonObj& bucket) {
  BucketUnpacker unpacker(UnpackSpec{
      .time_field = "t", .meta_field = std::nullopt, .mode = UnpackSpec::Mode::kAll, .fields = {}});
  std::vector<std::string> out;
  Status st = unpacker.Unpack(bucket, [&](BsonObj m) {
    out.push_back((m).ToJson());
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

// What unpacking gives for `row` stored in a bucket: time first, then the other fields in the
// order the bucket's columns have (`order`), without `skip`.
std::string Expected(const BsonObj& row, const std::vector<std::string>& order,
                     std::string_view skip = "") {
  BsonBuilder b;
  b.AppendElement(row["t"]);
  for (const std::string& name : order) {
    if (name == "t" || name == skip) continue;
    BsonElement e = row[name];
    if (!e.eoo()) b.AppendElement(e);
  }
  return (b.Obj().ToJson());
}

TEST(CompressedBucketDocumentTest, FreshDocumentHasMongoDbLayout) {
  BsonObj meta = J(R"({"m": {"host": "a"}})");
  // The time field is not first in the measurements: the time column still is.
  std::vector<BsonObj> rows = {
      J(R"({"x": 1.5, "t": {"$date": 1000}, "m": {"host": "a"}, "s": "on"})"),
      J(R"({"t": {"$date": 2000}, "x": 2.5, "m": {"host": "a"}})"),
      J(R"({"t": {"$date": 3000}, "m": {"host": "a"}, "s": "off", "n": 7})")};
  std::string full = BuildFresh(meta["m"], rows, Control(0), "m");
  BsonObj doc(full.data());
  std::vector<std::string> top;
  for (BsonElement e : doc) top.emplace_back(e.FieldName());
  EXPECT_EQ(top, (std::vector<std::string>{"_id", "control", "meta", "data"}));
  EXPECT_EQ(doc["_id"].Oid(), kId);
  EXPECT_EQ(doc["meta"].Obj().ToJson(), J(R"({"host": "a"})").ToJson());
  BsonObj control = doc["control"].Obj();
  std::vector<std::string> cfields;
  for (BsonElement e : control) cfields.emplace_back(e.FieldName());
  EXPECT_EQ(cfields, (std::vector<std::string>{"version", "min", "max", "count"}));
  EXPECT_EQ(control["version"].type(), bson::BsonType::kInt32);
  EXPECT_EQ(control["version"].NumberLong(), 2);
  EXPECT_EQ(control["count"].type(), bson::BsonType::kInt32);
  EXPECT_EQ(control["count"].NumberLong(), 3);
  std::vector<std::string> cols;
  for (BsonElement c : doc["data"].Obj()) {
    cols.emplace_back(c.FieldName());
    EXPECT_EQ(c.type(), bson::BsonType::kBinData);
    EXPECT_EQ(c.BinSubtype(), 7);
  }
  EXPECT_EQ(cols, (std::vector<std::string>{"t", "x", "s", "n"}));
  EXPECT_TRUE(CheckCompressedBucket(doc, "t").ok()) << CheckCompressedBucket(doc, "t").ToString();
  std::vector<std::string> want;
  for (const BsonObj& r : rows) want.push_back(Expected(r, cols, "m"));
  EXPECT_EQ(Unpacked(doc), want);
}

TEST(CompressedBucketDocumentTest, RowOutOfTimeOrderMakesVersion3) {
  BucketDocument doc = BucketDocument::Compressed(kId, BsonElement(), "t");
  std::string stored;
  auto write = [&](std::vector<BsonObj> rows) {
    doc.StageRows(rows, "");
    std::string full;
    Edits edits;
    doc.Prepare(Control(1), &full, &edits);
    stored = doc.stored() ? ApplyWrite(doc, stored, edits) : full;
    doc.Finish(true);
    return BsonObj(stored.data())["control"].Obj()["version"].NumberLong();
  };
  EXPECT_EQ(write({J(R"({"t": {"$date": 5000}, "a": 1})"), J(R"({"t": {"$date": 5000}, "a": 2})")}),
            2);  // equal times keep the order
  EXPECT_EQ(write({J(R"({"t": {"$date": 4000}, "a": 3})")}), 3);
  EXPECT_EQ(write({J(R"({"t": {"$date": 9000}, "a": 4})")}), 3);  // never sorted again
  BsonObj b(stored.data());
  EXPECT_TRUE(CheckCompressedBucket(b, "t").ok());
  EXPECT_EQ(Unpacked(b),
            (std::vector<std::string>{J(R"({"t": {"$date": 5000}, "a": 1})").ToJson(),
                                      J(R"({"t": {"$date": 5000}, "a": 2})").ToJson(),
                                      J(R"({"t": {"$date": 4000}, "a": 3})").ToJson(),
                                      J(R"({"t": {"$date": 9000}, "a": 4})").ToJson()}));
}

// Rows of many shapes: doubles at several scales, integers, strings, objects (interleaved
// columns), fields that come and go, and new fields late in the bucket.
BsonObj RandomRow(std::mt19937_64& rng, int r) {
  BsonBuilder b;
  b.AppendDate("t", int64_t{1'700'000'000'000} + r * 1000);
  b.AppendString("m", "meta-is-skipped");
  if (rng() % 4 != 0) b.AppendDouble("x", static_cast<double>(rng() % 100000) / 100.0);
  if (rng() % 3 != 0) b.AppendInt64("n", static_cast<int64_t>(rng() % 1000) - 500);
  if (rng() % 5 == 0) b.AppendString("s", "state-" + std::to_string(rng() % 3));
  if (rng() % 2 == 0) {
    size_t o = b.OpenObject("o");
    b.AppendInt32("a", static_cast<int32_t>(rng() % 10));
    b.AppendDouble("b", 0.5 * static_cast<double>(rng() % 8));
    b.Close(o);
  }
  if (r > 40 && rng() % 3 == 0) b.AppendBool("late_" + std::to_string(r % 4), rng() % 2 == 0);
  return b.Obj();
}

TEST(CompressedBucketDocumentTest, AppendsGiveTheDocumentBuiltInOneGo) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    BsonObj meta = J(R"({"m": "meta-is-skipped"})");
    BucketDocument doc = BucketDocument::Compressed(kId, meta["m"], "t");
    std::vector<BsonObj> all;
    std::string stored;
    int r = 0;
    for (int step = 0; step < 25; ++step) {
      std::vector<BsonObj> batch;
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) batch.push_back(RandomRow(rng, r++));
      doc.StageRows(batch, "m");
      all.insert(all.end(), batch.begin(), batch.end());
      std::string full;
      Edits edits;
      doc.Prepare(Control(step), &full, &edits);
      if (step == 0) {
        ASSERT_TRUE(edits.empty());
        stored = full;
      } else {
        ASSERT_TRUE(full.empty() || doc.stored());
        stored = ApplyWrite(doc, stored, edits);
      }
      doc.Finish(true);
      ASSERT_EQ(doc.num_rows(), all.size());
      ASSERT_EQ(doc.size(), stored.size());
      const std::string want = BuildFresh(meta["m"], all, Control(step), "m");
      ASSERT_EQ(BsonObj(stored.data()).ToJson(), BsonObj(want.data()).ToJson())
          << "seed " << seed << " step " << step;
      ASSERT_EQ(stored, want) << "seed " << seed << " step " << step;
    }
    BsonObj b(stored.data());
    ASSERT_TRUE(CheckCompressedBucket(b, "t").ok()) << CheckCompressedBucket(b, "t").ToString();
    std::vector<std::string> cols;
    for (std::string_view c : doc.ColumnNames()) cols.emplace_back(c);
    std::vector<std::string> want;
    for (const BsonObj& row : all) want.push_back(Expected(row, cols, "m"));
    ASSERT_EQ(Unpacked(b), want) << "seed " << seed;
  }
}

// One batch whose rows list their fields in different orders, repeat a name (the first value
// counts, as the unpacker reads it), lack some fields and bring a new one: every cell lands in its
// own column and row.
TEST(CompressedBucketDocumentTest, OneBatchPlacesEveryCellInItsColumn) {
  auto row = [](int64_t t, auto&& fill) {
    BsonBuilder b;
    b.AppendDate("t", t);
    fill(b);
    return b.Obj();
  };
  const std::vector<BsonObj> rows = {
      row(1000, [](BsonBuilder& b) { b.AppendDouble("x", 1.5), b.AppendInt32("n", 1); }),
      row(2000, [](BsonBuilder& b) { b.AppendInt32("n", 2), b.AppendDouble("x", 2.5); }),
      row(3000,
          [](BsonBuilder& b) {
            b.AppendDouble("x", 3.5), b.AppendDouble("x", 99.0), b.AppendInt32("n", 3);
          }),
      row(4000, [](BsonBuilder& b) { b.AppendString("y", "new"); }),
      row(5000,
          [](BsonBuilder& b) {
            b.AppendInt32("n", 5), b.AppendString("y", "again"), b.AppendDouble("x", 5.5);
          }),
      row(6000, [](BsonBuilder&) {}),
  };
  BsonObj meta = J(R"({"m": 1})");
  BucketDocument doc = BucketDocument::Compressed(kId, meta["m"], "t");
  doc.StageRows(rows, "");
  std::string full;
  Edits edits;
  doc.Prepare(Control(1), &full, &edits);
  doc.Finish(true);
  const BsonObj b(full.data());
  ASSERT_TRUE(CheckCompressedBucket(b, "t").ok()) << CheckCompressedBucket(b, "t").ToString();
  EXPECT_EQ(b["control"].Obj()["count"].NumberLong(), 6);
  std::vector<std::string> cols;
  for (std::string_view c : doc.ColumnNames()) cols.emplace_back(c);
  EXPECT_EQ(cols, (std::vector<std::string>{"t", "x", "n", "y"}));
  std::vector<std::string> want;
  for (const BsonObj& r : rows) want.push_back(Expected(r, cols));
  EXPECT_EQ(want[2], Expected(J(R"({"t": {"$date": 3000}, "x": 3.5, "n": 3})"), cols));
  EXPECT_EQ(Unpacked(b), want);
}

TEST(CompressedBucketDocumentTest, EachWriteCostsWhatItAddsNotTheBucket) {
  BucketDocument doc = BucketDocument::Compressed(kId, BsonElement(), "t");
  std::string stored;
  size_t largest = 0, largest_early = 0, largest_late = 0;
  std::mt19937_64 rng(3);
  for (int r = 0; r < 1000; ++r) {
    BsonBuilder b;
    b.AppendDate("t", int64_t{1'700'000'000'000} + r * 10'000);
    b.AppendDouble("cpu", static_cast<double>(rng() % 1'000'000) / 100.0);
    b.AppendInt64("bytes", int64_t{1} << 40 | (r * 7919));
    doc.StageRows({b.Obj()}, "");
    std::string full;
    Edits edits;
    doc.Prepare(Control(r), &full, &edits);
    if (r == 0) {
      stored = full;
    } else {
      size_t bytes = 0;
      for (const auto& e : edits) bytes += e.data.size();
      largest = std::max(largest, bytes);
      if (r < 100) largest_early = std::max(largest_early, bytes);
      if (r >= 900) largest_late = std::max(largest_late, bytes);
      stored = ApplyWrite(doc, stored, edits);
    }
    doc.Finish(true);
  }
  // Each write replaces at most the open Simple-8b block of each column (16 words and its control
  // byte), the length prefixes and control: bounded, however large the bucket has grown.
  EXPECT_LE(largest, 3 * (1 + 16 * 8) + 200);
  // (A word either way: a diff patches an open block's count byte and skips the words it counted
  // when there are three or more of them, so where a write falls in the blocks moves its size.)
  EXPECT_LE(largest_late, largest_early + 16);
  EXPECT_EQ(BsonObj(stored.data())["control"].Obj()["count"].NumberLong(), 1000);
}

TEST(CompressedBucketDocumentTest, EveryFewWritesTheDocumentIsRewrittenWhole) {
  BucketDocument doc = BucketDocument::Compressed(kId, BsonElement(), "t");
  std::vector<BsonObj> all;
  std::string stored;
  std::vector<bool> whole, edited;
  for (int step = 0; step < 8; ++step) {
    BsonBuilder b;
    b.AppendDate("t", 1000 * (step + 1));
    b.AppendDouble("x", step * 1.25);
    all.push_back(b.Obj());
    doc.StageRows({all.back()}, "");
    std::string full;
    Edits edits;
    doc.Prepare(Control(step), &full, &edits, /*rewrite_after=*/2);
    if (step == 0) {
      stored = full;
    } else {
      const bool w = doc.prepared_whole();
      whole.push_back(w);
      EXPECT_EQ(edits.empty(), w);
      stored = ApplyWrite(doc, stored, edits, full);
    }
    doc.Finish(true);
    ASSERT_EQ(stored, BuildFresh(BsonElement(), all, Control(step))) << "step " << step;
    edited.push_back(doc.edited_since_whole());
  }
  // Two writes by edits, then one whole, and again.
  EXPECT_EQ(whole, (std::vector<bool>{false, false, true, false, false, true, false}));
  // The insert and each whole rewrite leave no edits behind.
  EXPECT_EQ(edited, (std::vector<bool>{false, true, true, false, true, true, false, true}));
}

TEST(CompressedBucketDocumentTest, PrepareAgainWithoutFinishIsARetry) {
  BucketDocument doc = BucketDocument::Compressed(kId, BsonElement(), "t");
  doc.StageRows({J(R"({"t": {"$date": 1000}, "a": 1})")}, "");
  std::string stored;
  Edits edits;
  doc.Prepare(Control(0), &stored, &edits);
  doc.Finish(true);
  doc.StageRows({J(R"({"t": {"$date": 2000}, "a": 2})")}, "");
  std::string full;
  Edits first, second;
  doc.Prepare(Control(1), &full, &first);
  doc.Prepare(Control(1), &full, &second);  // the write was retried
  ASSERT_EQ(ApplyEdits(stored, first), ApplyEdits(stored, second));
  // It failed for good; more rows came; the next flush writes them all against what is stored.
  doc.StageRows({J(R"({"t": {"$date": 3000}, "a": 3, "b": "new"})")}, "");
  Edits third;
  doc.Prepare(Control(2), &full, &third);
  doc.Finish(true);
  stored = ApplyEdits(stored, third);
  EXPECT_EQ(stored, BuildFresh(BsonElement(),
                               {J(R"({"t": {"$date": 1000}, "a": 1})"),
                                J(R"({"t": {"$date": 2000}, "a": 2})"),
                                J(R"({"t": {"$date": 3000}, "a": 3, "b": "new"})")},
                               Control(2)));
}

// The write-back flush: a write covers the rows staged when it took them, while more rows are
// staged (held or copied) before its Prepare, between its Prepare and its Finish, and encoded
// after it (EncodeStagedCopies); each stored state is the document built in one go from the rows
// written. Some writes encode their rows first (EncodeRowsBounded), bounding those not encoded
// yet: with the others folded row by row, the bounds give the min/max of every row written.
TEST(CompressedBucketDocumentTest, WritesCoverTheRowsTakenWhileMoreAreStaged) {
  int folded = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    BsonObj meta = J(R"({"m": "meta-is-skipped"})");
    BucketDocument doc = BucketDocument::Compressed(kId, meta["m"], "t");
    std::vector<BsonObj> all;  // every row staged, in order
    size_t written = 0;
    size_t encoded = 0;  // rows of `all` a Prepare put in the builders (EncodeStagedCopies more)
    std::string stored;
    int r = 0;
    auto stage = [&] {
      std::vector<BsonObj> batch;
      const int n = static_cast<int>(rng() % 5);
      for (int i = 0; i < n; ++i) batch.push_back(RandomRow(rng, r++).Owned());
      // Held (the journal's rows) or copied, in any mix: they are encoded in staging order.
      if (rng() % 2 == 0) {
        doc.StageSharedRows(batch, "m");
      } else {
        doc.StageRows(batch, "m");
      }
      all.insert(all.end(), batch.begin(), batch.end());
    };
    stage();
    for (int step = 0; step < 30; ++step) {
      const size_t taken = all.size();  // the flush takes the rows staged so far
      stage();                          // committed before the flush reaches the bucket
      if (taken == written) continue;
      if (rng() % 2 == 0) {
        BucketFieldTree::RowBounds bounds;
        const uint32_t before =
            doc.EncodeRowsBounded(static_cast<uint32_t>(taken - written), &bounds);
        // The rows encoded already, or all of them when copies are staged (not bounded).
        ASSERT_LE(before, taken - written);
        ASSERT_GE(before, std::min(encoded, taken) - written);
        BucketFieldTree by_rows, by_bounds;  // from the bounds of the rows stored
        for (size_t i = 0; i < written; ++i) {
          by_rows.Update(all[i], "m");
          by_bounds.Update(all[i], "m");
        }
        for (size_t i = written; i < taken; ++i) by_rows.UpdateMinMax(all[i], "m");
        for (size_t i = written; i < written + before; ++i) by_bounds.UpdateMinMax(all[i], "m");
        if (by_bounds.FoldBounds(bounds)) {
          ++folded;
        } else {
          for (size_t i = written + before; i < taken; ++i) by_bounds.UpdateMinMax(all[i], "m");
        }
        ASSERT_TRUE(by_bounds.Min().BinaryEqual(by_rows.Min())) << "seed " << seed;
        ASSERT_TRUE(by_bounds.Max().BinaryEqual(by_rows.Max())) << "seed " << seed;
      }
      std::string full;
      Edits edits;
      doc.Prepare(Control(step), &full, &edits, /*rewrite_after=*/3,
                  static_cast<uint32_t>(taken - written));
      encoded = std::max(encoded, taken);
      stage();  // committed while the flush writes other buckets
      stored = doc.stored() ? ApplyWrite(doc, stored, edits, full) : full;
      doc.Finish(true);
      written = taken;
      ASSERT_EQ(doc.num_rows(), written);
      ASSERT_EQ(doc.staged_rows(), all.size() - written);
      ASSERT_EQ(doc.size(), stored.size());
      const std::vector<BsonObj> rows(all.begin(), all.begin() + static_cast<ptrdiff_t>(written));
      ASSERT_EQ(stored, BuildFresh(meta["m"], rows, Control(step), "m"))
          << "seed " << seed << " step " << step;
      if (rng() % 2 == 0) {
        doc.EncodeStagedCopies();
      }
    }
    BsonObj b(stored.data());
    ASSERT_TRUE(CheckCompressedBucket(b, "t").ok()) << CheckCompressedBucket(b, "t").ToString();
  }
  EXPECT_GT(folded, 20);  // the bounds, not the rows, gave those min/max
}

TEST(CompressedBucketDocumentTest, FromStoredContinuesOurOwnBucket) {
  std::mt19937_64 rng(7);
  std::vector<BsonObj> first, second;
  for (int r = 0; r < 30; ++r) first.push_back(RandomRow(rng, r));
  for (int r = 30; r < 70; ++r) second.push_back(RandomRow(rng, r));
  BsonObj meta = J(R"({"m": "meta-is-skipped"})");
  const std::string stored = BuildFresh(meta["m"], first, Control(0), "m");
  auto layout = BucketDocument::FromStored(BsonObj(stored.data()), "t");
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  BucketDocument doc = std::move(layout).value();
  EXPECT_TRUE(doc.compressed());
  EXPECT_TRUE(doc.stored());
  EXPECT_EQ(doc.num_rows(), 30u);
  doc.StageRows(second, "m");
  std::string full;
  Edits edits;
  doc.Prepare(Control(3), &full, &edits);
  EXPECT_TRUE(full.empty());
  std::vector<BsonObj> all = first;
  all.insert(all.end(), second.begin(), second.end());
  EXPECT_EQ(ApplyWrite(doc, stored, edits), BuildFresh(meta["m"], all, Control(3), "m"));
}

TEST(CompressedBucketDocumentTest, FromStoredContinuesMongoDbBuckets) {
  for (const char* json : {testing::kMongoV2Bucket, testing::kMongoV3Bucket}) {
    BsonObj stored = J(json);
    const int64_t version = stored["control"].Obj()["version"].NumberLong();
    const std::vector<std::string> before = Unpacked(stored);
    auto layout = BucketDocument::FromStored(stored, "t");
    ASSERT_TRUE(layout.ok()) << layout.status().ToString();
    BucketDocument doc = std::move(layout).value();
    BsonObj row = J(R"({"t": {"$date": "2030-01-01T00:00:00Z"}, "a": 5, "_id": 1})");
    doc.StageRows({row}, "m");
    std::string full;
    Edits edits;
    doc.Prepare(Control(0), &full, &edits);
    std::string after = ApplyWrite(doc, std::string(stored.bytes()), edits);
    BsonObj b(after.data());
    EXPECT_TRUE(CheckCompressedBucket(b, "t").ok()) << CheckCompressedBucket(b, "t").ToString();
    EXPECT_EQ(b["control"].Obj()["version"].NumberLong(), version);  // a later row keeps v2
    EXPECT_EQ(b["control"].Obj()["count"].NumberLong(), static_cast<int64_t>(before.size()) + 1);
    std::vector<std::string> want = before;
    // The new row's cells come in the bucket's column order.
    BsonBuilder w;
    for (BsonElement col : stored["data"].Obj()) w.AppendElement(row[col.FieldName()]);
    want.push_back(w.Obj().ToJson());
    EXPECT_EQ(Unpacked(b), want);
  }
}

TEST(CompressedBucketDocumentTest, FromStoredRejectsBrokenCompressedBuckets) {
  auto with = [&](std::string_view from, std::string_view to) {
    std::string json = testing::kMongoV2Bucket;
    size_t at = json.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    json.replace(at, from.size(), to);
    return J(json);
  };
  for (BsonObj bad :
       {with(R"("count": 2})", R"("count": 3})"), with(R"("count": 2})", R"("count": "two"})"),
        with(R"("a": {"$binary")", R"("z": 1, "a": {"$binary")"),
        with(R"("subType": "07"}},)", R"("subType": "00"}},)")}) {
    auto layout = BucketDocument::FromStored(bad, "t");
    EXPECT_FALSE(layout.ok()) << (bad).ToJson();
    if (!layout.ok()) {
      EXPECT_EQ(layout.status().code(), ErrorCode::kBadValue);
    }
  }
}

TEST(CompressedBucketDocumentTest, CanCompressRefusesCodeWScopeAtAnyDepth) {
  EXPECT_TRUE(BucketDocument::CanCompress(J(R"({"t": {"$date": 1}, "o": {"a": [1, {"b": 2}]}})")));
  BsonObj inner = J(R"js({"f": {"$code": "f()", "$scope": {"x": 1}}})js");
  ASSERT_EQ(inner.FirstElement().type(), bson::BsonType::kCodeWScope);
  BsonBuilder top;
  top.AppendDate("t", 1);
  top.AppendObject("o", inner);
  EXPECT_FALSE(BucketDocument::CanCompress(top.Obj()));
  EXPECT_FALSE(BucketDocument::CanCompress(inner));
}

TEST(CompressedBucketDocumentTest, EditsApplyThroughWiredTigerModify) {
  storage::testing::TempDir dir;
  storage::EngineOptions opts;
  opts.dbpath = dir.path();
  opts.in_memory = true;
  opts.cache_size_mb = 32;
  auto engine = storage::testing::OpenOrDie(opts);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->CreateTable("buckets").ok());
  auto s = engine->NewSession();
  std::mt19937_64 rng(11);
  BucketDocument doc = BucketDocument::Compressed(kId, BsonElement(), "t");
  std::vector<BsonObj> all;
  for (int step = 0; step < 40; ++step) {
    std::vector<BsonObj> batch;
    for (int i = 0; i <= step % 4; ++i)
      batch.push_back(RandomRow(rng, static_cast<int>(all.size())));
    doc.StageRows(batch, "m");
    all.insert(all.end(), batch.begin(), batch.end());
    std::string full;
    Edits edits;
    doc.Prepare(Control(step), &full, &edits);
    if (step == 0) {
      ASSERT_TRUE(s->Insert("buckets", "k", full).ok());
    } else {
      Status st = s->Modify("buckets", "k", edits);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
    doc.Finish(true);
    auto got = s->Get("buckets", "k");
    ASSERT_TRUE(got.ok() && got.value().has_value());
    ASSERT_EQ(*got.value(), BuildFresh(BsonElement(), all, Control(step), "m")) << "step " << step;
  }
}

}  // namespace
}  // namespace hourglass::timeseries
