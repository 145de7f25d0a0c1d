// Update diffs ($v: 2 oplog entries): the diff of a change that keeps the fields' order turns the
// document before into the one after byte for byte; changes a top-level diff cannot say (a
// reordering) or says no shorter than the document give none; malformed diffs are refused.
#include "repl/update_diff.h"

#include <gtest/gtest.h>

namespace hourglass::repl {
namespace {

using bson::BsonObj;

BsonObj J(const char* json) { return bson::FromJson(json).value(); }

TEST(UpdateDiffTest, SetsUnsetsAndAddsRoundTrip) {
  const BsonObj before =
      J(R"({"_id": 1, "name": "a long enough name", "n": 1, "gone": "x", "tags": [1, 2, 3]})");
  const BsonObj after =
      J(R"({"_id": 1, "name": "a long enough name", "n": 2, "tags": [1, 2, 3], "new": true})");
  auto diff = ComputeUpdateDiff(before, after);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(diff->ToJson(),
            J(R"({"d": {"gone": false}, "u": {"n": 2}, "i": {"new": true}})").ToJson());
  auto applied = ApplyUpdateDiff(before, *diff);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied.value().bytes(), after.bytes());
}

TEST(UpdateDiffTest, ATypeChangeIsAnUpdate) {
  const BsonObj before = J(R"({"_id": 1, "pad": "padding padding padding", "v": 1})");
  const BsonObj after = J(R"({"_id": 1, "pad": "padding padding padding", "v": 1.0})");
  auto diff = ComputeUpdateDiff(before, after);
  ASSERT_TRUE(diff.has_value());
  EXPECT_EQ(ApplyUpdateDiff(before, *diff).value().bytes(), after.bytes());
}

TEST(UpdateDiffTest, NoDiffForAReorderingOrNoGain) {
  EXPECT_FALSE(
      ComputeUpdateDiff(J(R"({"_id": 1, "a": 1, "b": 2})"), J(R"({"_id": 1, "b": 2, "a": 1})"))
          .has_value());
  // Every field changed: the diff would be no shorter than the document.
  EXPECT_FALSE(
      ComputeUpdateDiff(J(R"({"_id": 1, "a": 1})"), J(R"({"_id": 2, "a": 2})")).has_value());
}

TEST(UpdateDiffTest, MalformedDiffsAreRefused) {
  const BsonObj doc = J(R"({"_id": 1, "a": 1})");
  auto sub = ApplyUpdateDiff(doc, J(R"({"sa": {"u": {"x": 1}}})"));
  EXPECT_EQ(sub.status().code(), ErrorCode::kBadValue);
  EXPECT_NE(sub.status().reason().find("'sa'"), std::string::npos);
  EXPECT_EQ(ApplyUpdateDiff(doc, J(R"({"u": 5})")).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(ApplyUpdateDiff(doc, J(R"({"i": {"a": 2}})")).status().code(), ErrorCode::kBadValue);
}

}  // namespace
}  // namespace hourglass::repl
