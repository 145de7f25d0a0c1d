// PlanTimeseriesRead's choices, table-driven: for a pipeline after the unpack stage (and a
// filter), which columns are decoded, which bucket-level rewrite applies, what stages remain.
#include "exec/timeseries_read.h"

#include <gtest/gtest.h>

#include "bsoncolumn/bson_column_builder.h"
#include "exec/exec_test_util.h"
#include "exec/timeseries_scan.h"

namespace hourglass::exec {
namespace {

using bson::BsonObj;
using timeseries::UnpackSpec;

BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json;
  return r.ok() ? r.value() : BsonObj();
}

std::vector<BsonObj> Stages(std::string_view json_array) {
  BsonObj holder = J(std::string("{\"p\": ") + std::string(json_array) + "}");
  std::vector<BsonObj> out;
  for (bson::BsonElement e : holder["p"].Obj()) out.push_back(e.Obj().Owned());
  return out;
}

struct PlanCase {
  const char* name;
  const char* filter;
  const char* stages;
  UnpackSpec::Mode mode;
  std::vector<std::string> fields;
  int sort_direction;
  const char* rewrite;  // "group", "lastpoint" or ""
  size_t rest;          // stages left to run after the bucket-level part
};

TEST(TimeseriesReadPlanTest, ChoosesRewrites) {
  timeseries::TimeseriesOptions o;
  o.time_field = "t";
  o.meta_field = "m";
  const std::vector<PlanCase> cases = {
      {"no stages", "{}", "[]", UnpackSpec::Mode::kAll, {}, 0, "", 0},
      {"count only",
       "{}",
       R"([{"$skip": 1}, {"$count": "n"}])",
       UnpackSpec::Mode::kInclude,
       {},
       0,
       "",
       2},
      {"count with event filter",
       R"({"x": {"$gt": 1}})",
       R"([{"$skip": 1}, {"$count": "n"}])",
       UnpackSpec::Mode::kInclude,
       {"x"},
       0,
       "",
       2},
      {"include from $project",
       "{}",
       R"([{"$project": {"a": 1, "b": "$c.d"}}])",
       UnpackSpec::Mode::kInclude,
       {"_id", "a", "c"},
       0,
       "",
       1},
      {"exclusion absorbed",
       "{}",
       R"([{"$project": {"a": 0}}, {"$limit": 1}])",
       UnpackSpec::Mode::kExclude,
       {"a"},
       0,
       "",
       1},
      {"exclusion of a filtered field kept",
       R"({"a": 1})",
       R"([{"$unset": "a"}])",
       UnpackSpec::Mode::kAll,
       {},
       0,
       "",
       1},
      {"bounded sort asc",
       "{}",
       R"([{"$sort": {"t": 1}}, {"$limit": 3}])",
       UnpackSpec::Mode::kAll,
       {},
       1,
       "",
       1},
      {"bounded sort desc keeps t",
       "{}",
       R"([{"$sort": {"t": -1}}, {"$group": {"_id": null, "x": {"$push": "$v"}}}])",
       UnpackSpec::Mode::kInclude,
       {"t", "v"},
       -1,
       "",
       1},
      {"sort on two keys is not bounded",
       "{}",
       R"([{"$sort": {"t": 1, "v": 1}}])",
       UnpackSpec::Mode::kAll,
       {},
       0,
       "",
       1},
      {"group from control",
       R"({"m.k": 1})",
       R"([{"$group": {"_id": "$m.k", "x": {"$max": "$v"}}}, {"$sort": {"_id": 1}}])",
       UnpackSpec::Mode::kInclude,
       {"m", "v"},
       0,
       "group",
       2},
      {"$count from control",
       "{}",
       R"([{"$count": "n"}])",
       UnpackSpec::Mode::kInclude,
       {},
       0,
       "group",
       2},
      {"group not rewritable",
       "{}",
       R"([{"$group": {"_id": "$v", "n": {"$sum": 1}}}])",
       UnpackSpec::Mode::kInclude,
       {"v"},
       0,
       "",
       1},
      {"lastpoint",
       "{}",
       R"([{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "v": {"$first": "$v"}}}])",
       UnpackSpec::Mode::kInclude,
       {"m", "t", "v"},
       0,
       "lastpoint",
       2},
      {"lastpoint needs a meta-only filter",
       R"({"v": 1})",
       R"([{"$sort": {"m": 1, "t": -1}}, {"$group": {"_id": "$m", "v": {"$first": "$v"}}}])",
       UnpackSpec::Mode::kInclude,
       {"m", "t", "v"},
       0,
       "",
       2},
  };
  for (const PlanCase& c : cases) {
    exec::TimeseriesReadPlan p = exec::PlanTimeseriesRead(o, J(c.filter), Stages(c.stages), true);
    EXPECT_EQ(p.scan.mode, c.mode) << c.name;
    if (c.mode != UnpackSpec::Mode::kAll) {
      std::vector<std::string> want = c.fields, got = p.scan.fields;
      std::sort(want.begin(), want.end());
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, want) << c.name;
    }
    EXPECT_EQ(p.scan.sort_direction, c.sort_direction) << c.name;
    std::string rewrite = p.control_group ? "group" : p.lastpoint ? "lastpoint" : "";
    EXPECT_EQ(rewrite, c.rewrite) << c.name;
    EXPECT_EQ(p.rest.size(), c.rest) << c.name;
    // `rest` is the new stages, then the given ones the read did not absorb.
    EXPECT_EQ(p.rest.size(), p.prepended + Stages(c.stages).size() - p.consumed) << c.name;
    for (size_t i = p.prepended; i < p.rest.size(); ++i) {
      EXPECT_TRUE(p.rest[i].BinaryEqual(Stages(c.stages)[i - p.prepended + p.consumed])) << c.name;
    }
    // With the rewrites off, nothing changes.
    exec::TimeseriesReadPlan off =
        exec::PlanTimeseriesRead(o, J(c.filter), Stages(c.stages), false);
    EXPECT_EQ(off.scan.mode, UnpackSpec::Mode::kAll) << c.name;
    EXPECT_EQ(off.scan.sort_direction, 0) << c.name;
    EXPECT_FALSE(off.control_group || off.lastpoint || off.scan.use_whole_bucket_filter) << c.name;
    EXPECT_EQ(off.rest.size(), Stages(c.stages).size()) << c.name;
  }
}

class TimeseriesReadTest : public testing::ExecTest {};

TEST_F(TimeseriesReadTest, BoundedSortKeepsTheSortMemoryLimit) {
  // granularity "hours": buckets span 30 days, so a descending sort releases nothing early.
  Status st = CreateTimeseries({"test", "ts"}, R"({"timeField": "t", "granularity": "hours"})");
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = InsertMeasurements({"test", "ts"}, R"([
      {"t": {"$date": "2024-01-01T00:00:00Z"}, "s": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
      {"t": {"$date": "2024-01-01T01:00:00Z"}, "s": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
      {"t": {"$date": "2024-01-01T02:00:00Z"}, "s": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}])");
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto ts = exec::Resolve(Read(), {"test", "ts"});
  ASSERT_TRUE(ts.ok() && ts.value().timeseries.has_value());
  for (bool disk : {false, true}) {
    pipeline::PipelineContext pctx;
    pctx.limits.sort = 200;
    pctx.allow_disk_use = disk;
    auto stream = exec::BuildTimeseriesRead(*ts.value().timeseries, engine_.get(), {},
                                            Stages(R"([{"$sort": {"t": -1}}])"), pctx);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    auto docs = pipeline::DrainStream(*stream.value());
    if (disk) {
      ASSERT_TRUE(docs.ok()) << docs.status().ToString();
      ASSERT_EQ(docs.value().size(), 3u);
      EXPECT_GT(docs.value()[0]["t"].DateMillis(), docs.value()[2]["t"].DateMillis());
    } else {
      ASSERT_FALSE(docs.ok());
      EXPECT_EQ(docs.status().code(), ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed);
    }
  }
}

// A compressed bucket starting at `start_ms` whose control.min/max of "t" are `min_ms` and
// `max_ms`, holding control.count `count`, the time column `t` and the doubles `v` (BSONColumn
// bytes).
BsonObj CompressedBucket(int64_t start_ms, int64_t min_ms, int64_t max_ms, int count,
                         const std::string& t, const std::string& v) {
  bson::BsonBuilder b;
  b.AppendObjectId("_id", bson::ObjectId::FromSeconds(start_ms / 1000));
  size_t control = b.OpenObject("control");
  b.AppendInt32("version", 2);
  size_t min = b.OpenObject("min");
  b.AppendDate("t", min_ms);
  b.Close(min);
  size_t max = b.OpenObject("max");
  b.AppendDate("t", max_ms);
  b.Close(max);
  b.AppendInt32("count", count);
  b.Close(control);
  size_t data = b.OpenObject("data");
  b.AppendBinData("t", 7, t);
  b.AppendBinData("v", 7, v);
  b.Close(data);
  return b.Obj();
}

// The BSONColumn of `cells`, each a one-field document {"": value}.
std::string Column(const std::vector<BsonObj>& cells) {
  bsoncolumn::BsonColumnBuilder col;
  for (const BsonObj& c : cells) EXPECT_TRUE(col.Append(c.FirstElement()).ok());
  return col.Release();
}

TEST_F(TimeseriesReadTest, BlocksDecodeTheTimeColumnOnlyWhenTheyReadIt) {
  // $group by hour takes a bucket's times from control.min/max when they lie in one hour, and
  // decodes the time column only when they do not: a corrupt time column fails the read that
  // decodes it, and no other. A column the $group reads is always decoded and checked against
  // control.count.
  constexpr int64_t kHour = 3'600'000;
  constexpr int64_t kDay = 1'704'067'200'000;  // 2024-01-01
  const std::string corrupt("\x42\x00", 2);
  const std::string times = Column({J(R"({"": {"$date": "2024-01-01T00:00:10Z"}})"),
                                    J(R"({"": {"$date": "2024-01-01T00:20:00Z"}})"),
                                    J(R"({"": {"$date": "2024-01-01T00:59:50Z"}})")});
  const std::string values = Column({J(R"({"": 1.0})"), J(R"({"": 2.0})"), J(R"({"": 6.0})")});
  const std::string two = Column({J(R"({"": 1.0})"), J(R"({"": 2.0})")});
  struct Case {
    const char* name;
    BsonObj bucket;
    const char* error;  // nullptr: the read succeeds with an average of 3
  };
  const Case cases[] = {
      {"valid", CompressedBucket(kDay, kDay + 10'000, kDay + kHour - 10'000, 3, times, values),
       nullptr},
      {"corrupt time, one hour",
       CompressedBucket(kDay, kDay + 10'000, kDay + kHour - 10'000, 3, corrupt, values), nullptr},
      {"corrupt time, two hours",
       CompressedBucket(kDay, kDay + 10'000, kDay + kHour + 10'000, 3, corrupt, values),
       "'data.t' is not a valid BSONColumn"},
      {"time cells not control.count, two hours",
       CompressedBucket(kDay, kDay + 10'000, kDay + kHour + 10'000, 2, times, two),
       "'data.t' holds 3 measurements but 'control.count' is 2"},
      {"read column not control.count",
       CompressedBucket(kDay, kDay + 10'000, kDay + kHour - 10'000, 3, times, two),
       "'data.v' holds 2 measurements but 'control.count' is 3"},
      {"corrupt read column",
       CompressedBucket(kDay, kDay + 10'000, kDay + kHour - 10'000, 3, times, corrupt),
       "'data.v' is not a valid BSONColumn"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const catalog::NamespaceString nss{"test", "blocks" + std::to_string(n++)};
    Status st = CreateTimeseries(nss, R"({"timeField": "t", "granularity": "minutes"})");
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto coll = catalog_->GetOrCreateCollection(BucketsNamespace(nss));
    ASSERT_TRUE(coll.ok()) << coll.status().ToString();
    {
      auto session = engine_->NewSession();
      storage::WriteUnit wu(*session);
      ASSERT_TRUE(wu.begin_status().ok());
      ASSERT_TRUE(coll.value()->Insert(*session, c.bucket).ok());
      ASSERT_TRUE(wu.Commit().ok());
    }
    auto ts = exec::Resolve(Read(), nss);
    ASSERT_TRUE(ts.ok() && ts.value().timeseries.has_value());
    const int64_t blocks_before = GlobalTimeseriesReadCounters().buckets_as_blocks;
    pipeline::PipelineContext pctx;
    auto stream = exec::BuildTimeseriesRead(
        *ts.value().timeseries, engine_.get(), {},
        Stages(R"([{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}},
                               "a": {"$avg": "$v"}}}])"),
        pctx);
    ASSERT_TRUE(stream.ok()) << stream.status().ToString();
    auto docs = pipeline::DrainStream(*stream.value());
    if (c.error != nullptr) {
      ASSERT_FALSE(docs.ok());
      EXPECT_EQ(docs.status().code(), ErrorCode::kDataCorruptionDetected);
      EXPECT_NE(docs.status().reason().find(c.error), std::string::npos) << docs.status().reason();
      continue;
    }
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    EXPECT_EQ(GlobalTimeseriesReadCounters().buckets_as_blocks, blocks_before + 1);
    ASSERT_EQ(docs.value().size(), 1u);
    EXPECT_EQ(docs.value()[0]["_id"].DateMillis(), kDay);
    EXPECT_EQ(docs.value()[0]["a"].NumberDouble(), 3.0);
  }
}

// The rows of a block as {field: [cells of the selected rows], ...}, fields by name.
BsonObj BlockRows(const pipeline::ColumnBlock& block) {
  std::vector<const pipeline::ColumnBlock::Field*> fields;
  for (const auto& f : block.fields) fields.push_back(&f);
  std::sort(fields.begin(), fields.end(), [](auto* a, auto* b) { return a->name < b->name; });
  bson::BsonBuilder b;
  for (const pipeline::ColumnBlock::Field* f : fields) {
    EXPECT_FALSE(f->bounded) << f->name;
    if (f->constant) {
      b.AppendElementAs(f->value, f->name);
      continue;
    }
    size_t array = b.OpenArray(f->name);
    pipeline::CellScratch scratch;
    for (int64_t row = 0; row < block.num_rows; ++row) {
      if (!block.all_rows &&
          std::find(block.selection.begin(), block.selection.end(), row) == block.selection.end()) {
        continue;
      }
      const bson::BsonElement cell = f->Cell(static_cast<size_t>(row), scratch);
      if (cell.eoo()) {
        b.AppendString(std::to_string(row), "<missing>");
      } else {
        b.AppendElementAs(cell, std::to_string(row));
      }
    }
    b.Close(array);
  }
  return b.Obj();
}

TEST_F(TimeseriesReadTest, DetachedBlocksLeaveColumnsForTheConsumerToComplete) {
  // Reading ahead, the helper may leave a block's last columns for the consumer to decode
  // (DetachedBlock::Complete): once completed, every block holds exactly the rows the scan gives
  // without leaving anything, whatever was left, with or without an event filter.
  const catalog::NamespaceString nss{"test", "detached"};
  Status st = CreateTimeseries(nss, R"({"timeField": "t", "metaField": "m",
                                        "granularity": "seconds"})");
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::string docs = "[";
  for (int i = 0; i < 60; ++i) {
    if (i > 0) docs += ",";
    docs += R"({"t": {"$date": )" + std::to_string(1'704'067'200'000 + 1000 * i) + R"(}, "m": )" +
            std::to_string(i % 3) + R"(, "a": )" + std::to_string(i * 0.5);
    if (i % 4 != 0) docs += R"(, "b": )" + std::to_string(i);
    docs += R"(, "c": "s)" + std::to_string(i % 5) + R"("})";
  }
  st = InsertMeasurements(nss, docs + "]");
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto ts = exec::Resolve(Read(), nss);
  ASSERT_TRUE(ts.ok() && ts.value().timeseries.has_value());
  const std::vector<std::string> fields = {"t", "m", "a", "b", "c"};
  for (const char* filter : {"{}", R"({"a": {"$gte": 10}})", R"({"$expr": {"$gt": ["$b", 20]}})"}) {
    SCOPED_TRACE(filter);
    std::vector<BsonObj> expected;
    for (int leave : {0, 1, 2, 3, 4, 100}) {
      SCOPED_TRACE(leave);
      TimeseriesScanOptions options;
      options.allow_blocks = true;
      options.mode = UnpackSpec::Mode::kInclude;
      options.fields = fields;
      options.filter_on_columns = true;
      auto scan = TimeseriesScan::Make(*ts.value().timeseries, engine_.get(), J(filter), options);
      ASSERT_TRUE(scan.ok()) << scan.status().ToString();
      pipeline::BlockSource* blocks = scan.value()->AsBlockSource();
      ASSERT_NE(blocks, nullptr);
      blocks->RequireFields(fields);
      ASSERT_TRUE(blocks->DetachBlocks());
      std::vector<BsonObj> got;
      bool left_some = false;
      while (true) {
        auto block = blocks->NextDetachedBlock(leave);
        ASSERT_TRUE(block.ok()) << block.status().ToString();
        if (block.value() == nullptr) break;
        const size_t before = block.value()->block().fields.size();
        ASSERT_TRUE(block.value()->Complete().ok());
        left_some = left_some || block.value()->block().fields.size() > before;
        got.push_back(BlockRows(block.value()->block()));
      }
      ASSERT_EQ(got.size(), 3u);  // one bucket per series
      if (leave == 0) {
        expected = got;
        continue;
      }
      // Compressed buckets leave columns, when the rows are not selected on columns.
      EXPECT_EQ(left_some, std::string_view(filter).find("\"a\"") == std::string_view::npos);
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(got[i].BinaryEqual(expected[i]))
            << got[i].ToJson() << " vs " << expected[i].ToJson();
      }
    }
  }
}

}  // namespace
}  // namespace hourglass::exec
