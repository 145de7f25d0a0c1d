#include "pipeline/pipeline.h"

#include <gtest/gtest.h>

#include "pipeline/errors.h"
#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using testing::Docs;
using testing::Json;
using testing::RunPipeline;
using testing::ToJson;

struct StageCase {
  const char* name;
  const char* pipeline;
  const char* input;
  const char* expected;  // JSON array of the output documents, in order
};

void CheckStages(const std::vector<StageCase>& cases) {
  for (const auto& c : cases) {
    auto r = RunPipeline(c.pipeline, c.input);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    auto want = Docs(c.expected);
    bool same = want.size() == r.value().size();
    for (size_t i = 0; same && i < want.size(); ++i) {
      same = want[i].BinaryEqual(r.value()[i]);
    }
    EXPECT_TRUE(same) << c.name << "\n  got:  " << ToJson(r.value())
                      << "\n  want: " << ToJson(want);
  }
}

void CheckError(const char* pipeline, const char* input, ErrorCode code, PipelineContext ctx = {}) {
  auto r = RunPipeline(pipeline, input, ctx);
  ASSERT_FALSE(r.ok()) << pipeline << " unexpectedly gave " << ToJson(r.value());
  EXPECT_EQ(r.status().code(), code) << pipeline << ": " << r.status().ToString();
}

const char* kSales = R"([
  {"_id": 1, "item": "abc", "price": 10, "quantity": 2, "date": {"$date": "2014-03-01T08:00:00Z"}},
  {"_id": 2, "item": "jkl", "price": 20, "quantity": 1, "date": {"$date": "2014-03-01T09:00:00Z"}},
  {"_id": 3, "item": "xyz", "price": 5, "quantity": 10, "date": {"$date": "2014-03-15T09:00:00Z"}},
  {"_id": 4, "item": "xyz", "price": 5, "quantity": 20, "date": {"$date": "2014-04-04T11:21:39.736Z"}},
  {"_id": 5, "item": "abc", "price": 10, "quantity": 10, "date": {"$date": "2014-04-04T21:23:13.331Z"}}
])";

TEST(PipelineTest, LocationCodesKeepTheirNumberAndName) {
  // A code error_codes.def does not list still carries MongoDB's number and codeName.
  Status unlisted = PipelineError(40237, "The $sum accumulator is a unary operator");
  EXPECT_EQ(static_cast<int>(unlisted.code()), 40237);
  EXPECT_EQ(unlisted.code_name(), "Location40237");
  Status listed = PipelineError(2, "x");
  EXPECT_EQ(listed.code_name(), "BadValue");
  // $group's own parse errors surface with their numbers.
  CheckError(R"([{"$group": {"_id": null, "s": {"$sum": [1, 2]}}}])", "[]", LocationCode(40237));
  CheckError(R"([{"$group": {"_id": null, "$s": {"$sum": 1}}}])", "[]", LocationCode(40236));
}

TEST(PipelineTest, MatchLimitSkipCount) {
  CheckStages({
      {"match", R"([{"$match": {"item": "xyz"}}])", kSales,
       R"([{"_id": 3, "item": "xyz", "price": 5, "quantity": 10, "date": {"$date": "2014-03-15T09:00:00Z"}},
           {"_id": 4, "item": "xyz", "price": 5, "quantity": 20, "date": {"$date": "2014-04-04T11:21:39.736Z"}}])"},
      {"match $expr",
       R"([{"$match": {"$expr": {"$gt": ["$quantity", "$price"]}}}, {"$project": {"_id": 1}}])",
       kSales, R"([{"_id": 3}, {"_id": 4}])"},
      {"limit", R"([{"$limit": 2}, {"$project": {"_id": 1}}])", kSales,
       R"([{"_id": 1}, {"_id": 2}])"},
      {"skip", R"([{"$skip": 3}, {"$project": {"_id": 1}}])", kSales,
       R"([{"_id": 4}, {"_id": 5}])"},
      {"count", R"([{"$match": {"price": {"$gte": 10}}}, {"$count": "n"}])", kSales,
       R"([{"n": 3}])"},
      {"count of nothing", R"([{"$match": {"price": 99}}, {"$count": "n"}])", kSales, "[]"},
  });
  CheckError(R"([{"$limit": 0}])", "[]", LocationCode(15958));
  CheckError(R"([{"$limit": "a"}])", "[]", LocationCode(15957));
  CheckError(R"([{"$skip": -1}])", "[]", LocationCode(15956));
  CheckError(R"([{"$count": "$x"}])", "[]", LocationCode(40158));
  CheckError(R"([{"$match": 1}])", "[]", LocationCode(15959));
}

TEST(PipelineTest, Project) {
  const char* books = R"([{"_id": 1, "title": "abc123", "isbn": "0001122223334",
      "author": {"last": "zzz", "first": "aaa"}, "copies": 5}])";
  CheckStages({
      {"inclusion keeps _id", R"([{"$project": {"title": 1, "author": 1}}])", books,
       R"([{"_id": 1, "title": "abc123", "author": {"last": "zzz", "first": "aaa"}}])"},
      {"_id excluded", R"([{"$project": {"_id": 0, "title": 1, "author": 1}}])", books,
       R"([{"title": "abc123", "author": {"last": "zzz", "first": "aaa"}}])"},
      {"exclusion", R"([{"$project": {"isbn": 0, "author.first": 0, "copies": 0}}])", books,
       R"([{"_id": 1, "title": "abc123", "author": {"last": "zzz"}}])"},
      {"nested inclusion", R"([{"$project": {"author.last": 1}}])", books,
       R"([{"_id": 1, "author": {"last": "zzz"}}])"},
      {"nested object form", R"([{"$project": {"author": {"first": 1}}}])", books,
       R"([{"_id": 1, "author": {"first": "aaa"}}])"},
      {"computed", R"([{"$project": {"title": 1, "isbn": {"prefix": {"$substrCP": ["$isbn", 0, 3]}},
                                      "lastName": "$author.last", "copiesSold": "$copies"}}])",
       books,
       R"([{"_id": 1, "title": "abc123", "isbn": {"prefix": "000"}, "lastName": "zzz", "copiesSold": 5}])"},
      {"$$REMOVE", R"([{"$project": {"title": 1, "x": "$$REMOVE"}}])", books,
       R"([{"_id": 1, "title": "abc123"}])"},
      {"only _id", R"([{"$project": {"_id": 0}}])", R"([{"_id": 1, "a": 2}])", R"([{"a": 2}])"},
      {"array of subdocs", R"([{"$project": {"a.b": 1}}])",
       R"([{"_id": 1, "a": [{"b": 1, "c": 2}, 5, {"c": 3}]}])",
       R"([{"_id": 1, "a": [{"b": 1}, {}]}])"},
      {"literal string", R"([{"$project": {"s": "text", "n": {"$literal": 1}}}])",
       R"([{"_id": 1}])", R"([{"_id": 1, "s": "text", "n": 1}])"},
  });
  CheckError(R"([{"$project": {"a": 1, "b": 0}}])", "[]", LocationCode(31254));
  CheckError(R"([{"$project": {"a": 0, "b": 1}}])", "[]", LocationCode(31253));
  CheckError(R"([{"$project": {}}])", "[]", LocationCode(51272));
  CheckError(R"([{"$project": {"a": 1, "a.b": 1}}])", "[]", LocationCode(31249));
}

TEST(PipelineTest, AddFieldsSetUnset) {
  CheckStages({
      {"addFields", R"([{"$addFields": {"total": {"$multiply": ["$price", "$quantity"]}}},
                        {"$project": {"total": 1}}, {"$limit": 2}])",
       kSales, R"([{"_id": 1, "total": 20}, {"_id": 2, "total": 20}])"},
      {"replace in place", R"([{"$set": {"a": 10}}])", R"([{"a": 1, "b": 2}])",
       R"([{"a": 10, "b": 2}])"},
      {"embedded", R"([{"$addFields": {"specs.fuel_type": "diesel"}}])",
       R"([{"_id": 1, "specs": {"doors": 4}}, {"_id": 2}])",
       R"([{"_id": 1, "specs": {"doors": 4, "fuel_type": "diesel"}}, {"_id": 2, "specs": {"fuel_type": "diesel"}}])"},
      {"remove with $$REMOVE", R"([{"$set": {"a": "$$REMOVE"}}])", R"([{"a": 1, "b": 2}])",
       R"([{"b": 2}])"},
      {"unset string", R"([{"$unset": "copies"}])", R"([{"_id": 1, "copies": 5, "t": "x"}])",
       R"([{"_id": 1, "t": "x"}])"},
      {"unset array", R"([{"$unset": ["isbn", "author.first"]}])",
       R"([{"_id": 1, "isbn": "1", "author": {"last": "a", "first": "b"}}])",
       R"([{"_id": 1, "author": {"last": "a"}}])"},
  });
  CheckError(R"([{"$unset": 1}])", "[]", LocationCode(31002));
}

TEST(PipelineTest, Group) {
  CheckStages({
      {"by item",
       R"([{"$group": {"_id": "$item", "totalSaleAmount": {"$sum": {"$multiply": ["$price", "$quantity"]}},
                                    "count": {"$count": {}}}}])",
       kSales,
       R"([{"_id": "abc", "totalSaleAmount": 120, "count": 2},
           {"_id": "jkl", "totalSaleAmount": 20, "count": 1},
           {"_id": "xyz", "totalSaleAmount": 150, "count": 2}])"},
      {"null _id",
       R"([{"$group": {"_id": null, "avgQuantity": {"$avg": "$quantity"}, "n": {"$sum": 1},
                                    "maxPrice": {"$max": "$price"}, "minPrice": {"$min": "$price"}}}])",
       kSales, R"([{"_id": null, "avgQuantity": 8.6, "n": 5, "maxPrice": 20, "minPrice": 5}])"},
      {"compound key",
       R"([{"$group": {"_id": {"month": {"$month": "$date"}, "year": {"$year": "$date"}},
                                        "items": {"$push": "$item"}}}])",
       kSales,
       R"([{"_id": {"month": 3, "year": 2014}, "items": ["abc", "jkl", "xyz"]},
           {"_id": {"month": 4, "year": 2014}, "items": ["xyz", "abc"]}])"},
      {"compound key missing member is null", R"([{"$group": {"_id": {"a": "$a", "b": "$b"}}}])",
       R"([{"a": 1}])", R"([{"_id": {"a": 1, "b": null}}])"},
      {"first last addToSet", R"([{"$group": {"_id": "$item", "first": {"$first": "$quantity"},
                                               "last": {"$last": "$quantity"}, "prices": {"$addToSet": "$price"}}}])",
       kSales,
       R"([{"_id": "abc", "first": 2, "last": 10, "prices": [10]},
           {"_id": "jkl", "first": 1, "last": 1, "prices": [20]},
           {"_id": "xyz", "first": 10, "last": 20, "prices": [5]}])"},
      {"1 and 1.0 group together", R"([{"$group": {"_id": "$k", "n": {"$sum": 1}}}])",
       R"([{"k": 1}, {"k": 1.0}, {"k": {"$numberLong": "1"}}])", R"([{"_id": 1, "n": 3}])"},
      {"sum promotion", R"([{"$group": {"_id": null, "s": {"$sum": "$v"}}}])",
       R"([{"v": 2147483647}, {"v": 1}, {"v": "x"}])",
       R"([{"_id": null, "s": {"$numberLong": "2147483648"}}])"},
      {"stdDev",
       R"([{"$group": {"_id": null, "pop": {"$stdDevPop": "$s"}, "samp": {"$stdDevSamp": "$s"}}}])",
       R"([{"s": 2}, {"s": 4}, {"s": 4}, {"s": 4}, {"s": 5}, {"s": 5}, {"s": 7}, {"s": 9}])",
       R"([{"_id": null, "pop": 2.0, "samp": 2.1380899352993952}])"},
      {"mergeObjects", R"([{"$group": {"_id": "$k", "m": {"$mergeObjects": "$o"}}}])",
       R"([{"k": 1, "o": {"a": 1}}, {"k": 1, "o": {"b": 2, "a": 3}}, {"k": 1}])",
       R"([{"_id": 1, "m": {"a": 3, "b": 2}}])"},
      {"empty input", R"([{"$group": {"_id": null, "n": {"$sum": 1}}}])", "[]", "[]"},
  });
  CheckError(R"([{"$group": {"total": {"$sum": 1}}}])", "[]", LocationCode(15955));
  CheckError(R"([{"$group": {"_id": null, "x": {"$foo": 1}}}])", "[]", LocationCode(15952));
  CheckError(R"([{"$group": {"_id": null, "x": 1}}])", "[]", LocationCode(40234));
  CheckError(R"([{"$group": {"_id": null, "a.b": {"$sum": 1}}}])", "[]", LocationCode(40235));
}

TEST(PipelineTest, SortIsStable) {
  CheckStages({
      {"sort", R"([{"$sort": {"price": -1}}, {"$project": {"_id": 1}}])", kSales,
       R"([{"_id": 2}, {"_id": 1}, {"_id": 5}, {"_id": 3}, {"_id": 4}])"},
      {"compound sort", R"([{"$sort": {"item": 1, "quantity": -1}}, {"$project": {"_id": 1}}])",
       kSales, R"([{"_id": 5}, {"_id": 1}, {"_id": 2}, {"_id": 4}, {"_id": 3}])"},
      {"sort then limit",
       R"([{"$sort": {"quantity": 1}}, {"$limit": 1}, {"$project": {"_id": 1}}])", kSales,
       R"([{"_id": 2}])"},
  });
  CheckError(R"([{"$sort": {}}])", "[]", LocationCode(15976));
}

TEST(PipelineTest, ForFindGivesWhatTheSameStagesParsedGive) {
  // {price: -1}, skip 1, limit 2: the sorted _ids are 2, 1, 5, 3, 4 (stable).
  auto sorted = [](int64_t skip, int64_t limit, bool with_sort) {
    std::optional<query::SortPattern> sort;
    if (with_sort) sort = query::SortPattern::Parse(Json(R"({"price": -1})")).value();
    auto p = Pipeline::ForFind(std::move(sort), skip, limit, PipelineContext());
    auto out = p->RunOver(Docs(kSales));
    EXPECT_TRUE(out.ok());
    std::vector<int> ids;
    for (const auto& d : out.value()) ids.push_back(d["_id"].Int32());
    return ids;
  };
  EXPECT_EQ(sorted(1, 2, true), (std::vector<int>{1, 5}));
  EXPECT_EQ(sorted(0, 3, true), (std::vector<int>{2, 1, 5}));
  EXPECT_EQ(sorted(3, 0, true), (std::vector<int>{3, 4}));
  EXPECT_EQ(sorted(1, 2, false), (std::vector<int>{2, 3}));
  EXPECT_EQ(sorted(0, 0, false), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(Pipeline::ForFind(std::nullopt, 0, 0, PipelineContext())->IsEmpty());
  EXPECT_EQ(Pipeline::ForFind(std::nullopt, 2, 3, PipelineContext())->NumStages(), 2u);
}

TEST(PipelineTest, Unwind) {
  const char* inv = R"([{"_id": 1, "item": "ABC1", "sizes": ["S", "M", "L"]},
                         {"_id": 2, "item": "EFG", "sizes": []},
                         {"_id": 3, "item": "IJK", "sizes": "M"},
                         {"_id": 4, "item": "LMN"},
                         {"_id": 5, "item": "XYZ", "sizes": null}])";
  CheckStages({
      {"string form", R"([{"$unwind": "$sizes"}])", inv,
       R"([{"_id": 1, "item": "ABC1", "sizes": "S"}, {"_id": 1, "item": "ABC1", "sizes": "M"},
           {"_id": 1, "item": "ABC1", "sizes": "L"}, {"_id": 3, "item": "IJK", "sizes": "M"}])"},
      {"includeArrayIndex",
       R"([{"$unwind": {"path": "$sizes", "includeArrayIndex": "arrayIndex"}}])", inv,
       R"([{"_id": 1, "item": "ABC1", "sizes": "S", "arrayIndex": {"$numberLong": "0"}},
           {"_id": 1, "item": "ABC1", "sizes": "M", "arrayIndex": {"$numberLong": "1"}},
           {"_id": 1, "item": "ABC1", "sizes": "L", "arrayIndex": {"$numberLong": "2"}},
           {"_id": 3, "item": "IJK", "sizes": "M", "arrayIndex": null}])"},
      {"preserve", R"([{"$unwind": {"path": "$sizes", "preserveNullAndEmptyArrays": true}}])", inv,
       R"([{"_id": 1, "item": "ABC1", "sizes": "S"}, {"_id": 1, "item": "ABC1", "sizes": "M"},
           {"_id": 1, "item": "ABC1", "sizes": "L"}, {"_id": 2, "item": "EFG", "sizes": []},
           {"_id": 3, "item": "IJK", "sizes": "M"}, {"_id": 4, "item": "LMN"},
           {"_id": 5, "item": "XYZ", "sizes": null}])"},
      {"nested path", R"([{"$unwind": "$a.b"}])", R"([{"a": {"b": [1, 2], "c": 3}}])",
       R"([{"a": {"b": 1, "c": 3}}, {"a": {"b": 2, "c": 3}}])"},
  });
  CheckError(R"([{"$unwind": "sizes"}])", "[]", LocationCode(28818));
  CheckError(R"([{"$unwind": {"path": "$a", "bogus": 1}}])", "[]", LocationCode(28811));
}

TEST(PipelineTest, ReplaceRootSortByCountBucket) {
  CheckStages({
      {"replaceRoot", R"([{"$replaceRoot": {"newRoot": "$name"}}])",
       R"([{"_id": 1, "name": {"first": "John", "last": "Backus"}}])",
       R"([{"first": "John", "last": "Backus"}])"},
      {"replaceWith mergeObjects",
       R"([{"$replaceWith": {"$mergeObjects": [{"dogs": 0, "cats": 0}, "$pets"]}}])",
       R"([{"_id": 1, "pets": {"dogs": 2, "fish": 3}}])", R"([{"dogs": 2, "cats": 0, "fish": 3}])"},
      {"sortByCount", R"([{"$unwind": "$tags"}, {"$sortByCount": "$tags"}])",
       R"([{"tags": ["a", "b"]}, {"tags": ["b", "c"]}, {"tags": ["b", "a"]}])",
       R"([{"_id": "b", "count": 3}, {"_id": "a", "count": 2}, {"_id": "c", "count": 1}])"},
      {"bucket",
       R"([{"$bucket": {"groupBy": "$price", "boundaries": [0, 200, 400], "default": "Other",
                                   "output": {"count": {"$sum": 1}, "titles": {"$push": "$title"}}}}])",
       R"([{"title": "A", "price": 199}, {"title": "B", "price": 280}, {"title": "C", "price": 76},
           {"title": "D", "price": 500}, {"title": "E"}])",
       R"([{"_id": 0, "count": 2, "titles": ["A", "C"]}, {"_id": 200, "count": 1, "titles": ["B"]},
           {"_id": "Other", "count": 2, "titles": ["D", "E"]}])"},
      {"bucket default output", R"([{"$bucket": {"groupBy": "$x", "boundaries": [0, 5, 10]}}])",
       R"([{"x": 1}, {"x": 6}, {"x": 2}])", R"([{"_id": 0, "count": 2}, {"_id": 5, "count": 1}])"},
  });
  CheckError(R"([{"$replaceRoot": {"newRoot": "$missing"}}])", R"([{"a": 1}])",
             LocationCode(40228));
  CheckError(R"([{"$bucket": {"groupBy": "$x", "boundaries": [0, 5]}}])", R"([{"x": 7}])",
             LocationCode(40066));
  CheckError(R"([{"$bucket": {"groupBy": "$x", "boundaries": [5, 0]}}])", "[]",
             LocationCode(40194));
  CheckError(R"([{"$sortByCount": "tags"}])", "[]", LocationCode(40148));
}

TEST(PipelineTest, FacetDocumentsSample) {
  CheckStages({
      {"facet", R"([{"$facet": {"cheap": [{"$match": {"price": {"$lt": 10}}}, {"$count": "n"}],
                                 "items": [{"$group": {"_id": "$item"}}, {"$sort": {"_id": 1}}]}}])",
       kSales,
       R"([{"cheap": [{"n": 2}], "items": [{"_id": "abc"}, {"_id": "jkl"}, {"_id": "xyz"}]}])"},
      {"documents", R"([{"$documents": [{"x": 10}, {"x": 2}]}, {"$sort": {"x": 1}}])",
       "[{\"ignored\": 1}]", R"([{"x": 2}, {"x": 10}])"},
  });
  auto r = RunPipeline(R"([{"$sample": {"size": 3}}])", kSales);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().size(), 3u);
  r = RunPipeline(R"([{"$sample": {"size": 10}}])", kSales);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().size(), 5u);
  CheckError(R"([{"$facet": {"f": [{"$facet": {}}]}}])", "[]", LocationCode(40600));
  CheckError(R"([{"$match": {}}, {"$documents": []}])", "[]", LocationCode(40602));
  CheckError(R"([{"$sample": {}}])", "[]", LocationCode(28749));
}

TEST(PipelineTest, StageSpecErrors) {
  CheckError(R"([{"$foo": {}}])", "[]", LocationCode(40324));
  auto r = RunPipeline(R"([{"$foo": {}}])", "[]");
  EXPECT_EQ(r.status().reason(), "Unrecognized pipeline stage name: '$foo'");
  CheckError(R"([{"$match": {}, "$limit": 1}])", "[]", LocationCode(40323));
  CheckError(R"([{}])", "[]", LocationCode(40323));
  CheckError(R"([1])", "[]", ErrorCode::kTypeMismatch);
  // Stages over other collections need PipelineContext::collections.
  CheckError(R"([{"$lookup": {"from": "c", "as": "j", "localField": "a", "foreignField": "b"}}])",
             "[]", ErrorCode::kCommandNotSupported);
  CheckError(R"([{"$out": "x"}])", "[]", ErrorCode::kCommandNotSupported);
  CheckError(R"([{"$project": {"x": {"$nope": 1}}}])", "[]", ErrorCode::kInvalidPipelineOperator);
}

TEST(PipelineTest, EvaluationErrorsSurfaceFromTheStream) {
  CheckError(R"([{"$project": {"x": {"$add": ["$item", 1]}}}])", kSales, LocationCode(16554));
}

TEST(PipelineTest, MemoryLimitWithoutDiskUse) {
  PipelineContext ctx;
  ctx.limits.group = 1000;
  ctx.limits.sort = 1000;
  std::string docs = "[";
  for (int i = 0; i < 100; ++i) {
    docs += (i ? "," : "") + std::string("{\"k\": ") + std::to_string(i) + ", \"pad\": \"" +
            std::string(50, 'x') + "\"}";
  }
  docs += "]";
  CheckError(R"([{"$group": {"_id": "$k", "p": {"$push": "$pad"}}}])", docs.c_str(),
             ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed, ctx);
  CheckError(R"([{"$sort": {"k": -1}}])", docs.c_str(),
             ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed, ctx);
  ctx.allow_disk_use = true;
  auto r = RunPipeline(R"([{"$sort": {"k": -1}}, {"$limit": 1}, {"$project": {"_id": 0, "k": 1}}])",
                       docs, ctx);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ToJson(r.value()), R"([{ "k" : 99 }])");
}

TEST(PipelineTest, SourceStagesDropAndPrepend) {
  auto p = Pipeline::Parse(Json(R"({"p": [{"$sortByCount": "$k"}, {"$skip": 1},
                                           {"$project": {"_id": 1}}]})")["p"]
                               .Obj(),
                           PipelineContext());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Pipeline& pipe = *p.value();
  // $sortByCount parses into two stages but is one source stage.
  EXPECT_EQ(pipe.NumStages(), 4u);
  ASSERT_EQ(pipe.SourceStages().size(), 3u);
  EXPECT_EQ(pipe.SourceStages()[1].ToJson(), R"({ "$skip" : 1 })");
  pipe.DropLeadingSources(1);  // both stages of $sortByCount go
  EXPECT_EQ(pipe.NumStages(), 2u);
  ASSERT_EQ(pipe.SourceStages().size(), 2u);
  EXPECT_EQ(pipe.SourceStages()[0].ToJson(), R"({ "$skip" : 1 })");
  ASSERT_TRUE(pipe.Prepend({Json(R"({"$group": {"_id": "$k", "count": {"$sum": 1}}})"),
                            Json(R"({"$sort": {"_id": 1}})")})
                  .ok());
  ASSERT_EQ(pipe.SourceStages().size(), 4u);
  EXPECT_EQ(pipe.SourceStages()[1].ToJson(), R"({ "$sort" : { "_id" : 1 } })");
  auto out = pipe.RunOver(Docs(R"([{"k": "b"}, {"k": "a"}, {"k": "b"}, {"k": "c"}])"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToJson(out.value()), R"([{ "_id" : "b" }, { "_id" : "c" }])");
  // Dropping the prepended ones leaves the original tail.
  pipe.DropLeadingSources(2);
  auto tail = pipe.RunOver(Docs(R"([{"_id": 1}, {"_id": 2}])"));
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(ToJson(tail.value()), R"([{ "_id" : 2 }])");
  // A stage that fails to parse is refused with Parse's code.
  EXPECT_EQ(pipe.Prepend({Json(R"({"$nope": 1})")}).code(), LocationCode(40324));
}

TEST(PipelineTest, PopLeadingMatchAndBind) {
  auto p =
      Pipeline::Parse(Json(R"({"p": [{"$match": {"a": 1}}, {"$project": {"a": 1}}]})")["p"].Obj(),
                      PipelineContext());
  ASSERT_TRUE(p.ok());
  auto filter = p.value()->PopLeadingMatch();
  ASSERT_TRUE(filter.has_value());
  EXPECT_EQ(filter->filter.ToJson(), R"({ "a" : 1 })");
  // The filter comes parsed.
  EXPECT_TRUE(filter->matcher.Matches(Json(R"({"a": 1})")));
  EXPECT_FALSE(filter->matcher.Matches(Json(R"({"a": 2})")));
  EXPECT_EQ(p.value()->NumStages(), 1u);
  ASSERT_EQ(p.value()->SourceStages().size(), 1u);
  EXPECT_EQ(p.value()->SourceStages()[0].ToJson(), R"({ "$project" : { "a" : 1 } })");
  EXPECT_FALSE(p.value()->PopLeadingMatch().has_value());
  // The stream outlives the Pipeline object.
  auto stream = p.value()->Bind(
      std::make_unique<VectorDocumentStream>(Docs(R"([{"_id": 1, "a": 1, "b": 2}])")));
  p.value().reset();
  auto out = DrainStream(*stream);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ToJson(out.value()), R"([{ "_id" : 1, "a" : 1 }])");

  auto with_expr = Pipeline::Parse(
      Json(R"({"p": [{"$match": {"$expr": {"$eq": ["$a", 1]}}}]})")["p"].Obj(), PipelineContext());
  ASSERT_TRUE(with_expr.ok());
  // The query layer runs $expr too (through query_hooks.cc), so such a $match is pushed down.
  EXPECT_TRUE(with_expr.value()->PopLeadingMatch().has_value());
  auto empty = Pipeline::Parse(Json(R"({"p": []})")["p"].Obj(), PipelineContext());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value()->IsEmpty());
}

}  // namespace
}  // namespace hourglass::pipeline
