#include "repl/quorum_check.h"

#include <utility>
#include <vector>

#include "repl/member_connection.h"

namespace hourglass::repl {

namespace {

// Whether the member at `host` can be one of `config`'s: OK, or why not.
Status AskMember(const std::string& host, const ReplicaSetConfig& config, const std::string& key,
                 QuorumFor why, int limit_secs) {
  MemberConnection conn;
  HG_RETURN_IF_ERROR(conn.Open(host, limit_secs));
  HG_RETURN_IF_ERROR(conn.Login(key));
  bson::BsonBuilder hello;
  hello.AppendInt32("hello", 1);
  hello.AppendString("$db", "admin");
  HG_ASSIGN_OR_RETURN(bson::BsonObj reply, conn.Run(hello.Obj()));
  bson::BsonElement set_name = reply["setName"];
  if (set_name.type() == bson::BsonType::kString) {
    if (set_name.Str() != config.set_name) {
      return Status(ErrorCode::kNodeNotFound, "it is a member of replica set " +
                                                  std::string(set_name.Str()) + ", not " +
                                                  config.set_name);
    }
    if (why == QuorumFor::kInitiate) {
      return Status(ErrorCode::kNodeNotFound, "its replica set is already initiated");
    }
    return Status::OK();
  }
  if (!reply["isreplicaset"].Truthy()) {
    return Status(ErrorCode::kNodeNotFound, "it is not running with --replSet");
  }
  return Status::OK();  // started with --replSet, waiting for a configuration
}

}  // namespace

Status CheckQuorum(const ReplicaSetConfig& config, int self, const std::string& key, QuorumFor why,
                   int limit_secs) {
  std::vector<std::string> responded;
  std::vector<std::pair<std::string, Status>> failed;
  for (size_t i = 0; i < config.members.size(); ++i) {
    const MemberConfig& m = config.members[i];
    Status st = static_cast<int>(i) == self ? Status::OK()
                                            : AskMember(m.host, config, key, why, limit_secs);
    if (st.ok()) {
      if (m.Voter()) responded.push_back(m.host);
    } else {
      failed.emplace_back(m.host, std::move(st));
    }
  }
  auto failures = [&] {
    std::string out;
    for (const auto& [host, st] : failed) {
      if (!out.empty()) out += ", ";
      out += host + " failed with " + st.reason();
    }
    return out;
  };
  if (why == QuorumFor::kInitiate) {
    if (failed.empty()) return Status::OK();
    return Status(ErrorCode::kNodeNotFound,
                  "replSetInitiate quorum check failed because not all proposed set members "
                  "responded affirmatively: " +
                      failures());
  }
  const int needed = config.MajorityVoteCount();
  if (static_cast<int>(responded.size()) >= needed) return Status::OK();
  std::string names;
  for (const std::string& h : responded) names += (names.empty() ? "" : ", ") + h;
  return Status(ErrorCode::kNodeNotFound,
                "Quorum check failed because not enough voting nodes responded; required " +
                    std::to_string(needed) + " but only the following " +
                    std::to_string(responded.size()) + " voting nodes responded: " + names +
                    "; the following nodes did not respond affirmatively: " + failures());
}

}  // namespace hourglass::repl
