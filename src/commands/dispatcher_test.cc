// The dispatcher's own behavior: unknown commands, $db, admin-only commands, error reply shape,
// and slow-operation logging.
#include "commands/dispatcher.h"

#include <gtest/gtest.h>

#include "base/logger.h"
#include "base/server_parameters.h"

namespace hourglass::commands {
namespace {

using bson::BsonObj;

class DispatcherTest : public ::testing::Test {
 protected:
  BsonObj Run(const BsonObj& cmd, std::string_view db = "admin") {
    return RunCommandRequest(service_, client_, cmd, db).reply;
  }
  static BsonObj Json(std::string_view j) { return bson::FromJson(j).value(); }
  static int SlowQueryLinesMentioning(std::string_view command) {
    int n = 0;
    for (const auto& line : Logger::Get().RecentLines()) {
      if (line.find("\"Slow query\"") != std::string::npos &&
          line.find("\"command\" : \"" + std::string(command) + "\"") != std::string::npos) {
        ++n;
      }
    }
    return n;
  }

  ServiceContext service_;
  ClientState client_;
};

TEST_F(DispatcherTest, UnknownCommandIsCommandNotFound) {
  BsonObj r = Run(Json(R"({"noSuchCommand": 1})"));
  EXPECT_EQ(r["ok"].Double(), 0.0);
  EXPECT_EQ(r["code"].Int32(), 59);
  EXPECT_EQ(r["codeName"].Str(), "CommandNotFound");
  EXPECT_EQ(r["errmsg"].Str(), "no such command: 'noSuchCommand'");
}

TEST_F(DispatcherTest, MissingDbIsRejected) {
  BsonObj r = Run(Json(R"({"ping": 1})"), "");
  EXPECT_EQ(r["code"].Int32(), 40571) << r.ToJson();
}

TEST_F(DispatcherTest, EmptyCommandIsFailedToParse) {
  EXPECT_EQ(Run(BsonObj())["code"].Int32(), 9);
}

TEST_F(DispatcherTest, AliasesResolveToTheSameCommand) {
  BsonObj r = Run(Json(R"({"ismaster": 1})"));
  EXPECT_EQ(r["ok"].Double(), 1.0) << r.ToJson();
  EXPECT_TRUE(r["ismaster"].Bool());
}

TEST_F(DispatcherTest, SlowOperationsAreLoggedButAwaitableHelloIsNot) {
  ServerParameter* slow = ServerParameterRegistry::Get().Find("slowOpThresholdMs");
  ASSERT_NE(slow, nullptr);
  ParameterValue before = slow->Get();
  ASSERT_TRUE(slow->Set(int32_t{0}).ok());

  int pings = SlowQueryLinesMentioning("ping");
  Run(Json(R"({"ping": 1})"));
  EXPECT_EQ(SlowQueryLinesMentioning("ping"), pings + 1);

  // An awaitable hello: the topologyVersion of a previous reply plus maxAwaitTimeMS.
  BsonObj first = Run(Json(R"({"hello": 1})"));
  bson::BsonBuilder b;
  b.AppendInt32("hello", 1);
  b.AppendObject("topologyVersion", first["topologyVersion"].Obj());
  b.AppendInt64("maxAwaitTimeMS", 20);
  int hellos = SlowQueryLinesMentioning("hello");
  BsonObj awaited = Run(b.Obj());
  EXPECT_EQ(awaited["ok"].Double(), 1.0) << awaited.ToJson();
  EXPECT_EQ(SlowQueryLinesMentioning("hello"), hellos);

  ASSERT_TRUE(slow->Set(before).ok());
}

}  // namespace
}  // namespace hourglass::commands
