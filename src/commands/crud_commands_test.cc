// Error paths of the CRUD and aggregate commands (find, getMore, killCursors, insert, update,
// delete, findAndModify, aggregate, count, distinct), checked against MongoDB 7.0's codes and
// messages, plus the write paths those errors guard.
#include <gtest/gtest.h>

#include <string>

#include "catalog/catalog.h"
#include "commands/commands_test_util.h"
#include "commands/dispatcher.h"
#include "exec/cursor_manager.h"
#include "storage/kv_engine.h"

namespace hourglass::commands {
namespace {

using bson::BsonObj;

class CrudCommandsTest : public testing::CommandsTest {};

struct ErrorCase {
  const char* command;
  int code;
  const char* errmsg;  // exact message, or nullptr to check the code only
};

class CrudCommandErrorTest : public CrudCommandsTest,
                             public ::testing::WithParamInterface<ErrorCase> {};

TEST_P(CrudCommandErrorTest, RejectsWithMongoDbCode) {
  // A collection with documents, so errors are not hidden by an empty-collection shortcut.
  BsonObj seeded = Run(R"({"insert": "c", "documents": [{"_id": 1, "a": 1}, {"_id": 2, "a": 2}]})");
  ASSERT_EQ(seeded["n"].Int32(), 2) << seeded.ToJson();
  const ErrorCase& c = GetParam();
  BsonObj r = Run(c.command);
  EXPECT_EQ(r["ok"].Double(), 0.0) << c.command << " -> " << r.ToJson();
  EXPECT_EQ(r["code"].Int32(), c.code) << c.command << " -> " << r.ToJson();
  if (c.errmsg != nullptr) {
    EXPECT_EQ(r["errmsg"].Str(), c.errmsg) << c.command;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllCommands, CrudCommandErrorTest,
    ::testing::Values(
        // find
        ErrorCase{R"({"find": "c", "skip": -1})", 2,
                  "Skip value must be non-negative, but received: -1"},
        ErrorCase{R"({"find": "c", "batchSize": -2})", 2,
                  "BatchSize value must be non-negative, but received: -2"},
        ErrorCase{R"({"find": "c", "limit": 1.5})", 9, nullptr},
        ErrorCase{R"({"find": "c", "tailable": true})", 2, nullptr},
        ErrorCase{R"({"find": "c", "filter": {"a": {"$bogus": 1}}})", 2,
                  "unknown operator: $bogus"},
        ErrorCase{R"({"find": "c", "projection": {"a": 1, "b": 0}})", 31254, nullptr},
        ErrorCase{R"({"find": "c", "sort": {"a": 2}})", 15975, nullptr},
        ErrorCase{R"({"find": 5})", 73, nullptr},
        ErrorCase{R"({"find": "c", "hint": {"a": 1}})", 2,
                  "hint provided does not correspond to an existing index"},
        ErrorCase{R"({"find": "c", "hint": "a_1"})", 2, nullptr},
        ErrorCase{R"({"find": "c", "hint": 5})", 14, nullptr},
        // A string bound of an index under another collation than the read's.
        ErrorCase{R"({"find": "c", "min": {"_id": "a"}, "hint": "_id_",
                      "collation": {"locale": "en", "strength": 2}})",
                  51174, "The index chosen is not compatible with min/max"},
        ErrorCase{R"({"find": "c", "collation": {"locale": "en", "strength": 9}})", 9, nullptr},
        ErrorCase{R"({"find": "c", "min": {"_id": 1}})", 51173, nullptr},
        ErrorCase{R"({"find": "c", "min": {"a": 1}, "hint": "_id_"})", 51174, nullptr},
        ErrorCase{R"({"find": "c", "returnKey": "yes"})", 14, nullptr},
        // getMore
        ErrorCase{R"({"getMore": 5, "collection": "c"})", 14, nullptr},
        ErrorCase{R"({"getMore": {"$numberLong": "5"}})", 40414,
                  "BSON field 'getMore.collection' is missing but a required field"},
        ErrorCase{R"({"getMore": {"$numberLong": "12345"}, "collection": "c"})", 43,
                  "cursor id 12345 not found"},
        ErrorCase{R"({"getMore": {"$numberLong": "1"}, "collection": "c", "batchSize": -1})", 2,
                  nullptr},
        // killCursors
        ErrorCase{R"({"killCursors": "c"})", 40414,
                  "BSON field 'killCursors.cursors' is missing but a required field"},
        ErrorCase{R"({"killCursors": "c", "cursors": [1]})", 14, nullptr},
        // insert
        ErrorCase{R"({"insert": "c", "documents": [1]})", 14, nullptr},
        ErrorCase{R"({"insert": "c", "documents": [], "ordered": "x"})", 14, nullptr},
        ErrorCase{R"({"insert": "c", "documents": []})", 16,
                  "Write batch sizes must be between 1 and 100000. Got 0 operations."},
        ErrorCase{R"({"update": "c", "updates": []})", 16, nullptr},
        ErrorCase{R"({"delete": "c", "deletes": []})", 16, nullptr},
        // update
        ErrorCase{R"({"update": "c", "updates": [{"u": {"$set": {"a": 1}}}]})", 40414,
                  "BSON field 'update.updates.q' is missing but a required field"},
        ErrorCase{R"({"update": "c", "updates": [5]})", 14, nullptr},
        ErrorCase{R"({"update": "c", "updates": [{"q": {}, "u": {}, "hint": 5}]})", 14, nullptr},
        ErrorCase{R"({"update": "c", "updates": [{"q": {}, "u": {}, "sort": {"a": 1}}]})", 40415,
                  "BSON field 'update.updates.sort' is an unknown field."},
        ErrorCase{R"({"delete": "c", "deletes": [{"q": {}, "limit": 0,
                      "collation": {"locale": "xx"}}]})",
                  2, nullptr},
        ErrorCase{R"({"count": "c", "hint": {"zz": 1}})", 2, nullptr},
        ErrorCase{R"({"distinct": "c", "key": "a", "collation": {"locale": "de", "strength": 0}})",
                  9, nullptr},
        ErrorCase{R"({"aggregate": "c", "pipeline": [], "cursor": {}, "hint": "nope"})", 2,
                  nullptr},
        ErrorCase{R"({"findAndModify": "c", "update": {"$set": {"a": 1}},
                      "collation": {"locale": "en", "strength": 0}})",
                  9, nullptr},
        ErrorCase{R"({"update": "c", "updates": [{"q": {}}]})", 40414,
                  "BSON field 'update.updates.u' is missing but a required field"},
        ErrorCase{R"({"update": "c", "updates": [{"q": {}, "u": {}, "bogus": 1}]})", 40415,
                  "BSON field 'update.updates.bogus' is an unknown field."},
        // delete
        ErrorCase{R"({"delete": "c", "deletes": [5]})", 14, nullptr},
        ErrorCase{R"({"delete": "c", "deletes": [{"q": {}}]})", 40414,
                  "BSON field 'delete.deletes.limit' is missing but a required field"},
        ErrorCase{R"({"delete": "c", "deletes": [{"limit": 0}]})", 40414,
                  "BSON field 'delete.deletes.q' is missing but a required field"},
        ErrorCase{R"({"delete": "c", "deletes": [{"q": {}, "limit": 2}]})", 9,
                  "The limit field in delete objects must be 0 or 1. Got 2"},
        // findAndModify
        ErrorCase{R"({"findAndModify": "c", "query": {}})", 9,
                  "Either an update or remove=true must be specified"},
        ErrorCase{R"({"findAndModify": "c", "remove": true, "update": {"$set": {"a": 1}}})", 9,
                  "Cannot specify both an update and remove=true"},
        ErrorCase{R"({"findAndModify": "c", "remove": true, "upsert": true})", 9,
                  "Cannot specify both upsert=true and remove=true"},
        ErrorCase{R"({"findAndModify": "c", "remove": true, "new": true})", 9, nullptr},
        ErrorCase{R"({"findAndModify": "c", "query": 1, "remove": true})", 14, nullptr},
        ErrorCase{R"({"findAndModify": "c", "update": {"$set": {"_id": 9}}})", 66, nullptr},
        // aggregate
        ErrorCase{R"({"aggregate": "c", "pipeline": [], "cursor": {}, "explain": "x"})", 14,
                  nullptr},
        ErrorCase{R"({"explain": {"insert": "c", "documents": [{}]}})", 115, nullptr},
        ErrorCase{R"({"explain": {"find": "c"}, "verbosity": "bogus"})", 2, nullptr},
        ErrorCase{R"({"find": "c", "hint": "nope_1"})", 2,
                  "hint provided does not correspond to an existing index"},
        ErrorCase{R"({"aggregate": "c", "pipeline": [], "cursor": {"batchSize": -1}})", 2, nullptr},
        ErrorCase{R"({"aggregate": "c", "pipeline": [{"$bogus": {}}], "cursor": {}})", 40324,
                  nullptr},
        ErrorCase{R"({"aggregate": "c", "pipeline": [{"$match": {"a": {"$gt": 1}}, "$limit": 1}],
                      "cursor": {}})",
                  40323, nullptr},
        // count
        ErrorCase{R"({"count": "c", "skip": -1})", 2, "skip value is negative in count query"},
        ErrorCase{R"({"count": "c", "query": {"$foo": 1}})", 2, nullptr},
        // distinct
        ErrorCase{R"({"distinct": "c"})", 40414,
                  "BSON field 'distinct.key' is missing but a required field"},
        ErrorCase{R"({"distinct": "c", "key": 1})", 14, nullptr}));

struct WriteErrorCase {
  const char* command;
  int code;
};

class CrudWriteErrorTest : public CrudCommandsTest,
                           public ::testing::WithParamInterface<WriteErrorCase> {};

// Per-statement failures are reported inside an ok:1 reply, in writeErrors[0].
TEST_P(CrudWriteErrorTest, ReportsWriteError) {
  Run(R"({"insert": "c", "documents": [{"_id": 1, "a": 1}]})");
  BsonObj r = Run(GetParam().command);
  EXPECT_EQ(r["ok"].Double(), 1.0) << r.ToJson();
  BsonObj first = r["writeErrors"].Obj()["0"].Obj();
  EXPECT_EQ(first["index"].Int32(), 0) << r.ToJson();
  EXPECT_EQ(first["code"].Int32(), GetParam().code) << r.ToJson();
}

INSTANTIATE_TEST_SUITE_P(
    Statements, CrudWriteErrorTest,
    ::testing::Values(
        WriteErrorCase{R"({"insert": "c", "documents": [{"_id": 1}]})", 11000},
        WriteErrorCase{R"({"insert": "c", "documents": [{"_id": [1]}]})", 2},
        WriteErrorCase{R"({"update": "c", "updates": [{"q": {}, "u": {"a": 2}, "multi": true}]})",
                       9},
        WriteErrorCase{R"({"update": "c", "updates": [{"q": {}, "u": {"$inc": {"a": "x"}}}]})", 14},
        WriteErrorCase{R"({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"_id": 2}}]})", 66},
        WriteErrorCase{R"({"delete": "c", "deletes": [{"q": {"$bogus": 1}, "limit": 0}]})", 2},
        // A hint naming no index is a statement's error, as in MongoDB.
        WriteErrorCase{R"({"update": "c", "updates": [{"q": {}, "u": {}, "hint": {"x": 1}}]})", 2},
        WriteErrorCase{R"({"delete": "c", "deletes": [{"q": {}, "limit": 0, "hint": "x_1"}]})",
                       2}));

TEST_F(CrudCommandsTest, WriteBatchesAreLimitedTo100000Statements) {
  bson::BsonBuilder b;
  b.AppendString("insert", "big");
  bson::BsonArrayBuilder docs;
  for (int i = 0; i < 100001; ++i) docs.AppendObject(BsonObj());
  b.AppendArray("documents", docs.Obj());
  BsonObj r = Run(b.Obj());
  EXPECT_EQ(r["code"].Int32(), 16) << r["errmsg"].Str();
  EXPECT_EQ(r["errmsg"].Str(),
            "Write batch sizes must be between 1 and 100000. Got 100001 operations.");
  EXPECT_EQ(catalog_->Lookup({"test", "big"}), nullptr);  // nothing was created or written
}

TEST_F(CrudCommandsTest, OrderedInsertStopsAtFirstErrorUnorderedContinues) {
  BsonObj r = Run(R"({"insert": "c", "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}]})");
  EXPECT_EQ(r["n"].Int32(), 1) << r.ToJson();
  EXPECT_EQ(r["writeErrors"].Obj().NumFields(), 1);
  r = Run(R"({"insert": "d", "documents": [{"_id": 1}, {"_id": 1}, {"_id": 2}, {"_id": 2}],
              "ordered": false})");
  EXPECT_EQ(r["n"].Int32(), 2) << r.ToJson();
  BsonObj errors = r["writeErrors"].Obj();
  ASSERT_EQ(errors.NumFields(), 2);
  EXPECT_EQ(errors["0"].Obj()["index"].Int32(), 1);
  EXPECT_EQ(errors["1"].Obj()["index"].Int32(), 3);
}

TEST_F(CrudCommandsTest, IdHintsAndSimpleCollationAreAccepted) {
  Run(R"({"insert": "c", "documents": [{"_id": 1}, {"_id": 2}]})");
  for (const char* cmd :
       {R"({"find": "c", "hint": {"_id": 1}, "collation": {"locale": "simple"}})",
        R"({"find": "c", "hint": "_id_"})", R"({"find": "c", "hint": {"$natural": -1}})",
        R"({"count": "c", "hint": {"_id": 1}})"}) {
    BsonObj r = Run(cmd);
    EXPECT_EQ(r["ok"].Double(), 1.0) << cmd << " -> " << r.ToJson();
  }
}

TEST_F(CrudCommandsTest, NoCursorTimeoutCursorsSurviveTheReaper) {
  Run(R"({"insert": "c", "documents": [{"a": 1}, {"a": 2}, {"a": 3}]})");
  int64_t kept = Run(R"({"find": "c", "batchSize": 1, "noCursorTimeout": true})")["cursor"]
                     .Obj()["id"]
                     .Int64();
  int64_t reaped = Run(R"({"find": "c", "batchSize": 1})")["cursor"].Obj()["id"].Int64();
  ASSERT_NE(kept, 0);
  ASSERT_NE(reaped, 0);
  EXPECT_EQ(cursors_.ReapIdle(std::chrono::milliseconds(-1)), 1);
  EXPECT_TRUE(cursors_.CheckOut(kept, "test.c").ok());
  EXPECT_EQ(cursors_.CheckOut(reaped, "test.c").status().code(), ErrorCode::kCursorNotFound);
}

TEST_F(CrudCommandsTest, GetMoreOnAnotherNamespaceIsUnauthorized) {
  Run(R"({"insert": "c", "documents": [{"a": 1}, {"a": 2}, {"a": 3}]})");
  BsonObj r = Run(R"({"find": "c", "batchSize": 1})");
  int64_t id = r["cursor"].Obj()["id"].Int64();
  ASSERT_NE(id, 0) << r.ToJson();
  bson::BsonBuilder b;
  b.AppendInt64("getMore", id);
  b.AppendString("collection", "other");
  BsonObj reply = Run(b.Obj());
  EXPECT_EQ(reply["code"].Int32(), 13) << reply.ToJson();
}

}  // namespace
}  // namespace hourglass::commands
