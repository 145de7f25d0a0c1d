// The group table must find one group for the keys $group deems equal and give the groups back
// in $group's key order.
#include "pipeline/group_table.h"

#include <gtest/gtest.h>

#include <cctype>

#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using testing::Json;

// Counts one more row of the group of `key`, creating it if needed.
void Count(GroupTable& table, const Value& key) {
  GroupTable::Accs* accs = table.Find(key);
  if (accs == nullptr) {
    GroupTable::Accs fresh;
    fresh.push_back(MakeAccumulator("$sum"));
    accs = table.Add(key, std::move(fresh));
  }
  ASSERT_TRUE((*accs)[0]->Process(Value::Int(1)).ok());
}

// "key: count" of each group, in the table's order.
std::vector<std::string> Listing(GroupTable& table) {
  std::vector<std::string> out;
  for (const GroupTable::Group* g : table.Ordered()) {
    bson::BsonBuilder b;
    g->key.AppendTo(b, "k");
    g->accs[0]->Finalize().AppendTo(b, "n");
    out.push_back(b.Obj().ToJson());
  }
  return out;
}

// The same listing for documents written as JSON.
std::vector<std::string> Expected(std::initializer_list<const char*> docs) {
  std::vector<std::string> out;
  for (const char* d : docs) out.push_back(Json(d).ToJson());
  return out;
}

TEST(GroupTableTest, EqualNumbersOfEveryTypeAreOneGroupKeepingTheFirstKey) {
  GroupTable table(nullptr);
  Count(table, Value::Double(1.0));
  Count(table, Value::Int(1));
  Count(table, Value::Long(1));
  Count(table, Value::Int(2));
  EXPECT_EQ(Listing(table), Expected({R"({"k": 1.0, "n": 3})", R"({"k": 2, "n": 1})"}));
}

TEST(GroupTableTest, OrderIsTheCanonicalOrderOfValues) {
  GroupTable table(nullptr);
  for (const char* k : {R"({"": "b"})", R"({"": {"a": 1}})", R"({"": 3})", R"({"": null})",
                        R"({"": "a"})", R"({"": -1.5})", R"({"": {"a": 1, "b": 2}})"}) {
    Count(table, Value::FromElement(Json(k).FirstElement()));
  }
  EXPECT_EQ(Listing(table),
            Expected({R"({"k": null, "n": 1})", R"({"k": -1.5, "n": 1})", R"({"k": 3, "n": 1})",
                      R"({"k": "a", "n": 1})", R"({"k": "b", "n": 1})",
                      R"({"k": {"a": 1}, "n": 1})", R"({"k": {"a": 1, "b": 2}, "n": 1})"}));
}

TEST(GroupTableTest, StringsEqualUnderTheCollationAreOneGroup) {
  testing::CaseInsensitive ci;
  GroupTable table(&ci);
  Count(table, Value::String("Abc"));
  Count(table, Value::String("b"));
  Count(table, Value::String("aBC"));
  Count(table, Value::String("B"));
  EXPECT_EQ(Listing(table), Expected({R"({"k": "Abc", "n": 2})", R"({"k": "b", "n": 2})"}));
  // Without it, four groups in byte order.
  GroupTable simple(nullptr);
  for (const char* s : {"Abc", "b", "aBC", "B"}) Count(simple, Value::String(s));
  EXPECT_EQ(Listing(simple).size(), 4u);
  EXPECT_EQ(Listing(simple)[0], Json(R"({"k": "Abc", "n": 1})").ToJson());
  EXPECT_EQ(Listing(simple)[1], Json(R"({"k": "B", "n": 1})").ToJson());
}

TEST(GroupTableTest, OrderFollowsGroupsAddedAfterAListingAndClearEmpties) {
  GroupTable table(nullptr);
  Count(table, Value::Int(5));
  EXPECT_EQ(Listing(table).size(), 1u);
  Count(table, Value::Int(4));
  EXPECT_EQ(Listing(table), Expected({R"({"k": 4, "n": 1})", R"({"k": 5, "n": 1})"}));
  table.Clear();
  EXPECT_TRUE(table.empty());
  EXPECT_TRUE(Listing(table).empty());
}

}  // namespace
}  // namespace hourglass::pipeline
