#include "repl/replica_set_config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bson/bson.h"
#include "bson/shell_json_test_util.h"

namespace hourglass::repl {
namespace {

using bson::BsonObj;

BsonObj Doc(std::string_view relaxed) { return bson::testing::ShellDoc(relaxed); }

StatusWith<ReplicaSetConfig> Parse(std::string_view relaxed) {
  return ReplicaSetConfig::Parse(Doc(relaxed));
}

ReplicaSetConfig ParseOk(std::string_view relaxed) {
  auto sw = Parse(relaxed);
  EXPECT_TRUE(sw.ok()) << sw.status().ToString() << " for " << relaxed;
  return sw.ok() ? sw.value() : ReplicaSetConfig{};
}

// A config of `members` (the inside of the array).
std::string WithMembers(std::string_view members) {
  return "{_id: 'rs0', version: 1, members: [" + std::string(members) + "]}";
}

void ExpectBson(const BsonObj& actual, std::string_view expected_relaxed) {
  BsonObj expected = Doc(expected_relaxed);
  EXPECT_TRUE(actual.BinaryEqual(expected))
      << "actual   " << actual.ToCanonicalJson() << "\nexpected " << expected.ToCanonicalJson();
}

TEST(ReplicaSetConfigTest, MinimalConfigGetsEveryDefaultInMongodsOrderAndTypes) {
  ReplicaSetConfig c = ParseOk("{_id: 'rs0', version: 1, members: [{_id: 0, host: 'db0'}]}");
  EXPECT_EQ(c.set_name, "rs0");
  EXPECT_EQ(c.term, -1);
  ASSERT_EQ(c.members.size(), 1u);
  EXPECT_EQ(c.members[0].host, "db0:27017");
  EXPECT_TRUE(c.members[0].Electable());
  EXPECT_FALSE(c.settings.replica_set_id.has_value());
  // replSetGetConfig's shape: term only once there is one, protocolVersion and
  // secondaryDelaySecs as longs, priority a double, every setting present.
  ExpectBson(c.ToBson(),
             "{_id: 'rs0', version: 1,"
             " members: [{_id: 0, host: 'db0:27017', arbiterOnly: false, buildIndexes: true,"
             "            hidden: false, priority: {$numberDouble: '1.0'}, tags: {},"
             "            secondaryDelaySecs: {$numberLong: '0'}, votes: 1}],"
             " protocolVersion: {$numberLong: '1'}, writeConcernMajorityJournalDefault: true,"
             " settings: {chainingAllowed: true, heartbeatIntervalMillis: 2000,"
             "            heartbeatTimeoutSecs: 10, electionTimeoutMillis: 10000,"
             "            catchUpTimeoutMillis: -1, catchUpTakeoverDelayMillis: 30000,"
             "            getLastErrorModes: {}, getLastErrorDefaults: {w: 1, wtimeout: 0}}}");
}

TEST(ReplicaSetConfigTest, TermAndReplicaSetIdAreShownOnceSet) {
  ReplicaSetConfig c = ParseOk(
      "{_id: 'rs0', version: 3, term: 7, members: [{_id: 0, host: 'db0:27018'}],"
      " settings: {replicaSetId: {$oid: '65a1b2c3d4e5f60718293a4b'}}}");
  ExpectBson(c.ToBson(),
             "{_id: 'rs0', version: 3, term: 7,"
             " members: [{_id: 0, host: 'db0:27018', arbiterOnly: false, buildIndexes: true,"
             "            hidden: false, priority: {$numberDouble: '1.0'}, tags: {},"
             "            secondaryDelaySecs: {$numberLong: '0'}, votes: 1}],"
             " protocolVersion: {$numberLong: '1'}, writeConcernMajorityJournalDefault: true,"
             " settings: {chainingAllowed: true, heartbeatIntervalMillis: 2000,"
             "            heartbeatTimeoutSecs: 10, electionTimeoutMillis: 10000,"
             "            catchUpTimeoutMillis: -1, catchUpTakeoverDelayMillis: 30000,"
             "            getLastErrorModes: {}, getLastErrorDefaults: {w: 1, wtimeout: 0},"
             "            replicaSetId: {$oid: '65a1b2c3d4e5f60718293a4b'}}}");
}

TEST(ReplicaSetConfigTest, RoundTrips) {
  const char* kFull =
      "{_id: 'set', version: {$numberLong: '12'}, term: 4, protocolVersion: 1.0,"
      " writeConcernMajorityJournalDefault: false,"
      " members: [{_id: 0, host: ' a.example:1 ', priority: 2.5, tags: {dc: 'east', rack: 'r1'}},"
      "           {_id: 5, host: 'b.example', votes: 1.0, priority: 0, hidden: 1,"
      "            secondaryDelaySecs: 3600, buildIndexes: false, tags: {dc: 'west'}},"
      "           {_id: 300, host: '[fe80::1]:2', arbiterOnly: true},"
      "           {_id: 7, host: 'd.example', votes: 0, priority: 0}],"
      " settings: {chainingAllowed: false, heartbeatIntervalMillis: 500.0,"
      "            heartbeatTimeoutSecs: 3, electionTimeoutMillis: 4000,"
      "            catchUpTimeoutMillis: 0, catchUpTakeoverDelayMillis: -1,"
      "            getLastErrorModes: {twoDcs: {dc: 2.0}, voters: {$voter: 1}},"
      "            getLastErrorDefaults: {w: 1}, someFutureSetting: 1,"
      "            replicaSetId: {$oid: '65a1b2c3d4e5f60718293a4b'}}}";
  ReplicaSetConfig c = ParseOk(kFull);
  ASSERT_EQ(c.members.size(), 4u);
  EXPECT_EQ(c.members[0].host, "a.example:1");
  EXPECT_EQ(c.members[1].host, "b.example:27017");
  EXPECT_EQ(c.members[2].host, "[fe80::1]:2");
  EXPECT_EQ(c.members[2].priority, 0);  // an arbiter's default priority reads as 0
  EXPECT_TRUE(c.members[1].hidden);
  EXPECT_EQ(c.members[1].secondary_delay_secs, 3600);
  EXPECT_EQ(c.version, 12);
  EXPECT_EQ(c.term, 4);
  EXPECT_FALSE(c.write_concern_majority_journal_default);
  EXPECT_EQ(c.settings.heartbeat_interval_millis, 500);
  EXPECT_EQ(c.settings.catch_up_takeover_delay_millis, -1);

  const BsonObj canonical = c.ToBson();
  // Unknown settings are dropped, counts become ints, w: 1 becomes the full default.
  EXPECT_FALSE(canonical["settings"].Obj().HasField("someFutureSetting"));
  ExpectBson(canonical["settings"].Obj()["getLastErrorModes"].Obj(),
             "{twoDcs: {dc: 2}, voters: {$voter: 1}}");
  ExpectBson(canonical["settings"].Obj()["getLastErrorDefaults"].Obj(), "{w: 1, wtimeout: 0}");

  auto again = ReplicaSetConfig::Parse(canonical);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again.value().ToBson().BinaryEqual(canonical))
      << again.value().ToBson().ToJson() << "\n"
      << canonical.ToJson();
}

struct Rejection {
  std::string config;
  ErrorCode code;
  std::string names;  // a part of the reason: the offending field
};

void ExpectRejected(const Rejection& r) {
  auto sw = Parse(r.config);
  ASSERT_FALSE(sw.ok()) << r.config;
  EXPECT_EQ(sw.status().code(), r.code) << sw.status().ToString() << "\n  for " << r.config;
  EXPECT_NE(sw.status().reason().find(r.names), std::string::npos)
      << sw.status().ToString() << "\n  should name " << r.names << "\n  for " << r.config;
}

TEST(ReplicaSetConfigTest, TopLevelFieldsAreCheckedAsMongodsIdlDoes) {
  const std::string m = "members: [{_id: 0, host: 'h'}]";
  const Rejection cases[] = {
      {"{version: 1, " + m + "}", ErrorCode::kLocation40414,
       "BSON field 'ReplSetConfig._id' is missing but a required field"},
      {"{_id: null, version: 1, " + m + "}", ErrorCode::kLocation40414, "'ReplSetConfig._id'"},
      {"{_id: 5, version: 1, " + m + "}", ErrorCode::kTypeMismatch,
       "BSON field 'ReplSetConfig._id' is the wrong type 'int', expected type 'string'"},
      {"{_id: '', version: 1, " + m + "}", ErrorCode::kBadValue, "'ReplSetConfig._id'"},
      {"{_id: 'rs', " + m + "}", ErrorCode::kLocation40414, "'ReplSetConfig.version'"},
      {"{_id: 'rs', version: 'one', " + m + "}", ErrorCode::kTypeMismatch,
       "'ReplSetConfig.version'"},
      {"{_id: 'rs', version: null, " + m + "}", ErrorCode::kTypeMismatch,
       "'ReplSetConfig.version'"},
      {"{_id: 'rs', version: 0, " + m + "}", ErrorCode::kLocation51024,
       "BSON field 'ReplSetConfig.version' value must be > 0, actual value '0'"},
      {"{_id: 'rs', version: -4, " + m + "}", ErrorCode::kLocation51024, "'ReplSetConfig.version'"},
      {"{_id: 'rs', version: 1.5, " + m + "}", ErrorCode::kBadValue, "'ReplSetConfig.version'"},
      {"{_id: 'rs', version: 2147483648, " + m + "}", ErrorCode::kLocation51024,
       "'ReplSetConfig.version' value must be < 2147483648"},
      {"{_id: 'rs', version: 1, term: -2, " + m + "}", ErrorCode::kLocation51024,
       "'ReplSetConfig.term' value must be >= -1"},
      {"{_id: 'rs', version: 1, protocolVersion: 0, " + m + "}", ErrorCode::kLocation51024,
       "BSON field 'ReplSetConfig.protocolVersion' value must be >= 1, actual value '0'"},
      {"{_id: 'rs', version: 1, protocolVersion: 2, " + m + "}", ErrorCode::kLocation51024,
       "'ReplSetConfig.protocolVersion' value must be <= 1"},
      {"{_id: 'rs', version: 1, protocolVersion: '1', " + m + "}", ErrorCode::kTypeMismatch,
       "'ReplSetConfig.protocolVersion'"},
      {"{_id: 'rs', version: 1, writeConcernMajorityJournalDefault: 'yes', " + m + "}",
       ErrorCode::kTypeMismatch, "'ReplSetConfig.writeConcernMajorityJournalDefault'"},
      {"{_id: 'rs', version: 1, foo: 1, " + m + "}", ErrorCode::kLocation40415,
       "BSON field 'ReplSetConfig.foo' is an unknown field."},
      {"{_id: 'rs', version: 1, version: 2, " + m + "}", ErrorCode::kBadValue,
       "BSON field 'ReplSetConfig.version' is a duplicate field"},
      {"{_id: 'rs', version: 1, configsvr: true, " + m + "}", ErrorCode::kBadValue,
       "'ReplSetConfig.configsvr'"},
      {"{_id: 'rs', version: 1, repaired: true, " + m + "}", ErrorCode::kInvalidReplicaSetConfig,
       "'ReplSetConfig.repaired'"},
      {"{_id: 'rs', version: 1}", ErrorCode::kLocation40414, "'ReplSetConfig.members'"},
      {"{_id: 'rs', version: 1, members: {}}", ErrorCode::kTypeMismatch,
       "BSON field 'ReplSetConfig.members' is the wrong type 'object', expected type 'array'"},
      {"{_id: 'rs', version: 1, members: []}", ErrorCode::kBadValue, "'ReplSetConfig.members'"},
      {"{_id: 'rs', version: 1, members: [{_id: 0, host: 'h'}, 5]}", ErrorCode::kTypeMismatch,
       "BSON field 'ReplSetConfig.members.1' is the wrong type 'int', expected type 'object'"},
  };
  for (const Rejection& r : cases) ExpectRejected(r);

  // Integral doubles, longs and decimals are whole numbers; nulls of type-checked fields are
  // absent.
  EXPECT_EQ(ParseOk("{_id: 'rs', version: 2.0, protocolVersion: null, " + m + "}").version, 2);
  EXPECT_EQ(ParseOk("{_id: 'rs', version: {$numberDecimal: '3'}, " + m + "}").version, 3);
  EXPECT_EQ(ParseOk("{_id: 'rs', version: 1, term: 0, configsvr: false, " + m + "}").term, 0);
}

TEST(ReplicaSetConfigTest, MemberFieldsAreChecked) {
  const Rejection cases[] = {
      {WithMembers("{host: 'h'}"), ErrorCode::kLocation40414,
       "BSON field 'ReplSetConfig.members.0._id' is missing but a required field"},
      {WithMembers("{_id: 'a', host: 'h'}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.members.0._id'"},
      {WithMembers("{_id: -1, host: 'h'}"), ErrorCode::kBadValue, "'ReplSetConfig.members.0._id'"},
      {WithMembers("{_id: 0}"), ErrorCode::kLocation40414, "'ReplSetConfig.members.0.host'"},
      {WithMembers("{_id: 0, host: 5}"), ErrorCode::kTypeMismatch,
       "BSON field 'ReplSetConfig.members.0.host' is the wrong type 'int', expected type "
       "'string'"},
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: '  '}"), ErrorCode::kFailedToParse,
       "'ReplSetConfig.members.1.host'"},
      {WithMembers("{_id: 0, host: 'h:0'}"), ErrorCode::kFailedToParse,
       "'ReplSetConfig.members.0.host'"},
      {WithMembers("{_id: 0, host: 'h:65536'}"), ErrorCode::kFailedToParse, "65536"},
      {WithMembers("{_id: 0, host: 'h:http'}"), ErrorCode::kFailedToParse, "'http'"},
      {WithMembers("{_id: 0, host: 'fe80::1'}"), ErrorCode::kFailedToParse, "brackets"},
      {WithMembers("{_id: 0, host: ':27017'}"), ErrorCode::kFailedToParse,
       "'ReplSetConfig.members.0.host'"},
      {WithMembers("{_id: 0, host: 'h', slaveDelay: 5}"), ErrorCode::kLocation40415,
       "BSON field 'ReplSetConfig.members.0.slaveDelay' is an unknown field."},
      {WithMembers("{_id: 0, host: 'h', host: 'g'}"), ErrorCode::kBadValue,
       "'ReplSetConfig.members.0.host' is a duplicate field"},
      {WithMembers("{_id: 0, host: 'h', priority: 1001}"), ErrorCode::kLocation51024,
       "BSON field 'ReplSetConfig.members.0.priority' value must be <= 1000, actual value "
       "'1001'"},
      {WithMembers("{_id: 0, host: 'h', priority: -0.5}"), ErrorCode::kLocation51024,
       "'ReplSetConfig.members.0.priority' value must be >= 0"},
      {WithMembers("{_id: 0, host: 'h', priority: 'high'}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.members.0.priority'"},
      {WithMembers("{_id: 0, host: 'h', votes: 2}"), ErrorCode::kLocation51024,
       "'ReplSetConfig.members.0.votes' value must be <= 1"},
      {WithMembers("{_id: 0, host: 'h', votes: -1}"), ErrorCode::kLocation51024,
       "'ReplSetConfig.members.0.votes' value must be >= 0"},
      {WithMembers("{_id: 0, host: 'h', hidden: 'no'}"), ErrorCode::kTypeMismatch,
       "BSON field 'ReplSetConfig.members.0.hidden' is the wrong type 'string', expected types "
       "'[bool, long, int, decimal, double']"},
      {WithMembers("{_id: 0, host: 'h', secondaryDelaySecs: 31622401, priority: 0}"),
       ErrorCode::kLocation51024, "'ReplSetConfig.members.0.secondaryDelaySecs'"},
      {WithMembers("{_id: 0, host: 'h', tags: 'east'}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.members.0.tags'"},
      {WithMembers("{_id: 0, host: 'h', tags: {dc: 1}}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.members.0.tags.dc'"},
      {WithMembers("{_id: 0, host: 'h', newlyAdded: true}"), ErrorCode::kInvalidReplicaSetConfig,
       "'ReplSetConfig.members.0.newlyAdded'"},
      {WithMembers("{_id: 0, host: 'h', horizons: {ext: 'x.example:1'}}"), ErrorCode::kBadValue,
       "'ReplSetConfig.members.0.horizons'"},
  };
  for (const Rejection& r : cases) ExpectRejected(r);

  // Current MongoDB takes any non-negative member _id (it used to stop at 255).
  EXPECT_EQ(ParseOk(WithMembers("{_id: 256, host: 'h'}")).members[0].id, 256);
  EXPECT_EQ(ParseOk(WithMembers("{_id: 0, host: 'h', hidden: null}")).members[0].hidden, false);
}

TEST(ReplicaSetConfigTest, PriorityMustBeZeroForMembersThatCannotBePrimary) {
  const Rejection cases[] = {
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: 'b', votes: 0}"), ErrorCode::kBadValue,
       "ReplSetConfig.members.1: priority must be 0 when votes is 0"},
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: 'b', hidden: true}"), ErrorCode::kBadValue,
       "ReplSetConfig.members.1: priority must be 0 when hidden is true"},
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: 'b', secondaryDelaySecs: 60}"),
       ErrorCode::kBadValue, "ReplSetConfig.members.1: priority must be 0 when secondaryDelaySecs"},
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: 'b', buildIndexes: false}"),
       ErrorCode::kBadValue, "ReplSetConfig.members.1: priority must be 0 when buildIndexes"},
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: 'b', arbiterOnly: true, votes: 0}"),
       ErrorCode::kBadValue, "ReplSetConfig.members.1: an arbiter must vote"},
      // An arbiter's priority must be 0: MongoDB's replSetInitiate/replSetReconfig check.
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: 'b', arbiterOnly: true, priority: 2}"),
       ErrorCode::kInvalidReplicaSetConfig, "ReplSetConfig.members.1.priority"},
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: 'b', arbiterOnly: true, tags: {x: 'y'}}"),
       ErrorCode::kBadValue, "ReplSetConfig.members.1.tags"},
  };
  for (const Rejection& r : cases) ExpectRejected(r);

  // The same members with priority 0 are fine, and an arbiter given priority 1 has 0.
  ReplicaSetConfig c = ParseOk(WithMembers(
      "{_id: 0, host: 'a'}, {_id: 1, host: 'b', votes: 0, priority: 0},"
      "{_id: 2, host: 'c', hidden: true, secondaryDelaySecs: 60, buildIndexes: false, priority: 0},"
      "{_id: 3, host: 'd', arbiterOnly: true, priority: 1}"));
  EXPECT_EQ(c.members[3].priority, 0);
  EXPECT_FALSE(c.members[1].Electable());
  EXPECT_FALSE(c.members[2].Electable());
  EXPECT_FALSE(c.members[3].Electable());
}

TEST(ReplicaSetConfigTest, SetWideRules) {
  auto many = [](int n, std::string_view extra) {
    std::string members;
    for (int i = 0; i < n; ++i) {
      if (i > 0) members += ", ";
      members += "{_id: " + std::to_string(i) + ", host: 'h" + std::to_string(i) + "'";
      if (i > 0) members += std::string(", ") + std::string(extra);
      members += "}";
    }
    return WithMembers(members);
  };
  const Rejection cases[] = {
      {many(51, "votes: 0, priority: 0"), ErrorCode::kBadValue, "ReplSetConfig.members"},
      {many(8, "votes: 1"), ErrorCode::kBadValue, "ReplSetConfig.members.votes: 8 members vote"},
      {WithMembers("{_id: 0, host: 'a'}, {_id: 0, host: 'b'}"), ErrorCode::kBadValue,
       "ReplSetConfig.members.0._id == ReplSetConfig.members.1._id == 0"},
      {WithMembers("{_id: 0, host: 'a'}, {_id: 1, host: 'a:27017'}"), ErrorCode::kBadValue,
       "ReplSetConfig.members.0.host == ReplSetConfig.members.1.host == a:27017"},
      {WithMembers("{_id: 0, host: 'localhost:1'}, {_id: 1, host: 'db.example:2'}"),
       ErrorCode::kBadValue, "ReplSetConfig.members.host"},
      {WithMembers("{_id: 0, host: '127.0.0.1:1'}, {_id: 1, host: '10.0.0.1:2'}"),
       ErrorCode::kBadValue, "localhost"},
      {WithMembers("{_id: 0, host: 'a', priority: 0}, {_id: 1, host: 'b', arbiterOnly: true}"),
       ErrorCode::kBadValue, "ReplSetConfig.members.priority"},
  };
  for (const Rejection& r : cases) ExpectRejected(r);

  EXPECT_EQ(ParseOk(many(50, "votes: 0, priority: 0")).members.size(), 50u);
  EXPECT_EQ(ParseOk(many(7, "votes: 1")).VotingMembers(), 7);
  EXPECT_EQ(ParseOk(WithMembers("{_id: 0, host: 'localhost:1'}, {_id: 1, host: '127.0.0.1:2'},"
                                "{_id: 2, host: '[::1]:3'}"))
                .members.size(),
            3u);
}

TEST(ReplicaSetConfigTest, Settings) {
  const std::string head =
      "{_id: 'rs', version: 1, members: [{_id: 0, host: 'h', tags: {dc: 'e'}}],"
      " settings: ";
  auto with = [&](std::string_view settings) { return head + std::string(settings) + "}"; };
  const Rejection cases[] = {
      {with("'fast'"), ErrorCode::kTypeMismatch,
       "BSON field 'ReplSetConfig.settings' is the wrong type 'string', expected type 'object'"},
      {with("{heartbeatIntervalMillis: 0}"), ErrorCode::kLocation51024,
       "BSON field 'ReplSetConfig.settings.heartbeatIntervalMillis' value must be > 0, actual "
       "value '0'"},
      {with("{heartbeatTimeoutSecs: 0}"), ErrorCode::kLocation51024,
       "'ReplSetConfig.settings.heartbeatTimeoutSecs' value must be > 0"},
      {with("{electionTimeoutMillis: -5}"), ErrorCode::kLocation51024,
       "'ReplSetConfig.settings.electionTimeoutMillis' value must be > 0"},
      {with("{electionTimeoutMillis: 10.5}"), ErrorCode::kBadValue,
       "'ReplSetConfig.settings.electionTimeoutMillis'"},
      {with("{catchUpTimeoutMillis: -2}"), ErrorCode::kLocation51024,
       "'ReplSetConfig.settings.catchUpTimeoutMillis' value must be >= -1"},
      {with("{catchUpTakeoverDelayMillis: -2}"), ErrorCode::kLocation51024,
       "'ReplSetConfig.settings.catchUpTakeoverDelayMillis' value must be >= -1"},
      {with("{chainingAllowed: 'no'}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.settings.chainingAllowed'"},
      {with("{getLastErrorModes: 1}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.settings.getLastErrorModes'"},
      {with("{getLastErrorModes: {m: 1}}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.settings.getLastErrorModes.m'"},
      {with("{getLastErrorModes: {m: {dc: 'two'}}}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.settings.getLastErrorModes.m.dc'"},
      {with("{getLastErrorModes: {m: {dc: 0}}}"), ErrorCode::kBadValue,
       "'ReplSetConfig.settings.getLastErrorModes.m.dc'"},
      {with("{getLastErrorModes: {m: {rack: 1}}}"), ErrorCode::kNoSuchKey,
       "'ReplSetConfig.settings.getLastErrorModes.m.rack'"},
      {with("{getLastErrorDefaults: 1}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.settings.getLastErrorDefaults'"},
      {with("{getLastErrorDefaults: {w: 'majority'}}"), ErrorCode::kInvalidReplicaSetConfig,
       "'ReplSetConfig.settings.getLastErrorDefaults'"},
      {with("{getLastErrorDefaults: {w: 1, wtimeout: 500}}"), ErrorCode::kInvalidReplicaSetConfig,
       "'ReplSetConfig.settings.getLastErrorDefaults'"},
      {with("{getLastErrorDefaults: {w: 1, j: true}}"), ErrorCode::kInvalidReplicaSetConfig,
       "'ReplSetConfig.settings.getLastErrorDefaults'"},
      {with("{getLastErrorDefaults: {w: 0}}"), ErrorCode::kBadValue,
       "'ReplSetConfig.settings.getLastErrorDefaults.w'"},
      {with("{replicaSetId: 'abc'}"), ErrorCode::kTypeMismatch,
       "'ReplSetConfig.settings.replicaSetId'"},
      {with("{replicaSetId: {$oid: '000000000000000000000000'}}"), ErrorCode::kBadValue,
       "'ReplSetConfig.settings.replicaSetId'"},
      {with("{heartbeatTimeoutSecs: 5, heartbeatTimeoutSecs: 6}"), ErrorCode::kBadValue,
       "'ReplSetConfig.settings.heartbeatTimeoutSecs' is a duplicate field"},
  };
  for (const Rejection& r : cases) ExpectRejected(r);

  // MongoDB's settings are not strict: unknown fields are ignored.
  ReplicaSetConfig c = ParseOk(
      with("{catchUpTimeoutMillis: 0, getLastErrorModes: {m: {dc: 1, $electable: 1}},"
           " getLastErrorDefaults: {w: 1, wtimeout: 0}, whatever: [1], chainingAllowed: 0}"));
  EXPECT_EQ(c.settings.catch_up_timeout_millis, 0);
  EXPECT_FALSE(c.settings.chaining_allowed);
  ExpectBson(c.settings.get_last_error_modes, "{m: {dc: 1, $electable: 1}}");
}

TEST(ReplicaSetConfigTest, ParseFieldsLeavesTheSetWideRulesToValidate) {
  // replSetReconfig answers these two stages with different codes, so they can run apart.
  BsonObj doc = Doc(WithMembers("{_id: 0, host: 'a'}, {_id: 0, host: 'b'}"));
  auto fields = ReplicaSetConfig::ParseFields(doc);
  ASSERT_TRUE(fields.ok()) << fields.status().ToString();
  EXPECT_EQ(fields.value().Validate().code(), ErrorCode::kBadValue);
  EXPECT_EQ(ReplicaSetConfig::ParseFields(Doc("{_id: 'rs', version: 1, members: [], x: 1}"))
                .status()
                .code(),
            ErrorCode::kLocation40415);
}

TEST(ReplicaSetConfigTest, InitiateWantsVersionOneAndNoReplicaSetId) {
  EXPECT_TRUE(ParseOk(WithMembers("{_id: 0, host: 'a'}")).ValidateForInitiate().ok());
  Status v2 =
      ParseOk("{_id: 'rs', version: 2, members: [{_id: 0, host: 'a'}]}").ValidateForInitiate();
  EXPECT_EQ(v2.code(), ErrorCode::kNewReplicaSetConfigurationIncompatible) << v2.ToString();
  EXPECT_NE(v2.reason().find("version"), std::string::npos);
  Status id = ParseOk(
                  "{_id: 'rs', version: 1, members: [{_id: 0, host: 'a'}],"
                  " settings: {replicaSetId: {$oid: '65a1b2c3d4e5f60718293a4b'}}}")
                  .ValidateForInitiate();
  EXPECT_EQ(id.code(), ErrorCode::kInvalidReplicaSetConfig) << id.ToString();
  EXPECT_NE(id.reason().find("replicaSetId"), std::string::npos);
}

TEST(ReplicaSetConfigTest, Hosts) {
  struct Case {
    const char* in;
    const char* canonical;  // nullptr: FailedToParse
  } cases[] = {{"db", "db:27017"},
               {" db:27018\t", "db:27018"},
               {"10.1.2.3", "10.1.2.3:27017"},
               {"[::1]", "[::1]:27017"},
               {"[fe80::1]:30000", "[fe80::1]:30000"},
               {"/tmp/mongodb-27017.sock", "/tmp/mongodb-27017.sock"},
               {"db:65535", "db:65535"},
               {"", nullptr},
               {"db:", nullptr},
               {"db:-1", nullptr},
               {"db:65536", nullptr},
               {"db:1:2", nullptr},
               {"x[::1]:1", nullptr},
               {"[::1", nullptr},
               {"[::1]x:1", nullptr},
               {"::1]", nullptr},
               {"[]:1", nullptr}};
  for (const Case& c : cases) {
    auto sw = CanonicalHostAndPort(c.in);
    if (c.canonical == nullptr) {
      ASSERT_FALSE(sw.ok()) << c.in;
      EXPECT_EQ(sw.status().code(), ErrorCode::kFailedToParse) << c.in;
    } else {
      ASSERT_TRUE(sw.ok()) << c.in << ": " << sw.status().ToString();
      EXPECT_EQ(sw.value(), c.canonical);
    }
  }
  EXPECT_TRUE(IsLocalHost("localhost:1"));
  EXPECT_TRUE(IsLocalHost("127.0.0.2:1"));
  EXPECT_TRUE(IsLocalHost("[::1]:1"));
  EXPECT_TRUE(IsLocalHost("/tmp/mongodb-27017.sock"));
  EXPECT_FALSE(IsLocalHost("db:1"));
  EXPECT_FALSE(IsLocalHost("[fe80::1]:1"));

  ReplicaSetConfig c = ParseOk(WithMembers("{_id: 4, host: 'a'}, {_id: 9, host: 'b:2'}"));
  ASSERT_NE(c.FindMemberByHost("a"), nullptr);
  EXPECT_EQ(c.FindMemberByHost("a:27017")->id, 4);
  EXPECT_EQ(c.FindMemberByHost("b:2")->id, 9);
  EXPECT_EQ(c.FindMemberByHost("b"), nullptr);
  EXPECT_EQ(c.FindMemberByHost("::"), nullptr);
  ASSERT_NE(c.FindMemberById(9), nullptr);
  EXPECT_EQ(c.FindMemberById(9)->host, "b:2");
  EXPECT_EQ(c.FindMemberById(5), nullptr);
}

TEST(ReplicaSetConfigTest, Majorities) {
  struct Case {
    const char* members;
    int voters, majority, write_majority;
  } cases[] = {
      {"{_id: 0, host: 'a'}", 1, 1, 1},
      {"{_id: 0, host: 'a'}, {_id: 1, host: 'b'}", 2, 2, 2},
      // Primary, secondary, arbiter.
      {"{_id: 0, host: 'a'}, {_id: 1, host: 'b'}, {_id: 2, host: 'c', arbiterOnly: true}", 3, 2, 2},
      // A non-voting member counts for neither.
      {"{_id: 0, host: 'a'}, {_id: 1, host: 'b'}, {_id: 2, host: 'c', votes: 0, priority: 0}", 2, 2,
       2},
      {"{_id: 0, host: 'a'}, {_id: 1, host: 'b'}, {_id: 2, host: 'c'}, {_id: 3, host: 'd'},"
       " {_id: 4, host: 'e'}",
       5, 3, 3},
      // Two arbiters: the three data-bearing voters still make the majority.
      {"{_id: 0, host: 'a'}, {_id: 1, host: 'b'}, {_id: 2, host: 'c'},"
       " {_id: 3, host: 'd', arbiterOnly: true}, {_id: 4, host: 'e', arbiterOnly: true}",
       5, 3, 3},
      // Three arbiters: a write cannot wait for more members than hold data and vote.
      {"{_id: 0, host: 'a'}, {_id: 1, host: 'b'}, {_id: 2, host: 'c', arbiterOnly: true},"
       " {_id: 3, host: 'd', arbiterOnly: true}, {_id: 4, host: 'e', arbiterOnly: true}",
       5, 3, 2},
      // An arbiter and two non-voting members.
      {"{_id: 0, host: 'a'}, {_id: 1, host: 'b'}, {_id: 2, host: 'c', arbiterOnly: true},"
       " {_id: 3, host: 'd', votes: 0, priority: 0}, {_id: 4, host: 'e', votes: 0, priority: 0}",
       3, 2, 2},
  };
  for (const Case& c : cases) {
    ReplicaSetConfig config = ParseOk(WithMembers(c.members));
    EXPECT_EQ(config.VotingMembers(), c.voters) << c.members;
    EXPECT_EQ(config.MajorityVoteCount(), c.majority) << c.members;
    EXPECT_EQ(config.WriteMajorityCount(), c.write_majority) << c.members;
  }
}

}  // namespace
}  // namespace hourglass::repl
