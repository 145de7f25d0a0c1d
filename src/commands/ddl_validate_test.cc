// validate's index consistency: entries removed from, added to and left dangling in index tables
// by writing those tables directly (what no command can do), then found by the command.
#include <algorithm>
#include <string>
#include <vector>

#include "catalog/collection.h"
#include "commands/commands_test_util.h"
#include "storage/record_id.h"

namespace hourglass::commands {
namespace {

using bson::BsonElement;
using bson::BsonObj;

class ValidateTest : public testing::CommandsTest {
 protected:
  std::vector<std::string> Strings(const BsonObj& reply, std::string_view field) {
    std::vector<std::string> out;
    for (BsonElement e : reply[field].Obj()) out.emplace_back(e.Str());
    return out;
  }
  std::vector<BsonObj> Objects(const BsonObj& reply, std::string_view field) {
    std::vector<BsonObj> out;
    for (BsonElement e : reply[field].Obj()) out.push_back(e.Obj().Owned());
    return out;
  }
  // The first entry (key, value) of table `ident`, or the last.
  std::pair<std::string, std::string> Entry(storage::Session& s, const std::string& ident,
                                            bool first) {
    auto cursor = s.OpenCursor(ident);
    EXPECT_NE(cursor, nullptr);
    auto found = first ? cursor->SeekFirst() : cursor->SeekLast();
    EXPECT_TRUE(found.ok() && found.value());
    return {std::string(cursor->key()), std::string(cursor->value())};
  }
};

TEST_F(ValidateTest, HealthyCollectionIsValid) {
  ExpectOk(Run(R"({"insert": "c", "documents": [{"_id": 1, "a": [1, 2]}, {"_id": 2, "a": 3},
                                                  {"_id": 3}]})"));
  ExpectOk(Run(R"({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})"));
  BsonObj reply = Run(R"({"validate": "c", "full": true})");
  ExpectOk(reply);
  EXPECT_TRUE(reply["valid"].Bool()) << reply.ToJson();
  EXPECT_EQ(reply["nrecords"].Int32(), 3);
  EXPECT_EQ(reply["nIndexes"].Int32(), 2);
  EXPECT_EQ(reply["keysPerIndex"].Obj()["_id_"].Int32(), 3);
  EXPECT_EQ(reply["keysPerIndex"].Obj()["a_1"].Int32(), 4);  // 1, 2, 3 and null
  EXPECT_TRUE(Strings(reply, "errors").empty());
  EXPECT_TRUE(reply["advice"].eoo());
}

TEST_F(ValidateTest, FindsMissingExtraAndDanglingEntriesAndCorruptRecords) {
  ExpectOk(Run(R"({"insert": "c", "documents": [{"_id": 0, "a": 0}, {"_id": 1, "a": 1},
                                                  {"_id": 2, "a": 2}]})"));
  ExpectOk(Run(R"({"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})"));
  auto coll = catalog_->Lookup({"test", "c"});
  ASSERT_NE(coll, nullptr);
  const catalog::SecondaryIndex* a_index = coll->FindIndex("a_1");
  ASSERT_NE(a_index, nullptr);
  const std::string a_ident = a_index->entry->ident;
  auto s = engine_->NewSession();

  // Missing: the entry of {a: 0} (the first of the index) removed.
  auto [first_key, first_rid] = Entry(*s, a_ident, /*first=*/true);
  ASSERT_TRUE(s->Remove(a_ident, first_key).ok());
  const int64_t missing_rid = storage::DecodeRecordId(first_rid);
  // Extra: an entry of {a: 1} for a record that does not exist.
  std::string a1_key = Entry(*s, a_ident, true).first;  // now {a: 1}
  a1_key.resize(a1_key.size() - storage::kRecordIdSize);
  const std::string ghost = storage::EncodeRecordId(999999);
  ASSERT_TRUE(s->Put(a_ident, a1_key + ghost, ghost).ok());
  // Corrupt: the last record's bytes are no document; its two index entries dangle.
  auto [record_key, record_value] = Entry(*s, coll->ident(), /*first=*/false);
  const int64_t corrupt_rid = storage::DecodeRecordId(record_key);
  ASSERT_TRUE(s->Put(coll->ident(), record_key, std::string("\x07\x00\x00\x00\x00", 5)).ok());

  BsonObj reply = Run(R"({"validate": "c"})");
  ExpectOk(reply);
  EXPECT_FALSE(reply["valid"].Bool()) << reply.ToJson();
  EXPECT_EQ(reply["nInvalidDocuments"].Int32(), 1);
  EXPECT_EQ(reply["nrecords"].Int32(), 3);
  EXPECT_EQ(reply["keysPerIndex"].Obj()["a_1"].Int32(), 3);
  EXPECT_FALSE(reply["indexDetails"].Obj()["a_1"].Obj()["valid"].Bool());
  EXPECT_FALSE(reply["indexDetails"].Obj()["_id_"].Obj()["valid"].Bool());
  ASSERT_EQ(reply["corruptRecords"].Obj().NumFields(), 1);
  EXPECT_EQ(reply["corruptRecords"].Obj().FirstElement().Int64(), corrupt_rid);

  std::vector<BsonObj> missing = Objects(reply, "missingIndexEntries");
  ASSERT_EQ(missing.size(), 1u) << reply.ToJson();
  EXPECT_EQ(missing[0]["indexName"].Str(), "a_1");
  EXPECT_EQ(missing[0]["recordId"].Int64(), missing_rid);
  EXPECT_EQ(missing[0]["idKey"].Obj()["_id"].NumberLong(), 0);
  EXPECT_EQ(missing[0]["indexKey"].Obj()["a"].NumberLong(), 0);

  std::vector<BsonObj> extra = Objects(reply, "extraIndexEntries");
  ASSERT_EQ(extra.size(), 3u) << reply.ToJson();
  int ghosts = 0, dangling = 0;
  for (const BsonObj& e : extra) {
    if (e["recordId"].Int64() == 999999) {
      ++ghosts;
      EXPECT_EQ(e["indexName"].Str(), "a_1");
      EXPECT_EQ(e["indexKey"].Obj()["a"].NumberLong(), 1);
    } else {
      ++dangling;
      EXPECT_EQ(e["recordId"].Int64(), corrupt_rid);
    }
  }
  EXPECT_EQ(ghosts, 1);
  EXPECT_EQ(dangling, 2);  // its _id_ and a_1 entries

  std::vector<std::string> errors = Strings(reply, "errors");
  auto has = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  EXPECT_TRUE(has(errors, "Detected one or more invalid documents. See logs.")) << reply.ToJson();
  EXPECT_TRUE(has(errors, "Index with name 'a_1' has inconsistencies."));
  EXPECT_TRUE(has(errors, "Index with name '_id_' has inconsistencies."));
  std::vector<std::string> warnings = Strings(reply, "warnings");
  EXPECT_TRUE(has(warnings, "Detected 1 missing index entries.")) << reply.ToJson();
  EXPECT_TRUE(has(warnings, "Detected 3 extra index entries."));
  EXPECT_FALSE(reply["advice"].eoo());
}

}  // namespace
}  // namespace hourglass::commands
