// The planner's index choice and bounds, table-driven: each case is a filter (and sort/hint) on a
// collection with indexes {a: 1}, {b: -1}, {a: 1, c: 1}, {m: 1} (multikey), {h: "hashed"},
// a hidden {x: 1}, a sparse {s: 1} and a partial {p: 1}, and the expected plan.
#include "exec/query_planner.h"

#include "exec/exec_test_util.h"

namespace hourglass::exec {
namespace {

using bson::BsonObj;

struct PlanCase {
  const char* filter;
  const char* sort;
  const char* hint;    // JSON of {hint: ...} or nullptr
  const char* index;   // expected index name, nullptr for COLLSCAN
  const char* bounds;  // expected indexBounds JSON, nullptr to skip
  bool provides_sort = false;
};

class QueryPlannerTest : public testing::ExecTest, public ::testing::WithParamInterface<PlanCase> {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    ASSERT_FALSE(HasFatalFailure());
    Status st = CreateIndexes({"test", "c"}, R"([
        {"v": 2, "key": {"a": 1}, "name": "a_1"}, {"v": 2, "key": {"b": -1}, "name": "b_-1"},
        {"v": 2, "key": {"a": 1, "c": 1}, "name": "a_1_c_1"},
        {"v": 2, "key": {"m": 1}, "name": "m_1"},
        {"v": 2, "key": {"h": "hashed"}, "name": "h_hashed"},
        {"v": 2, "key": {"x": 1}, "name": "x_1", "hidden": true},
        {"v": 2, "key": {"s": 1}, "name": "s_1", "sparse": true},
        {"v": 2, "key": {"p": 1}, "name": "p_1", "partialFilterExpression": {"q": true}}])");
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = Insert({"test", "c"}, R"([{"m": [1, 2]}])");
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
};

TEST_P(QueryPlannerTest, ChoosesIndexAndBounds) {
  const PlanCase& c = GetParam();
  auto coll = catalog_->Lookup({"test", "c"});
  ASSERT_NE(coll, nullptr);
  BsonObj filter = bson::FromJson(c.filter).value();
  BsonObj sort = c.sort ? bson::FromJson(c.sort).value() : BsonObj();
  BsonObj hint = c.hint ? bson::FromJson(c.hint).value() : BsonObj();
  auto choice =
      exec::PlanQuery(*coll, filter, sort, hint.IsEmpty() ? bson::BsonElement() : hint["hint"]);
  ASSERT_TRUE(choice.ok()) << choice.status().ToString();
  const exec::QueryPlan& p = choice.value().winner;
  if (c.index == nullptr) {
    EXPECT_TRUE(p.IsCollScan()) << c.filter << " chose " << p.index->desc.name;
    return;
  }
  ASSERT_FALSE(p.IsCollScan()) << c.filter;
  EXPECT_EQ(p.index->desc.name, c.index) << c.filter;
  if (c.bounds) {
    EXPECT_EQ(p.bounds.ToJson(), bson::FromJson(c.bounds).value().ToJson()) << c.filter;
  }
  EXPECT_EQ(p.provides_sort, c.provides_sort) << c.filter;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, QueryPlannerTest,
    ::testing::Values(
        PlanCase{R"({"a": 5})", nullptr, nullptr, "a_1", R"({"a": ["[5, 5]"]})"},
        PlanCase{R"({"a": {"$eq": "x"}})", nullptr, nullptr, "a_1", R"({"a": ["[\"x\", \"x\"]"]})"},
        PlanCase{R"({"a": {"$gt": 5, "$lte": 9}})", nullptr, nullptr, "a_1",
                 R"({"a": ["(5, 9]"]})"},
        PlanCase{R"({"a": {"$gte": "k"}})", nullptr, nullptr, "a_1", R"j({"a": ["[\"k\", {})"]})j"},
        PlanCase{R"({"a": {"$gt": 5, "$lt": 2}})", nullptr, nullptr, "a_1", R"({"a": []})"},
        PlanCase{R"({"a": {"$in": [3, 1, 3]}})", nullptr, nullptr, "a_1",
                 R"({"a": ["[1, 1]", "[3, 3]"]})"},
        // Descending field: intervals in index order.
        PlanCase{R"({"b": {"$lt": 5}})", nullptr, nullptr, "b_-1", R"({"b": ["(5, -inf.0]"]})"},
        // Two equality fields beat one.
        PlanCase{R"({"a": 1, "c": 2})", nullptr, nullptr, "a_1_c_1",
                 R"({"a": ["[1, 1]"], "c": ["[2, 2]"]})"},
        PlanCase{R"({"$and": [{"a": 1}, {"c": {"$gt": 0}}]})", nullptr, nullptr, "a_1_c_1",
                 R"({"a": ["[1, 1]"], "c": ["(0, inf.0]"]})"},
        // Multikey: only the first of two ranges on one field.
        PlanCase{R"({"m": {"$gt": 1, "$lt": 9}})", nullptr, nullptr, "m_1",
                 R"({"m": ["(1, inf.0]"]})"},
        // No bounds from these.
        // null: the null and undefined keys (missing fields index as null); never sparse.
        PlanCase{R"({"a": null})", nullptr, nullptr, "a_1",
                 R"({"a": ["[undefined, undefined]", "[null, null]"]})"},
        PlanCase{R"({"s": null})", nullptr, nullptr, nullptr, nullptr},
        PlanCase{R"({"a": {"$ne": 1}})", nullptr, nullptr, nullptr, nullptr},
        PlanCase{R"({"a": [1, 2]})", nullptr, nullptr, nullptr, nullptr},
        PlanCase{R"({"a": {"$in": [1, null]}})", nullptr, nullptr, "a_1",
                 R"({"a": ["[undefined, undefined]", "[null, null]", "[1, 1]"]})"},
        // An $or with a branch no index serves is a collection scan.
        PlanCase{R"({"$or": [{"a": 1}, {"zz": 2}]})", nullptr, nullptr, nullptr, nullptr},
        PlanCase{R"({"c": 1})", nullptr, nullptr, nullptr, nullptr},
        PlanCase{R"({"a.0": 1})", nullptr, nullptr, nullptr, nullptr},
        // Hashed: equality only.
        PlanCase{R"({"h": 1})", nullptr, nullptr, "h_hashed", nullptr},
        PlanCase{R"({"h": {"$gt": 1}})", nullptr, nullptr, nullptr, nullptr},
        // Hidden never, sparse with bounds, partial only when implied.
        PlanCase{R"({"x": 1})", nullptr, nullptr, nullptr, nullptr},
        PlanCase{R"({"s": 1})", nullptr, nullptr, "s_1", nullptr},
        PlanCase{R"({"p": 1})", nullptr, nullptr, nullptr, nullptr},
        PlanCase{R"({"p": 1, "q": true})", nullptr, nullptr, "p_1", nullptr},
        // _id equality uses the _id index.
        PlanCase{R"({"_id": 7})", nullptr, nullptr, "_id_", R"({"_id": ["[7, 7]"]})"},
        // Sorts.
        PlanCase{R"({})", R"({"b": 1})", nullptr, "b_-1", R"({"b": ["[MaxKey, MinKey]"]})", true},
        PlanCase{R"({"a": 1})", R"({"c": -1})", nullptr, "a_1_c_1", nullptr, true},
        PlanCase{R"({})", R"({"m": 1})", nullptr, nullptr, nullptr},
        PlanCase{R"({})", R"({"s": 1})", nullptr, nullptr, nullptr},
        // Time-series bucket predicates compare across types: ranges run to MinKey/MaxKey.
        PlanCase{R"({"a": {"$_internalExprGte": 5}})", nullptr, nullptr, "a_1",
                 R"({"a": ["[5, MaxKey]"]})"},
        PlanCase{R"({"$and": [{"a": {"$_internalExprGt": "k"}}, {"a": {"$_internalExprLte": 9}}]})",
                 nullptr, nullptr, "a_1", R"({"a": []})"},
        PlanCase{R"({"b": {"$_internalExprLt": 5}})", nullptr, nullptr, "b_-1",
                 R"({"b": ["(5, MinKey]"]})"},
        PlanCase{R"({"a": {"$_internalExprGte": [1]}})", nullptr, nullptr, nullptr, nullptr},
        // Hints.
        PlanCase{R"({"a": 1})", nullptr, R"({"hint": "b_-1"})", "b_-1",
                 R"({"b": ["[MaxKey, MinKey]"]})"},
        PlanCase{R"({"a": 1})", nullptr, R"({"hint": {"a": 1, "c": 1}})", "a_1_c_1", nullptr},
        PlanCase{R"({"a": 1})", nullptr, R"({"hint": {"$natural": 1}})", nullptr, nullptr}));

TEST_F(QueryPlannerTest, OrOfIndexedBranchesIsAUnion) {
  auto coll = catalog_->Lookup({"test", "c"});
  BsonObj filter = bson::FromJson(R"({"c": 4, "$or": [{"a": 1}, {"b": {"$gt": 3}}]})").value();
  auto choice = exec::PlanQuery(*coll, filter, BsonObj(), bson::BsonElement());
  ASSERT_TRUE(choice.ok());
  const exec::QueryPlan& p = choice.value().winner;
  ASSERT_TRUE(p.IsOr());
  EXPECT_FALSE(p.IsCollScan());
  ASSERT_EQ(p.or_branches.size(), 2u);
  // The filter's other clauses join each branch: {a: 1, c: 4} uses the compound index.
  EXPECT_EQ(p.or_branches[0].index->desc.name, "a_1_c_1");
  EXPECT_EQ(p.or_branches[0].bounds.ToJson(),
            bson::FromJson(R"({"a": ["[1, 1]"], "c": ["[4, 4]"]})").value().ToJson());
  EXPECT_EQ(p.or_branches[1].index->desc.name, "b_-1");
  BsonObj desc = p.Describe(filter);
  EXPECT_EQ(desc["stage"].Str(), "FETCH");
  EXPECT_EQ(desc["inputStage"].Obj()["stage"].Str(), "OR");
  EXPECT_EQ(desc["inputStage"].Obj()["inputStages"].Obj().NumFields(), 2);
}

TEST_F(QueryPlannerTest, BadHints) {
  auto coll = catalog_->Lookup({"test", "c"});
  for (const char* h : {R"({"hint": "nope"})", R"({"hint": {"a": -1}})", R"({"hint": "x_1"})"}) {
    BsonObj hint = bson::FromJson(h).value();
    auto choice = exec::PlanQuery(*coll, BsonObj(), BsonObj(), hint["hint"]);
    EXPECT_EQ(choice.status().code(), ErrorCode::kBadValue) << h;
  }
}

// Exactness (the bounds answer the whole filter) and the covered fields of a projection, on the
// plan the planner picks (hint to force one).
struct ExactCase {
  const char* filter;
  const char* hint;  // index name or nullptr
  bool exact;
  const char* projection;  // nullptr: not checked
  const char* covered;     // JSON array of the covered fields, nullptr: not coverable
};

TEST_F(QueryPlannerTest, ExactBoundsAndCoveredFields) {
  const ExactCase cases[] = {
      {R"({"a": 5})", nullptr, true, R"({"a": 1, "_id": 0})", R"(["a"])"},
      {R"({"a": {"$gt": 1, "$lt": 4}})", "a_1", true, R"({"a": 1, "_id": false})", R"(["a"])"},
      {R"({"a": {"$in": [1, 2]}})", "a_1", true, R"({"a": 1})", nullptr},  // _id not indexed
      {R"({"a": 1, "c": {"$gte": 2}})", "a_1_c_1", true, R"({"c": 1, "a": 1, "_id": 0})",
       R"(["a", "c"])"},
      {R"({"a": 1, "c": 2})", "a_1", false, nullptr, nullptr},  // c is not in a_1
      {R"({"a": null})", "a_1", false, nullptr, nullptr},       // null also matches missing
      {R"({"a": {"$ne": 3}})", "a_1", false, nullptr, nullptr},
      {R"({"a": {"$gt": 1}, "c": 2})", "a_1_c_1", false, nullptr, nullptr},  // c past the range
      {R"({"a": 1, "$or": [{"c": 1}]})", "a_1", false, nullptr, nullptr},
      {R"({"m": 1})", "m_1", false, nullptr, nullptr},  // multikey
      {R"({"h": 1})", "h_hashed", false, nullptr, nullptr},
      {R"({"a": 1})", "a_1", true, R"({"a": 0})", nullptr},  // exclusion
      {R"({"a": 1})", "a_1", true, R"({"a": {"$add": [1, 2]}, "_id": 0})", nullptr},
      {R"({"_id": 4})", "_id_", true, R"({"_id": 1})", R"(["_id"])"},
  };
  auto coll = catalog_->Lookup({"test", "c"});
  for (const auto& c : cases) {
    BsonObj filter = bson::FromJson(c.filter).value();
    BsonObj hint;
    if (c.hint) hint = bson::FromJson(std::string(R"({"hint": ")") + c.hint + R"("})").value();
    auto choice = exec::PlanQuery(*coll, filter, BsonObj(),
                                  hint.IsEmpty() ? bson::BsonElement() : hint["hint"]);
    ASSERT_TRUE(choice.ok()) << c.filter;
    const exec::QueryPlan& p = choice.value().winner;
    ASSERT_FALSE(p.IsCollScan()) << c.filter;
    EXPECT_EQ(p.exact, c.exact) << c.filter;
    if (!c.projection) continue;
    auto fields = exec::CoveredFields(p, bson::FromJson(c.projection).value(), BsonObj());
    if (c.covered == nullptr) {
      EXPECT_FALSE(fields.has_value()) << c.filter << " " << c.projection;
      continue;
    }
    ASSERT_TRUE(fields.has_value()) << c.filter << " " << c.projection;
    BsonObj expected = bson::FromJson(std::string(R"({"v": )") + c.covered + "}").value();
    size_t i = 0;
    for (bson::BsonElement e : expected["v"].Obj()) {
      ASSERT_LT(i, fields->size()) << c.filter;
      EXPECT_EQ((*fields)[i++], e.Str()) << c.filter;
    }
    EXPECT_EQ(i, fields->size()) << c.filter;
  }
}

TEST_F(QueryPlannerTest, MinMaxBoundsAndErrors) {
  auto coll = catalog_->Lookup({"test", "c"});
  auto plan_for = [&](const char* hint_json) {
    BsonObj hint = bson::FromJson(hint_json).value();
    return exec::PlanQuery(*coll, BsonObj(), BsonObj(), hint["hint"]).value().winner;
  };
  auto obj = [](const char* json) { return bson::FromJson(json).value(); };
  exec::QueryPlan p = plan_for(R"({"hint": "a_1_c_1"})");
  ASSERT_TRUE(
      exec::ApplyMinMax(&p, true, obj(R"({"a": 1, "c": 2})"), obj(R"({"a": 3, "c": 0})")).ok());
  ASSERT_EQ(p.ranges.size(), 1u);
  EXPECT_LT(p.ranges[0].start, *p.ranges[0].end);
  EXPECT_FALSE(p.exact);
  p = plan_for(R"({"hint": "a_1"})");
  EXPECT_TRUE(exec::ApplyMinMax(&p, true, BsonObj(), obj(R"({"a": 3})")).ok());
  EXPECT_TRUE(p.ranges[0].start.empty());

  struct ErrCase {
    const char* hint;
    bool hinted;
    const char* min;
    const char* max;
    ErrorCode code;
  };
  const ErrCase errs[] = {
      {R"({"hint": "a_1"})", false, R"({"a": 1})", "{}", ErrorCode::kLocation51173},
      {R"({"hint": {"$natural": 1}})", true, R"({"a": 1})", "{}", ErrorCode::kLocation51173},
      {R"({"hint": "a_1"})", true, R"({"c": 1})", "{}", ErrorCode::kLocation51174},
      {R"({"hint": "a_1_c_1"})", true, R"({"a": 1})", "{}", ErrorCode::kLocation51174},
      {R"({"hint": "a_1_c_1"})", true, "{}", R"({"c": 1, "a": 1})", ErrorCode::kLocation51174},
      {R"({"hint": "a_1"})", true, R"({"a": 2})", R"({"a": 2})", ErrorCode::kLocation51175},
      // b is descending: 5 comes before 3 in index order.
      {R"({"hint": "b_-1"})", true, R"({"b": 3})", R"({"b": 5})", ErrorCode::kLocation51175},
      {R"({"hint": "h_hashed"})", true, R"({"h": 3})", "{}", ErrorCode::kCommandNotSupported},
  };
  for (const auto& e : errs) {
    exec::QueryPlan q = plan_for(e.hint);
    EXPECT_EQ(exec::ApplyMinMax(&q, e.hinted, obj(e.min), obj(e.max)).code(), e.code)
        << e.hint << " " << e.min << " " << e.max;
  }
  exec::QueryPlan b = plan_for(R"({"hint": "b_-1"})");
  EXPECT_TRUE(exec::ApplyMinMax(&b, true, obj(R"({"b": 5})"), obj(R"({"b": 3})")).ok());
}

// Wildcard indexes: one candidate per covered field, bounds on "$_path" and on the value; no plan
// for predicates the keys cannot answer (null, objects, positional paths, $ne...).
class WildcardPlannerTest : public testing::ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    ASSERT_FALSE(HasFatalFailure());
    Status st = CreateIndexes({"test", "c"}, R"([
        {"v": 2, "key": {"$**": 1}, "name": "w", "wildcardProjection": {"skip": 0}},
        {"v": 2, "key": {"sub.$**": -1}, "name": "s"}])");
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  StatusWith<exec::PlanChoice> Plan(const char* filter, const char* hint = nullptr) {
    coll_ = catalog_->Lookup({"test", "c"});
    filter_ = bson::FromJson(filter).value();
    hint_ = hint ? bson::FromJson(hint).value() : BsonObj();
    return exec::PlanQuery(*coll_, filter_, BsonObj(), hint ? hint_["hint"] : bson::BsonElement());
  }
  std::shared_ptr<catalog::Collection> coll_;
  BsonObj filter_, hint_;
};

TEST_F(WildcardPlannerTest, BoundsOnPathAndValue) {
  struct Case {
    const char* filter;
    const char* index;  // nullptr: not a wildcard plan
    const char* bounds;
  };
  const Case cases[] = {
      {R"({"a.b": 5})", "w", R"({"$_path": ["[\"a.b\", \"a.b\"]"], "a.b": ["[5, 5]"]})"},
      {R"({"a": {"$gt": 5}})", "w", R"({"$_path": ["[\"a\", \"a\"]"], "a": ["(5, inf.0]"]})"},
      {R"({"a": {"$in": ["x", 2]}})", "w",
       R"({"$_path": ["[\"a\", \"a\"]"], "a": ["[2, 2]", "[\"x\", \"x\"]"]})"},
      {R"({"a": {}})", "w", R"({"$_path": ["[\"a\", \"a\"]"], "a": ["[{}, {}]"]})"},
      {R"({"a": {"$exists": true}})", "w",
       R"j({"$_path": ["[\"a\", \"a\"]", "[\"a.\", \"a/\")"], "a": ["[MinKey, MaxKey]"]})j"},
      {R"({"a": null})", nullptr, nullptr},
      {R"({"a": {"$in": [1, null]}})", nullptr, nullptr},
      {R"({"a": {"x": 1}})", nullptr, nullptr},
      {R"({"a": {"$ne": 1}})", nullptr, nullptr},
      {R"({"a": {"$exists": false}})", nullptr, nullptr},
      {R"({"a.0": 1})", nullptr, nullptr},
      {R"({"skip": 1})", nullptr, nullptr},
      {R"({"skip.x": 1})", nullptr, nullptr},
  };
  for (const Case& c : cases) {
    auto choice = Plan(c.filter);
    ASSERT_TRUE(choice.ok()) << c.filter;
    const exec::QueryPlan& p = choice.value().winner;
    if (c.index == nullptr) {
      EXPECT_TRUE(p.IsCollScan()) << c.filter;
      continue;
    }
    ASSERT_FALSE(p.IsCollScan()) << c.filter;
    EXPECT_EQ(p.index->desc.name, c.index) << c.filter;
    EXPECT_EQ(p.bounds.ToJson(), bson::FromJson(c.bounds).value().ToJson()) << c.filter;
    // No document holds an array: only the $exists scan (several paths per document) dedupes.
    EXPECT_EQ(p.multikey, std::string_view(c.filter).find("$exists") != std::string_view::npos)
        << c.filter;
    EXPECT_FALSE(p.exact) << c.filter;
  }
}

TEST_F(WildcardPlannerTest, SubtreeIndexAndHints) {
  auto choice = Plan(R"({"sub.x": {"$lt": 3}})", R"({"hint": "s"})");
  ASSERT_TRUE(choice.ok());
  const exec::QueryPlan& p = choice.value().winner;
  EXPECT_EQ(p.wildcard_path, "sub.x");
  EXPECT_EQ(p.KeyPattern().ToJson(),
            bson::FromJson(R"({"$_path": 1, "sub.x": -1})").value().ToJson());
  EXPECT_EQ(p.bounds.ToJson(),
            bson::FromJson(R"({"$_path": ["[\"sub.x\", \"sub.x\"]"], "sub.x": ["(3, -inf.0]"]})")
                .value()
                .ToJson());
  // Both wildcard indexes cover sub.x: two candidates.
  choice = Plan(R"({"sub.x": 1})");
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice.value().rejected.size(), 1u);
  // A field outside the subtree, or no field at all: the hinted index cannot be used.
  EXPECT_EQ(Plan(R"({"y": 1})", R"({"hint": "s"})").status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(Plan("{}", R"({"hint": {"$**": 1}})").status().code(), ErrorCode::kBadValue);
  // min/max with a wildcard index is refused loudly.
  choice = Plan(R"({"sub.x": 1})", R"({"hint": "s"})");
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(exec::ApplyMinMax(&choice.value().winner, true, BsonObj(), BsonObj()).code(),
            ErrorCode::kCommandNotSupported);
}

}  // namespace
}  // namespace hourglass::exec
