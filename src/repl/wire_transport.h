// WireTransport: canonical/raft's network transport over the members' MongoDB wire ports, so a
// replica set needs one port per member, as mongod's does. A member dials another's wire port,
// logs in as the internal user when the set has a key file, sends the command {hgRaftConnect: 1,
// setName, from, fromAddress, to, toAddress} and, once it
// answers ok, both ends hand the TCP connection to Raft (the accepting server's listener gives
// the socket up after the reply: ReplicationCoordinator::AdoptRaftConnection → Adopt).
// Lives on the coordinator's libuv loop thread: every method runs there.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <set>
#include <string>

extern "C" {
#include <raft.h>
#include <raft/uv.h>
}

#include "bson/bson.h"

namespace hourglass::repl {

// A member's "host:port" (or "[v6]:port") as a socket address, IPv4 first (servers listen on
// 127.0.0.1 by default and "localhost" often resolves to ::1 first); false when it does not
// resolve. Blocking (a name is looked up).
bool ResolveMemberAddress(const std::string& address, sockaddr_storage* out);

class WireTransport {
 public:
  // `key`: the --keyFile key; with one, every dial logs in to the peer as the internal user
  // (repl/internal_auth.h) before hgRaftConnect.
  WireTransport(uv_loop_t* loop, std::string set_name, std::string key);
  WireTransport(const WireTransport&) = delete;
  WireTransport& operator=(const WireTransport&) = delete;

  // What raft_uv_init takes; valid for this object's life.
  raft_uv_transport* raft_transport() { return &transport_; }
  // Gives Raft a connection another member opened to this one's wire port; closes `fd` when
  // Raft is not listening (the member is closing).
  void Adopt(int fd, uint64_t from_id, const std::string& from_address);
  // Called every poll of the loop: while the test-only fail point hgPartitionMember is on, this
  // member's Raft connections are cut (shut down, which Raft sees as the peer gone) and no new
  // one is made either way — a network partition around the member, its clients unaffected.
  void Poll();

 public:
  struct Dial;  // one outgoing connection (wire_transport.cc)

 private:
  int Connect(raft_uv_connect* req, raft_id id, const char* address, raft_uv_connect_cb cb);
  void Close(raft_uv_transport_close_cb cb);
  // Writes one command of the dial, then reads the peer's answer (ReadReply).
  void Send(Dial* dial, const bson::BsonObj& cmd);
  // Reads the peer's answer to the last command: the login's next step, hgRaftConnect once
  // logged in, and after its answer the dial is finished.
  void ReadReply(Dial* dial);
  void OnReply(Dial* dial, const bson::BsonObj& reply);
  // Ends a dial: its stream to Raft (status 0) or closed, and the callback told.
  void Finish(Dial* dial, int status);

  uv_loop_t* loop_;
  std::string set_name_;
  std::string key_;
  raft_uv_transport transport_{};
  raft_id id_ = 0;
  std::string address_;
  raft_uv_accept_cb accept_ = nullptr;
  bool closing_ = false;
  std::set<Dial*> dials_;
};

}  // namespace hourglass::repl
