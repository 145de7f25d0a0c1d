#include "repl/replica_set_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "bson/field_check.h"

namespace hourglass::repl {

namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

// The IDL parse contexts MongoDB names fields by; members are named by their index as well, so a
// message says which member is wrong.
constexpr std::string_view kContext = "ReplSetConfig";
constexpr std::string_view kSettingsContext = "ReplSetConfig.settings";
// The types MongoDB's IDL lists for its safeInt64/safeDouble and safeBool fields.
constexpr std::string_view kNumberTypes = "[long, int, decimal, double]";
constexpr std::string_view kBoolTypes = "[bool, long, int, decimal, double]";
constexpr int64_t kMaxSecondaryDelaySecs = 31'622'400;  // 366 days
constexpr int64_t kTwoToThe31 = int64_t{1} << 31;

std::string Join(std::string_view context, std::string_view field) {
  std::string out(context);
  out += '.';
  out += field;
  return out;
}

std::string Num(int64_t v) { return std::to_string(v); }
std::string Num(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}
std::string TypeOf(const BsonElement& e) { return std::string(bson::TypeName(e.type())); }

// The IDL skips null and undefined values of the fields it type-checks, so they read as absent
// (and a required one then counts as missing). Fields with their own deserializer (version,
// term, member _id, getLastErrorModes, configsvr, repaired) refuse them instead.
bool Nullish(const BsonElement& e) {
  return e.type() == BsonType::kNull || e.type() == BsonType::kUndefined;
}

Status Duplicate(const std::string& path) {
  // MongoDB answers 40413, which error_codes.def does not hold yet.
  return Status(ErrorCode::kBadValue, "BSON field '" + path + "' is a duplicate field");
}

// An IDL validator's failure: "value must be <op> <bound>".
Status Bound(bool ok, const std::string& path, std::string_view op, const std::string& bound,
             const std::string& actual) {
  if (ok) return Status::OK();
  return Status(ErrorCode::kLocation51024, "BSON field '" + path + "' value must be " +
                                               std::string(op) + " " + bound + ", actual value '" +
                                               actual + "'");
}

// IDL safeBool: a bool, or a number read as its truth.
StatusWith<bool> SafeBool(const std::string& path, const BsonElement& e) {
  if (e.type() == BsonType::kBool || e.IsNumber()) return e.Truthy();
  return bson::WrongVariantType(path, e, kBoolTypes);
}

// IDL safeInt64: any number, fractions truncated (MongoDB's numberLong).
StatusWith<int64_t> SafeInt64(const std::string& path, const BsonElement& e) {
  if (e.IsNumber()) return e.NumberLong();
  return bson::WrongVariantType(path, e, kNumberTypes);
}

StatusWith<double> SafeDouble(const std::string& path, const BsonElement& e) {
  if (e.IsNumber()) return e.NumberDouble();
  return bson::WrongVariantType(path, e, kNumberTypes);
}

// repl_set_config.idl's smallExactInt64: any number whose value is a whole int64.
StatusWith<int64_t> SmallExactInt64(const std::string& path, const BsonElement& e) {
  if (!e.IsNumber()) {
    return Status(ErrorCode::kTypeMismatch,
                  "BSON field '" + path + "' must be a number, found a value of type " + TypeOf(e));
  }
  std::optional<int64_t> v = e.WholeNumber();
  if (!v) {
    const std::string shown =
        e.type() == BsonType::kDecimal128 ? e.Decimal().ToString() : Num(e.NumberDouble());
    // MongoDB answers 4708900, which error_codes.def does not hold yet.
    return Status(ErrorCode::kBadValue, "BSON field '" + path +
                                            "' must be a whole number that a 64-bit integer "
                                            "holds exactly, found " +
                                            shown);
  }
  return *v;
}

// Appends `v` as an int when it fits one, as MongoDB's appendNumber does.
void AppendSmallInt(BsonBuilder& b, std::string_view name, int64_t v) {
  if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
    b.AppendInt32(name, static_cast<int32_t>(v));
  } else {
    b.AppendInt64(name, v);
  }
}

// Finds `name` in `names`; -1 if absent.
template <size_t N>
int SlotOf(const std::string_view (&names)[N], std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------
// members

enum MemberSlot {
  kMemberId,
  kHost,
  kVotes,
  kNewlyAdded,
  kPriority,
  kHidden,
  kSecondaryDelaySecs,
  kArbiterOnly,
  kBuildIndexes,
  kTags,
  kHorizons,
  kMemberSlots
};
constexpr std::string_view kMemberFields[kMemberSlots] = {"_id",
                                                          "host",
                                                          "votes",
                                                          "newlyAdded",
                                                          "priority",
                                                          "hidden",
                                                          "secondaryDelaySecs",
                                                          "arbiterOnly",
                                                          "buildIndexes",
                                                          "tags",
                                                          "horizons"};

// MemberId's parse: any number, read as an int (fractions truncated), not negative.
StatusWith<int> ParseMemberId(const std::string& path, const BsonElement& e) {
  if (!e.IsNumber()) {
    return Status(ErrorCode::kTypeMismatch,
                  "BSON field '" + path + "' must be a number, found a value of type " + TypeOf(e));
  }
  const double d = std::trunc(e.NumberDouble());
  if (d < 0) {
    return Status(ErrorCode::kBadValue,
                  "BSON field '" + path + "' must not be negative, found " + Num(d));
  }
  if (!(d <= std::numeric_limits<int32_t>::max())) {
    return Status(ErrorCode::kBadValue,
                  "BSON field '" + path + "' must be an int (at most 2147483647), found " + Num(d));
  }
  return static_cast<int>(d);
}

// One members[i]: its fields as member_config.idl reads them, then MemberConfig's rules between
// priority and the other fields. Tags' values are checked later, with the whole set's (as MongoDB
// does once every member is read).
StatusWith<MemberConfig> ParseMember(const BsonObj& doc, const std::string& ctx) {
  MemberConfig m;
  bool seen[kMemberSlots] = {};
  std::string raw_host;
  for (BsonElement e : doc) {
    const std::string_view f = e.FieldName();
    const int slot = SlotOf(kMemberFields, f);
    if (slot < 0) return bson::UnknownField(ctx, f);
    const std::string path = Join(ctx, f);
    if (slot != kMemberId && Nullish(e)) continue;
    if (seen[slot]) return Duplicate(path);
    seen[slot] = true;
    switch (slot) {
      case kMemberId: {
        HG_ASSIGN_OR_RETURN(m.id, ParseMemberId(path, e));
        break;
      }
      case kHost:
        if (e.type() != BsonType::kString) return bson::WrongTypeAtPath(path, e, "string");
        raw_host = std::string(e.Str());
        break;
      case kVotes: {
        HG_ASSIGN_OR_RETURN(int64_t v, SafeInt64(path, e));
        HG_RETURN_IF_ERROR(Bound(v >= 0, path, ">=", "0", Num(v)));
        HG_RETURN_IF_ERROR(Bound(v <= 1, path, "<=", "1", Num(v)));
        m.votes = static_cast<int>(v);
        break;
      }
      case kNewlyAdded:
        if (e.type() != BsonType::kBool) return bson::WrongTypeAtPath(path, e, "bool");
        // The server sets it on members in initial sync when it reconfigures by itself; neither
        // replSetInitiate nor replSetReconfig takes it from a client, and Hourglass never sets it.
        return Status(ErrorCode::kInvalidReplicaSetConfig,
                      "BSON field '" + path +
                          "' is set only by the server, for members in initial sync; a "
                          "configuration given to replSetInitiate or replSetReconfig cannot "
                          "hold it");
      case kPriority: {
        HG_ASSIGN_OR_RETURN(m.priority, SafeDouble(path, e));
        HG_RETURN_IF_ERROR(Bound(m.priority >= 0, path, ">=", "0", Num(m.priority)));
        HG_RETURN_IF_ERROR(Bound(m.priority <= 1000, path, "<=", "1000", Num(m.priority)));
        break;
      }
      case kHidden: {
        HG_ASSIGN_OR_RETURN(m.hidden, SafeBool(path, e));
        break;
      }
      case kSecondaryDelaySecs: {
        HG_ASSIGN_OR_RETURN(int64_t v, SafeInt64(path, e));
        HG_RETURN_IF_ERROR(Bound(v >= 0, path, ">=", "0", Num(v)));
        HG_RETURN_IF_ERROR(
            Bound(v <= kMaxSecondaryDelaySecs, path, "<=", Num(kMaxSecondaryDelaySecs), Num(v)));
        m.secondary_delay_secs = v;
        break;
      }
      case kArbiterOnly: {
        HG_ASSIGN_OR_RETURN(m.arbiter_only, SafeBool(path, e));
        break;
      }
      case kBuildIndexes: {
        HG_ASSIGN_OR_RETURN(m.build_indexes, SafeBool(path, e));
        break;
      }
      case kTags:
        if (e.type() != BsonType::kObject) return bson::WrongTypeAtPath(path, e, "object");
        m.tags = e.Obj().Owned();
        break;
      case kHorizons:
        if (e.type() != BsonType::kObject) return bson::WrongTypeAtPath(path, e, "object");
        return Status(ErrorCode::kBadValue,
                      "BSON field '" + path +
                          "': split horizons are not supported; hello answers every client with "
                          "the members' hosts");
    }
  }
  if (!seen[kMemberId]) return bson::MissingField(ctx, "_id");
  if (!seen[kHost]) return bson::MissingField(ctx, "host");
  auto host = CanonicalHostAndPort(raw_host);
  if (!host.ok()) return host.status().WithContext("BSON field '" + Join(ctx, "host") + "': ");
  m.host = std::move(host).value();

  if (m.arbiter_only) {
    // An arbiter left at the default priority (or given 1 explicitly) has priority 0; any other
    // non-zero priority is refused by Validate.
    if (m.priority == 1.0) m.priority = 0;
    if (!m.Voter()) {
      return Status(ErrorCode::kBadValue, ctx + ": an arbiter must vote (votes: 1)");
    }
  }
  // A member that can never be primary must not ask to be one.
  if (m.priority != 0) {
    const char* why = nullptr;
    if (!m.Voter()) {
      why = "votes is 0";
    } else if (m.secondary_delay_secs > 0) {
      why = "secondaryDelaySecs is set";
    } else if (m.hidden) {
      why = "hidden is true";
    } else if (!m.build_indexes) {
      why = "buildIndexes is false";
    }
    if (why != nullptr) {
      return Status(ErrorCode::kBadValue, ctx + ": priority must be 0 when " + why +
                                              ", found priority " + Num(m.priority));
    }
  }
  return m;
}

// A member's tags: string values only, and none on an arbiter.
Status CheckTags(const MemberConfig& m, const std::string& ctx) {
  for (BsonElement t : m.tags) {
    if (t.type() != BsonType::kString) {
      return bson::WrongTypeAtPath(Join(Join(ctx, "tags"), t.FieldName()), t, "string");
    }
  }
  if (m.arbiter_only && !m.tags.IsEmpty()) {
    return Status(ErrorCode::kBadValue, ctx + ".tags: an arbiter cannot have tags");
  }
  return Status::OK();
}

// Whether some member carries the tag key `key`: its own tags, or one of the internal tags
// MongoDB gives members by their role (which getLastErrorModes may name too).
bool SomeMemberHasTag(const std::vector<MemberConfig>& members, std::string_view key) {
  for (const MemberConfig& m : members) {
    if (m.tags.HasField(key)) return true;
    if (key == "$configAll") return true;
    if (key == "$configVoter" && m.Voter()) return true;
    if (key == "$voter" && m.Voter() && !m.arbiter_only) return true;
    if (key == "$all" && !m.arbiter_only) return true;
    if (key == "$electable" && m.Electable()) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// settings

enum SettingsSlot {
  kChainingAllowed,
  kHeartbeatIntervalMillis,
  kHeartbeatTimeoutSecs,
  kElectionTimeoutMillis,
  kCatchUpTimeoutMillis,
  kCatchUpTakeoverDelayMillis,
  kGetLastErrorModes,
  kGetLastErrorDefaults,
  kReplicaSetId,
  kSettingsSlots
};
constexpr std::string_view kSettingsFields[kSettingsSlots] = {
    "chainingAllowed",       "heartbeatIntervalMillis", "heartbeatTimeoutSecs",
    "electionTimeoutMillis", "catchUpTimeoutMillis",    "catchUpTakeoverDelayMillis",
    "getLastErrorModes",     "getLastErrorDefaults",    "replicaSetId"};

// {<mode>: {<tag key>: <positive count>}} into its canonical form (counts as ints).
StatusWith<BsonObj> ParseLastErrorModes(const std::string& path, const BsonElement& e) {
  if (e.type() != BsonType::kObject) return bson::WrongTypeAtPath(path, e, "object");
  BsonBuilder b;
  std::vector<std::string_view> modes;
  for (BsonElement mode : e.Obj()) {
    const std::string mode_path = Join(path, mode.FieldName());
    if (std::find(modes.begin(), modes.end(), mode.FieldName()) != modes.end()) {
      // MongoDB answers 51001, which error_codes.def does not hold yet.
      return Status(ErrorCode::kBadValue, "BSON field '" + mode_path + "' is a duplicate field");
    }
    modes.push_back(mode.FieldName());
    if (mode.type() != BsonType::kObject) return bson::WrongTypeAtPath(mode_path, mode, "object");
    size_t token = b.OpenObject(mode.FieldName());
    for (BsonElement c : mode.Obj()) {
      const std::string c_path = Join(mode_path, c.FieldName());
      if (!c.IsNumber()) {
        return Status(
            ErrorCode::kTypeMismatch,
            "BSON field '" + c_path + "' must be a number, found a value of type " + TypeOf(c));
      }
      // MongoDB reads the count as an int.
      const int64_t count = std::min<int64_t>(c.NumberLong(), std::numeric_limits<int32_t>::max());
      if (count <= 0) {
        return Status(ErrorCode::kBadValue,
                      "BSON field '" + c_path + "' must be positive, found " + Num(count));
      }
      b.AppendInt32(c.FieldName(), static_cast<int32_t>(count));
    }
    b.Close(token);
  }
  return b.Obj();
}

// getLastErrorDefaults: MongoDB ignores it since 5.0 and refuses any value but the default one,
// telling users to set a cluster-wide default write concern instead.
Status CheckLastErrorDefaults(const std::string& path, const BsonObj& wc) {
  auto given = [&](std::string_view f) {
    const BsonElement e = wc[f];
    return !e.eoo() && !Nullish(e);
  };
  const BsonElement w = wc["w"];
  const BsonElement j = wc["j"];
  if (w.IsNumber() && w.NumberLong() == 0 && !(j.type() == BsonType::kBool && j.Bool())) {
    return Status(
        ErrorCode::kBadValue,
        "BSON field '" + path + ".w': the default write concern must wait for at least 1 member");
  }
  const BsonElement wtimeout = wc["wtimeout"];
  const bool customized =
      (given("w") && !(w.IsNumber() && w.NumberDouble() == 1)) ||
      (given("wtimeout") && !(wtimeout.IsNumber() && wtimeout.NumberDouble() == 0)) || given("j") ||
      given("fsync");
  if (customized) {
    // MongoDB answers 5624102 (replSetReconfig), which error_codes.def does not hold yet.
    return Status(ErrorCode::kInvalidReplicaSetConfig,
                  "BSON field '" + path + "' may only be {w: 1, wtimeout: 0}, found " +
                      wc.ToJson() +
                      ": customized getLastErrorDefaults are no longer supported; use "
                      "setDefaultRWConcern to set a cluster-wide default write concern");
  }
  return Status::OK();
}

StatusWith<ReplicaSetSettings> ParseSettings(const BsonObj& doc) {
  ReplicaSetSettings s;
  bool seen[kSettingsSlots] = {};
  // MongoDB's settings are not strict: fields it does not know are ignored (but not twice).
  std::vector<std::string_view> others;
  for (BsonElement e : doc) {
    const std::string_view f = e.FieldName();
    const std::string path = Join(kSettingsContext, f);
    const int slot = SlotOf(kSettingsFields, f);
    if (slot < 0) {
      if (std::find(others.begin(), others.end(), f) != others.end()) return Duplicate(path);
      others.push_back(f);
      continue;
    }
    const bool type_checked =
        slot == kChainingAllowed || slot == kGetLastErrorDefaults || slot == kReplicaSetId;
    if (type_checked && Nullish(e)) continue;
    if (seen[slot]) return Duplicate(path);
    seen[slot] = true;
    switch (slot) {
      case kChainingAllowed: {
        HG_ASSIGN_OR_RETURN(s.chaining_allowed, SafeBool(path, e));
        break;
      }
      case kHeartbeatIntervalMillis: {
        HG_ASSIGN_OR_RETURN(s.heartbeat_interval_millis, SmallExactInt64(path, e));
        HG_RETURN_IF_ERROR(Bound(s.heartbeat_interval_millis > 0, path, ">", "0",
                                 Num(s.heartbeat_interval_millis)));
        break;
      }
      case kHeartbeatTimeoutSecs: {
        HG_ASSIGN_OR_RETURN(s.heartbeat_timeout_secs, SmallExactInt64(path, e));
        HG_RETURN_IF_ERROR(
            Bound(s.heartbeat_timeout_secs > 0, path, ">", "0", Num(s.heartbeat_timeout_secs)));
        break;
      }
      case kElectionTimeoutMillis: {
        HG_ASSIGN_OR_RETURN(s.election_timeout_millis, SmallExactInt64(path, e));
        HG_RETURN_IF_ERROR(
            Bound(s.election_timeout_millis > 0, path, ">", "0", Num(s.election_timeout_millis)));
        break;
      }
      case kCatchUpTimeoutMillis: {
        HG_ASSIGN_OR_RETURN(s.catch_up_timeout_millis, SmallExactInt64(path, e));
        HG_RETURN_IF_ERROR(Bound(s.catch_up_timeout_millis >= -1, path, ">=", "-1",
                                 Num(s.catch_up_timeout_millis)));
        break;
      }
      case kCatchUpTakeoverDelayMillis: {
        HG_ASSIGN_OR_RETURN(s.catch_up_takeover_delay_millis, SmallExactInt64(path, e));
        HG_RETURN_IF_ERROR(Bound(s.catch_up_takeover_delay_millis >= -1, path, ">=", "-1",
                                 Num(s.catch_up_takeover_delay_millis)));
        break;
      }
      case kGetLastErrorModes: {
        HG_ASSIGN_OR_RETURN(s.get_last_error_modes, ParseLastErrorModes(path, e));
        break;
      }
      case kGetLastErrorDefaults:
        if (e.type() != BsonType::kObject) return bson::WrongTypeAtPath(path, e, "object");
        HG_RETURN_IF_ERROR(CheckLastErrorDefaults(path, e.Obj()));
        break;
      case kReplicaSetId: {
        if (e.type() != BsonType::kObjectId) return bson::WrongTypeAtPath(path, e, "objectId");
        const bson::ObjectId id = e.Oid();
        static constexpr uint8_t kZero[12] = {};
        if (std::memcmp(id.bytes, kZero, sizeof kZero) == 0) {
          return Status(ErrorCode::kBadValue,
                        "BSON field '" + path + "' cannot be the null ObjectId (all zeros)");
        }
        s.replica_set_id = id;
        break;
      }
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// the configuration

enum ConfigSlot {
  kSetName,
  kVersion,
  kTerm,
  kMembers,
  kConfigsvr,
  kProtocolVersion,
  kWriteConcernMajorityJournalDefault,
  kSettings,
  kRepaired,
  kRecipientConfig,
  kConfigSlots
};
constexpr std::string_view kConfigFields[kConfigSlots] = {"_id",
                                                          "version",
                                                          "term",
                                                          "members",
                                                          "configsvr",
                                                          "protocolVersion",
                                                          "writeConcernMajorityJournalDefault",
                                                          "settings",
                                                          "repaired",
                                                          "recipientConfig"};

std::string MemberContext(size_t i) { return Join(Join(kContext, "members"), std::to_string(i)); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// hosts

StatusWith<std::string> CanonicalHostAndPort(std::string_view in) {
  constexpr std::string_view kSpace = " \t\n\r\f\v";
  const size_t first = in.find_first_not_of(kSpace);
  if (first == std::string_view::npos) {
    return Status(ErrorCode::kFailedToParse, "a host cannot be empty");
  }
  const std::string_view s = in.substr(first, in.find_last_not_of(kSpace) - first + 1);
  const std::string quoted = "\"" + std::string(s) + "\"";
  auto bad = [&](std::string_view why) {
    return Status(ErrorCode::kFailedToParse, std::string(why) + " in host " + quoted);
  };

  size_t colon = s.rfind(':');
  std::string_view host = s.substr(0, colon);
  const size_t open = s.find('[');
  const size_t close = s.find(']');
  if (open != std::string_view::npos) {
    // An IPv6 address, which holds colons of its own, must be in brackets.
    if (open != 0) return bad("'[' is not the first character");
    if (close == std::string_view::npos) return bad("an IPv6 address is missing its closing ']'");
    host = s.substr(1, close - 1);
    if (colon != std::string_view::npos && colon < close) {
      if (s.size() != close + 1) return bad("':' must follow ']' before the port");
      colon = std::string_view::npos;
    } else if (colon != close + 1) {
      return bad("characters between ']' and the port's ':'");
    }
  } else if (close != std::string_view::npos) {
    return bad("']' without '['");
  } else if (s.find(':') != colon) {
    return bad("more than one ':' (an IPv6 address must be written in brackets)");
  }
  if (host.empty()) return bad("the host name is empty");

  int port = kDefaultPort;
  if (colon != std::string_view::npos) {
    const std::string_view digits = s.substr(colon + 1);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
      return bad("the port '" + std::string(digits) + "' is not a number");
    }
    if (v <= 0 || v > 65535) return bad("the port " + Num(v) + " is out of range 1..65535");
    port = static_cast<int>(v);
  }
  std::string out;
  if (host.find(':') != std::string_view::npos) {
    out = "[" + std::string(host) + "]";
  } else {
    out = std::string(host);
  }
  // A Unix socket has no port.
  if (host.front() == '/' || host == "anonymous unix socket") return out;
  return out + ":" + std::to_string(port);
}

bool IsLocalHost(std::string_view h) {
  if (h.empty()) return false;
  if (h.front() == '/') return true;
  std::string_view host;
  if (h.front() == '[') {
    host = h.substr(1, h.find(']') - 1);
  } else {
    host = h.substr(0, h.rfind(':'));
  }
  return host == "localhost" || host.starts_with("127.") || host == "::1" ||
         host == "anonymous unix socket";
}

// ---------------------------------------------------------------------------------------------
// members and settings

bool MemberConfig::Electable() const { return priority > 0 && votes > 0 && !arbiter_only; }

BsonObj MemberConfig::ToBson() const {
  BsonBuilder b;
  b.AppendInt32("_id", id);
  b.AppendString("host", host);
  b.AppendBool("arbiterOnly", arbiter_only);
  b.AppendBool("buildIndexes", build_indexes);
  b.AppendBool("hidden", hidden);
  b.AppendDouble("priority", priority);
  b.AppendObject("tags", tags);
  b.AppendInt64("secondaryDelaySecs", secondary_delay_secs);
  b.AppendInt32("votes", votes > 0 ? 1 : 0);
  return b.Obj();
}

BsonObj DefaultGetLastErrorDefaults() {
  static const BsonObj kDefaults = [] {
    BsonBuilder b;
    b.AppendInt32("w", 1);
    b.AppendInt32("wtimeout", 0);
    return b.Obj();
  }();
  return kDefaults;
}

BsonObj ReplicaSetSettings::ToBson() const {
  BsonBuilder b;
  b.AppendBool("chainingAllowed", chaining_allowed);
  AppendSmallInt(b, "heartbeatIntervalMillis", heartbeat_interval_millis);
  AppendSmallInt(b, "heartbeatTimeoutSecs", heartbeat_timeout_secs);
  AppendSmallInt(b, "electionTimeoutMillis", election_timeout_millis);
  AppendSmallInt(b, "catchUpTimeoutMillis", catch_up_timeout_millis);
  AppendSmallInt(b, "catchUpTakeoverDelayMillis", catch_up_takeover_delay_millis);
  b.AppendObject("getLastErrorModes", get_last_error_modes);
  b.AppendObject("getLastErrorDefaults", get_last_error_defaults);
  if (replica_set_id) b.AppendObjectId("replicaSetId", *replica_set_id);
  return b.Obj();
}

// ---------------------------------------------------------------------------------------------
// the configuration

StatusWith<ReplicaSetConfig> ReplicaSetConfig::Parse(const BsonObj& doc) {
  HG_ASSIGN_OR_RETURN(ReplicaSetConfig config, ParseFields(doc));
  HG_RETURN_IF_ERROR(config.Validate());
  return config;
}

StatusWith<ReplicaSetConfig> ReplicaSetConfig::ParseFields(const BsonObj& doc) {
  ReplicaSetConfig c;
  bool seen[kConfigSlots] = {};
  bool configsvr = false;
  bool repaired = false;
  for (BsonElement e : doc) {
    const std::string_view f = e.FieldName();
    const int slot = SlotOf(kConfigFields, f);
    if (slot < 0) return bson::UnknownField(kContext, f);
    // MongoDB accepts and drops it (a shard split's recipient configuration).
    if (slot == kRecipientConfig) continue;
    const std::string path = Join(kContext, f);
    const bool type_checked = slot == kSetName || slot == kMembers || slot == kProtocolVersion ||
                              slot == kWriteConcernMajorityJournalDefault || slot == kSettings;
    if (type_checked && Nullish(e)) continue;
    if (seen[slot]) return Duplicate(path);
    seen[slot] = true;
    switch (slot) {
      case kSetName:
        if (e.type() != BsonType::kString) return bson::WrongTypeAtPath(path, e, "string");
        if (e.Str().empty()) {
          return Status(ErrorCode::kBadValue,
                        "BSON field '" + path + "', the replica set's name, cannot be empty");
        }
        c.set_name = std::string(e.Str());
        break;
      case kVersion: {
        HG_ASSIGN_OR_RETURN(c.version, SmallExactInt64(path, e));
        HG_RETURN_IF_ERROR(Bound(c.version > 0, path, ">", "0", Num(c.version)));
        HG_RETURN_IF_ERROR(Bound(c.version < kTwoToThe31, path, "<", "2147483648", Num(c.version)));
        break;
      }
      case kTerm: {
        HG_ASSIGN_OR_RETURN(c.term, SmallExactInt64(path, e));
        HG_RETURN_IF_ERROR(Bound(c.term >= -1, path, ">=", "-1", Num(c.term)));
        HG_RETURN_IF_ERROR(Bound(c.term < kTwoToThe31, path, "<", "2147483648", Num(c.term)));
        break;
      }
      case kMembers: {
        if (e.type() != BsonType::kArray) return bson::WrongTypeAtPath(path, e, "array");
        size_t i = 0;
        for (BsonElement m : e.Obj()) {
          const std::string ctx = MemberContext(i++);
          if (m.type() != BsonType::kObject) return bson::WrongTypeAtPath(ctx, m, "object");
          HG_ASSIGN_OR_RETURN(MemberConfig member, ParseMember(m.Obj(), ctx));
          c.members.push_back(std::move(member));
        }
        break;
      }
      case kConfigsvr:
      case kRepaired:
        if (e.type() != BsonType::kBool) return bson::WrongTypeAtPath(path, e, "bool");
        (slot == kConfigsvr ? configsvr : repaired) = e.Bool();
        break;
      case kProtocolVersion: {
        HG_ASSIGN_OR_RETURN(int64_t v, SafeInt64(path, e));
        // Protocol version 0 is gone since MongoDB 4.0.
        HG_RETURN_IF_ERROR(Bound(v >= 1, path, ">=", "1", Num(v)));
        HG_RETURN_IF_ERROR(Bound(v <= 1, path, "<=", "1", Num(v)));
        c.protocol_version = static_cast<int>(v);
        break;
      }
      case kWriteConcernMajorityJournalDefault: {
        HG_ASSIGN_OR_RETURN(c.write_concern_majority_journal_default, SafeBool(path, e));
        break;
      }
      case kSettings: {
        if (e.type() != BsonType::kObject) return bson::WrongTypeAtPath(path, e, "object");
        HG_ASSIGN_OR_RETURN(c.settings, ParseSettings(e.Obj()));
        break;
      }
    }
  }
  if (!seen[kSetName]) return bson::MissingField(kContext, "_id");
  if (!seen[kVersion]) return bson::MissingField(kContext, "version");
  if (!seen[kMembers]) return bson::MissingField(kContext, "members");

  if (repaired) {
    // MongoDB answers RepairedReplicaSetNode, which error_codes.def does not hold yet.
    return Status(ErrorCode::kInvalidReplicaSetConfig,
                  "BSON field 'ReplSetConfig.repaired' is true: the replicated data has been "
                  "repaired, and the configuration cannot be used until the field is removed");
  }
  for (size_t i = 0; i < c.members.size(); ++i) {
    HG_RETURN_IF_ERROR(CheckTags(c.members[i], MemberContext(i)));
  }
  for (BsonElement mode : c.settings.get_last_error_modes) {
    for (BsonElement constraint : mode.Obj()) {
      if (!SomeMemberHasTag(c.members, constraint.FieldName())) {
        return Status(ErrorCode::kNoSuchKey,
                      "BSON field '" +
                          Join(Join(Join(kSettingsContext, "getLastErrorModes"), mode.FieldName()),
                               constraint.FieldName()) +
                          "' names a tag key no member has");
      }
    }
  }
  if (configsvr) {
    return Status(ErrorCode::kBadValue,
                  "BSON field 'ReplSetConfig.configsvr' is true, but Hourglass cannot be a "
                  "sharded cluster's config server (it is not started with --configsvr)");
  }
  return c;
}

Status ReplicaSetConfig::Validate() const {
  const size_t n = members.size();
  if (n == 0 || n > kMaxMembers) {
    return Status(ErrorCode::kBadValue, "BSON field 'ReplSetConfig.members' holds " +
                                            std::to_string(n) +
                                            " members; a replica set has at least 1 and at most " +
                                            std::to_string(kMaxMembers));
  }
  size_t local = 0;
  int voters = 0;
  int electable = 0;
  for (size_t i = 0; i < n; ++i) {
    const MemberConfig& m = members[i];
    if (IsLocalHost(m.host)) ++local;
    if (m.Voter()) ++voters;
    if (!m.arbiter_only && m.priority > 0) ++electable;
    for (size_t j = i + 1; j < n; ++j) {
      if (m.id == members[j].id) {
        return Status(ErrorCode::kBadValue, "Two members have the same _id: " + MemberContext(i) +
                                                "._id == " + MemberContext(j) +
                                                "._id == " + std::to_string(m.id));
      }
      if (m.host == members[j].host) {
        return Status(ErrorCode::kBadValue, "Two members have the same host: " + MemberContext(i) +
                                                ".host == " + MemberContext(j) +
                                                ".host == " + m.host);
      }
    }
  }
  // A set that mixes loopback and other addresses cannot be reached the same way from every
  // member.
  if (local != 0 && local != n) {
    return Status(ErrorCode::kBadValue,
                  "ReplSetConfig.members.host: either every host must be a localhost address or "
                  "none may be; " +
                      std::to_string(local) + " of " + std::to_string(n) + " are");
  }
  if (voters == 0 || voters > kMaxVotingMembers) {
    return Status(ErrorCode::kBadValue, "ReplSetConfig.members.votes: " + std::to_string(voters) +
                                            " members vote; a replica set has at least 1 and at "
                                            "most " +
                                            std::to_string(kMaxVotingMembers) + " voting members");
  }
  if (electable == 0) {
    return Status(ErrorCode::kBadValue,
                  "ReplSetConfig.members.priority: no member can become primary; at least one "
                  "must not be an arbiter and have priority > 0");
  }
  for (size_t i = 0; i < n; ++i) {
    if (members[i].arbiter_only && members[i].priority != 0) {
      return Status(ErrorCode::kInvalidReplicaSetConfig,
                    MemberContext(i) + ".priority: member " + members[i].host +
                        " is an arbiter, whose priority must be 0, found " +
                        Num(members[i].priority));
    }
  }
  return Status::OK();
}

Status ReplicaSetConfig::ValidateForInitiate() const {
  if (settings.replica_set_id) {
    return Status(ErrorCode::kInvalidReplicaSetConfig,
                  "BSON field 'ReplSetConfig.settings.replicaSetId' cannot be given to "
                  "replSetInitiate, which generates it");
  }
  if (version != 1) {
    return Status(ErrorCode::kNewReplicaSetConfigurationIncompatible,
                  "BSON field 'ReplSetConfig.version' must be 1 to initiate a replica set, found " +
                      Num(version));
  }
  return Status::OK();
}

BsonObj ReplicaSetConfig::ToBson() const {
  BsonBuilder b;
  b.AppendString("_id", set_name);
  AppendSmallInt(b, "version", version);
  // -1 means "no term" and is not written (MongoDB's serializeTermField).
  if (term != -1) AppendSmallInt(b, "term", term);
  size_t array = b.OpenArray("members");
  for (size_t i = 0; i < members.size(); ++i) {
    b.AppendObject(std::to_string(i), members[i].ToBson());
  }
  b.Close(array);
  b.AppendInt64("protocolVersion", protocol_version);
  b.AppendBool("writeConcernMajorityJournalDefault", write_concern_majority_journal_default);
  b.AppendObject("settings", settings.ToBson());
  return b.Obj();
}

const MemberConfig* ReplicaSetConfig::FindMemberById(int id) const {
  for (const MemberConfig& m : members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

const MemberConfig* ReplicaSetConfig::FindMemberByHost(std::string_view host) const {
  auto canonical = CanonicalHostAndPort(host);
  const std::string wanted = canonical.ok() ? canonical.value() : std::string(host);
  for (const MemberConfig& m : members) {
    if (m.host == wanted) return &m;
  }
  return nullptr;
}

int ReplicaSetConfig::VotingMembers() const {
  return static_cast<int>(std::count_if(members.begin(), members.end(),
                                        [](const MemberConfig& m) { return m.Voter(); }));
}

int ReplicaSetConfig::MajorityVoteCount() const { return VotingMembers() / 2 + 1; }

int ReplicaSetConfig::WriteMajorityCount() const {
  const int data_bearing_voters =
      static_cast<int>(std::count_if(members.begin(), members.end(), [](const MemberConfig& m) {
        return m.Voter() && !m.arbiter_only;
      }));
  return std::min(MajorityVoteCount(), data_bearing_voters);
}

}  // namespace hourglass::repl
