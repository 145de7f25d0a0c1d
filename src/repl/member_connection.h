// MemberConnection: one blocking connection from this member to another member's wire port, for
// the requests members make of each other outside Raft's own connection: reading the oplog or
// the data to catch up (oplog_fetcher.h), asking a member whether it can join a configuration
// (quorum_check.h). Every reply waits at most the limit given to Open.
// Not thread-safe: one thread uses a connection at a time.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::repl {

class MemberConnection {
 public:
  MemberConnection() = default;
  MemberConnection(const MemberConnection&) = delete;
  MemberConnection& operator=(const MemberConnection&) = delete;
  ~MemberConnection();

  // Connects to `host` ("host:port"), each send and reply then limited to `limit_secs`.
  // HostUnreachable (6) when it cannot: the reason names the host.
  Status Open(const std::string& host, int limit_secs = 30);
  // Logs in as the internal user with `key` (nothing when it is empty).
  Status Login(const std::string& key);
  // Sends `cmd` (with its $db) and returns the reply's body; a reply with ok: 0 is its error,
  // a connection lost or a reply that is not a server's is HostUnreachable ("network error while
  // attempting to run command '<name>' on host '<host>'", as mongod words it).
  StatusWith<bson::BsonObj> Run(const bson::BsonObj& cmd);

 private:
  // Sends `cmd` and returns the reply's body, whatever it says.
  StatusWith<bson::BsonObj> Send(const bson::BsonObj& cmd);
  // False, with why, when the connection ends or fails first.
  bool ReadExactly(char* p, size_t n, std::string* why);

  std::string host_;
  int fd_ = -1;
  int32_t request_id_ = 0;
};

}  // namespace hourglass::repl
