#include "net/listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "base/interrupt.h"
#include "base/logger.h"
#include "commands/dispatcher.h"
#include "commands/operation_registry.h"
#include "net/tls.h"
#include "wire/message.h"
#include "wire/op_compressed.h"
#include "wire/op_msg.h"
#include "wire/op_query.h"

namespace hourglass::net {

using asio::ip::tcp;
using bson::BsonBuilder;
using bson::BsonObj;
using commands::ClientState;
using commands::ServiceContext;

namespace {

std::atomic<int32_t> g_next_request_id{1};
std::atomic<int64_t> g_next_connection_id{1};

std::string EndpointText(const tcp::endpoint& ep) {
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

// One connection's byte stream: the socket itself, or the TLS session over it.
class Stream {
 public:
  explicit Stream(tcp::socket& sock) : sock_(sock) {}
  void StartTls(std::unique_ptr<TlsConnection> tls) { tls_ = std::move(tls); }
  bool is_tls() const { return tls_ != nullptr; }

  // Reads exactly n bytes; false on EOF or error.
  bool ReadExactly(char* buf, size_t n) {
    if (tls_) return tls_->ReadExactly(buf, n);
    asio::error_code ec;
    asio::read(sock_, asio::buffer(buf, n), ec);
    return !ec;
  }
  bool WriteAll(const std::string& bytes) {
    if (tls_) return tls_->WriteAll(bytes);
    asio::error_code ec;
    asio::write(sock_, asio::buffer(bytes), ec);
    return !ec;
  }
  void Close() {
    if (tls_) tls_->Close();
    tls_.reset();
  }

 private:
  tcp::socket& sock_;
  std::unique_ptr<TlsConnection> tls_;
};

// The first bytes the client sent, left unread; false if it hung up before sending them all.
bool PeekExactly(int fd, char (&buf)[wire::kHeaderSize]) {
  for (;;) {
    ssize_t got = ::recv(fd, buf, sizeof buf, MSG_PEEK | MSG_WAITALL);
    if (got < 0 && errno == EINTR) continue;
    return got == static_cast<ssize_t>(sizeof buf);
  }
}

// mongod's line for a connection it ends because of what the client sent.
void LogReceiveError(const ClientState& client, const Status& st) {
  LOGI("NETWORK", 22988, "Error receiving request from client. Ending connection from remote",
       "{\"error\":" + JsonQuote(st.ToString()) + ",\"remote\":" + JsonQuote(client.remote) +
           ",\"connectionId\":" + std::to_string(client.connection_id) + "}");
}

// Outcome of handling one message: the bytes to send back (possibly none) and whether to keep the
// connection.
struct Outcome {
  std::string reply;
  bool close = false;
  // False for replies that must never be compressed (hello, authentication).
  bool compressible = true;
};

Outcome HandleOpMsg(ServiceContext& service, ClientState& client, const wire::MsgHeader& h,
                    std::string message) {
  Outcome out;
  // The documents of the request share this one buffer: no copy per document.
  auto parsed = wire::ParseOpMsg(std::make_shared<const std::string>(std::move(message)));
  int32_t reply_id = g_next_request_id.fetch_add(1);
  if (!parsed.ok()) {
    BsonObj err = commands::ErrorReply(parsed.status());
    LOGW("NETWORK", 22988, "Error parsing OP_MSG",
         "{\"error\":" + JsonQuote(parsed.status().ToString()) + "}");
    out.reply = wire::BuildOpMsg(reply_id, h.request_id, err);
    return out;
  }
  const wire::OpMsg& msg = parsed.value();
  // Commands read the sequences in place (commands/command_request.h).
  std::string db(msg.body["$db"].Str());
  commands::DispatchResult result =
      commands::RunCommandRequest(service, client, {msg.body, msg.sequences}, db);
  if (result.close_connection) return Outcome{{}, true};
  if (msg.more_to_come()) return out;  // the client asked for no reply
  out.reply = wire::BuildOpMsg(reply_id, h.request_id, result.reply);
  out.compressible = result.compressible;
  return out;
}

Outcome HandleOpQuery(ServiceContext& service, ClientState& client, const wire::MsgHeader& h,
                      std::string_view message) {
  Outcome out;
  int32_t reply_id = g_next_request_id.fetch_add(1);
  auto parsed = wire::ParseOpQuery(message);
  auto failure = [&](const Status& st) {
    BsonBuilder b;
    b.AppendString("$err", st.reason());
    b.AppendInt32("code", st.code_number());
    b.AppendString("codeName", st.code_name());
    b.AppendDouble("ok", 0.0);
    return wire::BuildOpReply(reply_id, h.request_id, {b.Obj()}, wire::kReplyQueryFailure);
  };
  if (!parsed.ok()) {
    out.reply = failure(parsed.status());
    return out;
  }
  const wire::OpQuery& q = parsed.value();
  if (!q.IsCommand()) {
    out.reply = failure(Status(ErrorCode::kUnsupportedFormat,
                               "OP_QUERY is no longer supported for queries; use OP_MSG"));
    return out;
  }
  // Legacy drivers may wrap the command: {$query: {...}, $readPreference: {...}}.
  BsonObj cmd = q.query;
  if (cmd.FirstElement().FieldName() == "$query" || cmd.FirstElement().FieldName() == "query") {
    if (cmd.FirstElement().type() == bson::BsonType::kObject) cmd = cmd.FirstElement().Obj();
  }
  // secondaryOk: the flag's bit, or a wrapper's $readPreference other than primary.
  constexpr int32_t kSecondaryOkFlag = 4;
  bson::BsonElement pref = q.query["$readPreference"];
  client.op_query_secondary_ok =
      (q.flags & kSecondaryOkFlag) != 0 || (pref.type() == bson::BsonType::kObject &&
                                            pref.Obj()["mode"].type() == bson::BsonType::kString &&
                                            pref.Obj()["mode"].Str() != "primary");
  commands::DispatchResult result = commands::RunCommandRequest(service, client, cmd, q.Database());
  client.op_query_secondary_ok = false;
  if (result.close_connection) return Outcome{{}, true};
  out.reply = wire::BuildOpReply(reply_id, h.request_id, {result.reply});
  out.compressible = result.compressible;
  return out;
}

Outcome Dispatch(ServiceContext& service, ClientState& client, const wire::MsgHeader& h,
                 std::string message) {
  switch (static_cast<wire::OpCode>(h.op_code)) {
    case wire::OpCode::kMsg:
      return HandleOpMsg(service, client, h, std::move(message));
    case wire::OpCode::kQuery:
      return HandleOpQuery(service, client, h, message);
    default:
      LOGW("NETWORK", 22990, "Unsupported legacy opcode; closing the connection",
           "{\"opCode\":" + std::to_string(h.op_code) + "}");
      return Outcome{{}, true};
  }
}

// Handles one complete message as read from the socket and returns the bytes to send back. A
// compressed request is decompressed first and its reply compressed with the same compressor
// (when the command allows it); logical and per-compressor byte counts are kept here, the
// physical ones by the caller.
Outcome HandleMessage(ServiceContext& service, ClientState& client, std::string message) {
  commands::ServerCounters& counters = service.counters;
  wire::MsgHeader h = wire::ParseHeader(message.data());
  std::optional<wire::Compressor> compressor;
  if (h.op_code == static_cast<int32_t>(wire::OpCode::kCompressed)) {
    auto decompressed = wire::DecompressMessage(message);
    if (!decompressed.ok()) {
      LOGW("NETWORK", 22989, "Error decompressing message",
           "{\"error\":" + JsonQuote(decompressed.status().ToString()) + "}");
      return Outcome{{}, true};
    }
    compressor = decompressed.value().second;
    auto& stats = counters.compression[static_cast<int>(*compressor)];
    stats.decompressor_bytes_in += static_cast<int64_t>(message.size());
    message = std::move(decompressed.value().first);
    stats.decompressor_bytes_out += static_cast<int64_t>(message.size());
    h = wire::ParseHeader(message.data());
    Status st = wire::CheckHeader(h);
    if (!st.ok() || h.op_code == static_cast<int32_t>(wire::OpCode::kCompressed)) {
      return Outcome{{}, true};
    }
  }
  counters.bytes_in += static_cast<int64_t>(message.size());
  Outcome out = Dispatch(service, client, h, std::move(message));
  counters.bytes_out += static_cast<int64_t>(out.reply.size());
  if (out.reply.empty() || !compressor || !out.compressible ||
      *compressor == wire::Compressor::kNoop) {
    return out;
  }
  auto compressed = wire::CompressMessage(out.reply, *compressor);
  if (compressed.ok()) {
    auto& stats = counters.compression[static_cast<int>(*compressor)];
    stats.compressor_bytes_in += static_cast<int64_t>(out.reply.size());
    out.reply = std::move(compressed).value();
    stats.compressor_bytes_out += static_cast<int64_t>(out.reply.size());
  }
  return out;
}

}  // namespace

struct Listener::Impl {
  Impl(ServiceContext& s, const TlsContext* t) : service(s), tls(t), acceptor(io) {}

  ServiceContext& service;
  const TlsContext* tls;
  asio::io_context io;
  tcp::acceptor acceptor;
  std::thread accept_thread;
  std::atomic<bool> stopping{false};

  std::mutex mu;
  std::condition_variable cv;
  std::set<tcp::socket*> live;  // guarded by mu
  int threads = 0;              // guarded by mu

  std::thread disconnect_thread;

  void AcceptLoop();
  void Serve(std::unique_ptr<tcp::socket> sock);
  void DisconnectLoop();
  // Decides how the connection speaks (--tlsMode) and shakes hands if it speaks TLS. False: the
  // connection is to be closed (logged).
  bool Negotiate(tcp::socket& sock, Stream& stream, ClientState& client);
};

bool Listener::Impl::Negotiate(tcp::socket& sock, Stream& stream, ClientState& client) {
  const commands::TlsMode mode = service.options.tls.mode;
  if (mode == commands::TlsMode::kDisabled || tls == nullptr) return true;
  auto refuse = [&](const Status& st) {
    LogReceiveError(client, st);
    return false;
  };
  char first[wire::kHeaderSize];
  if (!PeekExactly(sock.native_handle(), first)) return false;
  if (!LooksLikeTlsHandshake(first)) {
    if (mode == commands::TlsMode::kRequireTls) {
      return refuse(Status(ErrorCode::kSSLHandshakeFailed,
                           "The server is configured to only allow SSL connections"));
    }
    if (mode == commands::TlsMode::kPreferTls) {
      LOGI("NETWORK", 23838,
           "SSL mode is set to 'preferred' and connection to remote is not using SSL.",
           "{\"connectionId\":" + std::to_string(client.connection_id) +
               ",\"remote\":" + JsonQuote(client.remote) + "}");
    }
    return true;
  }
  auto accepted = tls->Accept(sock.native_handle());
  if (!accepted.ok()) return refuse(accepted.status());
  std::unique_ptr<TlsConnection> conn = std::move(accepted).value();
  client.tls = true;
  ++service.counters.tls_connections;
  const std::string protocol = conn->protocol();
  int version = 4;  // unknown
  for (int i = 0; i < 4; ++i) {
    if (protocol == "TLS 1." + std::to_string(i)) version = i;
  }
  ++service.counters.tls_versions[version];
  client.peer_subject = conn->peer_subject();
  // mongod writes this line at debug level 2; at info it tells an operator who connected.
  if (!client.peer_subject.empty()) {
    LOGI("NETWORK", 23229, "Accepted TLS connection from peer",
         "{\"peerSubject\":" + JsonQuote(client.peer_subject) + ",\"protocol\":" +
             JsonQuote(protocol) + ",\"cipher\":" + JsonQuote(conn->cipher()) + "}");
  }
  stream.StartTls(std::move(conn));
  return true;
}

// A connection's thread is busy while its command runs and reads nothing, so a client that goes
// away is noticed here: every 100 ms, the sockets of the operations that have run that long are
// polled for a hang-up, and those operations are killed with ClientDisconnect (279), as mongod
// kills the operations of a client that disconnects. The socket stays open while its operation
// runs (its thread owns it), so its descriptor cannot name another connection meanwhile.
void Listener::Impl::DisconnectLoop() {
  SetThreadLogContext("disconnectWatcher");
  constexpr auto kPeriod = std::chrono::milliseconds(100);
  while (!stopping) {
    std::this_thread::sleep_for(kPeriod);
    std::vector<std::pair<pollfd, std::shared_ptr<OperationControl>>> watched;
    const auto started_before = OperationControl::Clock::now() - kPeriod;
    commands::OperationRegistry::Get().ForEach([&](const commands::RunningOperation& op) {
      if (op.client_fd < 0 || op.started > started_before || op.control->killed()) return;
      watched.push_back({pollfd{op.client_fd, POLLRDHUP, 0}, op.control});
    });
    if (watched.empty()) continue;
    std::vector<pollfd> fds;
    for (const auto& w : watched) fds.push_back(w.first);
    if (poll(fds.data(), fds.size(), 0) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) continue;
      watched[i].second->Kill(ErrorCode::kClientDisconnect);
    }
  }
}

void Listener::Impl::AcceptLoop() {
  SetThreadLogContext("listener");
  while (!stopping) {
    auto sock = std::make_unique<tcp::socket>(io);
    asio::error_code ec;
    acceptor.accept(*sock, ec);
    if (stopping) break;
    if (ec) {
      if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space) {
        LOGW("NETWORK", 23021, "Error accepting new connection",
             "{\"error\":" + JsonQuote(ec.message()) + "}");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      continue;
    }
    if (service.counters.connections_current.load() >= service.options.max_conns) {
      ++service.counters.connections_rejected;
      LOGI("NETWORK", 22942, "Connection refused because there are too many open connections",
           "{\"connectionCount\":" + std::to_string(service.counters.connections_current.load()) +
               "}");
      sock->close(ec);
      continue;
    }
    sock->set_option(tcp::no_delay(true), ec);
    std::lock_guard lk(mu);
    ++threads;
    live.insert(sock.get());
    std::thread([this, s = std::move(sock)]() mutable { Serve(std::move(s)); }).detach();
  }
}

void Listener::Impl::Serve(std::unique_ptr<tcp::socket> sock) {
  ClientState client;
  client.connection_id = g_next_connection_id.fetch_add(1);
  asio::error_code ec;
  client.remote = EndpointText(sock->remote_endpoint(ec));
  client.local = EndpointText(sock->local_endpoint(ec));
  client.socket_fd = sock->native_handle();
  SetThreadLogContext("conn" + std::to_string(client.connection_id));
  ++service.counters.connections_current;
  ++service.counters.connections_total;
  LOGI("NETWORK", 22943, "Connection accepted",
       "{\"remote\":" + JsonQuote(client.remote) +
           ",\"connectionId\":" + std::to_string(client.connection_id) + ",\"connectionCount\":" +
           std::to_string(service.counters.connections_current.load()) + "}");

  Stream stream(*sock);
  const bool negotiated = Negotiate(*sock, stream, client);
  char header[wire::kHeaderSize];
  while (negotiated && !stopping) {
    if (!stream.ReadExactly(header, sizeof header)) break;
    wire::MsgHeader h = wire::ParseHeader(header);
    Status st = wire::CheckHeader(h);
    if (!st.ok() && !stream.is_tls() && LooksLikeTlsHandshake(header)) {
      // Only a header that is not a valid one is taken for TLS here: with --tlsMode disabled a
      // message answering something would otherwise be refused.
      LogReceiveError(client, Status(ErrorCode::kSSLHandshakeFailed,
                                     "SSL handshake received but server is started without SSL "
                                     "support"));
      break;
    }
    if (!st.ok()) {
      LogReceiveError(client, st);
      break;
    }
    std::string message(static_cast<size_t>(h.message_length), '\0');
    std::memcpy(message.data(), header, sizeof header);
    if (!stream.ReadExactly(message.data() + sizeof header, message.size() - sizeof header)) {
      break;
    }
    service.counters.physical_bytes_in += h.message_length;
    ++service.counters.num_requests;
    Outcome out = HandleMessage(service, client, std::move(message));
    if (!out.reply.empty()) {
      service.counters.physical_bytes_out += static_cast<int64_t>(out.reply.size());
      if (!stream.WriteAll(out.reply)) break;
    }
    if (out.close) break;
    if (client.take_over_connection) {
      int fd = fcntl(sock->native_handle(), F_DUPFD_CLOEXEC, 0);
      if (fd >= 0) client.take_over_connection(fd);
      break;
    }
  }
  stream.Close();
  --service.counters.connections_current;
  LOGI("NETWORK", 22944, "Connection ended",
       "{\"remote\":" + JsonQuote(client.remote) +
           ",\"connectionId\":" + std::to_string(client.connection_id) + ",\"connectionCount\":" +
           std::to_string(service.counters.connections_current.load()) + "}");
  std::lock_guard lk(mu);
  live.erase(sock.get());
  sock->close(ec);
  --threads;
  cv.notify_all();
}

Listener::Listener(ServiceContext& service, const TlsContext* tls)
    : impl_(std::make_unique<Impl>(service, tls)) {}

Listener::~Listener() { Shutdown(); }

Status Listener::Bind(const std::string& host, int port) {
  std::string first = host.substr(0, host.find(','));
  if (first == "localhost") first = "127.0.0.1";
  asio::error_code ec;
  auto addr = asio::ip::make_address(first, ec);
  if (ec) return Status(ErrorCode::kBadValue, "invalid bind address '" + first + "'");
  tcp::endpoint ep(addr, static_cast<uint16_t>(port));
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(ErrorCode::kHostUnreachable, "Failed to set up listener on " + first + ":" +
                                                   std::to_string(port) + ": " + ec.message());
  }
  return Status::OK();
}

int Listener::port() const {
  asio::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void Listener::Start() {
  impl_->accept_thread = std::thread([this] { impl_->AcceptLoop(); });
  impl_->disconnect_thread = std::thread([this] { impl_->DisconnectLoop(); });
}

void Listener::Shutdown() {
  if (impl_->stopping.exchange(true)) return;
  asio::error_code ec;
  // Unblocks accept(): shutdown(2) on a listening socket wakes the blocked accept with an error.
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  if (impl_->disconnect_thread.joinable()) impl_->disconnect_thread.join();
  impl_->acceptor.close(ec);
  std::unique_lock lk(impl_->mu);
  for (tcp::socket* s : impl_->live) ::shutdown(s->native_handle(), SHUT_RDWR);
  impl_->cv.wait(lk, [&] { return impl_->threads == 0; });
}

}  // namespace hourglass::net
