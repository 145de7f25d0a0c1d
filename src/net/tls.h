// TLS for the listener, over OpenSSL: a TlsContext built once at startup from the --tls* options
// (the server's certificate and key, the CA that client certificates must chain to, the protocol
// versions allowed), and a TlsConnection per accepted socket that shakes hands and then reads and
// writes whole buffers, blocking, on its connection's thread.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "commands/service_context.h"

namespace hourglass::net {

class TlsConnection;

class TlsContext {
 public:
  // Loads the certificate, key and CA file (the system's certificate authorities without one:
  // tlsUseSystemCA). InvalidSSLConfiguration (140) with mongod's message when one cannot be used,
  // OpenSSL's reason logged.
  static StatusWith<std::unique_ptr<TlsContext>> Create(const commands::TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // The server certificate's subject (RFC 2253) and expiry (seconds since the epoch), as
  // serverStatus.security reports them.
  const std::string& server_subject() const { return server_subject_; }
  int64_t server_expiration() const { return server_expiration_; }

  // Runs the server side of the handshake on `fd` (a connected, blocking socket) and judges the
  // client's certificate. SSLHandshakeFailed (141) saying why otherwise (OpenSSL's reason, a
  // missing or invalid certificate).
  StatusWith<std::unique_ptr<TlsConnection>> Accept(int fd) const;

 private:
  TlsContext() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  commands::TlsOptions options_;
  std::string server_subject_;
  int64_t server_expiration_ = 0;
};

// One TLS session over a socket the caller owns (and closes after this is destroyed).
class TlsConnection {
 public:
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  // Reads exactly n bytes; false on EOF or error.
  bool ReadExactly(char* buf, size_t n);
  bool WriteAll(const std::string& bytes);
  // Sends close_notify; best effort.
  void Close();

  // The verified client certificate's subject, RFC 2253 (empty without a certificate, or when an
  // invalid one was let through by tlsAllowInvalidCertificates).
  const std::string& peer_subject() const { return peer_subject_; }
  // "TLS 1.3", "TLS 1.2", ... and the cipher, for the connection log line.
  std::string protocol() const;
  std::string cipher() const;

 private:
  friend class TlsContext;
  struct Impl;
  explicit TlsConnection(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::string peer_subject_;
};

// Whether the first 16 bytes a client sent start a TLS handshake rather than a MongoDB message:
// mongod's test, a header whose responseTo is neither 0 nor -1 (a client's first message answers
// nothing; the bytes of a TLS ClientHello there are random).
bool LooksLikeTlsHandshake(const char (&header)[16]);

}  // namespace hourglass::net
