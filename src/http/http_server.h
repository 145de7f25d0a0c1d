// HttpServer: the HTTP port (--httpPort), over GNU libmicrohttpd (Debian's libmicrohttpd-dev):
// a maintained HTTP/1.1 implementation (keep-alive, chunked request bodies, pipelining, request
// smuggling defenses) fuzzed by OSS-Fuzz, where a hand-written parser would be one more thing to
// harden. As the wire port, one thread per connection: a handler may block (it runs commands).
//
// A request reaches the handler whole: its body gathered up to `max_body_bytes` (beyond that the
// handler is not called and the client gets 413), query parameters percent-decoded, header names
// lower-cased. At most 1,000 connections at a time per address. Requests are handled concurrently;
// Start and Stop are not called concurrently with each other. Stop (or the destructor) waits for
// the connections' threads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace hourglass::http {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string remote;  // "127.0.0.1:53422"
  std::string local;   // the address and port the request came in on
};

struct HttpResponse {
  int status = 200;
  std::string content_type;  // none when empty
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// HTTPS: the server's certificate chain and private key (PEM; one text may hold both, as
// --tlsCertificateKeyFile does), and the key's password if it is encrypted. GnuTLS, which
// libmicrohttpd speaks TLS with, does the handshake.
struct HttpsOptions {
  std::string certificate_pem;
  std::string key_pem;
  std::string key_password;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // Listens on `port` at each address of `bind_ip` (comma-separated, as --bind_ip); port 0 picks
  // a free one; with `https`, speaks only HTTPS. SocketException (9001) naming the address when
  // one cannot be bound (or the certificate or key cannot be used).
  static StatusWith<std::unique_ptr<HttpServer>> Start(const std::string& bind_ip, int port,
                                                       size_t max_body_bytes, Handler handler,
                                                       std::optional<HttpsOptions> https = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  void Stop();

 private:
  struct Daemon;
  HttpServer() = default;

  int port_ = 0;
  size_t max_body_bytes_ = 0;
  Handler handler_;
  std::optional<HttpsOptions> https_;  // kept while the daemons may read it
  std::vector<std::unique_ptr<Daemon>> daemons_;

  friend struct Callbacks;
};

}  // namespace hourglass::http
