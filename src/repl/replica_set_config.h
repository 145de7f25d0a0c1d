// A replica set's configuration document: what replSetInitiate and replSetReconfig receive, what
// replSetGetConfig shows and what is stored. Parse applies MongoDB's rules (the IDL of
// repl_set_config.idl / member_config.idl, MemberConfig's own checks, ReplSetConfig::validate
// and the arbiter-priority check of repl_set_config_checks.cpp) with MongoDB's codes; ToBson gives
// the canonical document, every default filled in, in the field order and number types mongod
// serializes.
//
// The codes are those of MongoDB's parser and validator. The commands wrap them as mongod does:
// replSetInitiate answers every failure as InvalidReplicaSetConfig (93) keeping the reason;
// replSetReconfig answers ParseFields' failures as InvalidReplicaSetConfig (93) and Validate's as
// NewReplicaSetConfigurationIncompatible (103), keeping the reason.
//
// Plain values: copyable, and safe to read from several threads once built.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::repl {

// MongoDB's limits on a set's size.
inline constexpr int kMaxMembers = 50;
inline constexpr int kMaxVotingMembers = 7;
// The port a member's host gets when it names none.
inline constexpr int kDefaultPort = 27017;

// `host` ("h", "h:port", "[v6]:port", a Unix socket path; surrounding whitespace ignored) as
// MongoDB's HostAndPort writes it back: "h:27017" when no port is given, IPv6 hosts in brackets,
// socket paths as given. FailedToParse (9) for an empty host, a port outside 1..65535, or an
// IPv6 address without brackets.
StatusWith<std::string> CanonicalHostAndPort(std::string_view host);
// Whether a canonical host is a loopback address as MongoDB counts them ("localhost", "127.*",
// "::1", a Unix socket).
bool IsLocalHost(std::string_view canonical_host);

struct MemberConfig {
  int id = 0;             // _id
  std::string host;       // canonical "host:port" (CanonicalHostAndPort)
  double priority = 1.0;  // an arbiter's default 1 reads as 0, as in MongoDB
  int votes = 1;          // 0 or 1
  bool arbiter_only = false;
  bool build_indexes = true;
  bool hidden = false;
  int64_t secondary_delay_secs = 0;
  bson::BsonObj tags;  // {} by default; owned; values are strings

  // Can become primary: priority > 0, votes and is not an arbiter.
  bool Electable() const;
  bool Voter() const { return votes > 0; }
  // {_id, host, arbiterOnly, buildIndexes, hidden, priority, tags, secondaryDelaySecs, votes}.
  bson::BsonObj ToBson() const;
};

// {w: 1, wtimeout: 0}: the only getLastErrorDefaults MongoDB still accepts.
bson::BsonObj DefaultGetLastErrorDefaults();

struct ReplicaSetSettings {
  bool chaining_allowed = true;
  int64_t heartbeat_interval_millis = 2000;
  int64_t heartbeat_timeout_secs = 10;
  int64_t election_timeout_millis = 10000;
  int64_t catch_up_timeout_millis = -1;            // -1: no limit, 0: no catch-up
  int64_t catch_up_takeover_delay_millis = 30000;  // -1: no catch-up takeover
  // {<mode>: {<tag key>: <count>}}, counts as ints; owned.
  bson::BsonObj get_last_error_modes;
  bson::BsonObj get_last_error_defaults = DefaultGetLastErrorDefaults();
  std::optional<bson::ObjectId> replica_set_id;  // set by replSetInitiate

  bson::BsonObj ToBson() const;
};

struct ReplicaSetConfig {
  std::string set_name;  // _id
  int64_t version = 1;
  int64_t term = -1;  // -1: no term (not serialized); replSetInitiate stores 0
  int protocol_version = 1;
  bool write_concern_majority_journal_default = true;
  std::vector<MemberConfig> members;
  ReplicaSetSettings settings;

  // ParseFields, then Validate.
  static StatusWith<ReplicaSetConfig> Parse(const bson::BsonObj& doc);

  // The document's own rules, what MongoDB's ReplSetConfig parse enforces: required fields,
  // types (TypeMismatch 14 naming 'ReplSetConfig.<path>'), unknown fields (40415; unknown
  // settings are ignored, as MongoDB's settings are not strict), duplicate fields (BadValue;
  // MongoDB's 40413), ranges (51024), whole numbers (BadValue; MongoDB's 4708900), hosts
  // (FailedToParse), a member's priority against its votes, hidden, secondaryDelaySecs and
  // buildIndexes (BadValue), tags (strings; none on arbiters), getLastErrorModes (tag keys some
  // member has: NoSuchKey) and getLastErrorDefaults (only {w: 1, wtimeout: 0}:
  // InvalidReplicaSetConfig; MongoDB's 5624102).
  static StatusWith<ReplicaSetConfig> ParseFields(const bson::BsonObj& doc);
  // The rules across members, ReplicaSetConfig::validate's (BadValue): 1 to 50 members, unique
  // _ids and hosts, localhost all or none, 1 to 7 voters, an electable member; then arbiters'
  // priority 0 (InvalidReplicaSetConfig).
  Status Validate() const;
  // What replSetInitiate adds: version 1 (NewReplicaSetConfigurationIncompatible, 103) and no
  // settings.replicaSetId (InvalidReplicaSetConfig; the command generates it and sets term 0).
  Status ValidateForInitiate() const;

  // The canonical document: every default filled in, in MongoDB's field order (what
  // replSetGetConfig shows and what is stored). Parse(ToBson()) round-trips.
  bson::BsonObj ToBson() const;

  const MemberConfig* FindMemberById(int id) const;
  // `host` is compared canonically ("h" finds "h:27017").
  const MemberConfig* FindMemberByHost(std::string_view host) const;
  int VotingMembers() const;
  // Votes an election needs: voting members / 2 + 1.
  int MajorityVoteCount() const;
  // Members a w: "majority" write waits for: the vote majority, but no more than the voting
  // members that hold data (arbiters vote but cannot acknowledge writes).
  int WriteMajorityCount() const;
};

}  // namespace hourglass::repl
