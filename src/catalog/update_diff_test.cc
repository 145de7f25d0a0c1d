// Update diffs ($v: 2 oplog entries): the diff of a change that keeps the fields' order turns the
// document before into the one after byte for byte, applied as a new document or as byte-range
// edits in place; sub-objects get sub-diffs; binary diffs cut and extend a BinData; changes a diff
// cannot say (a reordering) or says no shorter than the document give none; malformed diffs are
// refused.
#include "catalog/update_diff.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace hourglass::catalog {
namespace {

using bson::BsonElement;
using bson::BsonObj;

BsonObj J(const char* json) { return bson::FromJson(json).value(); }

// {b: {<field>: {o: offset, d: BinData(data)}}}.
BsonObj BinDiff(std::string_view field, int32_t offset, std::string_view data) {
  bson::BsonBuilder spec;
  spec.AppendInt32("o", offset).AppendBinData("d", 0, data);
  bson::BsonBuilder b;
  b.AppendObject(field, spec.Obj());
  return bson::BsonBuilder().AppendObject("b", b.Obj()).Obj();
}

// `doc` with `diff` applied as edits in place (what a member that applies the oplog stores).
std::string ByEdits(const BsonObj& doc, const BsonObj& diff) {
  auto edits = UpdateDiffEdits(doc, diff);
  EXPECT_TRUE(edits.ok()) << edits.status().reason();
  std::string bytes(doc.bytes());
  if (edits.ok()) storage::ApplyModifications(bytes, edits.value());
  return bytes;
}

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
  EXPECT_EQ(ByEdits(before, *diff), after.bytes());
}

TEST(UpdateDiffTest, ChangedSubObjectsGetSubDiffs) {
  const BsonObj before = J(R"({"_id": 1, "control": {"version": 2,
      "min": {"t": 1, "a": 5, "usage": 1.5, "idle": 2.5}, "max": {"t": 9, "a": 5, "usage": 7.5},
      "count": 3}, "meta": "host with a long enough name"})");
  const BsonObj after = J(R"({"_id": 1, "control": {"version": 3,
      "min": {"t": 1, "a": 2, "usage": 1.5, "idle": 2.5},
      "max": {"t": 9, "a": 5, "usage": 7.5, "b": "new"}, "count": 4},
      "meta": "host with a long enough name"})");
  auto diff = ComputeUpdateDiff(before, after);
  ASSERT_TRUE(diff.has_value());
  // Nested as mongod nests them: a sub-diff per changed object, down to the fields changed.
  EXPECT_EQ(diff->ToJson(), J(R"({"scontrol": {"u": {"version": 3, "count": 4},
      "smin": {"u": {"a": 2}}, "smax": {"i": {"b": "new"}}}})")
                                .ToJson());
  EXPECT_EQ(ApplyUpdateDiff(before, *diff).value().bytes(), after.bytes());
  EXPECT_EQ(ByEdits(before, *diff), after.bytes());
  EXPECT_TRUE(UpdateDiffMayChange(*diff, "control.min.a"));
  EXPECT_TRUE(UpdateDiffMayChange(*diff, "control"));
  EXPECT_FALSE(UpdateDiffMayChange(*diff, "control.min.t"));
  EXPECT_FALSE(UpdateDiffMayChange(*diff, "meta"));
  EXPECT_TRUE(UpdateDiffMayChange(J(R"({"u": {"meta": 1}})"), "meta.x"));

  // Small sub-objects: a sub-diff would be no shorter, so they are given whole; unless sub-diffs
  // are asked for always, as a bucket's control is diffed (its start time then goes unnamed).
  const BsonObj small_before =
      J(R"({"pad": "a long enough field", "min": {"t": 1, "a": 5}, "max": {"t": 9, "a": 5}})");
  const BsonObj small_after =
      J(R"({"pad": "a long enough field", "min": {"t": 1, "a": 2}, "max": {"t": 9, "a": 7}})");
  ASSERT_TRUE(ComputeUpdateDiff(small_before, small_after).has_value());
  EXPECT_EQ(ComputeUpdateDiff(small_before, small_after)->ToJson(),
            J(R"({"u": {"min": {"t": 1, "a": 2}, "max": {"t": 9, "a": 7}}})").ToJson());
  auto always = ComputeUpdateDiff(small_before, small_after, SubDiffs::kAlways);
  ASSERT_TRUE(always.has_value());
  EXPECT_EQ(always->ToJson(), J(R"({"smin": {"u": {"a": 2}}, "smax": {"u": {"a": 7}}})").ToJson());
  EXPECT_FALSE(UpdateDiffMayChange(*always, "min.t"));
  EXPECT_EQ(ByEdits(small_before, *always), small_after.bytes());
  EXPECT_TRUE(ComputeUpdateDiff(small_before, small_before, SubDiffs::kAlways)->IsEmpty());
}

TEST(UpdateDiffTest, BinaryDiffsCutAndExtendTheBinary) {
  bson::BsonBuilder b;
  b.AppendInt32("_id", 1);
  size_t data = b.OpenObject("data");
  b.AppendBinData("t", 7, std::string("0123456789", 10));
  b.AppendBinData("v", 7, std::string("abcdef", 6));
  b.Close(data);
  const BsonObj before = b.Obj();
  // t keeps 8 bytes and gains 4; v keeps 2 and ends there (a shorter binary); w is new.
  bson::BsonBuilder t, v, bins, nw, sdata;
  t.AppendInt32("o", 8).AppendBinData("d", 0, "WXYZ");
  v.AppendInt64("o", 2).AppendBinData("d", 0, "");
  bins.AppendObject("t", t.Obj()).AppendObject("v", v.Obj());
  nw.AppendBinData("w", 7, "new");
  sdata.AppendObject("i", nw.Obj()).AppendObject("b", bins.Obj());
  const BsonObj diff = bson::BsonBuilder().AppendObject("sdata", sdata.Obj()).Obj();
  auto applied = ApplyUpdateDiff(before, diff);
  ASSERT_TRUE(applied.ok()) << applied.status().reason();
  const BsonObj d = applied.value()["data"].Obj();
  EXPECT_EQ(d["t"].BinData(), "01234567WXYZ");
  EXPECT_EQ(d["t"].BinSubtype(), 7);
  EXPECT_EQ(d["v"].BinData(), "ab");
  EXPECT_EQ(d["w"].BinData(), "new");
  EXPECT_EQ(ByEdits(before, diff), applied.value().bytes());
  EXPECT_TRUE(bson::ValidateBson(applied.value().bytes()).ok());
}

// A document of random fields: numbers, strings, nested objects (to `depth`), binaries.
BsonObj RandomDoc(std::mt19937& rng, int depth, bool change, const BsonObj* base) {
  bson::BsonBuilder b;
  auto coin = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  if (base != nullptr) {
    // Keep, drop or change the base's fields in order, then add some.
    for (BsonElement e : *base) {
      const int c = change ? coin(6) : 0;
      if (c == 1) continue;  // removed
      if (c == 2 && e.type() == bson::BsonType::kObject && depth > 0) {
        BsonObj sub = e.Obj();
        b.AppendObject(e.FieldName(), RandomDoc(rng, depth - 1, true, &sub));
      } else if (c == 3 && e.type() == bson::BsonType::kBinData) {
        std::string bytes(e.BinData().substr(0, e.BinData().size() / 2));
        bytes.append(static_cast<size_t>(coin(20)), 'z');
        b.AppendBinData(e.FieldName(), e.BinSubtype(), bytes);
      } else if (c == 4) {
        b.AppendInt64(e.FieldName(), coin(1000));
      } else {
        b.AppendElement(e);
      }
    }
  }
  const int n = base != nullptr && !change ? 0 : coin(5);
  for (int i = 0; i < n; ++i) {
    const std::string name = "f" + std::to_string(rng() % 1000000);
    if (base != nullptr && base->HasField(name)) continue;
    switch (coin(4)) {
      case 0:
        b.AppendDouble(name, coin(100) / 7.0);
        break;
      case 1:
        b.AppendString(name, std::string(static_cast<size_t>(coin(30)), 'x'));
        break;
      case 2:
        b.AppendBinData(name, 7, std::string(static_cast<size_t>(coin(40)), 'b'));
        break;
      default:
        if (depth > 0) {
          b.AppendObject(name, RandomDoc(rng, depth - 1, false, nullptr));
        } else {
          b.AppendBool(name, true);
        }
    }
  }
  return b.Obj();
}

TEST(UpdateDiffTest, RandomChangesRoundTripBothWays) {
  std::mt19937 rng(20261207);
  int diffs = 0;
  for (int round = 0; round < 2000; ++round) {
    const BsonObj before = RandomDoc(rng, 3, true, nullptr);
    const BsonObj after = RandomDoc(rng, 3, true, &before);
    std::optional<BsonObj> diff = ComputeUpdateDiff(before, after);
    if (!diff) continue;
    ++diffs;
    auto applied = ApplyUpdateDiff(before, *diff);
    ASSERT_TRUE(applied.ok()) << applied.status().reason() << " " << diff->ToJson();
    ASSERT_EQ(applied.value().bytes(), after.bytes()) << diff->ToJson();
    ASSERT_EQ(ByEdits(before, *diff), after.bytes()) << diff->ToJson();
  }
  EXPECT_GT(diffs, 500);
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
  EXPECT_NE(sub.status().reason().find("'a'"), std::string::npos);
  EXPECT_EQ(ApplyUpdateDiff(doc, J(R"({"sa": {"a": true, "l": 3}})")).status().code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(ApplyUpdateDiff(doc, J(R"({"x": {}})")).status().code(), ErrorCode::kBadValue);
  // Binary diffs: of a field that is not BinData, of a missing one, past the binary's end.
  EXPECT_EQ(ApplyUpdateDiff(doc, BinDiff("a", 0, "xy")).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(ApplyUpdateDiff(doc, BinDiff("zz", 0, "xy")).status().code(), ErrorCode::kBadValue);
  const BsonObj bin = bson::BsonBuilder().AppendBinData("c", 7, "abc").Obj();
  EXPECT_EQ(ApplyUpdateDiff(bin, BinDiff("c", 4, "x")).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(UpdateDiffEdits(bin, BinDiff("c", 4, "x")).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(ApplyUpdateDiff(doc, J(R"({"u": 5})")).status().code(), ErrorCode::kBadValue);
  EXPECT_EQ(ApplyUpdateDiff(doc, J(R"({"i": {"a": 2}})")).status().code(), ErrorCode::kBadValue);
}

}  // namespace
}  // namespace hourglass::catalog
