// The multi-planner's trial (multi_planner.h) on a small collection: b matches every document,
// a only one, c a tenth; b_1 is created first so the rule order alone would pick it.
#include "exec/multi_planner.h"

#include "exec/exec_test_util.h"
#include "exec/plan_cache.h"

namespace hourglass::exec {
namespace {

using bson::BsonObj;

class MultiPlannerTest : public testing::ExecTest {
 protected:
  void SetUp() override {
    ExecTest::SetUp();
    ASSERT_FALSE(HasFatalFailure());
    std::string docs;
    for (int i = 0; i < 600; ++i) {
      if (!docs.empty()) docs += ",";
      docs += R"({"_id": )" + std::to_string(i) + R"(, "a": )" + std::to_string(i) +
              R"(, "b": 1, "c": )" + std::to_string(i % 10) + "}";
    }
    Status st = Insert({"test", "c"}, "[" + docs + "]");
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = CreateIndexes({"test", "c"}, R"([{"v": 2, "key": {"b": 1}, "name": "b_1"},
        {"v": 2, "key": {"a": 1}, "name": "a_1"}, {"v": 2, "key": {"c": 1}, "name": "c_1"}])");
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // The trial's outcome for `filter` (and `sort`), with the choice it reorders.
  exec::TrialOutcome Trial(const char* filter, const char* sort, exec::PlanChoice* choice,
                           int64_t target = 101) {
    auto coll = catalog_->Lookup({"test", "c"});
    BsonObj f = bson::FromJson(filter).value();
    BsonObj s = sort ? bson::FromJson(sort).value() : BsonObj();
    auto planned = exec::PlanQuery(*coll, f, s, bson::BsonElement());
    EXPECT_TRUE(planned.ok());
    *choice = std::move(planned.value());
    EXPECT_FALSE(choice->rejected.empty()) << filter;
    auto matcher = query::Matcher::Parse(f);
    EXPECT_TRUE(matcher.ok());
    auto out = exec::RunTrial(coll, engine_.get(), choice,
                              std::optional<query::Matcher>(matcher.value()), s, target);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return std::move(out.value());
  }
};

TEST_F(MultiPlannerTest, PicksTheIndexThatEndsFirst) {
  exec::PlanChoice choice;
  exec::TrialOutcome out = Trial(R"({"a": 400, "b": 1})", nullptr, &choice);
  EXPECT_EQ(choice.winner.index->desc.name, "a_1");
  ASSERT_EQ(choice.rejected.size(), 1u);
  EXPECT_EQ(choice.rejected[0].index->desc.name, "b_1");
  ASSERT_EQ(out.trials.size(), 2u);
  EXPECT_TRUE(out.trials[0].eof);
  EXPECT_EQ(out.trials[0].n_returned, 1);
  EXPECT_EQ(out.trials[0].keys_examined, 1);
  EXPECT_FALSE(out.trials[1].eof);
  EXPECT_GT(out.trials[0].score, out.trials[1].score);
  // The winner's scan holds the trial's result and then ends.
  auto doc = out.winner_scan->Next();
  ASSERT_TRUE(doc.ok() && doc.value().has_value());
  EXPECT_EQ(doc.value()->GetField("a").NumberLong(), 400);
  doc = out.winner_scan->Next();
  ASSERT_TRUE(doc.ok());
  EXPECT_FALSE(doc.value().has_value());
  EXPECT_EQ(out.winner_scan->keys_examined(), 1);
}

TEST_F(MultiPlannerTest, MostProductivePlanWinsWithoutEnd) {
  exec::PlanChoice choice;
  // c = 3 matches 60 documents, all of which have b = 1: b_1 produces a result per key, c_1 too,
  // but c_1 reaches its end (60 keys) before either reaches 101 results.
  exec::TrialOutcome out = Trial(R"({"b": 1, "c": 3})", nullptr, &choice);
  EXPECT_EQ(choice.winner.index->desc.name, "c_1");
  EXPECT_TRUE(out.trials[0].eof);
  EXPECT_EQ(out.trials[0].n_returned, 60);
  // Every result comes once: 60 documents in all.
  int n = 0;
  while (true) {
    auto doc = out.winner_scan->Next();
    ASSERT_TRUE(doc.ok());
    if (!doc.value()) break;
    ++n;
  }
  EXPECT_EQ(n, 60);
}

TEST_F(MultiPlannerTest, SmallTargetEndsTheTrialEarly) {
  exec::PlanChoice choice;
  exec::TrialOutcome out = Trial(R"({"b": 1, "c": {"$gte": 0}})", nullptr, &choice, 1);
  // Both plans produce a result with their first key; the first in rule order wins the tie.
  for (const auto& t : out.trials) EXPECT_LE(t.keys_examined, 1);
  EXPECT_EQ(out.trials[0].n_returned, 1);
}

TEST_F(MultiPlannerTest, BlockingSortPlansProduceNothingBeforeTheirEnd) {
  exec::PlanChoice choice;
  // Sorted by a: a_1 provides the order (an unbounded scan), b_1 would need a SORT.
  exec::TrialOutcome out = Trial(R"({"b": 1})", R"({"a": 1})", &choice);
  EXPECT_EQ(choice.winner.index->desc.name, "a_1");
  EXPECT_TRUE(choice.winner.provides_sort);
  // Turns read up to 8 keys: the trial ends within the turn that reached 101 results.
  EXPECT_GE(out.trials[0].n_returned, 101);
  EXPECT_LT(out.trials[0].n_returned, 101 + 8);
  // b_1 matched as many documents, but they stay in its SORT until its end.
  EXPECT_GT(out.trials[1].n_returned, 90);
  EXPECT_GT(out.trials[0].score, out.trials[1].score + 0.5);
}

TEST(PlanCacheTest, ShapesIgnoreValuesButNotOperatorsOrTypes) {
  auto shape = [](const char* filter, const char* sort = "{}") {
    return exec::QueryShape(bson::FromJson(filter).value(), bson::FromJson(sort).value(),
                            BsonObj());
  };
  EXPECT_EQ(shape(R"({"a": 1, "b": {"$gt": 2}})"), shape(R"({"a": 7, "b": {"$gt": 9}})"));
  EXPECT_EQ(shape(R"({"a": {"$in": [1, 2]}})"), shape(R"({"a": {"$in": [3]}})"));
  EXPECT_EQ(shape(R"({"$or": [{"a": 1}, {"b": 2}]})"), shape(R"({"$or": [{"a": 5}, {"b": 6}]})"));
  EXPECT_NE(shape(R"({"a": 1})"), shape(R"({"a": "x"})"));
  EXPECT_NE(shape(R"({"a": {"$gt": 1}})"), shape(R"({"a": {"$gte": 1}})"));
  EXPECT_NE(shape(R"({"a": 1})"), shape(R"({"b": 1})"));
  EXPECT_NE(shape(R"({"a": 1})"), shape(R"({"a": 1})", R"({"a": 1})"));
  EXPECT_NE(exec::QueryShape(BsonObj(), BsonObj(), BsonObj(), "count"),
            exec::QueryShape(BsonObj(), BsonObj(), BsonObj()));
}

TEST(PlanCacheTest, EntriesBelongToAnIndexSet) {
  exec::PlanCache& cache = exec::PlanCache::Instance();
  exec::PlanCacheEntry e;
  e.shape = "s1";
  e.index_set = "set1";
  e.index_name = "a_1";
  e.works = 3;
  cache.Store("unit.pc", e);
  ASSERT_TRUE(cache.Lookup("unit.pc", "s1", "set1").has_value());
  EXPECT_EQ(cache.Lookup("unit.pc", "s1", "set1")->index_name, "a_1");
  EXPECT_EQ(cache.List("unit.pc", "set1").size(), 1u);
  EXPECT_TRUE(cache.List("unit.pc", "set2").empty());
  // A lookup under another index set drops the stale entry.
  EXPECT_FALSE(cache.Lookup("unit.pc", "s1", "set2").has_value());
  EXPECT_FALSE(cache.Lookup("unit.pc", "s1", "set1").has_value());
  cache.Store("unit.pc", e);
  cache.Clear("unit.pc");
  EXPECT_TRUE(cache.List("unit.pc", "set1").empty());
}

}  // namespace
}  // namespace hourglass::exec
