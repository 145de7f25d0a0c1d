// BucketDocument: the version-1 bucket layout (spec timeseries.md 3.1) and the byte-range edits
// that append rows to a stored bucket. Every appended state is checked against a document built in
// one go from all rows, and against the layout the spec prescribes; the edits also go through a
// real WiredTiger table (Session::Modify).
#include "timeseries/bucket_document.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "storage/kv_engine.h"
#include "storage/storage_test_util.h"
#include "timeseries/bucket_document_test_util.h"

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

ObjectId Oid(std::string_view hex) {
  BsonObj o = J(std::string(R"({"x": {"$oid": ")") + std::string(hex) + "\"}}");
  return o["x"].Oid();
}

const ObjectId kId = Oid("64b7f0000000000000000001");

size_t EditBytes(const Edits& edits) {
  size_t n = 0;
  for (const auto& e : edits) n += e.data.size();
  return n;
}

// A control object whose size varies with `tag`, so that successive Prepares replace control with
// one of a different length.
BsonObj Control(int tag) {
  BsonBuilder b;
  b.AppendInt32("version", 1);
  size_t mn = b.OpenObject("min");
  b.AppendString("pad", std::string(static_cast<size_t>(tag % 7), 'x'));
  b.Close(mn);
  size_t mx = b.OpenObject("max");
  b.AppendInt32("n", tag);
  b.Close(mx);
  return b.Obj();
}

// The document built in one go from `rows` (never stored).
std::string BuildFresh(const ObjectId& id, const BsonElement& meta,
                       const std::vector<BsonObj>& rows, const BsonObj& control,
                       std::string_view skip = "") {
  BucketDocument doc(id, meta);
  doc.StageRows(rows, skip);
  std::string full;
  Edits edits;
  doc.Prepare(control, &full, &edits);
  EXPECT_TRUE(edits.empty());
  EXPECT_TRUE(bson::ValidateBson(full).ok()) << bson::ValidateBson(full).ToString();
  return full;
}

// Appends `batches` one Prepare/Finish at a time to a new document, checking after each that the
// edited bytes equal a fresh build of every row so far. Returns the final bytes.
// With `fixed_control`, every step writes the same small control; `max_step_bytes` receives the
// largest number of bytes one step's edits wrote.
std::string AppendAndCheck(const BsonElement& meta,
                           const std::vector<std::vector<BsonObj>>& batches,
                           std::string_view skip = "", size_t* total_edit_bytes = nullptr,
                           bool fixed_control = false, size_t* max_step_bytes = nullptr) {
  BucketDocument doc(kId, meta);
  std::string stored;
  std::vector<BsonObj> all;
  size_t edit_bytes = 0, max_step = 0;
  int step = 0;
  for (const auto& batch : batches) {
    ++step;
    doc.StageRows(batch, skip);
    all.insert(all.end(), batch.begin(), batch.end());
    std::string full;
    Edits edits;
    BsonObj control = fixed_control ? Control(0) : Control(step);
    doc.Prepare(control, &full, &edits);
    if (step == 1) {
      EXPECT_FALSE(doc.stored());
      EXPECT_TRUE(edits.empty());
      stored = full;
      edit_bytes += full.size();
    } else {
      EXPECT_TRUE(doc.stored());
      stored = ApplyWrite(doc, stored, edits);
      edit_bytes += EditBytes(edits);
      max_step = std::max(max_step, EditBytes(edits));
    }
    doc.Finish(true);
    std::string want = BuildFresh(kId, meta, all, control, skip);
    EXPECT_EQ(stored, want) << "after batch " << step << ": got " << BsonObj(stored.data()).ToJson()
                            << "\nwant " << BsonObj(want.data()).ToJson();
    EXPECT_EQ(doc.size(), stored.size());
    EXPECT_EQ(doc.num_rows(), all.size());
    if (stored != want) break;
  }
  if (total_edit_bytes) *total_edit_bytes = edit_bytes;
  if (max_step_bytes) *max_step_bytes = max_step;
  return stored;
}

BsonObj Row(int64_t t, std::initializer_list<std::pair<const char*, int>> fields) {
  BsonBuilder b;
  b.AppendDate("t", t);
  for (auto& [name, v] : fields) b.AppendInt32(name, v);
  return b.Obj();
}

// --- layout (spec 3.1) ------------------------------------------------------------------------

TEST(BucketDocumentTest, FreshDocumentHasSpecLayoutWithGapsAndSkippedMeta) {
  BsonObj meta = J(R"({"m": {"site": "a"}})");
  std::vector<BsonObj> rows = {
      J(R"({"t": {"$date": 1000}, "tag": "skip me", "a": 1})"),
      J(R"({"t": {"$date": 2000}, "tag": "skip me"})"),
      J(R"({"t": {"$date": 3000}, "b": "x", "a": 3})"),
  };
  std::string full = BuildFresh(kId, meta["m"], rows, J(R"({"version": 1})"), "tag");
  BsonObj want = J(R"({"_id": {"$oid": "64b7f0000000000000000001"},
      "control": {"version": 1},
      "meta": {"site": "a"},
      "data": {"t": {"0": {"$date": 1000}, "1": {"$date": 2000}, "2": {"$date": 3000}},
               "a": {"0": 1, "2": 3},
               "b": {"2": "x"}}})");
  EXPECT_EQ(full, std::string(want.bytes())) << BsonObj(full.data()).ToJson();
}

TEST(BucketDocumentTest, NoMetaElementWhenMetaIsEoo) {
  std::string full = BuildFresh(kId, BsonElement(), {Row(5, {{"v", 1}})}, J(R"({"version": 1})"));
  BsonObj want = J(R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
      "data": {"t": {"0": {"$date": 5}}, "v": {"0": 1}}})");
  EXPECT_EQ(full, std::string(want.bytes())) << BsonObj(full.data()).ToJson();
}

TEST(BucketDocumentTest, MetaIsStoredUnderMetaWhateverTheElementName) {
  BsonObj m = J(R"({"whatever": null})");
  std::string full = BuildFresh(kId, m["whatever"], {Row(5, {})}, J(R"({"version": 1})"));
  BsonObj want = J(R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
      "meta": null, "data": {"t": {"0": {"$date": 5}}}})");
  EXPECT_EQ(full, std::string(want.bytes())) << BsonObj(full.data()).ToJson();
}

TEST(BucketDocumentTest, SetIdBeforeFirstWriteChangesStoredId) {
  BucketDocument doc(kId, BsonElement());
  doc.StageRows({Row(1, {})}, "");
  std::string full;
  Edits edits;
  doc.Prepare(J(R"({"version": 1})"), &full, &edits);
  ObjectId other = Oid("64b7f0000000000000000002");
  doc.SetId(other);
  doc.Prepare(J(R"({"version": 1})"), &full, &edits);
  doc.Finish(true);
  EXPECT_TRUE(BsonObj(full.data())["_id"].Oid() == other);
  EXPECT_TRUE(doc.id() == other);
  EXPECT_EQ(full, BuildFresh(other, BsonElement(), {Row(1, {})}, J(R"({"version": 1})")));
}

// --- appending with edits ---------------------------------------------------------------------

TEST(BucketDocumentTest, AppendRowsWithMissingFields) {
  BsonObj meta = J(R"({"m": 7})");
  AppendAndCheck(meta["m"], {
                                {Row(1, {{"a", 1}, {"b", 1}})},
                                {Row(2, {{"a", 2}})},
                                {Row(3, {{"b", 3}})},
                                {Row(4, {})},
                                {Row(5, {{"a", 5}, {"b", 5}}), Row(6, {{"b", 6}})},
                            });
}

TEST(BucketDocumentTest, AppendRowsWithNewFieldsInLaterRows) {
  AppendAndCheck(BsonElement(), {
                                    {Row(1, {{"a", 1}})},
                                    {Row(2, {{"a", 2}, {"b", 2}})},
                                    {Row(3, {{"c", 3}}), Row(4, {{"d", 4}, {"a", 4}})},
                                    {Row(5, {{"e", 5}, {"b", 5}})},
                                    {Row(6, {{"a", 6}, {"b", 6}, {"c", 6}, {"d", 6}, {"e", 6}})},
                                });
}

TEST(BucketDocumentTest, AppendRowsWithFieldsInChangingOrder) {
  AppendAndCheck(BsonElement(), {
                                    {Row(1, {{"a", 1}, {"b", 1}, {"c", 1}})},
                                    {Row(2, {{"c", 2}, {"b", 2}, {"a", 2}})},
                                    {Row(3, {{"b", 3}, {"z", 3}, {"a", 3}})},
                                });
}

TEST(BucketDocumentTest, MetaFieldIsLeftOutOfTheColumns) {
  BsonObj meta = J(R"({"m": {"k": 1}})");
  std::string got = AppendAndCheck(meta["m"],
                                   {
                                       {J(R"({"t": {"$date": 1}, "tag": {"k": 1}, "v": 1})")},
                                       {J(R"({"tag": {"k": 1}, "t": {"$date": 2}, "v": 2})")},
                                   },
                                   "tag");
  EXPECT_TRUE(BsonObj(got.data())["data"].Obj()["tag"].eoo());
}

TEST(BucketDocumentTest, ManyColumns) {
  std::vector<std::vector<BsonObj>> batches;
  for (int r = 0; r < 20; ++r) {
    BsonBuilder b;
    b.AppendDate("t", r);
    // 200 columns; each row has a different subset (every (r+2)-th skipped) and some new ones.
    for (int c = 0; c < 200 + r; ++c) {
      if (c % (r + 2) == 0) continue;
      b.AppendInt64("field_" + std::to_string(c), int64_t{r} * 1000 + c);
    }
    batches.push_back({b.Obj()});
  }
  std::string got = AppendAndCheck(BsonElement(), batches);
  // t plus field_1 .. field_218 (field_0 is skipped by every row).
  EXPECT_EQ(BsonObj(got.data())["data"].Obj().NumFields(), 1 + 218);
}

TEST(BucketDocumentTest, ThousandRowsOneAtATimeWriteLinearBytes) {
  std::vector<std::vector<BsonObj>> batches;
  for (int r = 0; r < 1000; ++r) {
    BsonBuilder b;
    b.AppendDate("t", 1000 * r);
    b.AppendDouble("temp", 20.5 + r);
    b.AppendString("s", "a sensor reading label of some forty chars");
    if (r % 3 == 0) b.AppendInt32("sparse", r);
    batches.push_back({b.Obj()});
  }
  size_t edit_bytes = 0, max_step = 0;
  std::string got = AppendAndCheck(BsonElement(), batches, "", &edit_bytes, true, &max_step);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(BsonObj(got.data())["data"].Obj()["t"].Obj().NumFields(), 1000);
  // Appending one row at a time must not rewrite the document: total bytes written stay linear.
  // Each step writes the row's cells, 4-byte length prefixes and the whole control object (~50
  // bytes here), so for rows this size the total is about 2x the document; a rewrite would be
  // ~500x. ...
  EXPECT_LT(edit_bytes, 3 * got.size()) << "edits " << edit_bytes << " doc " << got.size();
  // ... and the last step writes no more than the second did, though the document is ~1000x larger.
  EXPECT_LT(max_step, 200u);
}

// --- FromStored -------------------------------------------------------------------------------

// Three rows; the time column is not first and row 1 lacks temp.
constexpr const char* kStored = R"({
  "_id": {"$oid": "64b7f0000000000000000001"},
  "control": {"version": 1, "min": {"t": {"$date": 0}}, "max": {"t": {"$date": 3}}},
  "meta": {"site": "a"},
  "data": {"_id": {"0": 10, "1": 11, "2": 12},
           "t": {"0": {"$date": 1}, "1": {"$date": 2}, "2": {"$date": 3}},
           "temp": {"0": 20, "2": 22}}})";

TEST(BucketDocumentTest, FromStoredThenAppend) {
  BsonObj stored = J(kStored);
  auto doc_or = BucketDocument::FromStored(stored, "t");
  ASSERT_TRUE(doc_or.ok()) << doc_or.status().ToString();
  BucketDocument doc = std::move(doc_or).value();
  EXPECT_TRUE(doc.stored());
  EXPECT_EQ(doc.num_rows(), 3u);
  EXPECT_EQ(doc.size(), static_cast<size_t>(stored.size()));
  EXPECT_TRUE(doc.id() == Oid("64b7f0000000000000000001"));

  doc.StageRows(
      {J(R"({"t": {"$date": 4}, "_id": 13, "hum": 5})"), J(R"({"temp": 25, "t": {"$date": 5}})")},
      "");
  std::string full;
  Edits edits;
  BsonObj control = J(R"({"version": 1, "min": {"t": {"$date": 0}, "temp": 20},
                          "max": {"t": {"$date": 5}, "temp": 25}})");
  doc.Prepare(control, &full, &edits);
  std::string got = ApplyWrite(doc, std::string(stored.bytes()), edits);
  doc.Finish(true);
  BsonObj want = J(R"({
    "_id": {"$oid": "64b7f0000000000000000001"},
    "control": {"version": 1, "min": {"t": {"$date": 0}, "temp": 20},
                "max": {"t": {"$date": 5}, "temp": 25}},
    "meta": {"site": "a"},
    "data": {"_id": {"0": 10, "1": 11, "2": 12, "3": 13},
             "t": {"0": {"$date": 1}, "1": {"$date": 2}, "2": {"$date": 3}, "3": {"$date": 4},
                   "4": {"$date": 5}},
             "temp": {"0": 20, "2": 22, "4": 25},
             "hum": {"3": 5}}})");
  EXPECT_EQ(got, std::string(want.bytes())) << BsonObj(got.data()).ToJson();
  EXPECT_EQ(doc.num_rows(), 5u);
  EXPECT_EQ(doc.size(), got.size());

  // And once more on top of the edited bytes.
  doc.StageRows({J(R"({"t": {"$date": 6}, "hum": 6})")}, "");
  doc.Prepare(control, &full, &edits);
  got = ApplyWrite(doc, got, edits);
  doc.Finish(true);
  BsonObj got_obj(got.data());
  EXPECT_TRUE(bson::ValidateBson(got).ok());
  EXPECT_EQ(got_obj["data"].Obj()["hum"].Obj().ToJson(), J(R"({"3": 5, "5": 6})").ToJson());
  EXPECT_EQ(got_obj["data"].Obj()["t"].Obj().NumFields(), 6);
}

TEST(BucketDocumentTest, FromStoredWithoutMeta) {
  BsonObj stored = J(R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
                         "data": {"t": {"0": {"$date": 1}}}})");
  auto doc_or = BucketDocument::FromStored(stored, "t");
  ASSERT_TRUE(doc_or.ok()) << doc_or.status().ToString();
  BucketDocument doc = std::move(doc_or).value();
  doc.StageRows({Row(2, {{"v", 2}})}, "");
  std::string full;
  Edits edits;
  doc.Prepare(J(R"({"version": 1})"), &full, &edits);
  std::string got = ApplyEdits(std::string(stored.bytes()), edits);
  BsonObj want = J(R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
                       "data": {"t": {"0": {"$date": 1}, "1": {"$date": 2}}, "v": {"1": 2}}})");
  EXPECT_EQ(got, std::string(want.bytes())) << BsonObj(got.data()).ToJson();
}

TEST(BucketDocumentTest, FromStoredRejectsMalformedBuckets) {
  const char* bad[] = {
      // Not version 1.
      R"({"_id": {"$oid": "64b7f0000000000000000001"},
          "control": {"version": 2, "count": 1}, "data": {"t": {"0": {"$date": 1}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"},
          "control": {"min": {}}, "data": {"t": {"0": {"$date": 1}}}})",
      // Time column keys not 0..n-1.
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": 1}, "2": {"$date": 2}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"1": {"$date": 1}, "0": {"$date": 2}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"a": {"$date": 1}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"1": {"$date": 1}}}})",
      // Fields out of order.
      R"({"control": {"version": 1}, "_id": {"$oid": "64b7f0000000000000000001"},
          "data": {"t": {"0": {"$date": 1}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": 1}}}, "meta": 1})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "meta": 1, "control": {"version": 1},
          "data": {"t": {"0": {"$date": 1}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "data": {"t": {"0": {"$date": 1}}},
          "control": {"version": 1}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": 1}}}, "extra": 1})",
      // Missing parts, wrong types.
      R"({})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1}})",
      R"({"_id": 5, "control": {"version": 1}, "data": {"t": {"0": {"$date": 1}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": 1,
          "data": {"t": {"0": {"$date": 1}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"x": {"0": 1}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": 1}}, "x": [1]}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": [{"$date": 1}]}})",
  };
  for (const char* json : bad) {
    auto doc = BucketDocument::FromStored(J(json), "t");
    EXPECT_EQ(doc.status().code(), ErrorCode::kBadValue) << json;
  }
}

// Spec 3.1: keys are the decimal row indexes "0", "1", ...; "01" is not row 1. The header's
// contract also requires every column's keys to be row numbers. See the report: FromStored parses
// keys with from_chars (accepting leading zeros) and does not look at non-time columns' keys.
TEST(BucketDocumentTest, FromStoredRejectsNonCanonicalRowKeys) {
  const char* bad[] = {
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": 1}, "01": {"$date": 2}}}})",
      R"({"_id": {"$oid": "64b7f0000000000000000001"}, "control": {"version": 1},
          "data": {"t": {"0": {"$date": 1}}, "x": {"a": 1}}})",
  };
  for (const char* json : bad) {
    auto doc = BucketDocument::FromStored(J(json), "t");
    EXPECT_EQ(doc.status().code(), ErrorCode::kBadValue) << json;
  }
}

// --- failed writes ----------------------------------------------------------------------------

TEST(BucketDocumentTest, FinishFalseRestoresStoredLayout) {
  BucketDocument doc(kId, BsonElement());
  std::string full;
  Edits edits;
  std::vector<BsonObj> first = {Row(1, {{"a", 1}}), Row(2, {{"a", 2}, {"b", 2}})};
  doc.StageRows(first, "");
  doc.Prepare(Control(1), &full, &edits);
  doc.Finish(true);
  std::string stored = full;
  const size_t size_before = doc.size();

  // A failed write that added rows to an existing column and a new column.
  doc.StageRows({Row(3, {{"a", 3}, {"new", 3}}), Row(4, {{"b", 4}})}, "");
  doc.Prepare(Control(5), &full, &edits);
  doc.Finish(false);
  EXPECT_EQ(doc.num_rows(), 2u);
  EXPECT_EQ(doc.size(), size_before);
  EXPECT_TRUE(doc.stored());

  // The next write is computed against the stored document, as if the failed one never happened.
  std::vector<BsonObj> next = {Row(5, {{"b", 5}, {"other", 5}})};
  doc.StageRows(next, "");
  doc.Prepare(Control(2), &full, &edits);
  std::string got = ApplyWrite(doc, stored, edits);
  doc.Finish(true);
  std::vector<BsonObj> all = first;
  all.insert(all.end(), next.begin(), next.end());
  std::string want = BuildFresh(kId, BsonElement(), all, Control(2));
  EXPECT_EQ(got, want) << BsonObj(got.data()).ToJson() << "\n" << BsonObj(want.data()).ToJson();
  EXPECT_EQ(doc.num_rows(), 3u);
  EXPECT_EQ(doc.size(), want.size());
}

TEST(BucketDocumentTest, FinishFalseOnNeverStoredDocumentForgetsEverything) {
  BucketDocument doc(kId, BsonElement());
  std::string full;
  Edits edits;
  doc.StageRows({Row(1, {{"gone", 1}})}, "");
  doc.Prepare(Control(1), &full, &edits);
  doc.Finish(false);
  EXPECT_FALSE(doc.stored());
  EXPECT_EQ(doc.num_rows(), 0u);
  EXPECT_EQ(doc.size(), 0u);

  doc.StageRows({Row(2, {{"kept", 2}})}, "");
  doc.Prepare(Control(1), &full, &edits);
  EXPECT_TRUE(edits.empty());
  doc.Finish(true);
  EXPECT_EQ(full, BuildFresh(kId, BsonElement(), {Row(2, {{"kept", 2}})}, Control(1)));
}

// --- through WiredTiger -----------------------------------------------------------------------

TEST(BucketDocumentTest, EditsApplyThroughWiredTigerModify) {
  storage::testing::TempDir dir;
  storage::EngineOptions opts;
  opts.dbpath = dir.path();
  opts.in_memory = true;
  opts.cache_size_mb = 32;
  auto engine = storage::testing::OpenOrDie(opts);
  ASSERT_NE(engine, nullptr);
  ASSERT_TRUE(engine->CreateTable("buckets").ok());
  {
    auto s = engine->NewSession();
    const std::string key = "bucket-key";
    BsonObj meta = J(R"({"m": {"sensor": 4}})");
    BucketDocument doc(kId, meta["m"]);
    std::vector<BsonObj> all;
    for (int step = 0; step < 60; ++step) {
      std::vector<BsonObj> batch;
      for (int i = 0; i <= step % 3; ++i) {
        BsonBuilder b;
        int r = static_cast<int>(all.size() + batch.size());
        b.AppendDate("t", r);
        if (r % 2 == 0) b.AppendInt32("even", r);
        if (r % 5 == 0) b.AppendString("five_" + std::to_string(r / 20), "v");
        b.AppendDouble("x", r * 0.5);
        batch.push_back(b.Obj());
      }
      doc.StageRows(batch, "");
      all.insert(all.end(), batch.begin(), batch.end());
      std::string full;
      Edits edits;
      doc.Prepare(Control(step), &full, &edits);
      if (step == 0) {
        ASSERT_TRUE(s->Insert("buckets", key, full).ok());
      } else {
        Status st = s->Modify("buckets", key, edits);
        ASSERT_TRUE(st.ok()) << st.ToString();
      }
      doc.Finish(true);
      auto got = s->Get("buckets", key);
      ASSERT_TRUE(got.ok());
      ASSERT_TRUE(got.value().has_value());
      std::string want = BuildFresh(kId, meta["m"], all, Control(step));
      ASSERT_EQ(*got.value(), want) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace hourglass::timeseries
