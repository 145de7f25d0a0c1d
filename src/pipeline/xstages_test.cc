// Stages over other collections ($lookup, $graphLookup, $unionWith, $out, $merge) against an
// in-memory fake CollectionAccess, and the self-contained $bucketAuto and $redact.
#include <gtest/gtest.h>

#include <map>

#include "bson/bson_compare.h"
#include "pipeline/errors.h"
#include "pipeline/pipeline.h"
#include "pipeline/test_util.h"
#include "query/matcher.h"

namespace hourglass::pipeline {
namespace {

using bson::BsonObj;
using testing::Docs;
using testing::Json;
using testing::ToJson;

// Collections as vectors of documents in the database "db".
class FakeAccess : public CollectionAccess {
 public:
  std::map<std::string, std::vector<BsonObj>> colls;
  int reads = 0;
  std::vector<std::string> unique_indexes;  // comma-joined field lists

  StatusWith<std::unique_ptr<DocumentStream>> Read(const std::string&, const std::string& coll,
                                                   const BsonObj& filter,
                                                   const query::ExpressionContext& ectx) override {
    ++reads;
    HG_ASSIGN_OR_RETURN(auto m, query::Matcher::Parse(filter, ectx));
    std::vector<BsonObj> out;
    for (const auto& d : colls[coll]) {
      if (m.Matches(d)) out.push_back(d);
    }
    return std::unique_ptr<DocumentStream>(std::make_unique<VectorDocumentStream>(out));
  }
  // A near read that keeps the collection's order and records each point it was asked for.
  std::vector<BsonObj> near_points;
  StatusWith<std::unique_ptr<DocumentStream>> ReadNear(const std::string&, const std::string& coll,
                                                       const GeoNearSpec& spec,
                                                       const PipelineContext& ctx) override {
    HG_ASSIGN_OR_RETURN(BsonObj near, NearValue(spec, ctx.now_millis));
    near_points.push_back(near.Owned());
    return std::unique_ptr<DocumentStream>(std::make_unique<VectorDocumentStream>(colls[coll]));
  }
  Status ReplaceCollection(const std::string&, const std::string& coll, const BsonObj&,
                           DocumentStream& docs) override {
    HG_ASSIGN_OR_RETURN(auto all, DrainStream(docs));
    colls[coll] = all;
    return Status::OK();
  }
  Status CheckMergeTarget(const std::string&, const std::string&,
                          const std::vector<std::string>& on,
                          const bson::StringComparator*) override {
    std::string joined;
    for (const auto& f : on) joined += (joined.empty() ? "" : ",") + f;
    if (joined == "_id") return Status::OK();
    for (const auto& u : unique_indexes) {
      if (u == joined) return Status::OK();
    }
    return PipelineError(51183, "Cannot find index to verify that join fields will be unique");
  }
  StatusWith<std::optional<BsonObj>> FindOne(
      const std::string&, const std::string& coll, const BsonObj& filter,
      const std::shared_ptr<const bson::StringComparator>&) override {
    HG_ASSIGN_OR_RETURN(auto m, query::Matcher::Parse(filter));
    for (const auto& d : colls[coll]) {
      if (m.Matches(d)) return std::optional<BsonObj>(d);
    }
    return std::optional<BsonObj>();
  }
  Status Insert(const std::string&, const std::string& coll, const BsonObj& doc) override {
    for (const auto& d : colls[coll]) {
      if (bson::ElementValuesEqual(d["_id"], doc["_id"])) {
        return Status(ErrorCode::kDuplicateKey, "E11000 duplicate key error");
      }
    }
    colls[coll].push_back(doc.Owned());
    return Status::OK();
  }
  Status Replace(const std::string&, const std::string& coll, const BsonObj& old_doc,
                 const BsonObj& new_doc) override {
    for (auto& d : colls[coll]) {
      if (bson::ElementValuesEqual(d["_id"], old_doc["_id"])) d = new_doc.Owned();
    }
    return Status::OK();
  }
};

class XStagesTest : public ::testing::Test {
 protected:
  XStagesTest() : access_(std::make_shared<FakeAccess>()) {
    ctx_.db = "db";
    ctx_.collections = access_;
  }
  void SetColl(const std::string& name, const char* docs) { access_->colls[name] = Docs(docs); }

  StatusWith<std::vector<BsonObj>> Run(const char* pipeline, const char* input) {
    return testing::RunPipeline(pipeline, input, ctx_);
  }
  void Expect(const char* pipeline, const char* input, const char* expected) {
    auto r = Run(pipeline, input);
    ASSERT_TRUE(r.ok()) << pipeline << ": " << r.status().ToString();
    ExpectDocs(r.value(), expected);
  }
  void ExpectDocs(const std::vector<BsonObj>& got, const char* expected) {
    auto want = Docs(expected);
    bool same = want.size() == got.size();
    for (size_t i = 0; same && i < want.size(); ++i) same = want[i].BinaryEqual(got[i]);
    EXPECT_TRUE(same) << "got:  " << ToJson(got) << "\nwant: " << ToJson(want);
  }
  void ExpectError(const char* pipeline, const char* input, int code) {
    auto r = Run(pipeline, input);
    ASSERT_FALSE(r.ok()) << pipeline << " gave " << ToJson(r.value());
    EXPECT_EQ(r.status().code_number(), code) << pipeline << ": " << r.status().ToString();
  }

  std::shared_ptr<FakeAccess> access_;
  PipelineContext ctx_;
};

TEST_F(XStagesTest, LookupEqualityUsesArrayAndNullSemantics) {
  SetColl("f", R"([{"_id": 1, "k": 1}, {"_id": 2, "k": [2, 3]}, {"_id": 3, "k": null},
                   {"_id": 4}])");
  Expect(R"([{"$lookup": {"from": "f", "localField": "a", "foreignField": "k", "as": "j"}},
             {"$project": {"n": {"$map": {"input": "$j", "in": "$$this._id"}}}}])",
         R"([{"_id": "scalar", "a": 3}, {"_id": "array", "a": [1, 2]}, {"_id": "missing"},
             {"_id": "null", "a": null}, {"_id": "none", "a": 9}])",
         R"([{"_id": "scalar", "n": [2]}, {"_id": "array", "n": [1, 2]},
             {"_id": "missing", "n": [3, 4]}, {"_id": "null", "n": [3, 4]},
             {"_id": "none", "n": []}])");
}

TEST_F(XStagesTest, LookupEqualityReadsTheForeignCollectionOnce) {
  SetColl("f", R"([{"_id": 1, "k": 1}])");
  auto r = Run(R"([{"$lookup": {"from": "f", "localField": "a", "foreignField": "k", "as": "j"}}])",
               R"([{"a": 1}, {"a": 2}, {"a": 1}, {"a": 3}])");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().size(), 4u);
  EXPECT_EQ(access_->reads, 1);
}

TEST_F(XStagesTest, LookupPipelineWithLet) {
  SetColl("stock", R"([{"_id": 1, "item": "a", "qty": 5}, {"_id": 2, "item": "a", "qty": 50},
                       {"_id": 3, "item": "b", "qty": 70}])");
  Expect(R"([{"$lookup": {"from": "stock", "let": {"it": "$item", "need": "$n"},
               "pipeline": [{"$match": {"$expr": {"$and": [{"$eq": ["$item", "$$it"]},
                                                          {"$gte": ["$qty", "$$need"]}]}}},
                            {"$project": {"_id": 0, "qty": 1}}],
               "as": "s"}}])",
         R"([{"_id": 10, "item": "a", "n": 10}, {"_id": 11, "item": "b", "n": 100}])",
         R"([{"_id": 10, "item": "a", "n": 10, "s": [{"qty": 50}]},
             {"_id": 11, "item": "b", "n": 100, "s": []}])");
}

TEST_F(XStagesTest, LookupCorrelatedEqualityKeepsExprSemantics) {
  // The foreign documents are indexed by `k` for the $expr equality; results must stay those of
  // $expr's $eq: whole values compared, null only equal to null, missing only to missing.
  SetColl("f", R"([{"_id": 1, "k": [1, 2]}, {"_id": 2, "k": 1}, {"_id": 3, "k": null},
                   {"_id": 4}, {"_id": 5, "k": {"$numberLong": "1"}}])");
  Expect(R"([{"$lookup": {"from": "f", "let": {"v": "$v"}, "as": "j",
               "pipeline": [{"$match": {"$expr": {"$eq": ["$$v", "$k"]}}}]}},
             {"$project": {"ids": "$j._id"}}])",
         R"([{"_id": "one", "v": 1}, {"_id": "arr", "v": [1, 2]}, {"_id": "null", "v": null},
             {"_id": "missing"}])",
         R"([{"_id": "one", "ids": [2, 5]}, {"_id": "arr", "ids": [1]},
             {"_id": "null", "ids": [3]}, {"_id": "missing", "ids": [4]}])");
  EXPECT_EQ(access_->reads, 1);
}

TEST_F(XStagesTest, LookupCombinedForm) {
  SetColl("f", R"([{"_id": 1, "k": "x", "v": 1}, {"_id": 2, "k": "x", "v": 5},
                   {"_id": 3, "k": "y", "v": 9}])");
  Expect(R"([{"$lookup": {"from": "f", "localField": "a", "foreignField": "k", "let": {"m": "$m"},
               "pipeline": [{"$match": {"$expr": {"$gt": ["$v", "$$m"]}}},
                            {"$project": {"_id": 1}}], "as": "j"}}])",
         R"([{"_id": 0, "a": "x", "m": 2}])",
         R"([{"_id": 0, "a": "x", "m": 2, "j": [{"_id": 2}]}])");
}

TEST_F(XStagesTest, LookupSpecErrors) {
  ExpectError(R"([{"$lookup": {"from": "f", "localField": "a", "foreignField": "b"}}])", "[]",
              static_cast<int>(ErrorCode::kFailedToParse));
  ExpectError(R"([{"$lookup": {"from": "f", "as": "x"}}])", "[]",
              static_cast<int>(ErrorCode::kFailedToParse));
  ExpectError(R"([{"$lookup": {"from": "f", "as": "x", "localField": "a"}}])", "[]",
              static_cast<int>(ErrorCode::kFailedToParse));
  ExpectError(R"([{"$lookup": {"from": "f", "as": "x", "pipeline": [], "bad": 1}}])", "[]",
              static_cast<int>(ErrorCode::kFailedToParse));
  ExpectError(R"([{"$lookup": {"from": "f", "as": "x", "pipeline": [{"$out": "o"}]}}])", "[]",
              51047);
  // MongoDB 7.0 reports a bad user variable name as FailedToParse.
  ExpectError(R"([{"$lookup": {"from": "f", "as": "x", "let": {"Bad": 1}, "pipeline": []}}])", "[]",
              static_cast<int>(ErrorCode::kFailedToParse));
}

TEST_F(XStagesTest, LookupLetVariablesAreScopedToTheSubPipeline) {
  SetColl("f", R"([{"_id": 1, "k": 1}, {"_id": 2, "k": 2}])");
  // Inner $let/$map/$filter variables shadow the stage's; outside them it is the stage's.
  Expect(R"([{"$lookup": {"from": "f", "as": "j", "let": {"x": "$v"}, "pipeline": [
               {"$match": {"$expr": {"$eq": ["$k", "$$x"]}}},
               {"$project": {"_id": 0, "o": "$$x",
                             "l": {"$let": {"vars": {"x": "L"}, "in": "$$x"}},
                             "m": {"$map": {"input": [7], "as": "x", "in": "$$x"}}}}]}}])",
         R"([{"v": 1}, {"v": 2}, {"v": 3}])",
         R"([{"v": 1, "j": [{"o": 1, "l": "L", "m": [7]}]},
             {"v": 2, "j": [{"o": 2, "l": "L", "m": [7]}]},
             {"v": 3, "j": []}])");
  // A string equal to "$$x" outside an expression is a plain value, not the variable.
  Expect(R"([{"$lookup": {"from": "f", "as": "j", "let": {"x": "$v"}, "pipeline": [
               {"$project": {"_id": 0, "s": {"$literal": "$$x"}}}, {"$limit": 1}]}}])",
         R"([{"v": 1}])", R"([{"v": 1, "j": [{"s": "$$x"}]}])");
  // The variable ends with the sub-pipeline.
  ExpectError(R"([{"$lookup": {"from": "f", "as": "j", "let": {"x": "$v"}, "pipeline": []}},
                  {"$project": {"y": "$$x"}}])",
              "[]", 17276);
}

TEST_F(XStagesTest, CommandLetReachesSubPipelinesAndNestedLookups) {
  SetColl("f", R"([{"_id": 1, "k": 1}, {"_id": 2, "k": 2}])");
  auto let = std::make_shared<query::LetVariables>(
      std::vector<std::string>{"want", "x"},
      LetValueDocuments({Value::Int(2), Value::String("cmd")}));
  ctx_.let = let;
  // The uncorrelated sub-pipeline's leading $match is handed to the read with the variables.
  Expect(R"([{"$lookup": {"from": "f", "as": "j", "pipeline": [
               {"$match": {"$expr": {"$eq": ["$k", "$$want"]}}}, {"$project": {"_id": 1}}]}},
             {"$set": {"x": "$$x"}}])",
         R"([{"_id": 9}])", R"([{"_id": 9, "j": [{"_id": 2}], "x": "cmd"}])");
  // A stage's let shadows the command's; a nested $lookup reads its enclosing one's.
  Expect(R"([{"$lookup": {"from": "f", "as": "j", "let": {"x": "$v"}, "pipeline": [
               {"$match": {"_id": 1}},
               {"$lookup": {"from": "f", "as": "n", "pipeline": [
                 {"$match": {"$expr": {"$eq": ["$k", "$$x"]}}}, {"$project": {"_id": 1}}]}},
               {"$project": {"_id": 0, "x": "$$x", "want": "$$want", "n": 1}}]}}])",
         R"([{"v": 1}, {"v": 2}])",
         R"([{"v": 1, "j": [{"n": [{"_id": 1}], "x": 1, "want": 2}]},
             {"v": 2, "j": [{"n": [{"_id": 2}], "x": 2, "want": 2}]}])");
}

TEST_F(XStagesTest, UnionWith) {
  SetColl("o", R"([{"_id": 1, "x": 1}, {"_id": 2, "x": 2}])");
  Expect(R"([{"$unionWith": "o"}])", R"([{"_id": 0}])",
         R"([{"_id": 0}, {"_id": 1, "x": 1}, {"_id": 2, "x": 2}])");
  Expect(R"([{"$unionWith": {"coll": "o", "pipeline": [{"$match": {"x": 2}}]}}])",
         R"([{"_id": 0}])", R"([{"_id": 0}, {"_id": 2, "x": 2}])");
  ExpectError(R"([{"$unionWith": {"pipeline": []}}])", "[]",
              static_cast<int>(ErrorCode::kFailedToParse));
  ExpectError(R"([{"$unionWith": {"coll": "o", "x": 1}}])", "[]", 40415);
  ExpectError(R"([{"$unionWith": 1}])", "[]", static_cast<int>(ErrorCode::kFailedToParse));
}

TEST_F(XStagesTest, LeadingGeoNearOfASubPipelineReadsByDistance) {
  SetColl("f", R"([{"_id": 1, "k": "x"}, {"_id": 2, "k": "y"}, {"_id": 3, "k": "x"}])");
  // The point is the input document's, bound by `let`; the rest runs over the near read (a
  // $match after $geoNear stays a stage), joined on localField/foreignField when given.
  Expect(R"([{"$lookup": {"from": "f", "let": {"pt": "$loc"}, "localField": "a",
               "foreignField": "k", "pipeline": [{"$geoNear": {"near": "$$pt",
               "distanceField": "d"}}, {"$match": {"_id": {"$gt": 1}}}], "as": "j"}},
             {"$project": {"ids": "$j._id"}}])",
         R"([{"_id": 0, "a": "x", "loc": [1, 2]}, {"_id": 1, "a": "y", "loc": [3, 4]}])",
         R"([{"_id": 0, "ids": [3]}, {"_id": 1, "ids": [2]}])");
  ASSERT_EQ(access_->near_points.size(), 2u);
  ExpectDocs(access_->near_points, R"([{"near": [1, 2]}, {"near": [3, 4]}])");
  EXPECT_EQ(access_->reads, 0);
  // A constant point is read once for all input documents.
  access_->near_points.clear();
  auto r = Run(R"([{"$lookup": {"from": "f", "as": "j",
                   "pipeline": [{"$geoNear": {"near": [0, 0], "distanceField": "d"}}]}}])",
               R"([{"_id": 0}, {"_id": 1}, {"_id": 2}])");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(access_->near_points.size(), 1u);
  // $unionWith too; a `near` that is no point once evaluated is refused as a constant one is.
  access_->near_points.clear();
  Expect(R"([{"$unionWith": {"coll": "f", "pipeline": [{"$geoNear": {"near": {"type": "Point",
               "coordinates": [{"$add": [1, 1]}, 0]}, "distanceField": "d"}},
               {"$project": {"_id": 1}}]}}])",
         R"([{"_id": 0}])", R"([{"_id": 0}, {"_id": 1}, {"_id": 2}, {"_id": 3}])");
  ExpectDocs(access_->near_points, R"([{"near": {"type": "Point", "coordinates": [2, 0]}}])");
  ExpectError(R"([{"$lookup": {"from": "f", "let": {"pt": "$a"}, "as": "j",
                 "pipeline": [{"$geoNear": {"near": "$$pt", "distanceField": "d"}}]}}])",
              R"([{"a": "here"}])", 5860401);
  // $geoNear stays first only: after another stage it is refused.
  ExpectError(R"([{"$unionWith": {"coll": "f", "pipeline": [{"$match": {}},
                 {"$geoNear": {"near": [0, 0], "distanceField": "d"}}]}}])",
              "[]", 40603);
}

TEST_F(XStagesTest, GraphLookupFollowsChainsWithDepth) {
  // The reporting chain of MongoDB's $graphLookup manual example.
  SetColl("emp", R"([{"_id": 1, "name": "Dev"},
                     {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
                     {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
                     {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
                     {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
                     {"_id": 6, "name": "Dan", "reportsTo": "Andrew"}])");
  Expect(R"([{"$graphLookup": {"from": "emp", "startWith": "$reportsTo",
               "connectFromField": "reportsTo", "connectToField": "name", "as": "h",
               "depthField": "d"}},
             {"$project": {"h": {"$map": {"input": "$h", "in": ["$$this.name", "$$this.d"]}}}}])",
         R"([{"_id": 5, "name": "Asya", "reportsTo": "Ron"}])",
         R"([{"_id": 5, "h": [["Ron", {"$numberLong": "0"}], ["Eliot", {"$numberLong": "1"}],
                               ["Dev", {"$numberLong": "2"}]]}])");
  Expect(R"([{"$graphLookup": {"from": "emp", "startWith": "$reportsTo",
               "connectFromField": "reportsTo", "connectToField": "name", "as": "h",
               "maxDepth": 0, "restrictSearchWithMatch": {"_id": {"$ne": 3}}}},
             {"$project": {"n": {"$size": "$h"}}}])",
         R"([{"_id": 5, "reportsTo": "Ron"}, {"_id": 6, "reportsTo": "Andrew"}])",
         R"([{"_id": 5, "n": 0}, {"_id": 6, "n": 1}])");
  ExpectError(R"([{"$graphLookup": {"from": "emp", "startWith": 1, "as": "h"}}])", "[]", 40105);
  ExpectError(R"([{"$graphLookup": {"from": "emp", "startWith": 1, "connectFromField": "a",
                   "connectToField": "b", "as": "h", "maxDepth": -1}}])",
              "[]", 40101);
  ExpectError(R"([{"$graphLookup": {"from": "emp", "startWith": 1, "connectFromField": "a",
                   "connectToField": "b", "as": "h", "maxDepth": "x"}}])",
              "[]", 40100);
  ExpectError(R"([{"$graphLookup": {"from": "emp", "nope": 1}}])", "[]", 40104);
  ExpectError(R"([{"$graphLookup": {"nope": 1}}])", "[]",
              static_cast<int>(ErrorCode::kFailedToParse));
}

TEST_F(XStagesTest, OutReplacesTheTargetAndReturnsNothing) {
  SetColl("t", R"([{"_id": "old"}])");
  Expect(R"([{"$match": {"a": {"$gt": 1}}}, {"$out": "t"}])", R"([{"_id": 1, "a": 1},
         {"_id": 2, "a": 2}])",
         "[]");
  ExpectDocs(access_->colls["t"], R"([{"_id": 2, "a": 2}])");
  ExpectError(R"([{"$out": "t"}, {"$match": {}}])", "[]", 40601);
  ExpectError(R"([{"$merge": "t"}, {"$match": {}}])", "[]", 40601);
  ExpectError(R"([{"$out": 1}])", "[]", 16990);
  ExpectError(R"([{"$out": "system.x"}])", "[]", 17385);
}

TEST_F(XStagesTest, MergeModes) {
  const char* target = R"([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2}])";
  const char* input = R"([{"_id": 1, "a": 10}, {"_id": 3, "a": 30}])";
  struct Case {
    const char* spec;
    const char* expected;
  } cases[] = {
      {R"({"into": "t"})",
       R"([{"_id": 1, "a": 10, "b": 1}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}])"},
      {R"({"into": "t", "whenMatched": "replace"})",
       R"([{"_id": 1, "a": 10}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}])"},
      {R"({"into": "t", "whenMatched": "keepExisting"})",
       R"([{"_id": 1, "a": 1, "b": 1}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}])"},
      {R"({"into": "t", "whenNotMatched": "discard"})",
       R"([{"_id": 1, "a": 10, "b": 1}, {"_id": 2, "a": 2, "b": 2}])"},
      {R"({"into": "t", "whenMatched": [{"$set": {"b": {"$add": ["$b", "$$new.a"]}}}]})",
       R"([{"_id": 1, "a": 1, "b": 11}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}])"},
      {R"({"into": "t", "let": {"x": "$a"}, "whenMatched": [{"$set": {"c": "$$x"}}]})",
       R"([{"_id": 1, "a": 1, "b": 1, "c": 10}, {"_id": 2, "a": 2, "b": 2}, {"_id": 3, "a": 30}])"},
  };
  for (const auto& c : cases) {
    SetColl("t", target);
    std::string p = std::string(R"([{"$merge": )") + c.spec + "}]";
    Expect(p.c_str(), input, "[]");
    ExpectDocs(access_->colls["t"], c.expected);
  }
  SetColl("t", target);
  ExpectError(R"([{"$merge": {"into": "t", "whenMatched": "fail"}}])", input, 11000);
  SetColl("t", target);
  ExpectError(R"([{"$merge": {"into": "t", "whenNotMatched": "fail"}}])", input, 13113);
  ExpectError(R"([{"$merge": {"into": "t", "on": "a"}}])", input, 51183);
  access_->unique_indexes.push_back("a");
  ExpectError(R"([{"$merge": {"into": "t", "on": "a"}}])", R"([{"b": 1}])", 51132);
  ExpectError(R"([{"$merge": {"into": "t", "whenMatched": "nope"}}])", "[]",
              static_cast<int>(ErrorCode::kBadValue));
  ExpectError(R"([{"$merge": {"into": "t", "let": {"x": 1}}}])", "[]", 51199);
  ExpectError(R"([{"$merge": {"whenMatched": "merge"}}])", "[]", 40414);
  ExpectError(R"([{"$merge": 5}])", "[]", static_cast<int>(ErrorCode::kTypeMismatch));
  ExpectError(R"([{"$merge": {"into": "t", "whenMatched": "fail", "whenNotMatched": "discard"}}])",
              "[]", 51181);
  ExpectError(R"([{"$merge": {"into": "t", "let": {"new": 1}, "whenMatched": []}}])", "[]", 51273);
  ExpectError(R"([{"$merge": {"into": "system.x"}}])", "[]", 31319);
  ExpectError(R"([{"$merge": {"into": {"db": "admin", "coll": "x"}}}])", "[]", 31320);
  ExpectError(R"([{"$out": {"db": "local", "coll": "x"}}])", "[]", 31321);
}

TEST(BucketAutoTest, EvenBucketsAndGranularity) {
  const char* nums = R"([{"v": 1}, {"v": 2}, {"v": 3}, {"v": 4}, {"v": 5}, {"v": 6}, {"v": 7},
                         {"v": 8}, {"v": 9}, {"v": 10}])";
  auto r = testing::RunPipeline(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2}}])", nums);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ToJson(r.value()), ToJson(Docs(R"([{"_id": {"min": 1, "max": 6}, "count": 5},
                                                {"_id": {"min": 6, "max": 10}, "count": 5}])")));
  // Equal values stay in one bucket.
  r = testing::RunPipeline(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2,
                                  "output": {"s": {"$sum": "$v"}}}}])",
                           R"([{"v": 1}, {"v": 1}, {"v": 1}, {"v": 2}])");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ToJson(r.value()), ToJson(Docs(R"([{"_id": {"min": 1, "max": 2}, "s": 3},
                                                {"_id": {"min": 2, "max": 2}, "s": 2}])")));
  r = testing::RunPipeline(
      R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 2, "granularity": "POWERSOF2"}}])", nums);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ToJson(r.value()), ToJson(Docs(R"([{"_id": {"min": 0.5, "max": 8}, "count": 7},
                                                {"_id": {"min": 8, "max": 16}, "count": 3}])")));
  r = testing::RunPipeline(
      R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 3, "granularity": "1-2-5"}}])", nums);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ToJson(r.value()), ToJson(Docs(R"([{"_id": {"min": 0.5, "max": 5.0}, "count": 4},
                                                {"_id": {"min": 5.0, "max": 10.0}, "count": 5},
                                                {"_id": {"min": 10.0, "max": 20.0}, "count": 1}])")));
}

TEST(BucketAutoTest, Errors) {
  auto code = [](const char* p, const char* in = "[]") {
    auto r = testing::RunPipeline(p, in);
    return r.ok() ? 0 : r.status().code_number();
  };
  EXPECT_EQ(code(R"([{"$bucketAuto": 1}])"), 40240);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "v", "buckets": 1}}])"), 40239);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": "x"}}])"), 40241);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 1.5}}])"), 40242);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 0}}])"), 40243);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "output": 1}}])"), 40244);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "x": 1}}])"), 40245);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v"}}])"), 40246);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"buckets": 0}}])"), 40246);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": {"a": "$v"}, "buckets": 1}}])"), 40239);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "granularity": "R3"}}])"),
            40257);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "granularity": "R5"}}])",
                 R"([{"v": "s"}])"),
            40258);
  EXPECT_EQ(code(R"([{"$bucketAuto": {"groupBy": "$v", "buckets": 1, "granularity": "R5"}}])",
                 R"([{"v": -1}])"),
            40260);
}

TEST(RedactTest, KeepPruneDescend) {
  // Keep the levels whose `tags` include "G" (levels without `tags` are descended into).
  auto r = testing::RunPipeline(
      R"([{"$redact": {"$cond": {"if": {"$eq": [{"$ifNull": ["$tags", null]}, null]},
                                 "then": "$$DESCEND",
                                 "else": {"$cond": [{"$in": ["G", "$tags"]}, "$$DESCEND",
                                                    "$$PRUNE"]}}}}])",
      R"([{"_id": 1, "tags": ["G"], "a": {"tags": ["X"], "v": 1},
           "b": [{"tags": ["G"], "v": 2}, {"tags": ["X"]}, 7], "c": {"v": 3}},
          {"_id": 2, "tags": ["X"]}])");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ToJson(r.value()),
            ToJson(Docs(R"([{"_id": 1, "tags": ["G"], "b": [{"tags": ["G"], "v": 2}, 7],
                             "c": {"v": 3}}])")));
  r = testing::RunPipeline(R"([{"$redact": "$$KEEP"}])", R"([{"a": {"b": 1}}])");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ToJson(r.value()), ToJson(Docs(R"([{"a": {"b": 1}}])")));
  r = testing::RunPipeline(R"([{"$redact": "x"}])", R"([{"a": 1}])");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code_number(), 17053);
}

}  // namespace
}  // namespace hourglass::pipeline
