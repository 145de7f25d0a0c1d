// CommandRequest and DocumentArray (command_request.h), and the dispatcher running commands whose
// arguments arrive as OP_MSG document sequences.
#include "commands/command_request.h"

#include <gtest/gtest.h>

#include "commands/commands_test_util.h"
#include "query/test_util.h"

namespace hourglass::commands {
namespace {

using bson::BsonObj;
using query::J;
using testing::Sequence;
using testing::TestRequest;

TEST(DocumentArrayTest, ReadsABodyArray) {
  TestRequest r{J(R"({"insert": "c", "documents": [{"a": 1}, 5]})"), {}};
  auto found = DocumentArray::Find(r.view(), "insert", "documents");
  ASSERT_TRUE(found.ok() && found.value().has_value());
  const DocumentArray& docs = *found.value();
  EXPECT_EQ(docs.size(), 2);
  auto it = docs.begin();
  auto first = (*it).Document("insert");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.value()["a"].Int32(), 1);
  ++it;
  Status second = (*it).Document("insert").status();
  EXPECT_EQ(second.code_number(), 14);
  EXPECT_EQ(second.reason(),
            "BSON field 'insert.1' is the wrong type 'int', expected type 'object'");
  ++it;
  EXPECT_FALSE(it != docs.end());
}

TEST(DocumentArrayTest, ReadsASequenceInPlace) {
  TestRequest r{J(R"({"insert": "c"})"), {Sequence("documents", {R"({"a": 1})", R"({"a": 2})"})}};
  auto found = DocumentArray::Find(r.view(), "insert", "documents");
  ASSERT_TRUE(found.ok() && found.value().has_value());
  EXPECT_EQ(found.value()->size(), 2);
  size_t i = 0;
  for (DocumentArray::Entry e : *found.value()) {
    auto doc = e.Document("insert");
    ASSERT_TRUE(doc.ok());
    EXPECT_EQ(doc.value().data(), r.sequences[0].documents[i++].data());  // not a copy
  }
  EXPECT_EQ(i, 2u);
}

TEST(DocumentArrayTest, MissingAndWrongTypeFields) {
  TestRequest r{J(R"({"insert": "c", "documents": {}})"), {Sequence("empty", {})}};
  auto missing = DocumentArray::Find(r.view(), "insert", "other");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing.value().has_value());
  EXPECT_EQ(DocumentArray::Find(r.view(), "insert", "documents").status().code_number(), 14);
  auto empty = DocumentArray::Find(r.view(), "insert", "empty");
  ASSERT_TRUE(empty.ok() && empty.value().has_value());
  EXPECT_EQ(empty.value()->size(), 0);
  EXPECT_FALSE(empty.value()->begin() != empty.value()->end());
}

TEST(CommandRequestTest, MergesOnlyTheSequencesAsked) {
  TestRequest r{J(R"({"insert": "c"})"),
                {Sequence("documents", {R"({"a": 1})"}), Sequence("other", {"{}"})}};
  EXPECT_TRUE(r.view().HasField("insert"));
  EXPECT_TRUE(r.view().HasField("other"));
  EXPECT_FALSE(r.view().HasField("absent"));
  EXPECT_EQ(r.view().Merged().ToCanonicalJson(),
            J(R"({"insert": "c", "documents": [{"a": 1}], "other": [{}]})").ToCanonicalJson());
  EXPECT_EQ(r.view().Merged("documents").ToCanonicalJson(),
            J(R"({"insert": "c", "other": [{}]})").ToCanonicalJson());
  TestRequest one{J(R"({"insert": "c"})"), {Sequence("documents", {"{}"})}};
  EXPECT_EQ(one.view().Merged("documents").data(), one.body.data());  // nothing to copy
}

class SequenceDispatchTest : public testing::CommandsTest {};

TEST_F(SequenceDispatchTest, WriteCommandsTakeTheirStatementsAsSequences) {
  BsonObj ins = Run(TestRequest{
      J(R"({"insert": "c", "$db": "test"})"),
      {Sequence("documents", {R"({"_id": 1, "a": 1})", R"({"_id": 2})", R"({"_id": 1})"})}});
  EXPECT_EQ(ins["n"].Int32(), 2) << ins.ToJson();
  EXPECT_EQ(ins["writeErrors"].Obj().FirstElement().Obj()["index"].Int32(), 2) << ins.ToJson();
  BsonObj upd =
      Run(TestRequest{J(R"({"update": "c", "$db": "test"})"),
                      {Sequence("updates", {R"({"q": {"_id": 2}, "u": {"$set": {"a": 2}}})"})}});
  EXPECT_EQ(upd["nModified"].Int32(), 1) << upd.ToJson();
  BsonObj del = Run(TestRequest{J(R"({"delete": "c", "$db": "test"})"),
                                {Sequence("deletes", {R"({"q": {"a": 1}, "limit": 0})"})}});
  EXPECT_EQ(del["n"].Int32(), 1) << del.ToJson();
  BsonObj count = Run(R"({"count": "c"})");
  EXPECT_EQ(count["n"].Int32(), 1) << count.ToJson();
}

TEST_F(SequenceDispatchTest, OtherCommandsSeeSequencesMergedIn) {
  // find takes no sequence: it sees `filter` as an array field, as it always has.
  ExpectError(
      Run(TestRequest{J(R"({"find": "c", "$db": "test"})"), {Sequence("filter", {R"({"a": 1})"})}}),
      14);
  ExpectError(Run(TestRequest{J(R"({"find": "c", "$db": "test"})"), {Sequence("bogus", {"{}"})}}),
              40415, "BSON field 'find.bogus' is an unknown field.");
  // An empty body is named by its first sequence.
  ExpectError(Run(TestRequest{BsonObj(), {Sequence("documents", {"{}"})}}), 59,
              "no such command: 'documents'");
}

}  // namespace
}  // namespace hourglass::commands
