// The write commands' request parsers (write_requests.h) on bodies and document sequences, with
// MongoDB's codes.
#include "commands/write_requests.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "commands/commands_test_util.h"
#include "query/test_util.h"

namespace hourglass::commands {
namespace {

using bson::BsonObj;

using query::J;
using testing::Sequence;
using Request = testing::TestRequest;

int CodeOf(const Status& st) { return st.code_number(); }

TEST(WriteRequestsTest, InsertReadsTheBodyArray) {
  Request r{J(R"({"insert": "c", "documents": [{"a": 1}, {"a": 2}], "ordered": false})"), {}};
  auto req = ParseInsertRequest(r.view(), "db");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_EQ(req.value().nss.ns(), "db.c");
  EXPECT_FALSE(req.value().ordered);
  EXPECT_EQ(req.value().statements.size(), 2);
  int i = 1;
  for (DocumentArray::Entry e : req.value().statements) {
    auto doc = e.Document("insert");
    ASSERT_TRUE(doc.ok());
    EXPECT_EQ(doc.value()["a"].Int32(), i++);
  }
}

TEST(WriteRequestsTest, InsertReadsTheSequenceInPlace) {
  Request r{J(R"({"insert": "c", "$db": "db"})"),
            {Sequence("documents", {R"({"a": 1})", R"({"a": 2})", R"({"a": 3})"})}};
  auto req = ParseInsertRequest(r.view(), "db");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_TRUE(req.value().ordered);
  EXPECT_EQ(req.value().statements.size(), 3);
  size_t i = 0;
  for (DocumentArray::Entry e : req.value().statements) {
    auto doc = e.Document("insert");
    ASSERT_TRUE(doc.ok());
    // The sequence's own bytes, not a copy.
    EXPECT_EQ(doc.value().data(), r.sequences[0].documents[i++].data());
  }
  EXPECT_EQ(i, 3u);
  // Nothing else to merge: the body is used as it is.
  EXPECT_EQ(req.value().cmd.data(), r.body.data());
}

TEST(WriteRequestsTest, OtherSequencesAreMergedIntoTheCommand) {
  Request r{J(R"({"insert": "c"})"),
            {Sequence("documents", {R"({"a": 1})"}), Sequence("writeConcern", {R"({"w": 1})"})}};
  auto req = ParseInsertRequest(r.view(), "db");
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_EQ(req.value().cmd["writeConcern"].type(), bson::BsonType::kArray);
  EXPECT_TRUE(req.value().cmd["documents"].eoo());
}

TEST(WriteRequestsTest, RejectsUnknownFieldsInTheBodyOrAsSequences) {
  Request body{J(R"({"insert": "c", "documents": [{}], "bogus": 1})"), {}};
  auto st = ParseInsertRequest(body.view(), "db").status();
  EXPECT_EQ(CodeOf(st), 40415);
  EXPECT_EQ(st.reason(), "BSON field 'insert.bogus' is an unknown field.");
  Request seq{J(R"({"insert": "c", "documents": [{}]})"), {Sequence("bogus", {"{}"})}};
  EXPECT_EQ(CodeOf(ParseInsertRequest(seq.view(), "db").status()), 40415);
  // `let` belongs to update and delete, not insert.
  Request let{J(R"({"insert": "c", "documents": [{}], "let": {}})"), {}};
  EXPECT_EQ(CodeOf(ParseInsertRequest(let.view(), "db").status()), 40415);
  Request upd{J(R"({"update": "c", "updates": [{"q": {}, "u": {}, "sort": {}}]})"), {}};
  auto ust = ParseUpdateRequest(upd.view(), "db").status();
  EXPECT_EQ(CodeOf(ust), 40415);
  EXPECT_EQ(ust.reason(), "BSON field 'update.updates.sort' is an unknown field.");
}

TEST(WriteRequestsTest, RejectsWrongTypes) {
  Request docs{J(R"({"insert": "c", "documents": 5})"), {}};
  EXPECT_EQ(CodeOf(ParseInsertRequest(docs.view(), "db").status()), 14);
  Request ordered{J(R"({"insert": "c", "documents": [{}], "ordered": "x"})"), {}};
  EXPECT_EQ(CodeOf(ParseInsertRequest(ordered.view(), "db").status()), 14);
  Request stmt{J(R"({"update": "c", "updates": [5]})"), {}};
  auto st = ParseUpdateRequest(stmt.view(), "db").status();
  EXPECT_EQ(CodeOf(st), 14);
  EXPECT_EQ(st.reason(),
            "BSON field 'update.updates.0' is the wrong type 'int', expected type 'object'");
  Request del{J(R"({"delete": "c"})"), {Sequence("deletes", {R"({"q": 1, "limit": 0})"})}};
  EXPECT_EQ(CodeOf(ParseDeleteRequest(del.view(), "db").status()), 14);
  Request name{J(R"({"insert": 5, "documents": [{}]})"), {}};
  EXPECT_EQ(CodeOf(ParseInsertRequest(name.view(), "db").status()), 73);
}

TEST(WriteRequestsTest, RejectsMissingStatementsAndBadBatchSizes) {
  Request none{J(R"({"delete": "c"})"), {}};
  auto st = ParseDeleteRequest(none.view(), "db").status();
  EXPECT_EQ(CodeOf(st), 40414);
  EXPECT_EQ(st.reason(), "BSON field 'delete.deletes' is missing but a required field");
  // An empty sequence is an empty array.
  Request empty{J(R"({"update": "c"})"), {Sequence("updates", {})}};
  EXPECT_EQ(CodeOf(ParseUpdateRequest(empty.view(), "db").status()), 16);
  Request limit{J(R"({"delete": "c"})"), {Sequence("deletes", {R"({"q": {}, "limit": 2})"})}};
  EXPECT_EQ(CodeOf(ParseDeleteRequest(limit.view(), "db").status()), 9);
}

TEST(WriteRequestsTest, RejectsASequenceThatRepeatsABodyField) {
  Request r{J(R"({"insert": "c", "documents": [{}]})"), {Sequence("documents", {"{}"})}};
  EXPECT_EQ(CodeOf(ParseInsertRequest(r.view(), "db").status()), 17);
  Request other{J(R"({"update": "c", "ordered": true})"),
                {Sequence("updates", {R"({"q": {}, "u": {}})"}), Sequence("ordered", {"{}"})}};
  EXPECT_EQ(CodeOf(ParseUpdateRequest(other.view(), "db").status()), 17);
  Request twice{J(R"({"delete": "c"})"),
                {Sequence("deletes", {R"({"q": {}, "limit": 0})"}),
                 Sequence("deletes", {R"({"q": {}, "limit": 0})"})}};
  EXPECT_EQ(CodeOf(ParseDeleteRequest(twice.view(), "db").status()), 17);
}

TEST(WriteRequestsTest, ParsesUpdateAndDeleteStatements) {
  Request upd{J(R"({"update": "c", "let": {"x": 1}})"),
              {Sequence("updates", {R"({"q": {"a": 1}, "u": {"$set": {"b": 1}}, "multi": true})",
                                    R"({"q": {}, "u": [], "upsert": 1, "hint": "a_1"})"})}};
  auto u = ParseUpdateRequest(upd.view(), "db");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  ASSERT_EQ(u.value().updates.size(), 2u);
  EXPECT_TRUE(u.value().updates[0].multi);
  EXPECT_EQ(u.value().updates[0].q["a"].Int32(), 1);
  EXPECT_TRUE(u.value().updates[1].upsert);
  EXPECT_EQ(u.value().updates[1].u.type(), bson::BsonType::kArray);
  EXPECT_EQ(u.value().updates[1].hint.Str(), "a_1");
  EXPECT_NE(u.value().expr_ctx.let, nullptr);

  Request del{J(R"({"delete": "c", "deletes": [{"q": {}, "limit": 1}, {"q": {}, "limit": 0}]})"),
              {}};
  auto d = ParseDeleteRequest(del.view(), "db");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d.value().deletes.size(), 2u);
  EXPECT_FALSE(d.value().deletes[0].multi);
  EXPECT_TRUE(d.value().deletes[1].multi);
}

TEST(WriteRequestsTest, DeleteChecksItsTargetBeforeItsStatements) {
  Request bad{J(R"({"delete": "c", "deletes": [5]})"), {}};
  int calls = 0;
  auto view = [&](const catalog::NamespaceString& nss) {
    ++calls;
    EXPECT_EQ(nss.ns(), "db.c");
    return Status(ErrorCode::kCommandNotSupportedOnView, "view");
  };
  EXPECT_EQ(CodeOf(ParseDeleteRequest(bad.view(), "db", view).status()), 166);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(CodeOf(ParseDeleteRequest(bad.view(), "db").status()), 14);
  // A collection name MongoDB refuses fails before the target is looked at.
  Request name{J(R"({"delete": "a$b", "deletes": [{"q": {}, "limit": 0}]})"), {}};
  EXPECT_EQ(CodeOf(ParseDeleteRequest(name.view(), "db", view).status()), 73);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace hourglass::commands
