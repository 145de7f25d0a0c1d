// The dispatcher's own behavior: unknown commands, $db, admin-only commands, error reply shape,
// slow-operation logging, test-only commands and the failCommand fail point.
#include "commands/dispatcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/fail_point.h"
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

// Test-only commands and the failCommand fail point, with enableTestCommands on for the test.
class DispatcherFailPointTest : public DispatcherTest {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterEnableTestCommands()->Set(true).ok()); }
  void TearDown() override {
    FailPointRegistry::Get().DisableAll();
    ASSERT_TRUE(RegisterEnableTestCommands()->Set(false).ok());
  }
  void ConfigureFailCommand(std::string_view mode_and_data) {
    BsonObj r =
        Run(Json(R"({"configureFailPoint": "failCommand", )" + std::string(mode_and_data) + "}"));
    ASSERT_EQ(r["ok"].Double(), 1.0) << r.ToJson();
  }
};

TEST_F(DispatcherTest, TestOnlyCommandsAreUnknownWithoutEnableTestCommands) {
  ASSERT_FALSE(TestCommandsEnabled());
  for (std::string_view name : {"configureFailPoint", "waitForFailPoint"}) {
    BsonObj r = Run(Json(R"({")" + std::string(name) + R"(": "dummy", "mode": "off"})"));
    EXPECT_EQ(r["code"].Int32(), 59) << name;
    EXPECT_EQ(r["errmsg"].Str(), "no such command: '" + std::string(name) + "'");
    BsonObj listed = Run(Json(R"({"listCommands": 1})"));
    EXPECT_FALSE(listed["commands"].Obj().HasField(name)) << name;
  }
}

TEST_F(DispatcherFailPointTest, TestOnlyCommandsExistWithEnableTestCommands) {
  BsonObj listed = Run(Json(R"({"listCommands": 1})"));
  EXPECT_TRUE(listed.GetPath("commands.configureFailPoint.adminOnly").Bool());
  EXPECT_TRUE(listed["commands"].Obj().HasField("waitForFailPoint"));
  BsonObj r = Run(Json(R"({"configureFailPoint": "dummy", "mode": "alwaysOn"})"), "test");
  EXPECT_EQ(r["code"].Int32(), 13) << r.ToJson();
  EXPECT_EQ(r["errmsg"].Str(), "configureFailPoint may only be run against the admin database.");
}

TEST_F(DispatcherFailPointTest, FailCommandFailsTheListedCommandWithItsCodeAndLabels) {
  ConfigureFailCommand(R"("mode": {"times": 1}, "data": {"failCommands": ["ping"],
                          "errorCode": 91, "errorLabels": ["RetryableWriteError"]})");
  BsonObj r = Run(Json(R"({"ping": 1})"), "test");
  EXPECT_EQ(r["ok"].Double(), 0.0);
  EXPECT_EQ(r["code"].Int32(), 91);
  EXPECT_EQ(r["codeName"].Str(), "ShutdownInProgress");
  EXPECT_EQ(r["errmsg"].Str(), "Failing command via 'failCommand' failpoint");
  ASSERT_EQ(r["errorLabels"].type(), bson::BsonType::kArray) << r.ToJson();
  EXPECT_EQ(r["errorLabels"].Obj().FirstElement().Str(), "RetryableWriteError");
  EXPECT_EQ(Run(Json(R"({"ping": 1})"))["ok"].Double(), 1.0);  // {times: 1} is used up
}

TEST_F(DispatcherFailPointTest, FailCommandLeavesOtherCommandsAndConfigureFailPointAlone) {
  ConfigureFailCommand(R"("mode": "alwaysOn", "data": {"failCommands": ["ping",
                          "configureFailPoint"], "errorCode": 2})");
  int64_t entered = FailPointRegistry::Get().Find("failCommand")->TimesEntered();
  EXPECT_EQ(Run(Json(R"({"buildInfo": 1})"))["ok"].Double(), 1.0);
  BsonObj r = Run(Json(R"({"configureFailPoint": "failCommand", "mode": "off"})"));
  EXPECT_EQ(r["ok"].Double(), 1.0) << r.ToJson();
  EXPECT_EQ(r["count"].Int32(), entered);  // neither command entered the fail point
}

TEST_F(DispatcherFailPointTest, FailCommandMatchesAliasesAndTheAppName) {
  ConfigureFailCommand(R"("mode": "alwaysOn", "data": {"failCommands": ["isMaster"],
                          "errorCode": 2, "appName": "app1"})");
  EXPECT_EQ(Run(Json(R"({"hello": 1})"))["ok"].Double(), 1.0);  // no appName yet
  client_.client_metadata = Json(R"({"application": {"name": "app1"}})");
  EXPECT_EQ(Run(Json(R"({"hello": 1})"))["code"].Int32(), 2);
  EXPECT_EQ(Run(Json(R"({"ismaster": 1})"))["code"].Int32(), 2);
}

TEST_F(DispatcherFailPointTest, FailCommandMatchesTheThreadNameAndTheNamespace) {
  client_.connection_id = 7;
  ConfigureFailCommand(R"("mode": "alwaysOn", "data": {"failCommands": ["ping"],
                          "errorCode": 2, "threadName": "conn8"})");
  EXPECT_EQ(Run(Json(R"({"ping": 1})"))["ok"].Double(), 1.0);
  ConfigureFailCommand(R"("mode": "alwaysOn", "data": {"failCommands": ["ping"],
                          "errorCode": 2, "threadName": "conn7", "namespace": "test"})");
  EXPECT_EQ(Run(Json(R"({"ping": 1})"), "admin")["ok"].Double(), 1.0);
  EXPECT_EQ(Run(Json(R"({"ping": 1})"), "test")["code"].Int32(), 2);
}

TEST_F(DispatcherFailPointTest, FailCommandClosesTheConnection) {
  ConfigureFailCommand(R"("mode": {"times": 1}, "data": {"failCommands": ["ping"],
                          "closeConnection": true})");
  EXPECT_TRUE(
      RunCommandRequest(service_, client_, Json(R"({"ping": 1})"), "admin").close_connection);
  EXPECT_FALSE(
      RunCommandRequest(service_, client_, Json(R"({"ping": 1})"), "admin").close_connection);
}

TEST_F(DispatcherFailPointTest, FailCommandBlocksTheCommand) {
  ConfigureFailCommand(R"("mode": "alwaysOn", "data": {"failCommands": ["ping"],
                          "blockConnection": true, "blockTimeMS": 50})");
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Run(Json(R"({"ping": 1})"))["ok"].Double(), 1.0);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  ConfigureFailCommand(R"("mode": "alwaysOn", "data": {"failCommands": ["ping"],
                          "blockConnection": true})");
  EXPECT_EQ(Run(Json(R"({"ping": 1})"))["code"].Int32(), 72);  // InvalidOptions
}

TEST_F(DispatcherFailPointTest, WaitForFailPointTimesOut) {
  BsonObj r = Run(Json(R"({"waitForFailPoint": "dummy", "timesEntered": 1, "maxTimeMS": 20})"));
  EXPECT_EQ(r["code"].Int32(), 50) << r.ToJson();
  EXPECT_EQ(r["codeName"].Str(), "MaxTimeMSExpired");
  r = Run(Json(R"({"waitForFailPoint": "dummy", "timesEntered": 0, "maxTimeMS": 20})"));
  EXPECT_EQ(r["ok"].Double(), 1.0) << r.ToJson();
  r = Run(Json(R"({"waitForFailPoint": "dummy", "timesEntered": 1})"));
  EXPECT_EQ(r["code"].Int32(), 40414) << r.ToJson();
  r = Run(Json(R"({"waitForFailPoint": "noSuch", "timesEntered": 1, "maxTimeMS": 20})"));
  EXPECT_EQ(r["code"].Int32(), 266) << r.ToJson();
}

}  // namespace
}  // namespace hourglass::commands
