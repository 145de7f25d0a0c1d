// Admin command behavior through the dispatcher, compared with what MongoDB 7.0 documents and
// returns (reply fields, BSON types, error codes).
#include "commands/admin_commands.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "base/logger.h"
#include "commands/dispatcher.h"

namespace hourglass::commands {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

class AdminCommandsTest : public ::testing::Test {
 protected:
  AdminCommandsTest() {
    client_.connection_id = 42;
    client_.remote = "127.0.0.1:53422";
    client_.local = "127.0.0.1:27017";
  }

  BsonObj Run(const BsonObj& cmd, std::string_view db = "admin") {
    return RunCommandRequest(service_, client_, cmd, db).reply;
  }
  BsonObj Run(std::string_view json, std::string_view db = "admin") {
    auto cmd = bson::FromJson(json);
    EXPECT_TRUE(cmd.ok()) << json;
    if (!cmd.ok()) return BsonObj();
    return Run(cmd.value(), db);
  }

  static void ExpectOk(const BsonObj& reply) {
    EXPECT_EQ(reply["ok"].type(), BsonType::kDouble) << reply.ToJson();
    EXPECT_EQ(reply["ok"].Double(), 1.0) << reply.ToJson();
  }
  static void ExpectError(const BsonObj& reply, int code) {
    EXPECT_EQ(reply["ok"].Double(), 0.0) << reply.ToJson();
    EXPECT_EQ(reply["code"].Int32(), code) << reply.ToJson();
  }
  static std::vector<std::string> Strings(const BsonElement& array) {
    std::vector<std::string> out;
    for (BsonElement e : array.Obj()) out.emplace_back(e.Str());
    return out;
  }

  ServiceContext service_;
  ClientState client_;
};

TEST_F(AdminCommandsTest, HelloReportsStandaloneHandshakeFields) {
  auto result =
      RunCommandRequest(service_, client_, bson::FromJson(R"({"hello": 1})").value(), "admin");
  EXPECT_FALSE(result.compressible);
  BsonObj r = result.reply;
  ExpectOk(r);
  EXPECT_TRUE(r["isWritablePrimary"].Bool());
  EXPECT_FALSE(r.HasField("ismaster"));
  EXPECT_FALSE(r.HasField("helloOk"));
  EXPECT_FALSE(r.HasField("setName"));
  EXPECT_FALSE(r.HasField("msg"));
  EXPECT_FALSE(r.HasField("compression"));
  EXPECT_FALSE(r.HasField("saslSupportedMechs"));
  BsonObj tv = r["topologyVersion"].Obj();
  EXPECT_TRUE(tv["processId"].Oid() == service_.process_id);
  EXPECT_EQ(tv["counter"].type(), BsonType::kInt64);
  EXPECT_EQ(tv["counter"].Int64(), 0);
  EXPECT_EQ(r["maxBsonObjectSize"].Int32(), 16777216);
  EXPECT_EQ(r["maxMessageSizeBytes"].Int32(), 48000000);
  EXPECT_EQ(r["maxWriteBatchSize"].Int32(), 100000);
  EXPECT_EQ(r["localTime"].type(), BsonType::kDate);
  EXPECT_NEAR(static_cast<double>(r["localTime"].DateMillis()), static_cast<double>(NowMillis()),
              10000.0);
  EXPECT_EQ(r["logicalSessionTimeoutMinutes"].Int32(), 30);
  EXPECT_EQ(r["connectionId"].type(), BsonType::kInt32);
  EXPECT_EQ(r["connectionId"].Int32(), 42);
  EXPECT_EQ(r["minWireVersion"].Int32(), 0);
  EXPECT_EQ(r["maxWireVersion"].Int32(), 21);
  EXPECT_EQ(r["readOnly"].type(), BsonType::kBool);
  EXPECT_FALSE(r["readOnly"].Bool());
}

TEST_F(AdminCommandsTest, IsMasterSpellingsReportIsmaster) {
  for (std::string name : {"isMaster", "ismaster"}) {
    BsonObj r = Run(R"({")" + name + R"(": 1, "helloOk": true})");
    ExpectOk(r);
    EXPECT_TRUE(r["ismaster"].Bool()) << name;
    EXPECT_FALSE(r.HasField("isWritablePrimary")) << name;
    EXPECT_TRUE(r["helloOk"].Bool()) << name;
  }
}

TEST_F(AdminCommandsTest, HelloEchoesHelloOkOnlyWhenAsked) {
  EXPECT_TRUE(Run(R"({"hello": 1, "helloOk": true})")["helloOk"].Bool());
  EXPECT_FALSE(Run(R"({"hello": 1, "helloOk": false})").HasField("helloOk"));
}

TEST_F(AdminCommandsTest, HelloNegotiatesCompressionInClientOrder) {
  BsonObj r = Run(R"({"isMaster": 1, "compression": ["zstd", "lz4", "snappy", "zstd"]})");
  ExpectOk(r);
  EXPECT_EQ(Strings(r["compression"]), (std::vector<std::string>{"zstd", "snappy"}));
  EXPECT_EQ(client_.compressors,
            (std::vector<wire::Compressor>{wire::Compressor::kZstd, wire::Compressor::kSnappy}));

  // A heartbeat without `compression` is told the agreed list and keeps it.
  r = Run(R"({"hello": 1})");
  EXPECT_EQ(Strings(r["compression"]), (std::vector<std::string>{"zstd", "snappy"}));
  EXPECT_EQ(client_.compressors.size(), 2u);

  // A hello that lists compressors renegotiates, as MongoDB's serverNegotiate does.
  r = Run(R"({"hello": 1, "compression": ["zlib"]})");
  EXPECT_EQ(Strings(r["compression"]), (std::vector<std::string>{"zlib"}));
  EXPECT_EQ(client_.compressors, (std::vector<wire::Compressor>{wire::Compressor::kZlib}));
  r = Run(R"({"hello": 1, "compression": []})");
  EXPECT_FALSE(r.HasField("compression"));
  EXPECT_TRUE(client_.compressors.empty());
}

TEST_F(AdminCommandsTest, HelloOffersOnlyServerCompressors) {
  service_.compressors = {wire::Compressor::kZlib};
  BsonObj r = Run(R"({"hello": 1, "compression": ["snappy", "zlib"]})");
  EXPECT_EQ(Strings(r["compression"]), (std::vector<std::string>{"zlib"}));
  ClientState other;
  BsonObj none =
      RunCommandRequest(service_, other,
                        bson::FromJson(R"({"hello": 1, "compression": ["zstd"]})").value(), "admin")
          .reply;
  EXPECT_FALSE(none.HasField("compression"));
  EXPECT_TRUE(other.compressors.empty());
}

TEST_F(AdminCommandsTest, HelloRejectsMistypedFields) {
  ExpectError(Run(R"({"hello": 1, "compression": "snappy"})"), 14);
  ExpectError(Run(R"({"hello": 1, "compression": [1]})"), 14);
  ExpectError(Run(R"({"hello": 1, "client": "me"})"), 14);
}

TEST_F(AdminCommandsTest, HelloKeepsClientMetadataOfFirstHelloAndLogsIt) {
  BsonObj r = Run(
      R"({"hello": 1, "client": {"driver": {"name": "nodejs", "version": "6.3.0"},
          "application": {"name": "first-app"}, "os": {"type": "Linux"}}})");
  ExpectOk(r);
  EXPECT_EQ(client_.client_metadata.GetPath("application.name").Str(), "first-app");
  auto lines = Logger::Get().RecentLines();
  bool logged = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("\"id\":51800") != std::string::npos &&
           l.find("\"c\":\"NETWORK\"") != std::string::npos &&
           l.find("first-app") != std::string::npos;
  });
  EXPECT_TRUE(logged);

  Run(R"({"hello": 1, "client": {"application": {"name": "second-app"}}})");
  EXPECT_EQ(client_.client_metadata.GetPath("application.name").Str(), "first-app");
}

TEST_F(AdminCommandsTest, AwaitableHelloWaitsForMaxAwaitTimeWhenTopologyIsCurrent) {
  std::string current = R"({"hello": 1, "maxAwaitTimeMS": 150, "topologyVersion":
      {"processId": {"$oid": ")" +
                        service_.process_id.ToHex() + R"("}, "counter": {"$numberLong": "0"}}})";
  auto start = std::chrono::steady_clock::now();
  ExpectOk(Run(current));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(140));

  std::string stale = R"({"hello": 1, "maxAwaitTimeMS": 5000, "topologyVersion":
      {"processId": {"$oid": "000000000000000000000000"}, "counter": {"$numberLong": "0"}}})";
  start = std::chrono::steady_clock::now();
  ExpectOk(Run(stale));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));

  ExpectError(Run(R"({"hello": 1, "maxAwaitTimeMS": 10})"), 2);
}

TEST_F(AdminCommandsTest, PingAndUnknownCommand) {
  BsonObj r = Run(R"({"ping": 1})", "test");
  ExpectOk(r);
  EXPECT_EQ(r.NumFields(), 1);
  r = Run(R"({"atlasVersion": 1})");
  ExpectError(r, 59);
  EXPECT_EQ(r["codeName"].Str(), "CommandNotFound");
}

TEST_F(AdminCommandsTest, BuildInfoReportsMongo70) {
  for (std::string name : {"buildInfo", "buildinfo"}) {
    BsonObj r = Run(R"({")" + name + R"(": 1})", "test");
    ExpectOk(r);
    EXPECT_EQ(r["version"].Str().substr(0, 4), "7.0.");
    EXPECT_EQ(r["gitVersion"].type(), BsonType::kString);
    EXPECT_EQ(r["hourglassVersion"].Str(), "0.1.0");
    std::vector<int> va;
    for (BsonElement e : r["versionArray"].Obj()) {
      EXPECT_EQ(e.type(), BsonType::kInt32);
      va.push_back(e.Int32());
    }
    ASSERT_EQ(va.size(), 4u);
    EXPECT_EQ(va[0], 7);
    EXPECT_EQ(va[1], 0);
    EXPECT_EQ(r["modules"].type(), BsonType::kArray);
    EXPECT_TRUE(r["modules"].Obj().IsEmpty());
    EXPECT_EQ(r["bits"].Int32(), 64);
    EXPECT_FALSE(r["debug"].Bool());
    EXPECT_EQ(r["maxBsonObjectSize"].Int32(), 16777216);
    EXPECT_EQ(Strings(r["storageEngines"]), std::vector<std::string>{"wiredTiger"});
    EXPECT_EQ(r["openssl"].Obj()["running"].type(), BsonType::kString);
    EXPECT_EQ(r["buildEnvironment"].type(), BsonType::kObject);
    EXPECT_EQ(r["sysInfo"].Str(), "deprecated");
  }
}

TEST_F(AdminCommandsTest, GetParameterReturnsRequestedParameters) {
  BsonObj r = Run(R"({"getParameter": 1, "featureCompatibilityVersion": 1})");
  ExpectOk(r);
  EXPECT_EQ(r.GetPath("featureCompatibilityVersion.version").Str(), "7.0");
  EXPECT_FALSE(r.HasField("cursorTimeoutMillis"));

  r = Run(R"({"getParameter": 1, "cursorTimeoutMillis": 1, "quiet": 1})");
  ExpectOk(r);
  EXPECT_EQ(r["cursorTimeoutMillis"].type(), BsonType::kInt64);
  EXPECT_EQ(r["cursorTimeoutMillis"].Int64(), 600000);
  EXPECT_EQ(r["quiet"].type(), BsonType::kBool);

  r = Run(R"({"getParameter": 1, "logComponentVerbosity": 1})");
  ExpectOk(r);
  EXPECT_EQ(r.GetPath("logComponentVerbosity.verbosity").type(), BsonType::kInt32);
  EXPECT_EQ(r.GetPath("logComponentVerbosity.storage.verbosity").Int32(), -1);
}

TEST_F(AdminCommandsTest, GetParameterUnknownNameFails) {
  BsonObj r = Run(R"({"getParameter": 1, "noSuchParameter": 1})");
  ExpectError(r, 72);
  EXPECT_EQ(r["errmsg"].Str(), "no option found to get");
  ExpectError(Run(R"({"getParameter": 1})"), 72);
}

TEST_F(AdminCommandsTest, GetParameterStarAndAllParametersReturnEverything) {
  for (auto json : {R"({"getParameter": "*"})", R"({"getParameter": {"allParameters": true}})"}) {
    BsonObj r = Run(json);
    ExpectOk(r);
    EXPECT_TRUE(r.HasField("cursorTimeoutMillis")) << json;
    EXPECT_TRUE(r.HasField("logLevel")) << json;
    EXPECT_TRUE(r.HasField("featureCompatibilityVersion")) << json;
  }
}

TEST_F(AdminCommandsTest, GetParameterShowDetails) {
  BsonObj r = Run(R"({"getParameter": {"showDetails": true}, "logLevel": 1,
                      "featureCompatibilityVersion": 1})");
  ExpectOk(r);
  EXPECT_EQ(r.GetPath("logLevel.value").type(), BsonType::kInt32);
  EXPECT_TRUE(r.GetPath("logLevel.settableAtRuntime").Bool());
  EXPECT_TRUE(r.GetPath("logLevel.settableAtStartup").Bool());
  EXPECT_FALSE(r.GetPath("featureCompatibilityVersion.settableAtRuntime").Bool());
  ExpectError(Run(R"({"getParameter": {"bogus": true}, "logLevel": 1})"), 40415);
}

TEST_F(AdminCommandsTest, ParameterCommandsAreAdminOnly) {
  BsonObj r = Run(R"({"getParameter": 1, "logLevel": 1})", "test");
  ExpectError(r, 13);
  EXPECT_EQ(r["codeName"].Str(), "Unauthorized");
  ExpectError(Run(R"({"setParameter": 1, "logLevel": 1})", "test"), 13);
}

TEST_F(AdminCommandsTest, SetParameterRoundTripReportsWas) {
  int32_t before = Run(R"({"getParameter": 1, "logLevel": 1})")["logLevel"].Int32();
  BsonObj r = Run(R"({"setParameter": 1, "logLevel": 2})");
  ExpectOk(r);
  EXPECT_EQ(r["was"].type(), BsonType::kInt32);
  EXPECT_EQ(r["was"].Int32(), before);
  EXPECT_EQ(Run(R"({"getParameter": 1, "logLevel": 1})")["logLevel"].Int32(), 2);

  r = Run(R"({"setParameter": 1, "cursorTimeoutMillis": 1000.0})");
  ExpectOk(r);
  EXPECT_EQ(r["was"].Int64(), 600000);
  BsonObj got = Run(R"({"getParameter": 1, "cursorTimeoutMillis": 1})");
  EXPECT_EQ(got["cursorTimeoutMillis"].type(), BsonType::kInt64);
  EXPECT_EQ(got["cursorTimeoutMillis"].Int64(), 1000);

  // logComponentVerbosity's default verbosity is logLevel.
  ExpectOk(Run(R"({"setParameter": 1, "logComponentVerbosity": {"verbosity": 1}})"));
  EXPECT_EQ(Run(R"({"getParameter": 1, "logLevel": 1})")["logLevel"].Int32(), 1);

  ExpectOk(Run(R"({"setParameter": 1, "cursorTimeoutMillis": {"$numberLong": "600000"}})"));
  ExpectOk(Run(R"({"setParameter": 1, "logLevel": )" + std::to_string(before) + "}"));
}

TEST_F(AdminCommandsTest, SetParameterErrors) {
  BsonObj r = Run(R"({"setParameter": 1, "noSuchParameter": 5})");
  ExpectError(r, 72);
  EXPECT_NE(r["errmsg"].Str().find("attempted to set unrecognized parameter [noSuchParameter]"),
            std::string::npos);
  ExpectError(Run(R"({"setParameter": 1, "featureCompatibilityVersion": "7.0"})"), 20);
  ExpectError(Run(R"({"setParameter": 1, "logLevel": "loud"})"), 2);
  ExpectError(Run(R"({"setParameter": 1, "logLevel": -1})"), 2);
  ExpectError(Run(R"({"setParameter": 1, "logLevel": 1.5})"), 2);
  ExpectError(Run(R"({"setParameter": 1})"), 72);
  ExpectError(Run(R"({"setParameter": 1, "logComponentVerbosity": 3})"), 14);
}

TEST_F(AdminCommandsTest, SetFeatureCompatibilityVersionAcceptsOnly70) {
  ExpectOk(Run(R"({"setFeatureCompatibilityVersion": "7.0", "confirm": true})"));
  ExpectError(Run(R"({"setFeatureCompatibilityVersion": "6.0", "confirm": true})"), 115);
  ExpectError(Run(R"({"setFeatureCompatibilityVersion": "banana"})"), 2);
  ExpectError(Run(R"({"setFeatureCompatibilityVersion": 7})"), 14);
  ExpectError(Run(R"({"setFeatureCompatibilityVersion": "7.0"})", "test"), 13);
}

TEST_F(AdminCommandsTest, GetLogForms) {
  BsonObj r = Run(R"({"getLog": "*"})");
  ExpectOk(r);
  EXPECT_EQ(Strings(r["names"]), (std::vector<std::string>{"global", "startupWarnings"}));

  r = Run(R"({"getLog": "startupWarnings"})");
  ExpectOk(r);
  EXPECT_EQ(r["log"].type(), BsonType::kArray);
  EXPECT_EQ(r["totalLinesWritten"].type(), BsonType::kInt64);

  LOGI("COMMAND", 1, "admin test marker line", "");
  r = Run(R"({"getLog": "global"})");
  ExpectOk(r);
  EXPECT_GE(r["totalLinesWritten"].Int64(), 1);
  auto lines = Strings(r["log"]);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("admin test marker line") != std::string::npos;
  }));

  r = Run(R"({"getLog": "nonExistentName"})");
  ExpectError(r, 96);
  EXPECT_EQ(r["errmsg"].Str(), "No log named 'nonExistentName'");
  ExpectError(Run(R"({"getLog": 1})"), 14);
  ExpectError(Run(R"({"getLog": null})"), 40414);
  ExpectError(Run(R"({"getLog": "*"})", "test"), 13);
}

TEST_F(AdminCommandsTest, ServerStatusSectionsAndTypes) {
  service_.counters.op_insert = 5;
  service_.counters.connections_current = 3;
  service_.counters.connections_total = 10;
  service_.counters.bytes_in = 1234;
  service_.options.max_conns = 100;
  BsonObj r = Run(R"({"serverStatus": 1})");
  ExpectOk(r);
  EXPECT_EQ(r["process"].Str(), "mongod");
  EXPECT_EQ(r["version"].Str().substr(0, 4), "7.0.");
  EXPECT_EQ(r["pid"].type(), BsonType::kInt64);
  EXPECT_EQ(r["uptime"].type(), BsonType::kDouble);
  EXPECT_EQ(r["uptimeMillis"].type(), BsonType::kInt64);
  EXPECT_EQ(r["uptimeEstimate"].type(), BsonType::kInt64);
  EXPECT_EQ(r["localTime"].type(), BsonType::kDate);
  EXPECT_EQ(r.GetPath("connections.current").Int32(), 3);
  EXPECT_EQ(r.GetPath("connections.available").Int32(), 97);
  EXPECT_EQ(r.GetPath("connections.totalCreated").NumberLong(), 10);
  EXPECT_EQ(r.GetPath("network.bytesIn").Int64(), 1234);
  EXPECT_EQ(r.GetPath("network.numRequests").type(), BsonType::kInt64);
  for (auto f : {"insert", "query", "update", "delete", "getmore", "command"}) {
    EXPECT_EQ(r.GetPath(std::string("opcounters.") + f).type(), BsonType::kInt64) << f;
  }
  EXPECT_EQ(r.GetPath("opcounters.insert").Int64(), 5);
  EXPECT_GE(r.GetPath("opcounters.command").Int64(), 1);  // this serverStatus itself
  EXPECT_EQ(r.GetPath("mem.bits").Int32(), 64);
  EXPECT_GT(r.GetPath("mem.resident").Int32(), 0);
  EXPECT_GE(r.GetPath("mem.virtual").Int32(), r.GetPath("mem.resident").Int32());
  EXPECT_TRUE(r.GetPath("mem.supported").Bool());
  EXPECT_EQ(r.GetPath("metrics.cursor.timedOut").type(), BsonType::kInt64);
  EXPECT_EQ(r.GetPath("metrics.cursor.open.total").type(), BsonType::kInt64);
  EXPECT_EQ(r.GetPath("metrics.cursor.open.total").Int64(), 0);  // no cursor manager here
  EXPECT_EQ(r.GetPath("storageEngine.name").Str(), "wiredTiger");
  EXPECT_TRUE(r.GetPath("storageEngine.persistent").Bool());

  service_.options.in_memory = true;
  EXPECT_FALSE(Run(R"({"serverStatus": 1})").GetPath("storageEngine.persistent").Bool());
}

TEST_F(AdminCommandsTest, ServerStatusExcludesSectionsSetToZero) {
  BsonObj r = Run(R"({"serverStatus": 1, "mem": 0, "opcounters": false, "metrics": 0,
                      "connections": 1})",
                  "test");
  ExpectOk(r);
  EXPECT_FALSE(r.HasField("mem"));
  EXPECT_FALSE(r.HasField("opcounters"));
  EXPECT_FALSE(r.HasField("metrics"));
  EXPECT_TRUE(r.HasField("connections"));
  EXPECT_TRUE(r.HasField("network"));
  EXPECT_TRUE(r.HasField("uptime"));
}

TEST_F(AdminCommandsTest, ListCommandsDescribesEveryCommandAndAlias) {
  BsonObj r = Run(R"({"listCommands": 1})", "test");
  ExpectOk(r);
  BsonObj cmds = r["commands"].Obj();
  for (auto name : {"hello", "isMaster", "ismaster", "buildInfo", "buildinfo", "ping",
                    "serverStatus", "getParameter", "setParameter", "getLog", "listCommands",
                    "startSession", "endSessions", "shutdown"}) {
    EXPECT_EQ(cmds[name].type(), BsonType::kObject) << name;
  }
  BsonObj get_param = cmds["getParameter"].Obj();
  EXPECT_TRUE(get_param["adminOnly"].Bool());
  EXPECT_EQ(get_param["help"].type(), BsonType::kString);
  EXPECT_TRUE(get_param["requiresAuth"].Bool());
  EXPECT_FALSE(cmds["ping"].Obj()["requiresAuth"].Bool());
  EXPECT_FALSE(cmds["isMaster"].Obj()["requiresAuth"].Bool());
  EXPECT_TRUE(get_param["secondaryOk"].Bool());
  EXPECT_EQ(get_param["apiVersions"].type(), BsonType::kArray);
  EXPECT_EQ(get_param["deprecatedApiVersions"].type(), BsonType::kArray);
  EXPECT_FALSE(cmds["ping"].Obj()["adminOnly"].Bool());
  // Every registered command is listed, but the test-only ones (enableTestCommands is off).
  for (const Command* c : CommandRegistry::Get().All()) {
    EXPECT_EQ(cmds.HasField(c->Name()), !c->TestOnly()) << c->Name();
  }
}

TEST_F(AdminCommandsTest, StartSessionMintsRandomUuid) {
  BsonObj a = Run(R"({"startSession": 1})", "test");
  BsonObj b = Run(R"({"startSession": 1})", "test");
  ExpectOk(a);
  BsonElement id = a.GetPath("id.id");
  ASSERT_EQ(id.type(), BsonType::kBinData);
  EXPECT_EQ(id.BinSubtype(), 4);
  ASSERT_EQ(id.BinData().size(), 16u);
  EXPECT_EQ(static_cast<uint8_t>(id.BinData()[6]) >> 4, 4);  // version 4
  EXPECT_NE(id.BinData(), b.GetPath("id.id").BinData());
  EXPECT_EQ(a["timeoutMinutes"].Int32(), 30);
}

TEST_F(AdminCommandsTest, SessionListCommandsTakeArraysOfDocuments) {
  BsonObj session = Run(R"({"startSession": 1})")["id"].Obj().Owned();
  // killAllSessions names users, the others sessions.
  BsonObj user = bson::FromJson(R"({"user": "u", "db": "admin"})").value();
  for (std::string name : {"endSessions", "refreshSessions", "killSessions", "killAllSessions"}) {
    BsonBuilder b;
    size_t arr = b.OpenArray(name);
    b.AppendObject("0", name == "killAllSessions" ? user : session);
    b.Close(arr);
    b.AppendString("$db", "admin");
    ExpectOk(Run(b.Obj()));
    ExpectOk(Run(R"({")" + name + R"(": []})"));
    ExpectError(Run(R"({")" + name + R"(": {}})"), 14);
    ExpectError(Run(R"({")" + name + R"(": [1]})"), 14);
  }
}

TEST_F(AdminCommandsTest, ShutdownRequestsServerShutdown) {
  int calls = 0;
  service_.request_shutdown = [&] { ++calls; };
  ExpectError(Run(R"({"shutdown": 1})", "test"), 13);
  EXPECT_EQ(calls, 0);
  ExpectOk(Run(R"({"shutdown": 1, "force": true, "timeoutSecs": 5})"));
  EXPECT_EQ(calls, 1);
  ExpectError(Run(R"({"shutdown": 1, "bogus": 1})"), 40415);
}

TEST_F(AdminCommandsTest, GetCmdLineOptsReturnsArgvAndParsed) {
  service_.options.argv = {"hourglassd", "--port", "27018"};
  service_.options.parsed = bson::FromJson(R"({"net": {"port": 27018}})").value();
  BsonObj r = Run(R"({"getCmdLineOpts": 1})");
  ExpectOk(r);
  EXPECT_EQ(Strings(r["argv"]), (std::vector<std::string>{"hourglassd", "--port", "27018"}));
  EXPECT_EQ(r.GetPath("parsed.net.port").Int32(), 27018);
  ExpectError(Run(R"({"getCmdLineOpts": 1})", "test"), 13);
}

TEST_F(AdminCommandsTest, ConnectionInfoCommands) {
  BsonObj r = Run(R"({"whatsmyuri": 1})", "test");
  EXPECT_EQ(r["you"].Str(), "127.0.0.1:53422");

  r = Run(R"({"connectionStatus": 1})", "test");
  ExpectOk(r);
  EXPECT_EQ(r.GetPath("authInfo.authenticatedUsers").type(), BsonType::kArray);
  EXPECT_EQ(r.GetPath("authInfo.authenticatedUserRoles").type(), BsonType::kArray);
  EXPECT_FALSE(r.GetPath("authInfo.authenticatedUserPrivileges").type() == BsonType::kArray);
  r = Run(R"({"connectionStatus": 1, "showPrivileges": true})", "test");
  EXPECT_EQ(r.GetPath("authInfo.authenticatedUserPrivileges").type(), BsonType::kArray);

  r = Run(R"({"hostInfo": 1})", "test");
  ExpectOk(r);
  EXPECT_EQ(r.GetPath("system.currentTime").type(), BsonType::kDate);
  EXPECT_EQ(r.GetPath("system.cpuAddrSize").Int32(), 64);
  EXPECT_GT(r.GetPath("system.memSizeMB").Int64(), 0);
  EXPECT_GT(r.GetPath("system.numCores").Int32(), 0);
  EXPECT_FALSE(r.GetPath("system.numaEnabled").Bool());
  EXPECT_EQ(r.GetPath("os.type").Str(), "Linux");
  EXPECT_EQ(r.GetPath("extra.pageSize").type(), BsonType::kInt64);
}

TEST_F(AdminCommandsTest, OperationCommands) {
  client_.client_metadata = bson::FromJson(R"({"application": {"name": "ops"}})").value();
  BsonObj r = Run(R"({"currentOp": 1})");
  ExpectOk(r);
  BsonObj ops = r["inprog"].Obj();
  ASSERT_EQ(ops.NumFields(), 1);
  BsonObj self = ops.FirstElement().Obj();
  EXPECT_EQ(self["connectionId"].Int32(), 42);
  EXPECT_EQ(self["client"].Str(), "127.0.0.1:53422");
  EXPECT_EQ(self.GetPath("clientMetadata.application.name").Str(), "ops");
  EXPECT_TRUE(self["active"].Bool());
  EXPECT_EQ(self["opid"].type(), BsonType::kInt32);
  EXPECT_TRUE(Run(R"({"currentOp": 1, "active": true, "op": "query"})")["inprog"].Obj().IsEmpty());
  ExpectError(Run(R"({"currentOp": 1})", "test"), 13);

  ExpectOk(Run(R"({"killOp": 1, "op": 12345})"));
  ExpectError(Run(R"({"killOp": 1})"), 2);
  ExpectOk(Run(R"({"logout": 1})", "test"));
  EXPECT_EQ(Run(R"({"getFreeMonitoringStatus": 1})")["state"].Str(), "disabled");
  r = Run(R"({"getDefaultRWConcern": 1})");
  ExpectOk(r);
  EXPECT_EQ(r.GetPath("defaultReadConcern.level").Str(), "local");
  EXPECT_EQ(r.GetPath("defaultWriteConcern.w").Int32(), 1);
  EXPECT_EQ(r["defaultWriteConcernSource"].Str(), "implicit");
  EXPECT_EQ(r["defaultReadConcernSource"].Str(), "implicit");
  EXPECT_EQ(Run(R"({"lockInfo": 1})")["lockInfo"].type(), BsonType::kArray);
  ExpectError(Run(R"({"getDiagnosticData": 1})"), 115);
  ExpectOk(Run(R"({"features": 1})", "test"));
}

}  // namespace
}  // namespace hourglass::commands
