// DDL commands through the dispatcher against a real storage engine and catalog, compared with
// what MongoDB 7.0 documents and returns (reply fields, BSON types, error codes and messages).
#include "commands/ddl_commands.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "commands/commands_test_util.h"
#include "commands/dispatcher.h"
#include "exec/cursor_manager.h"
#include "storage/kv_engine.h"

namespace hourglass::commands {
namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

class DdlCommandsTest : public testing::CommandsTest {
 protected:
  // Inserts `docs` (JSON objects) into db.coll directly through the catalog.
  void Insert(const std::string& db, const std::string& coll,
              const std::vector<std::string>& docs) {
    auto c = catalog_->GetOrCreateCollection({db, coll});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    auto session = engine_->NewSession();
    for (const auto& json : docs) {
      BsonObj doc = bson::FromJson(json).value();
      storage::WriteUnit wu(*session);
      ASSERT_TRUE(wu.begin_status().ok());
      ASSERT_TRUE(c.value()->Insert(*session, doc).ok());
      ASSERT_TRUE(wu.Commit().ok());
      c.value()->AdjustCounts(1, doc.size());
    }
  }

  std::vector<BsonObj> FirstBatch(const BsonObj& reply) {
    std::vector<BsonObj> out;
    for (BsonElement e : reply["cursor"].Obj()["firstBatch"].Obj()) out.push_back(e.Obj().Owned());
    return out;
  }

  std::vector<std::string> CollectionNames(std::string_view db = "test") {
    BsonObj reply = Run(R"({"listCollections": 1, "nameOnly": true})", db);
    std::vector<std::string> names;
    for (const BsonObj& d : FirstBatch(reply)) names.emplace_back(d["name"].Str());
    return names;
  }
};

// --- create ---------------------------------------------------------------------------------

TEST_F(DdlCommandsTest, CreateMakesACollectionWithAnIdIndex) {
  BsonObj reply = Run(R"({"create": "c"})");
  ExpectOk(reply);
  EXPECT_EQ(reply.NumFields(), 1) << reply.ToJson();  // just {ok: 1}

  BsonObj list = Run(R"({"listCollections": 1})");
  ExpectOk(list);
  auto batch = FirstBatch(list);
  ASSERT_EQ(batch.size(), 1u);
  const BsonObj& c = batch[0];
  EXPECT_EQ(c["name"].Str(), "c");
  EXPECT_EQ(c["type"].Str(), "collection");
  EXPECT_TRUE(c["options"].Obj().IsEmpty());
  BsonObj info = c["info"].Obj();
  EXPECT_EQ(info["readOnly"].type(), BsonType::kBool);
  EXPECT_FALSE(info["readOnly"].Bool());
  EXPECT_EQ(info["uuid"].type(), BsonType::kBinData);
  EXPECT_EQ(info["uuid"].BinSubtype(), 4);
  EXPECT_EQ(info["uuid"].BinData().size(), 16u);
  BsonObj id_index = c["idIndex"].Obj();
  EXPECT_EQ(id_index["v"].Int32(), 2);
  EXPECT_EQ(id_index["key"].Obj().ToJson(), R"({ "_id" : 1 })");
  EXPECT_EQ(id_index["name"].Str(), "_id_");
}

TEST_F(DdlCommandsTest, CreateWithIdenticalOptionsSucceedsOtherwiseNamespaceExists) {
  ExpectOk(Run(R"({"create": "c", "storageEngine": {"wiredTiger": {}}})"));
  // MongoDB 7.0: the same options again are a no-op success.
  ExpectOk(Run(R"({"create": "c", "storageEngine": {"wiredTiger": {}}})"));
  ExpectError(Run(R"({"create": "c"})"), 48, "Collection test.c already exists.");
  ExpectError(Run(R"({"create": "c", "validationLevel": "strict"})"), 48);
  // Options this server cannot honour still report the existing namespace first.
  ExpectError(Run(R"({"create": "c", "timeseries": {"timeField": "t"}})"), 48);
  ExpectError(Run(R"({"create": "c", "capped": true, "size": 100})"), 48);
}

TEST_F(DdlCommandsTest, CreateStoresOnlyRecognizedUserOptions) {
  ExpectOk(Run(R"({"create": "c", "storageEngine": {"wiredTiger": {"configString": ""}},
                   "validationLevel": "moderate", "validationAction": "warn",
                   "indexOptionDefaults": {}, "collation": {"locale": "simple"},
                   "capped": false, "validator": {}, "comment": "hi",
                   "writeConcern": {"w": 1}})"));
  BsonObj options = FirstBatch(Run(R"({"listCollections": 1})"))[0]["options"].Obj().Owned();
  EXPECT_EQ(options.NumFields(), 3) << options.ToJson();
  EXPECT_EQ(options["storageEngine"].Obj()["wiredTiger"].type(), BsonType::kObject);
  EXPECT_EQ(options["validationLevel"].Str(), "moderate");
  EXPECT_EQ(options["validationAction"].Str(), "warn");
}

TEST_F(DdlCommandsTest, CreateRejectsUnsupportedOptionsHonestly) {
  ExpectError(Run(R"({"create": "c", "capped": true, "size": 4096})"), 115,
              "capped collections are not supported");
  ExpectError(Run(R"({"create": "v", "viewOn": "c", "pipeline": [{"$out": "x"}]})"), 167);
  ExpectError(Run(R"({"create": "c", "validator": {"a": {"$gt": 1}}})"), 115);
  EXPECT_TRUE(CollectionNames().empty());
  // A time-series collection takes a collation (a bad one fails with the collation's code).
  ExpectError(Run(R"({"create": "t", "collation": {"locale": "fr", "strength": 9},
                      "timeseries": {"timeField": "t"}})"),
              9);
  EXPECT_TRUE(CollectionNames().empty());
}

TEST_F(DdlCommandsTest, CreateValidatesOptions) {
  ExpectError(Run(R"({"create": "c", "expireAfterSeconds": 10})"), 72,
              "'expireAfterSeconds' is only supported on time-series collections or when the "
              "'clusteredIndex' option is specified");
  ExpectError(Run(R"({"create": "c", "pipeline": []})"), 72);
  ExpectError(Run(R"({"create": "c", "bogus": 1})"), 40415,
              "BSON field 'create.bogus' is an unknown field.");
  ExpectError(Run(R"({"create": "c", "capped": "yes"})"), 14);
  ExpectError(Run(R"({"create": "c", "storageEngine": 5})"), 14);
  ExpectError(Run(R"({"create": "c", "validationLevel": "bogus"})"), 2);
  ExpectError(Run(R"({"create": "c", "validationAction": 1})"), 14);
  EXPECT_TRUE(CollectionNames().empty());
}

TEST_F(DdlCommandsTest, CreateRejectsInvalidNamespaces) {
  ExpectError(Run(R"({"create": ""})"), 73);
  ExpectError(Run(R"({"create": 1})"), 73);
  ExpectError(Run(R"({"create": "a$b"})"), 73);
  ExpectError(Run(R"({"create": ".a"})"), 73);
  ExpectError(Run(R"({"create": "c"})", "bad.db"), 73);
  ExpectError(Run(R"({"create": "system.foo"})"), 73, "Invalid system namespace: test.system.foo");
  ExpectOk(Run(R"({"create": "system.js"})"));
}

TEST_F(DdlCommandsTest, CreateAfterImplicitCreationIsANoOp) {
  Insert("test", "implicit", {R"({"_id": 1})"});
  ExpectOk(Run(R"({"create": "implicit"})"));
  EXPECT_EQ(Run(R"({"collStats": "implicit"})")["count"].Int32(), 1);
}

TEST_F(DdlCommandsTest, TimeseriesEntriesAreListedAndDroppedWithTheirBuckets) {
  ExpectOk(Run(R"({"create": "ts", "timeseries": {"timeField": "t"}})"));
  BsonObj ts = FirstBatch(Run(R"({"listCollections": 1, "filter": {"name": "ts"}})"))[0];
  EXPECT_EQ(ts["type"].Str(), "timeseries");
  // Defaults are materialized (spec 2.2); a time-series collection has no UUID of its own.
  EXPECT_EQ(ts["options"].Obj()["timeseries"].Obj().ToJson(),
            R"({ "timeField" : "t", "granularity" : "seconds", "bucketMaxSpanSeconds" : 3600 })");
  EXPECT_FALSE(ts["info"].Obj().HasField("uuid"));
  EXPECT_FALSE(ts.HasField("idIndex"));
  BsonObj buckets =
      FirstBatch(Run(R"({"listCollections": 1, "filter": {"name": "system.buckets.ts"}})"))[0];
  EXPECT_EQ(buckets["type"].Str(), "collection");
  EXPECT_TRUE(buckets["options"].Obj()["clusteredIndex"].Bool());
  EXPECT_TRUE(buckets["info"].Obj().HasField("uuid"));
  BsonObj stats = Run(R"({"dbStats": 1})");
  EXPECT_EQ(stats["views"].NumberLong(), 1);
  // The bucket collection and system.views, which holds the view's definition.
  EXPECT_EQ(stats["collections"].NumberLong(), 2);
  auto views = FirstBatch(Run(R"({"find": "system.views"})"));
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(
      views[0].ToJson(),
      R"({ "_id" : "test.ts", "viewOn" : "system.buckets.ts", "pipeline" : [ { "$_internalUnpackBucket" : { "timeField" : "t", "bucketMaxSpanSeconds" : 3600 } } ] })");
  // Same options again: no-op success; anything else: NamespaceExists.
  ExpectOk(Run(R"({"create": "ts", "timeseries": {"timeField": "t", "granularity": "seconds"}})"));
  ExpectError(Run(R"({"create": "ts"})"), 48);
  ExpectError(Run(R"({"create": "ts", "timeseries": {"timeField": "u"}})"), 48);
  BsonObj dropped = Run(R"({"drop": "ts"})");
  ExpectOk(dropped);
  EXPECT_EQ(dropped["ns"].Str(), "test.ts");
  EXPECT_EQ(CollectionNames(), std::vector<std::string>{"system.views"});
  EXPECT_TRUE(FirstBatch(Run(R"({"find": "system.views"})")).empty());
}

TEST_F(DdlCommandsTest, TimeseriesInsertAndFindRoundTrip) {
  ExpectOk(Run(R"({"create": "ts", "timeseries": {"timeField": "t", "metaField": "m"}})"));
  BsonObj reply = Run(R"({"insert": "ts", "documents": [
      {"_id": 1, "t": {"$date": "2021-05-18T00:00:00Z"}, "m": {"b": 2, "a": 1}, "v": 10},
      {"_id": 2, "t": {"$date": "2021-05-18T00:00:01Z"}, "m": {"a": 1, "b": 2}, "v": 11},
      {"_id": 3, "t": "not a date"}]})");
  ExpectOk(reply);
  EXPECT_EQ(reply["n"].Int32(), 2);
  BsonObj err = reply["writeErrors"].Obj()["0"].Obj();
  EXPECT_EQ(err["index"].Int32(), 2);
  EXPECT_EQ(err["code"].Int32(), 2);
  EXPECT_EQ(err["errmsg"].Str(), "'t' must be present and contain a valid BSON UTC datetime value");
  // Both metas normalize to {a: 1, b: 2}: one series, one bucket.
  auto buckets = FirstBatch(Run(R"({"find": "system.buckets.ts"})"));
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0]["meta"].Obj().ToJson(), R"({ "a" : 1, "b" : 2 })");
  auto docs = FirstBatch(Run(R"({"find": "ts", "filter": {"v": {"$gt": 10}}})"));
  ASSERT_EQ(docs.size(), 1u);
  // Time field first, then the meta field, then the data columns.
  EXPECT_EQ(
      docs[0].ToJson(),
      R"({ "t" : { "$date" : "2021-05-18T00:00:01Z" }, "m" : { "a" : 1, "b" : 2 }, "_id" : 2, "v" : 11 })");
}

// A time-series view whose bucket collection was dropped directly: reads see it as empty, deletes
// find nothing, and the commands that need the buckets answer NamespaceNotFound (26).
TEST_F(DdlCommandsTest, TimeseriesWithoutBucketsIsEmptyOrNamespaceNotFound) {
  ExpectOk(Run(R"({"create": "ts", "timeseries": {"timeField": "t"}})"));
  ExpectOk(Run(R"({"insert": "ts", "documents": [{"t": {"$date": "2024-01-01T00:00:00Z"}}]})"));
  ExpectOk(Run(R"({"drop": "system.buckets.ts"})"));
  const std::string missing = "Time-series buckets collection test.system.buckets.ts is missing";
  EXPECT_TRUE(FirstBatch(Run(R"({"find": "ts"})")).empty());
  EXPECT_TRUE(FirstBatch(Run(R"({"aggregate": "ts", "pipeline": [], "cursor": {}})")).empty());
  BsonObj count = Run(R"({"count": "ts"})");
  ExpectOk(count);
  EXPECT_EQ(count["n"].Int32(), 0);
  BsonObj deleted = Run(R"({"delete": "ts", "deletes": [{"q": {}, "limit": 0}]})");
  ExpectOk(deleted);
  EXPECT_EQ(deleted["n"].Int32(), 0);
  ExpectError(Run(R"({"insert": "ts", "documents": [{"t": {"$date": "2024-01-01T00:00:00Z"}}]})"),
              26, missing);
  ExpectError(Run(R"({"update": "ts", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]})"), 26,
              missing);
  ExpectError(Run(R"({"listIndexes": "ts"})"), 26, missing);
  ExpectError(Run(R"({"createIndexes": "ts", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})"), 26,
              missing);
  ExpectError(Run(R"({"dropIndexes": "ts", "index": "*"})"), 26, missing);
  ExpectError(Run(R"({"collStats": "ts"})"), 26, missing);
  ExpectError(Run(R"({"aggregate": "ts", "pipeline": [{"$indexStats": {}}], "cursor": {}})"), 26,
              missing);
}

// --- drop / dropDatabase ----------------------------------------------------------------------

TEST_F(DdlCommandsTest, DropReportsIndexesAndNamespace) {
  ExpectOk(Run(R"({"create": "c"})"));
  BsonObj reply = Run(R"({"drop": "c"})");
  ExpectOk(reply);
  EXPECT_EQ(reply["nIndexesWas"].type(), BsonType::kInt32);
  EXPECT_EQ(reply["nIndexesWas"].Int32(), 1);
  EXPECT_EQ(reply["ns"].Str(), "test.c");
  EXPECT_TRUE(CollectionNames().empty());
}

TEST_F(DdlCommandsTest, DropOfMissingCollectionSucceedsSince70) {
  BsonObj reply = Run(R"({"drop": "nope"})");
  ExpectOk(reply);
  EXPECT_FALSE(reply.HasField("nIndexesWas"));
  ExpectError(Run(R"({"drop": "c", "force": true})"), 40415);
  ExpectError(Run(R"({"drop": 5})"), 73);
}

TEST_F(DdlCommandsTest, DropDatabaseRemovesEveryCollection) {
  ExpectOk(Run(R"({"create": "a"})"));
  ExpectOk(Run(R"({"create": "b"})"));
  ExpectOk(Run(R"({"create": "keep"})", "other"));
  BsonObj reply = Run(R"({"dropDatabase": 1})");
  ExpectOk(reply);
  EXPECT_EQ(reply["dropped"].Str(), "test");
  EXPECT_TRUE(CollectionNames().empty());
  EXPECT_EQ(CollectionNames("other"), std::vector<std::string>{"keep"});

  BsonObj again = Run(R"({"dropDatabase": 1})");
  ExpectOk(again);
  EXPECT_FALSE(again.HasField("dropped"));
  ExpectError(Run(R"({"dropDatabase": 0})"), 20, "have to pass 1 as db parameter");
}

// --- listCollections ------------------------------------------------------------------------

TEST_F(DdlCommandsTest, ListCollectionsIsSortedAndFiltered) {
  for (const char* name : {"zeta", "alpha", "mid", "system.js"}) {
    ExpectOk(Run(std::string(R"({"create": ")") + name + "\"}"));
  }
  EXPECT_EQ(CollectionNames(), (std::vector<std::string>{"alpha", "mid", "system.js", "zeta"}));

  BsonObj reply = Run(R"({"listCollections": 1, "filter": {"name": "mid"}})");
  ExpectOk(reply);
  BsonObj cursor = reply["cursor"].Obj();
  EXPECT_EQ(cursor["id"].type(), BsonType::kInt64);
  EXPECT_EQ(cursor["id"].Int64(), 0);
  EXPECT_EQ(cursor["ns"].Str(), "test.$cmd.listCollections");
  auto batch = FirstBatch(reply);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0]["name"].Str(), "mid");
  EXPECT_TRUE(batch[0].HasField("info"));

  // Filters see the whole entry, including nested fields.
  reply = Run(R"({"listCollections": 1, "filter": {"info.readOnly": false, "name": {"$gt": "m"}},
                  "nameOnly": true, "authorizedCollections": true})");
  ExpectOk(reply);
  batch = FirstBatch(reply);
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0].NumFields(), 2) << batch[0].ToJson();
  EXPECT_EQ(batch[0]["name"].Str(), "mid");
  EXPECT_EQ(batch[0]["type"].Str(), "collection");

  EXPECT_TRUE(FirstBatch(Run(R"({"listCollections": 1})", "empty")).empty());
}

TEST_F(DdlCommandsTest, ListCollectionsChecksArguments) {
  ExpectError(Run(R"({"listCollections": 1, "filter": "x"})"), 14);
  ExpectError(Run(R"({"listCollections": 1, "filter": {"$bogus": 1}})"), 2);
  ExpectError(Run(R"({"listCollections": 1, "nameOnly": "x"})"), 14);
  ExpectError(Run(R"({"listCollections": 1, "cursor": 1})"), 14);
  ExpectError(Run(R"({"listCollections": 1, "cursor": {"batchSize": -1}})"), 2);
  ExpectError(Run(R"({"listCollections": 1, "bogus": 1})"), 40415);
}

TEST_F(DdlCommandsTest, ListCollectionsHonoursBatchSize) {
  ExpectOk(Run(R"({"create": "a"})"));
  ExpectOk(Run(R"({"create": "b"})"));
  BsonObj reply = Run(R"({"listCollections": 1, "cursor": {"batchSize": 1}})");
  ExpectOk(reply);
  EXPECT_EQ(FirstBatch(reply).size(), 1u);
  int64_t id = reply["cursor"].Obj()["id"].Int64();
  EXPECT_NE(id, 0);
  EXPECT_TRUE(cursors_.Kill(id));

  reply = Run(R"({"listCollections": 1, "cursor": {"batchSize": 5}})");
  EXPECT_EQ(FirstBatch(reply).size(), 2u);
  EXPECT_EQ(reply["cursor"].Obj()["id"].Int64(), 0);
}

// --- listDatabases --------------------------------------------------------------------------

TEST_F(DdlCommandsTest, ListDatabasesListsDatabasesWithCollections) {
  ExpectOk(Run(R"({"create": "c"})", "b"));
  ExpectOk(Run(R"({"create": "c"})", "a"));
  BsonObj reply = Run(R"({"listDatabases": 1})", "admin");
  ExpectOk(reply);
  std::vector<std::string> names;
  for (BsonElement e : reply["databases"].Obj()) {
    BsonObj d = e.Obj();
    names.emplace_back(d["name"].Str());
    EXPECT_EQ(d["sizeOnDisk"].type(), BsonType::kInt64);
    EXPECT_EQ(d["empty"].type(), BsonType::kBool);
    EXPECT_FALSE(d["empty"].Bool());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(reply["totalSize"].type(), BsonType::kInt64);
  EXPECT_EQ(reply["totalSizeMb"].type(), BsonType::kInt64);

  reply = Run(R"({"listDatabases": 1, "nameOnly": true, "filter": {"name": "b"}})", "admin");
  ExpectOk(reply);
  BsonObj only = reply["databases"].Obj();
  ASSERT_EQ(only.NumFields(), 1);
  EXPECT_EQ(only.FirstElement().Obj().ToJson(), R"({ "name" : "b" })");
  EXPECT_FALSE(reply.HasField("totalSize"));

  ExpectError(Run(R"({"listDatabases": 1})", "test"), 13);
}

// --- renameCollection -----------------------------------------------------------------------

TEST_F(DdlCommandsTest, RenameCollectionMovesDataAndKeepsUuid) {
  Insert("test", "a", {R"({"_id": 1})", R"({"_id": 2})"});
  BsonObj before = FirstBatch(Run(R"({"listCollections": 1})"))[0]["info"].Obj().Owned();
  ExpectOk(Run(R"({"renameCollection": "test.a", "to": "test.b"})", "admin"));
  EXPECT_EQ(CollectionNames(), std::vector<std::string>{"b"});
  BsonObj after = FirstBatch(Run(R"({"listCollections": 1})"))[0]["info"].Obj().Owned();
  EXPECT_EQ(after["uuid"].BinData(), before["uuid"].BinData());
  EXPECT_EQ(Run(R"({"collStats": "b"})")["count"].Int32(), 2);

  // Across databases.
  ExpectOk(Run(R"({"renameCollection": "test.b", "to": "other.moved"})", "admin"));
  EXPECT_TRUE(CollectionNames().empty());
  EXPECT_EQ(CollectionNames("other"), std::vector<std::string>{"moved"});
}

TEST_F(DdlCommandsTest, RenameCollectionErrors) {
  ExpectOk(Run(R"({"create": "a"})"));
  ExpectOk(Run(R"({"create": "b"})"));
  ExpectError(Run(R"({"renameCollection": "test.nope", "to": "test.x"})", "admin"), 26,
              "Source collection test.nope does not exist");
  ExpectError(Run(R"({"renameCollection": "test.a", "to": "test.b"})", "admin"), 48,
              "target namespace exists");
  ExpectError(Run(R"({"renameCollection": "test.a", "to": "test.a"})", "admin"), 20,
              "Can't rename a collection to itself");
  ExpectError(Run(R"({"renameCollection": "test.a", "to": "test.x$y"})", "admin"), 73);
  ExpectError(Run(R"({"renameCollection": "test.a", "to": "nodot"})", "admin"), 73);
  ExpectError(Run(R"({"renameCollection": "test.a"})", "admin"), 40414);
  ExpectError(Run(R"({"renameCollection": "test.a", "to": 1})", "admin"), 14);
  ExpectError(Run(R"({"renameCollection": "test.a", "to": "test.x"})", "test"), 13);
  EXPECT_EQ(CollectionNames(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(DdlCommandsTest, RenameCollectionWithDropTargetReplacesTarget) {
  Insert("test", "a", {R"({"_id": 1})"});
  Insert("test", "b", {R"({"_id": 1})", R"({"_id": 2})", R"({"_id": 3})"});
  ExpectOk(Run(R"({"renameCollection": "test.a", "to": "test.b", "dropTarget": true})", "admin"));
  EXPECT_EQ(CollectionNames(), std::vector<std::string>{"b"});
  EXPECT_EQ(Run(R"({"collStats": "b"})")["count"].Int32(), 1);
}

TEST_F(DdlCommandsTest, DdlChangesSurviveReopen) {
  ExpectOk(Run(R"({"create": "kept", "validationLevel": "moderate"})"));
  ExpectOk(Run(R"({"create": "gone"})"));
  Insert("test", "src", {R"({"_id": 1})", R"({"_id": 2})"});
  ExpectOk(Run(R"({"renameCollection": "test.src", "to": "test.dst"})", "admin"));
  ExpectOk(Run(R"({"drop": "gone"})"));
  Reopen();
  EXPECT_EQ(CollectionNames(), (std::vector<std::string>{"dst", "kept"}));
  BsonObj kept = FirstBatch(Run(R"({"listCollections": 1, "filter": {"name": "kept"}})"))[0];
  EXPECT_EQ(kept["options"].Obj()["validationLevel"].Str(), "moderate");
  EXPECT_EQ(Run(R"({"collStats": "dst"})")["count"].Int32(), 2);
  // Creating with the same options is still a no-op after the restart.
  ExpectOk(Run(R"({"create": "kept", "validationLevel": "moderate"})"));
}

// --- listIndexes / createIndexes / dropIndexes / collMod ------------------------------------

TEST_F(DdlCommandsTest, ListIndexesReturnsTheIdIndex) {
  ExpectOk(Run(R"({"create": "c"})"));
  BsonObj reply = Run(R"({"listIndexes": "c"})");
  ExpectOk(reply);
  BsonObj cursor = reply["cursor"].Obj();
  EXPECT_EQ(cursor["id"].type(), BsonType::kInt64);
  EXPECT_EQ(cursor["id"].Int64(), 0);
  EXPECT_EQ(cursor["ns"].Str(), "test.c");
  auto batch = FirstBatch(reply);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].ToJson(), R"({ "v" : 2, "key" : { "_id" : 1 }, "name" : "_id_" })");

  ExpectError(Run(R"({"listIndexes": "nope"})"), 26, "ns does not exist: test.nope");
  ExpectError(Run(R"({"listIndexes": "c", "bogus": 1})"), 40415);
}

TEST_F(DdlCommandsTest, CreateIndexesAcceptsTheExistingIdIndex) {
  ExpectOk(Run(R"({"create": "c"})"));
  BsonObj reply =
      Run(R"({"createIndexes": "c", "indexes": [{"key": {"_id": 1}, "name": "_id_"}]})");
  ExpectOk(reply);
  EXPECT_EQ(reply["numIndexesBefore"].Int32(), 1);
  EXPECT_EQ(reply["numIndexesAfter"].Int32(), 1);
  EXPECT_EQ(reply["note"].Str(), "all indexes already exist");
  EXPECT_FALSE(reply["createdCollectionAutomatically"].Bool());

  ExpectError(Run(R"({"createIndexes": "c", "indexes": [{"key": {"a": "text"}}]})"), 115);
  ExpectError(Run(R"({"createIndexes": "c"})"), 40414);
  ExpectError(Run(R"({"createIndexes": "c", "indexes": []})"), 2);
  ExpectError(Run(R"({"createIndexes": "c", "indexes": [1]})"), 14);
  ExpectError(Run(R"({"createIndexes": "c", "indexes": [{"name": "x"}]})"), 9);
}

TEST_F(DdlCommandsTest, CreateIndexesCreatesTheCollectionImplicitly) {
  ExpectError(Run(R"({"createIndexes": "new", "indexes": [{"key": {"a": "text"}}]})"), 115);
  EXPECT_TRUE(CollectionNames().empty());
  BsonObj reply =
      Run(R"({"createIndexes": "new", "indexes": [{"key": {"_id": 1}, "name": "_id_"}]})");
  ExpectOk(reply);
  EXPECT_TRUE(reply["createdCollectionAutomatically"].Bool());
  EXPECT_EQ(CollectionNames(), std::vector<std::string>{"new"});
}

TEST_F(DdlCommandsTest, DropIndexesNeverDropsTheIdIndex) {
  ExpectOk(Run(R"({"create": "c"})"));
  BsonObj reply = Run(R"({"dropIndexes": "c", "index": "*"})");
  ExpectOk(reply);
  EXPECT_EQ(reply["nIndexesWas"].Int32(), 1);
  EXPECT_EQ(reply["msg"].Str(), "non-_id indexes dropped for collection");

  ExpectError(Run(R"({"dropIndexes": "c", "index": "_id_"})"), 72, "cannot drop _id index");
  ExpectError(Run(R"({"dropIndexes": "c", "index": {"_id": 1}})"), 72);
  ExpectError(Run(R"({"dropIndexes": "c", "index": "a_1"})"), 27,
              "index not found with name [a_1]");
  ExpectError(Run(R"({"dropIndexes": "c", "index": {"a": 1}})"), 27);
  ExpectError(Run(R"({"dropIndexes": "c", "index": ["a_1"]})"), 27);
  ExpectError(Run(R"({"dropIndexes": "c"})"), 40414);
  ExpectError(Run(R"({"dropIndexes": "nope", "index": "*"})"), 26);
  ExpectOk(Run(R"({"listIndexes": "c"})"));
  EXPECT_EQ(FirstBatch(Run(R"({"listIndexes": "c"})")).size(), 1u);
}

TEST_F(DdlCommandsTest, CollModAcceptsOnlyTheEmptyModification) {
  ExpectOk(Run(R"({"create": "c"})"));
  ExpectOk(Run(R"({"collMod": "c"})"));
  ExpectError(Run(R"({"collMod": "c", "validator": {}})"), 115);
  ExpectError(Run(R"({"collMod": "c", "bogus": 1})"), 40415);
  ExpectError(Run(R"({"collMod": "nope"})"), 26);
}

// --- dbStats / collStats --------------------------------------------------------------------

TEST_F(DdlCommandsTest, DbStatsCountsCollectionsObjectsAndIndexes) {
  Insert("test", "a", {R"({"_id": 1, "x": "aaaa"})", R"({"_id": 2})"});
  Insert("test", "b", {R"({"_id": 1})"});
  BsonObj reply = Run(R"({"dbStats": 1})");
  ExpectOk(reply);
  EXPECT_EQ(reply["db"].Str(), "test");
  EXPECT_EQ(reply["collections"].NumberLong(), 2);
  EXPECT_EQ(reply["views"].NumberLong(), 0);
  EXPECT_EQ(reply["objects"].NumberLong(), 3);
  EXPECT_EQ(reply["indexes"].NumberLong(), 2);
  int64_t data_size = bson::FromJson(R"({"_id": 1, "x": "aaaa"})").value().size() +
                      2 * bson::FromJson(R"({"_id": 1})").value().size();
  EXPECT_EQ(reply["dataSize"].NumberLong(), data_size);
  EXPECT_DOUBLE_EQ(reply["avgObjSize"].NumberDouble(), data_size / 3.0);
  EXPECT_EQ(reply["scaleFactor"].NumberLong(), 1);
  for (const char* f : {"storageSize", "indexSize", "totalSize", "fsUsedSize", "fsTotalSize"}) {
    EXPECT_TRUE(reply[f].IsNumber()) << f << " in " << reply.ToJson();
  }
  EXPECT_GT(reply["fsTotalSize"].NumberDouble(), 0);

  BsonObj scaled = Run(R"({"dbStats": 1, "scale": 1024.5})");
  ExpectOk(scaled);
  EXPECT_EQ(scaled["scaleFactor"].NumberLong(), 1024);
  EXPECT_EQ(scaled["dataSize"].NumberLong(), data_size / 1024);

  ExpectError(Run(R"({"dbStats": 1, "scale": 0})"), 2);
  ExpectError(Run(R"({"dbStats": 1, "scale": "x"})"), 14);

  BsonObj empty = Run(R"({"dbStats": 1})", "nothing");
  ExpectOk(empty);
  EXPECT_EQ(empty["collections"].NumberLong(), 0);
  EXPECT_EQ(empty["avgObjSize"].NumberDouble(), 0.0);
}

TEST_F(DdlCommandsTest, CollStatsReportsCountsAndIndexSizes) {
  Insert("test", "c", {R"({"_id": 1})", R"({"_id": 2})", R"({"_id": 3})"});
  int32_t doc_size = bson::FromJson(R"({"_id": 1})").value().size();
  BsonObj reply = Run(R"({"collStats": "c"})");
  ExpectOk(reply);
  EXPECT_EQ(reply["ns"].Str(), "test.c");
  EXPECT_EQ(reply["count"].type(), BsonType::kInt32);
  EXPECT_EQ(reply["count"].Int32(), 3);
  EXPECT_EQ(reply["size"].Int32(), 3 * doc_size);
  EXPECT_EQ(reply["avgObjSize"].Int32(), doc_size);
  EXPECT_EQ(reply["capped"].type(), BsonType::kBool);
  EXPECT_FALSE(reply["capped"].Bool());
  EXPECT_EQ(reply["nindexes"].Int32(), 1);
  EXPECT_TRUE(reply["indexSizes"].Obj().HasField("_id_"));
  EXPECT_EQ(reply["indexBuilds"].type(), BsonType::kArray);
  EXPECT_EQ(reply["scaleFactor"].Int32(), 1);
  for (const char* f : {"storageSize", "freeStorageSize", "totalIndexSize", "totalSize"}) {
    EXPECT_TRUE(reply[f].IsNumber()) << f << " in " << reply.ToJson();
  }

  BsonObj scaled = Run(R"({"collStats": "c", "scale": 2})");
  EXPECT_EQ(scaled["size"].Int32(), 3 * doc_size / 2);
  EXPECT_EQ(scaled["scaleFactor"].Int32(), 2);
}

TEST_F(DdlCommandsTest, CollStatsOfMissingCollectionIsZeroed) {
  BsonObj reply = Run(R"({"collStats": "nope"})");
  ExpectOk(reply);
  EXPECT_EQ(reply["ns"].Str(), "test.nope");
  EXPECT_EQ(reply["count"].Int32(), 0);
  EXPECT_EQ(reply["size"].Int32(), 0);
  EXPECT_EQ(reply["nindexes"].Int32(), 0);
  EXPECT_FALSE(reply.HasField("avgObjSize"));
  EXPECT_TRUE(reply["indexSizes"].Obj().IsEmpty());
  ExpectError(Run(R"({"collStats": "c", "bogus": 1})"), 40415);
}

}  // namespace
}  // namespace hourglass::commands
