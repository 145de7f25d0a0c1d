#include "repl/wire_transport.h"

#include <netdb.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "base/fail_point.h"
#include "base/logger.h"
#include "bson/bson.h"
#include "repl/internal_auth.h"
#include "wire/op_msg.h"

namespace hourglass::repl {

HG_FAIL_POINT_DEFINE(hgPartitionMember);

// One outgoing connection on its way to Raft: TCP connect, the hgRaftConnect command, its reply.
struct WireTransport::Dial {
  WireTransport* transport = nullptr;
  raft_uv_connect* req = nullptr;
  raft_uv_connect_cb cb = nullptr;
  uv_tcp_t* tcp = nullptr;  // raft_malloc'd: Raft frees the handle of a connection it took
  uv_connect_t connect{};
  uv_write_t write{};
  std::unique_ptr<InternalLogin> login;  // until logged in (with a key)
  bson::BsonObj hello;                   // hgRaftConnect
  int32_t request_id = 0;
  std::string request;
  std::string reply;
  bool finished = false;  // told Raft; callbacks still pending on the handle do nothing
  uv_timer_t timer{};     // gives up on a peer that accepts and never answers
  int closing = 0;        // handles of the dial still closing: the last close frees it
  char chunk[4096] = {};
};

namespace {

void FreeHandle(uv_handle_t* h) { raft_free(h); }

// The close callback of a dial's handles (its connection, raft_malloc'd, and its timer).
void ClosedDialHandle(uv_handle_t* h) {
  auto* dial = static_cast<WireTransport::Dial*>(h->data);
  if (h->type == UV_TCP) raft_free(h);
  if (--dial->closing == 0) delete dial;
}

// How long a dial may take, connect to answer: Raft dials a peer again after a failure.
constexpr uint64_t kDialTimeoutMs = 5000;

}  // namespace

bool ResolveMemberAddress(const std::string& address, sockaddr_storage* out) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  // Members are named by address in practice (numeric: no lookup). A name is looked up here, on
  // the loop thread; IPv4 first, as servers listen on 127.0.0.1 by default and "localhost"
  // often resolves to ::1 first.
  struct addrinfo hints = {};
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return false;
  }
  const struct addrinfo* pick = found;
  for (const struct addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  }
  std::memcpy(out, pick->ai_addr, pick->ai_addrlen);
  freeaddrinfo(found);
  return true;
}

WireTransport::WireTransport(uv_loop_t* loop, std::string set_name, std::string key)
    : loop_(loop), set_name_(std::move(set_name)), key_(std::move(key)) {
  // `impl` is the transport's own; raft_uv_init takes `data` for itself.
  transport_.impl = this;
  transport_.init = [](raft_uv_transport* t, raft_id id, const char* address) {
    auto* self = static_cast<WireTransport*>(t->impl);
    self->id_ = id;
    self->address_ = address;
    return 0;
  };
  transport_.listen = [](raft_uv_transport* t, raft_uv_accept_cb cb) {
    static_cast<WireTransport*>(t->impl)->accept_ = cb;
    return 0;
  };
  transport_.connect = [](raft_uv_transport* t, raft_uv_connect* req, raft_id id,
                          const char* address, raft_uv_connect_cb cb) {
    return static_cast<WireTransport*>(t->impl)->Connect(req, id, address, cb);
  };
  transport_.close = [](raft_uv_transport* t, raft_uv_transport_close_cb cb) {
    static_cast<WireTransport*>(t->impl)->Close(cb);
  };
}

void WireTransport::Poll() {
  if (!hgPartitionMember.ShouldFail()) return;
  // The loop's TCP handles are Raft's connections and the dials on their way to it.
  uv_walk(
      loop_,
      [](uv_handle_t* h, void*) {
        uv_os_fd_t fd;
        if (h->type == UV_TCP && !uv_is_closing(h) && uv_fileno(h, &fd) == 0) {
          shutdown(fd, SHUT_RDWR);
        }
      },
      nullptr);
}

void WireTransport::Adopt(int fd, uint64_t from_id, const std::string& from_address) {
  if (accept_ == nullptr || closing_ || hgPartitionMember.ShouldFail()) {
    close(fd);
    return;
  }
  auto* tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
  if (tcp == nullptr) {
    close(fd);
    return;
  }
  uv_tcp_init(loop_, tcp);
  if (uv_tcp_open(tcp, fd) != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(tcp), FreeHandle);
    close(fd);
    return;
  }
  accept_(&transport_, from_id, from_address.c_str(), reinterpret_cast<uv_stream_t*>(tcp));
}

int WireTransport::Connect(raft_uv_connect* req, raft_id id, const char* address,
                           raft_uv_connect_cb cb) {
  if (closing_) return RAFT_CANCELED;
  if (hgPartitionMember.ShouldFail()) return RAFT_NOCONNECTION;
  sockaddr_storage to;
  if (!ResolveMemberAddress(address, &to)) return RAFT_NOCONNECTION;
  auto* tcp = static_cast<uv_tcp_t*>(raft_malloc(sizeof(uv_tcp_t)));
  if (tcp == nullptr) return RAFT_NOMEM;
  uv_tcp_init(loop_, tcp);
  auto* dial = new Dial();
  dial->transport = this;
  dial->req = req;
  dial->cb = cb;
  dial->tcp = tcp;
  tcp->data = dial;
  dial->connect.data = dial;
  dial->timer.data = dial;
  bson::BsonBuilder hello;
  hello.AppendInt32("hgRaftConnect", 1);
  hello.AppendString("setName", set_name_);
  hello.AppendInt64("from", static_cast<int64_t>(id_));
  hello.AppendString("fromAddress", address_);
  hello.AppendInt64("to", static_cast<int64_t>(id));
  hello.AppendString("toAddress", address);
  hello.AppendString("$db", "admin");
  dial->hello = hello.Obj();
  if (!key_.empty()) dial->login = std::make_unique<InternalLogin>(key_);
  int rv = uv_tcp_connect(&dial->connect, tcp, reinterpret_cast<sockaddr*>(&to),
                          [](uv_connect_t* c, int status) {
                            auto* d = static_cast<Dial*>(c->data);
                            if (d->finished) return;
                            if (status != 0) {
                              return d->transport->Finish(d, RAFT_NOCONNECTION);
                            }
                            d->transport->Send(d, d->login ? d->login->Start() : d->hello);
                          });
  if (rv != 0) {
    tcp->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(tcp), FreeHandle);
    delete dial;
    return RAFT_NOCONNECTION;
  }
  dials_.insert(dial);
  uv_timer_init(loop_, &dial->timer);
  uv_timer_start(
      &dial->timer,
      [](uv_timer_t* t) {
        auto* d = static_cast<Dial*>(t->data);
        d->transport->Finish(d, RAFT_NOCONNECTION);
      },
      kDialTimeoutMs, 0);
  return 0;
}

void WireTransport::Send(Dial* dial, const bson::BsonObj& cmd) {
  dial->request = wire::BuildOpMsg(++dial->request_id, 0, cmd);
  dial->reply.clear();
  uv_buf_t buf = uv_buf_init(dial->request.data(), static_cast<unsigned>(dial->request.size()));
  dial->write.data = dial;
  int w = uv_write(&dial->write, reinterpret_cast<uv_stream_t*>(dial->tcp), &buf, 1,
                   [](uv_write_t* w, int status) {
                     auto* d = static_cast<Dial*>(w->data);
                     if (d->finished) return;
                     if (status != 0) return d->transport->Finish(d, RAFT_NOCONNECTION);
                     d->transport->ReadReply(d);
                   });
  if (w != 0) Finish(dial, RAFT_NOCONNECTION);
}

void WireTransport::OnReply(Dial* dial, const bson::BsonObj& reply) {
  if (dial->login) {
    StatusWith<std::optional<bson::BsonObj>> next = dial->login->Next(reply);
    if (!next.ok()) {
      LOGW("REPL", 8800319, "Cannot log in to a member as the internal user",
           "{\"error\": " + JsonQuote(next.status().ToString()) + "}");
      return Finish(dial, RAFT_NOCONNECTION);
    }
    if (next.value()) return Send(dial, *next.value());
    dial->login.reset();  // logged in
    return Send(dial, dial->hello);
  }
  Finish(dial, reply["ok"].NumberDouble() == 1.0 ? 0 : RAFT_NOCONNECTION);
}

void WireTransport::ReadReply(Dial* dial) {
  int rv = uv_read_start(
      reinterpret_cast<uv_stream_t*>(dial->tcp),
      [](uv_handle_t* h, size_t, uv_buf_t* buf) {
        auto* d = static_cast<Dial*>(h->data);
        *buf = uv_buf_init(d->chunk, sizeof(d->chunk));
      },
      [](uv_stream_t* s, ssize_t n, const uv_buf_t*) {
        auto* d = static_cast<Dial*>(s->data);
        if (n < 0) return d->transport->Finish(d, RAFT_NOCONNECTION);
        d->reply.append(d->chunk, static_cast<size_t>(n));
        if (d->reply.size() < 4) return;
        size_t size = static_cast<size_t>(bson::ReadInt32(d->reply.data()));
        if (size > (1u << 20)) return d->transport->Finish(d, RAFT_NOCONNECTION);
        if (d->reply.size() < size) return;
        uv_read_stop(s);
        // The peer sends nothing after its reply until this member does: exactly one message.
        auto parsed = wire::ParseOpMsg(std::string_view(d->reply).substr(0, size));
        if (!parsed.ok() || d->reply.size() != size) {
          return d->transport->Finish(d, RAFT_NOCONNECTION);
        }
        d->transport->OnReply(d, parsed.value().body.Owned());
      });
  if (rv != 0) Finish(dial, RAFT_NOCONNECTION);
}

void WireTransport::Finish(Dial* dial, int status) {
  if (dial->finished) return;
  dial->finished = true;
  dials_.erase(dial);
  uv_timer_stop(&dial->timer);
  uv_tcp_t* tcp = dial->tcp;
  raft_uv_connect* req = dial->req;
  raft_uv_connect_cb cb = dial->cb;
  if (status == 0) {
    // Connected, written, read: no callback of the connection is pending, and Raft owns the
    // handle now. The dial goes with its timer's close.
    tcp->data = nullptr;
    dial->closing = 1;
    uv_close(reinterpret_cast<uv_handle_t*>(&dial->timer), ClosedDialHandle);
    cb(req, reinterpret_cast<uv_stream_t*>(tcp), 0);
    return;
  }
  // Callbacks still pending on the connection (a cancelled connect or write) run before its
  // close callback; the dial goes when both of its handles have closed.
  dial->closing = 2;
  uv_close(reinterpret_cast<uv_handle_t*>(tcp), ClosedDialHandle);
  uv_close(reinterpret_cast<uv_handle_t*>(&dial->timer), ClosedDialHandle);
  cb(req, nullptr, status);
}

void WireTransport::Close(raft_uv_transport_close_cb cb) {
  closing_ = true;
  accept_ = nullptr;
  // Dials still on their way are cancelled; their handles close with them.
  while (!dials_.empty()) Finish(*dials_.begin(), RAFT_CANCELED);
  cb(&transport_);
}

}  // namespace hourglass::repl
