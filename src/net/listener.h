// The TCP front door: accepts connections with Asio and serves each on its own thread (the model
// mongod's synchronous transport uses), so a slow command on one connection never stalls another.
// Each connection reads whole messages (header first, then the rest), undoes OP_COMPRESSED, runs
// OP_MSG and legacy OP_QUERY commands through the dispatcher, and writes replies — compressed with
// the request's compressor when the command allows it. Malformed input gets an error reply when
// the message framing is intact and a logged disconnect when it is not.
//
// Thread-safety: Start/Shutdown are called from the main thread; connection threads share only the
// ServiceContext. Shutdown closes the listening socket and every client socket, then waits for the
// connection threads to finish their current command.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "commands/service_context.h"

namespace hourglass::net {

class TlsContext;

class Listener {
 public:
  // `tls` (which must outlive the listener) is the TLS set-up when --tlsMode is not disabled.
  explicit Listener(commands::ServiceContext& service, const TlsContext* tls = nullptr);
  ~Listener();

  // Binds and listens on host:port (host may be a comma-separated list; only the first address
  // is used for now). Fails with a clear Status if the address is in use.
  Status Bind(const std::string& host, int port);
  // Accepts connections on a background thread until Shutdown.
  void Start();
  // Stops accepting, disconnects clients, waits for their threads. Idempotent.
  void Shutdown();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hourglass::net
