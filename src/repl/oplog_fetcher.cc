#include "repl/oplog_fetcher.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "repl/internal_auth.h"
#include "repl/wire_transport.h"
#include "wire/op_msg.h"

namespace hourglass::repl {

namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

Status Unreachable(const std::string& host, const std::string& why) {
  return Status(ErrorCode::kHostUnreachable, "cannot read the oplog of " + host + ": " + why);
}

// One blocking connection to a member's wire port.
class Connection {
 public:
  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }

  Status Open(const std::string& host) {
    host_ = host;
    sockaddr_storage addr{};
    if (!ResolveMemberAddress(host, &addr)) return Unreachable(host, "it does not resolve");
    fd_ = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Unreachable(host, strerror(errno));
    timeval limit{30, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
    socklen_t len = addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
    if (connect(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
      return Unreachable(host, strerror(errno));
    }
    return Status::OK();
  }

  // Logs in as the internal user with `key` (nothing when it is empty).
  Status Login(const std::string& key) {
    if (key.empty()) return Status::OK();
    InternalLogin login(key);
    std::optional<BsonObj> next = login.Start();
    while (next) {
      HG_ASSIGN_OR_RETURN(BsonObj reply, Send(*next));
      HG_ASSIGN_OR_RETURN(next, login.Next(reply));
    }
    return Status::OK();
  }

  // Sends `cmd` and returns the reply's body; a reply with ok: 0 is its error.
  StatusWith<BsonObj> Run(const BsonObj& cmd) {
    HG_ASSIGN_OR_RETURN(BsonObj body, Send(cmd));
    HG_RETURN_IF_ERROR(ReplyStatus(body, "reading from " + host_ + ": "));
    return body;
  }

 private:
  // Sends `cmd` and returns the reply's body, whatever it says.
  StatusWith<BsonObj> Send(const BsonObj& cmd) {
    std::string request = wire::BuildOpMsg(++request_id_, 0, cmd);
    for (size_t sent = 0; sent < request.size();) {
      ssize_t n = send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return Unreachable(host_, n < 0 ? strerror(errno) : "connection closed");
      sent += static_cast<size_t>(n);
    }
    std::string reply(4, '\0');
    HG_RETURN_IF_ERROR(ReadExactly(reply.data(), 4));
    int32_t size = bson::ReadInt32(reply.data());
    if (size < 16 || size > 48'000'000) return Unreachable(host_, "a malformed reply");
    reply.resize(static_cast<size_t>(size));
    HG_RETURN_IF_ERROR(ReadExactly(reply.data() + 4, reply.size() - 4));
    auto parsed = wire::ParseOpMsg(std::string_view(reply));
    if (!parsed.ok()) return Unreachable(host_, parsed.status().reason());
    return parsed.value().body.Owned();
  }

  Status ReadExactly(char* p, size_t n) {
    while (n > 0) {
      ssize_t got = recv(fd_, p, n, 0);
      if (got <= 0) return Unreachable(host_, got < 0 ? strerror(errno) : "connection closed");
      p += got;
      n -= static_cast<size_t>(got);
    }
    return Status::OK();
  }

  std::string host_;
  int fd_ = -1;
  int32_t request_id_ = 0;
};

// The documents of a cursor reply's `batch_field` (firstBatch or nextBatch), and its id.
Status TakeBatch(const BsonObj& reply, std::string_view batch_field, std::vector<BsonObj>* docs,
                 int64_t* cursor_id) {
  BsonElement cursor = reply["cursor"];
  if (cursor.type() != BsonType::kObject || cursor.Obj()[batch_field].type() != BsonType::kArray) {
    return Status(ErrorCode::kHostUnreachable, "a cursor reply without its batch");
  }
  docs->clear();
  for (BsonElement e : cursor.Obj()[batch_field].Obj()) {
    if (e.type() == BsonType::kObject) docs->push_back(e.Obj().Owned());
  }
  *cursor_id = cursor.Obj()["id"].NumberLong();
  return Status::OK();
}

// Runs `cmd` (which opens a cursor) and its getMores on `coll` of `db` (batchSize `batch`, 0:
// the server's), handing `fn` each batch.
Status ReadCursor(Connection& conn, const BsonObj& cmd, const std::string& db,
                  const std::string& coll, int32_t batch,
                  const std::function<Status(const std::vector<BsonObj>&)>& fn) {
  HG_ASSIGN_OR_RETURN(BsonObj reply, conn.Run(cmd));
  std::vector<BsonObj> docs;
  int64_t cursor_id = 0;
  HG_RETURN_IF_ERROR(TakeBatch(reply, "firstBatch", &docs, &cursor_id));
  while (true) {
    if (!docs.empty()) HG_RETURN_IF_ERROR(fn(docs));
    if (cursor_id == 0) return Status::OK();
    BsonBuilder more;
    more.AppendInt64("getMore", cursor_id);
    more.AppendString("collection", coll);
    if (batch > 0) more.AppendInt32("batchSize", batch);
    more.AppendString("$db", db);
    HG_ASSIGN_OR_RETURN(reply, conn.Run(more.Obj()));
    HG_RETURN_IF_ERROR(TakeBatch(reply, "nextBatch", &docs, &cursor_id));
  }
}

}  // namespace

Status FetchOplog(const std::string& host, const std::string& key, uint64_t from_ts, uint64_t to_ts,
                  const std::function<Status(const std::vector<BsonObj>&)>& fn) {
  Connection conn;
  HG_RETURN_IF_ERROR(conn.Open(host));
  HG_RETURN_IF_ERROR(conn.Login(key));
  BsonBuilder find;
  find.AppendString("find", "oplog.rs");
  size_t filter = find.OpenObject("filter");
  size_t ts = find.OpenObject("ts");
  find.AppendTimestamp("$gte", from_ts);
  find.AppendTimestamp("$lte", to_ts);
  find.Close(ts);
  find.Close(filter);
  size_t sort = find.OpenObject("sort");
  find.AppendInt32("$natural", 1);
  find.Close(sort);
  find.AppendInt32("batchSize", 1000);
  find.AppendString("$db", "local");
  size_t pref = find.OpenObject("$readPreference");
  find.AppendString("mode", "primaryPreferred");
  find.Close(pref);
  return ReadCursor(conn, find.Obj(), "local", "oplog.rs", 1000, fn);
}

Status FetchCopy(const std::string& host, const std::string& key, uint64_t from_ts,
                 const std::function<Status(const std::vector<BsonObj>&)>& fn) {
  Connection conn;
  HG_RETURN_IF_ERROR(conn.Open(host));
  HG_RETURN_IF_ERROR(conn.Login(key));
  BsonBuilder cmd;
  cmd.AppendInt32("hgCloneSnapshot", 1);
  cmd.AppendTimestamp("from", from_ts);
  cmd.AppendString("$db", "admin");
  // Batches of up to 16 MiB (the server's limit), whatever their count.
  return ReadCursor(conn, cmd.Obj(), "admin", "$cmd.hgCloneSnapshot", 0, fn);
}

}  // namespace hourglass::repl
