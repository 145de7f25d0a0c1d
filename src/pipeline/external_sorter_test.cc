#include "pipeline/external_sorter.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "bson/bson_compare.h"
#include "pipeline/spill_file.h"
#include "pipeline/test_util.h"
#include "query/sort.h"

namespace hourglass::pipeline {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;
using testing::Json;
using testing::ToJson;

// A scratch spill directory removed at the end of the test.
class ExternalSorterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hg_sorter_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    dir_ = SpillDirectory(base_);
  }
  void TearDown() override { std::filesystem::remove_all(base_); }

  // Random documents {_id: i, a: small int or a string, b: random string}; many ties on a.
  static std::vector<BsonObj> RandomDocs(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<BsonObj> docs;
    for (int i = 0; i < n; ++i) {
      BsonBuilder b;
      b.AppendInt32("_id", i);
      if (rng() % 10 == 0) {
        b.AppendString("a", std::string(1, static_cast<char>('a' + rng() % 5)));
      } else if (rng() % 17 != 0) {  // else: missing, which sorts as null
        b.AppendInt32("a", static_cast<int32_t>(rng() % 40));
      }
      b.AppendString("b", std::string(rng() % 60, static_cast<char>('k' + rng() % 3)));
      docs.push_back(b.Obj());
    }
    return docs;
  }

  // The _ids of `docs` sorted by `pattern` the reference way (std::stable_sort).
  static std::vector<int> Reference(std::vector<BsonObj> docs, const query::SortPattern& pattern,
                                    size_t limit = 0) {
    std::stable_sort(docs.begin(), docs.end(),
                     [&](const BsonObj& x, const BsonObj& y) { return pattern.Compare(x, y) < 0; });
    std::vector<int> ids;
    for (const auto& d : docs) ids.push_back(d["_id"].Int32());
    if (limit > 0 && ids.size() > limit) ids.resize(limit);
    return ids;
  }

  StatusWith<std::vector<int>> Run(const std::vector<BsonObj>& docs,
                                   const query::SortPattern& pattern, ExternalSorterOptions o,
                                   int64_t* spills = nullptr) {
    ExternalSorter sorter(
        [&](const BsonObj& a, const BsonObj& b) { return pattern.CompareKeys(a, b); },
        std::move(o));
    for (const auto& d : docs) HG_RETURN_IF_ERROR(sorter.Add(pattern.ExtractKey(d), d));
    HG_RETURN_IF_ERROR(sorter.Finish());
    if (spills) *spills = sorter.num_spills();
    std::vector<int> ids;
    while (true) {
      HG_ASSIGN_OR_RETURN(auto row, sorter.Next());
      if (!row) break;
      ids.push_back(row->doc["_id"].Int32());
    }
    return ids;
  }

  ExternalSorterOptions Small(int64_t limit_rows = 0) const {
    ExternalSorterOptions o;
    o.memory_limit_bytes = 4096;
    o.allow_disk_use = true;
    o.tmp_dir = dir_;
    o.limit = limit_rows;
    return o;
  }

  std::string base_, dir_;
};

TEST_F(ExternalSorterTest, SpilledOutputMatchesStableSort) {
  for (const char* spec : {R"({"a": 1})", R"({"a": -1})", R"({"a": 1, "b": -1})"}) {
    auto pattern = query::SortPattern::Parse(Json(spec));
    ASSERT_TRUE(pattern.ok());
    for (uint32_t seed : {1u, 2u, 3u}) {
      auto docs = RandomDocs(3000, seed);
      int64_t spills = 0;
      auto got = Run(docs, pattern.value(), Small(), &spills);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_GT(spills, 10) << spec;
      EXPECT_EQ(got.value(), Reference(docs, pattern.value())) << spec << " seed " << seed;
    }
  }
}

TEST_F(ExternalSorterTest, TopKKeepsOnlyKRowsAndDoesNotSpill) {
  auto pattern = query::SortPattern::Parse(Json(R"({"a": 1})"));
  auto docs = RandomDocs(5000, 7);
  int64_t spills = -1;
  auto got = Run(docs, pattern.value(), Small(5), &spills);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(spills, 0);
  EXPECT_EQ(got.value(), Reference(docs, pattern.value(), 5));
}

TEST_F(ExternalSorterTest, TopKSpillsWhenKRowsExceedTheLimit) {
  auto pattern = query::SortPattern::Parse(Json(R"({"a": -1, "b": 1})"));
  auto docs = RandomDocs(4000, 9);
  int64_t spills = 0;
  auto got = Run(docs, pattern.value(), Small(500), &spills);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_GT(spills, 0);
  EXPECT_EQ(got.value(), Reference(docs, pattern.value(), 500));
}

TEST_F(ExternalSorterTest, OverTheLimitWithoutDiskUseFails) {
  auto pattern = query::SortPattern::Parse(Json(R"({"a": 1})"));
  auto docs = RandomDocs(500, 4);
  ExternalSorterOptions o = Small();
  o.allow_disk_use = false;
  EXPECT_EQ(Run(docs, pattern.value(), o).status().code(),
            ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed);
  o.allow_disk_use = true;
  o.tmp_dir.clear();  // nowhere to spill
  EXPECT_EQ(Run(docs, pattern.value(), o).status().code(),
            ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed);
  EXPECT_EQ(CountSpillFiles(dir_), 0);
}

TEST_F(ExternalSorterTest, SortedRunsMergeByKeyWithTiesInRunOrder) {
  // Three runs written in key order, as $group spills its groups: {k: key} / {r: run}.
  ExternalSorter sorter(
      [](const BsonObj& a, const BsonObj& b) {
        return bson::CompareElementValues(a.FirstElement(), b.FirstElement());
      },
      Small());
  const std::vector<std::vector<int>> runs = {{1, 4, 7}, {2, 4}, {}, {0, 4, 9}};
  for (size_t r = 0; r < runs.size(); ++r) {
    for (int k : runs[r]) {
      ASSERT_TRUE(sorter
                      .AppendToSortedRun(Json("{\"k\": " + std::to_string(k) + "}"),
                                         Json("{\"r\": " + std::to_string(r) + "}"))
                      .ok());
    }
    ASSERT_TRUE(sorter.EndSortedRun().ok());
  }
  EXPECT_EQ(sorter.num_spills(), 3);  // the empty run is not kept
  ASSERT_TRUE(sorter.AppendToSortedRun(Json(R"({"k": 5})"), Json(R"({"r": 9})")).ok());
  EXPECT_EQ(sorter.Add(Json(R"({"k": 6})"), Json("{}")).code(),
            ErrorCode::kInternalError);  // a run is open
  ASSERT_TRUE(sorter.Finish().ok());     // ends the open run
  std::vector<std::pair<int, int>> got;
  while (true) {
    auto row = sorter.Next();
    ASSERT_TRUE(row.ok());
    if (!row.value()) break;
    got.emplace_back(row.value()->key.FirstElement().Int32(), row.value()->doc["r"].Int32());
  }
  const std::vector<std::pair<int, int>> want = {{0, 3}, {1, 0}, {2, 1}, {4, 0}, {4, 1},
                                                 {4, 3}, {5, 9}, {7, 0}, {9, 3}};
  EXPECT_EQ(got, want);
}

TEST_F(ExternalSorterTest, SortedRunsNeedDiskUse) {
  ExternalSorterOptions o = Small();
  o.allow_disk_use = false;
  ExternalSorter sorter([](const BsonObj&, const BsonObj&) { return 0; }, o);
  EXPECT_EQ(sorter.AppendToSortedRun(Json(R"({"k": 1})"), Json("{}")).code(),
            ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed);
  EXPECT_EQ(CountSpillFiles(dir_), 0);
}

TEST_F(ExternalSorterTest, SpillFileRemovedWithTheSorter) {
  auto pattern = query::SortPattern::Parse(Json(R"({"a": 1})"));
  {
    ExternalSorter sorter(
        [&](const BsonObj& a, const BsonObj& b) { return pattern.value().CompareKeys(a, b); },
        Small());
    for (const auto& d : RandomDocs(1000, 5)) {
      ASSERT_TRUE(sorter.Add(pattern.value().ExtractKey(d), d).ok());
    }
    ASSERT_TRUE(sorter.Finish().ok());
    EXPECT_EQ(CountSpillFiles(dir_), 1);
    ASSERT_TRUE(sorter.Next().ok());
  }
  EXPECT_EQ(CountSpillFiles(dir_), 0);
}

TEST_F(ExternalSorterTest, SpillFileRoundTripsRanges) {
  SpillFile f(dir_, "t");
  std::vector<BsonObj> docs = testing::Docs(R"([{"a": 1}, {"b": "xyz"}, {"c": [1, 2, {"d": 3}]}])");
  for (const auto& d : docs) ASSERT_TRUE(f.Append(d).ok());
  const int64_t mid = f.size();
  ASSERT_TRUE(f.Append(Json(R"({"e": null})")).ok());
  ASSERT_TRUE(f.Flush().ok());
  // A tiny buffer forces refills inside documents.
  auto r = f.Read(0, mid, 3);
  std::vector<BsonObj> got;
  while (true) {
    auto d = r->Next();
    ASSERT_TRUE(d.ok());
    if (!d.value()) break;
    got.push_back(*d.value());
  }
  EXPECT_EQ(ToJson(got), ToJson(docs));
  auto tail = f.Read(mid, f.size());
  auto last = tail->Next();
  ASSERT_TRUE(last.ok() && last.value());
  EXPECT_EQ(last.value()->ToJson(), R"({ "e" : null })");
}

// $group, $sort and $bucketAuto with a tiny limit (spilling) give what they give in memory.
TEST_F(ExternalSorterTest, StagesSpillingMatchInMemory) {
  std::string docs = "[";
  std::mt19937 rng(11);
  for (int i = 0; i < 800; ++i) {
    docs += (i ? "," : "") + std::string("{\"_id\": ") + std::to_string(i) +
            ", \"k\": " + std::to_string(rng() % 23) + ", \"v\": " + std::to_string(rng() % 1000) +
            ", \"o\": {\"f" + std::to_string(rng() % 4) + "\": " + std::to_string(i) + "}" +
            (rng() % 7 == 0 ? ", \"d\": 1.5" : "") + ", \"big\": {\"$numberLong\": \"" +
            std::to_string(int64_t{1} << 58) + "\"}}";
  }
  docs += "]";
  const char* pipelines[] = {
      R"([{"$group": {"_id": "$k", "sum": {"$sum": "$v"}, "cnt": {"$count": {}},
          "avg": {"$avg": "$v"}, "min": {"$min": "$v"}, "max": {"$max": "$v"},
          "first": {"$first": "$_id"}, "last": {"$last": "$_id"}, "push": {"$push": "$v"},
          "set": {"$addToSet": {"$mod": ["$v", 3]}}, "dsum": {"$sum": "$d"},
          "sd": {"$stdDevPop": "$v"}, "sds": {"$stdDevSamp": "$v"},
          "mo": {"$mergeObjects": "$o"},
          "top": {"$top": {"sortBy": {"v": -1}, "output": "$_id"}},
          "topn": {"$topN": {"n": 3, "sortBy": {"v": 1}, "output": ["$_id", "$v"]}},
          "botn": {"$bottomN": {"n": 2, "sortBy": {"v": 1}, "output": "$_id"}},
          "fn": {"$firstN": {"n": 2, "input": "$_id"}}, "ln": {"$lastN": {"n": 2, "input": "$_id"}},
          "mn": {"$minN": {"n": 2, "input": "$v"}}, "mx": {"$maxN": {"n": 2, "input": "$v"}},
          "med": {"$median": {"input": "$v", "method": "approximate"}},
          "pct": {"$percentile": {"input": "$v", "p": [0.1, 0.9], "method": "approximate"}}}},
          {"$set": {"sd": {"$round": ["$sd", 6]}, "sds": {"$round": ["$sds", 6]},
                    "avg": {"$round": ["$avg", 6]}}}])",
      R"([{"$group": {"_id": {"k": "$k"}, "botn": {"$bottomN": {
          "n": {"$add": [1, {"$mod": ["$k", 3]}]}, "sortBy": {"v": 1}, "output": "$_id"}}}}])",
      R"([{"$sort": {"v": -1, "k": 1}}])",
      R"([{"$sort": {"k": 1}}, {"$skip": 3}, {"$limit": 40}])",
      R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 7,
          "output": {"n": {"$sum": 1}, "ids": {"$push": "$_id"}}}}])",
      R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 5, "granularity": "R5"}}])",
      R"([{"$setWindowFields": {"partitionBy": "$k", "sortBy": {"v": 1},
          "output": {"c": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
                     "r": {"$rank": {}}, "t": {"$topN": {"n": 2, "sortBy": {"v": -1},
                                                          "output": "$_id"}}}}}])",
      R"([{"$densify": {"field": "v", "range": {"step": 7, "bounds": "full"}}},
          {"$project": {"o": 0}}])",
      R"([{"$densify": {"field": "v", "partitionByFields": ["k"],
          "range": {"step": 5, "bounds": "partition"}}}, {"$project": {"o": 0}}])",
      R"([{"$densify": {"field": "v", "partitionByFields": ["k"],
          "range": {"step": 100, "bounds": [50, 700]}}}, {"$project": {"o": 0}}])",
      R"([{"$group": {"_id": "$k", "big": {"$sum": "$big"},
          "bigavg": {"$avg": "$big"}}}])",
  };
  for (const char* p : pipelines) {
    PipelineContext big;
    auto expected = testing::RunPipeline(p, docs, big);
    ASSERT_TRUE(expected.ok()) << expected.status().ToString() << p;
    PipelineContext small;
    small.limits.sort = small.limits.group = small.limits.bucket_auto = 2000;
    small.limits.window = 8000;  // each partition (one k) fits, the whole input does not
    small.limits.densify = 2000;
    small.allow_disk_use = true;
    small.tmp_dir = dir_;
    auto got = testing::RunPipeline(p, docs, small);
    ASSERT_TRUE(got.ok()) << got.status().ToString() << p;
    EXPECT_EQ(ToJson(got.value()), ToJson(expected.value())) << p;
    small.allow_disk_use = false;
    EXPECT_EQ(testing::RunPipeline(p, docs, small).status().code(),
              ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed)
        << p;
  }
  EXPECT_EQ(CountSpillFiles(dir_), 0);
}

// A $sort {_id: ±1} right after a $group sorts nothing (the groups come out in key order) and
// gives what sorting gives: keys of every type (1, 1.0 and NumberLong 1 are one group), an
// array key (which a $sort orders by its elements: the groups are sorted after all), with and
// without a limit, groups spilled, and reversing over the sort's memory limit.
TEST_F(ExternalSorterTest, SortByIdAfterGroupSortsOnlyWhenItMust) {
  std::string docs = "[";
  std::mt19937 rng(5);
  const char* keys[] = {"1",
                        "1.0",
                        "{\"$numberLong\": \"1\"}",
                        "\"b\"",
                        "\"a\"",
                        "null",
                        "{\"x\": 2}",
                        "{\"x\": [1]}",
                        "-4.5",
                        "{\"$date\": 5}",
                        "true",
                        "\"aa\""};
  for (int i = 0; i < 600; ++i) {
    docs += (i ? "," : "") + std::string("{\"k\": ") + keys[rng() % 12] +
            ", \"n\": " + std::to_string(i % 37) + ", \"v\": " + std::to_string(i) + "}";
  }
  docs += ", {\"k\": [3, 0], \"n\": 99, \"v\": 1}]";
  struct Case {
    const char* pipeline;
    bool sorts;  // whether the $sort must sort (else it passes the groups on)
  };
  const Case cases[] = {
      {R"([{"$group": {"_id": "$k", "s": {"$sum": "$v"}}}, {"$sort": {"_id": 1}}])", false},
      {R"([{"$group": {"_id": "$k", "s": {"$sum": "$v"}}}, {"$sort": {"_id": -1}}])", false},
      {R"([{"$group": {"_id": "$n", "s": {"$push": "$v"}}}, {"$sort": {"_id": -1}},
          {"$limit": 4}])",
       false},
      {R"([{"$group": {"_id": {"n": "$n"}, "f": {"$first": "$v"}}}, {"$sort": {"_id": 1}},
          {"$limit": 5}])",
       false},
      {R"([{"$group": {"_id": "$k", "s": {"$sum": 1}}}, {"$match": {"s": {"$gt": 0}}},
          {"$sort": {"_id": -1}}])",
       true},
      {R"([{"$group": {"_id": "$k", "s": {"$sum": 1}}}, {"$sort": {"s": 1, "_id": 1}}])", true},
      // A compound _id sorted on its members in their order and one direction is in order too.
      {R"([{"$group": {"_id": {"k": "$k", "n": "$n"}, "s": {"$sum": "$v"}}},
          {"$sort": {"_id.k": 1, "_id.n": 1}}])",
       false},
      {R"([{"$group": {"_id": {"k": "$k", "n": "$n"}, "s": {"$sum": "$v"}}},
          {"$sort": {"_id.k": -1, "_id.n": -1}}, {"$limit": 7}])",
       false},
      {R"([{"$group": {"_id": {"k": "$k", "n": "$n"}, "s": {"$sum": "$v"}}},
          {"$sort": {"_id.n": 1, "_id.k": 1}}])",
       true},
      {R"([{"$group": {"_id": {"k": "$k", "n": "$n"}, "s": {"$sum": "$v"}}},
          {"$sort": {"_id.k": 1, "_id.n": -1}}])",
       true},
      {R"([{"$group": {"_id": {"k": "$k", "n": "$n"}, "s": {"$sum": "$v"}}},
          {"$sort": {"_id.k": 1}}])",
       true},
      {R"([{"$group": {"_id": {"k": "$k", "n": "$n"}, "s": {"$sum": "$v"}}},
          {"$sort": {"_id.k": 1, "_id.n": 1, "_id.z": 1}}])",
       true},
  };
  const std::string with_array = docs;
  const std::string without_array =
      docs.substr(0, docs.rfind(", {")) + "]";  // the array key only in the first round
  for (const std::string* input : {&without_array, &with_array}) {
    for (const Case& c : cases) {
      // What sorting gives: the same stages with an $addFields between that hides the order.
      std::string hidden = c.pipeline;
      const size_t at = hidden.find("{\"$sort\"");
      hidden.insert(at, R"({"$addFields": {"z": 1}}, )");
      PipelineContext big;
      auto want = testing::RunPipeline(hidden, *input, big);
      ASSERT_TRUE(want.ok()) << want.status().ToString() << hidden;
      std::vector<bson::BsonObj> expected;
      for (const bson::BsonObj& d : want.value()) {
        bson::BsonBuilder b;
        for (bson::BsonElement e : d) {
          if (e.FieldName() != "z") b.AppendElement(e);
        }
        expected.push_back(b.Obj());
      }
      for (int64_t limit : {int64_t{0}, int64_t{300}}) {
        PipelineContext ctx;
        if (limit > 0) {  // groups spill, and reversing them is over the sort's limit
          ctx.limits.sort = ctx.limits.group = limit;
          ctx.allow_disk_use = true;
          ctx.tmp_dir = dir_;
        }
        const int64_t sorted_before = GlobalSpillMetrics().sort_keys_sorted.load();
        auto got = testing::RunPipeline(c.pipeline, *input, ctx);
        ASSERT_TRUE(got.ok()) << got.status().ToString() << c.pipeline;
        EXPECT_EQ(ToJson(got.value()), ToJson(expected)) << c.pipeline;
        const bool sorted = GlobalSpillMetrics().sort_keys_sorted.load() > sorted_before;
        const std::string_view pipeline = c.pipeline;
        const bool array_key =
            input == &with_array && (pipeline.find(R"("_id": "$k")") != std::string_view::npos ||
                                     pipeline.find(R"("k": "$k")") != std::string_view::npos);
        const bool must_sort = c.sorts || array_key;
        if (limit == 0) {
          EXPECT_EQ(sorted, must_sort) << c.pipeline;
        }
      }
    }
  }
  EXPECT_EQ(CountSpillFiles(dir_), 0);
}

}  // namespace
}  // namespace hourglass::pipeline
