#include "repl/member_connection.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "repl/internal_auth.h"
#include "repl/wire_transport.h"
#include "wire/op_msg.h"

namespace hourglass::repl {

namespace {

Status Unreachable(const std::string& host, const std::string& why) {
  return Status(ErrorCode::kHostUnreachable,
                "Error connecting to " + host + " :: caused by :: " + why);
}

// A connection made, then lost or answered with garbage: mongod's words for a command that
// failed so.
Status Lost(const std::string& host, std::string_view command, const std::string& why) {
  return Status(ErrorCode::kHostUnreachable, "network error while attempting to run command '" +
                                                 std::string(command) + "' on host '" + host +
                                                 "' :: caused by :: " + why);
}

}  // namespace

MemberConnection::~MemberConnection() {
  if (fd_ >= 0) close(fd_);
}

Status MemberConnection::Open(const std::string& host, int limit_secs) {
  host_ = host;
  sockaddr_storage addr{};
  if (!ResolveMemberAddress(host, &addr)) return Unreachable(host, "it does not resolve");
  fd_ = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Unreachable(host, strerror(errno));
  // On Linux the send limit bounds connect() too.
  timeval limit{limit_secs, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  socklen_t len = addr.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (connect(fd_, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    return Unreachable(host, strerror(errno));
  }
  return Status::OK();
}

Status MemberConnection::Login(const std::string& key) {
  if (key.empty()) return Status::OK();
  InternalLogin login(key);
  std::optional<bson::BsonObj> next = login.Start();
  while (next) {
    HG_ASSIGN_OR_RETURN(bson::BsonObj reply, Send(*next));
    HG_ASSIGN_OR_RETURN(next, login.Next(reply));
  }
  return Status::OK();
}

StatusWith<bson::BsonObj> MemberConnection::Run(const bson::BsonObj& cmd) {
  HG_ASSIGN_OR_RETURN(bson::BsonObj body, Send(cmd));
  HG_RETURN_IF_ERROR(ReplyStatus(body, "reading from " + host_ + ": "));
  return body;
}

StatusWith<bson::BsonObj> MemberConnection::Send(const bson::BsonObj& cmd) {
  const std::string_view command = cmd.FirstElement().FieldName();
  std::string request = wire::BuildOpMsg(++request_id_, 0, cmd);
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return Lost(host_, command, n < 0 ? strerror(errno) : "connection closed");
    sent += static_cast<size_t>(n);
  }
  std::string reply(4, '\0');
  std::string why;
  if (!ReadExactly(reply.data(), 4, &why)) return Lost(host_, command, why);
  int32_t size = bson::ReadInt32(reply.data());
  if (size < 16 || size > 48'000'000) return Lost(host_, command, "a malformed reply");
  reply.resize(static_cast<size_t>(size));
  if (!ReadExactly(reply.data() + 4, reply.size() - 4, &why)) return Lost(host_, command, why);
  auto parsed = wire::ParseOpMsg(std::string_view(reply));
  if (!parsed.ok()) return Lost(host_, command, parsed.status().reason());
  return parsed.value().body.Owned();
}

bool MemberConnection::ReadExactly(char* p, size_t n, std::string* why) {
  while (n > 0) {
    ssize_t got = recv(fd_, p, n, 0);
    if (got <= 0) {
      *why = got < 0 ? strerror(errno) : "connection closed";
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace hourglass::repl
