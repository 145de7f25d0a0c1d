#include "http/http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace hourglass::http {

struct HttpServer::Daemon {
  MHD_Daemon* mhd = nullptr;
  ~Daemon() {
    if (mhd != nullptr) MHD_stop_daemon(mhd);
  }
};

namespace {

constexpr intptr_t kMaxConnections = 1000;

// One request's state between the access handler's calls.
struct Pending {
  std::string body;
  bool too_large = false;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string AddressText(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (sa == nullptr) return "";
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "";
}

MHD_Result Queue(MHD_Connection* connection, const HttpResponse& r) {
  MHD_Response* response = MHD_create_response_from_buffer(
      r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  if (!r.content_type.empty()) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  }
  for (const auto& [name, value] : r.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  const MHD_Result ret =
      MHD_queue_response(connection, static_cast<unsigned int>(r.status), response);
  MHD_destroy_response(response);
  return ret;
}

MHD_Result CollectArgument(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* out = static_cast<std::map<std::string, std::string>*>(cls);
  out->emplace(key, value == nullptr ? "" : value);
  return MHD_YES;
}

MHD_Result CollectHeader(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* out = static_cast<std::map<std::string, std::string>*>(cls);
  out->emplace(Lower(key), value == nullptr ? "" : value);
  return MHD_YES;
}

}  // namespace

// The libmicrohttpd callbacks, friends of HttpServer.
struct Callbacks {
  static MHD_Result Access(void* cls, MHD_Connection* connection, const char* url,
                           const char* method, const char* /*version*/, const char* upload_data,
                           size_t* upload_data_size, void** con_cls) {
    auto* server = static_cast<HttpServer*>(cls);
    auto* pending = static_cast<Pending*>(*con_cls);
    if (pending == nullptr) {  // the headers are in: the body, if any, comes next
      pending = new Pending;
      *con_cls = pending;
      const char* length =
          MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
      if (length != nullptr && std::strtoull(length, nullptr, 10) > server->max_body_bytes_) {
        pending->too_large = true;
      }
      return MHD_YES;
    }
    if (*upload_data_size > 0) {
      if (!pending->too_large) {
        if (pending->body.size() + *upload_data_size > server->max_body_bytes_) {
          pending->too_large = true;
          pending->body.clear();
          pending->body.shrink_to_fit();
        } else {
          pending->body.append(upload_data, *upload_data_size);
        }
      }
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (pending->too_large) {
      // InfluxDB's answer to a body over its max-body-size.
      return Queue(connection, HttpResponse{.status = 413,
                                            .content_type = "application/json",
                                            .body = R"({"error":"Request Entity Too Large"})",
                                            .headers = {}});
    }
    HttpRequest request;
    request.method = method;
    request.path = url;
    request.body = std::move(pending->body);
    MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &CollectArgument, &request.query);
    MHD_get_connection_values(connection, MHD_HEADER_KIND, &CollectHeader, &request.headers);
    if (const MHD_ConnectionInfo* info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS)) {
      request.remote = AddressText(info->client_addr);
    }
    // The local address from the socket itself: the daemons list may change meanwhile.
    if (const MHD_ConnectionInfo* info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD)) {
      sockaddr_storage local{};
      socklen_t len = sizeof(local);
      if (getsockname(info->connect_fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
        request.local = AddressText(reinterpret_cast<sockaddr*>(&local));
      }
    }
    return Queue(connection, server->handler_(request));
  }

  static void Completed(void* /*cls*/, MHD_Connection* /*connection*/, void** con_cls,
                        MHD_RequestTerminationCode /*toe*/) {
    delete static_cast<Pending*>(*con_cls);
    *con_cls = nullptr;
  }
};

StatusWith<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& bind_ip, int port,
                                                          size_t max_body_bytes, Handler handler,
                                                          std::optional<HttpsOptions> https) {
  std::unique_ptr<HttpServer> server(new HttpServer);
  server->port_ = port;
  server->max_body_bytes_ = max_body_bytes;
  server->handler_ = std::move(handler);
  server->https_ = std::move(https);
  const HttpsOptions* tls = server->https_ ? &*server->https_ : nullptr;
  size_t start = 0;
  while (start <= bind_ip.size()) {
    size_t comma = bind_ip.find(',', start);
    if (comma == std::string::npos) comma = bind_ip.size();
    std::string host = bind_ip.substr(start, comma - start);
    start = comma + 1;
    host.erase(0, host.find_first_not_of(' '));
    host.erase(host.find_last_not_of(' ') + 1);
    if (host.empty()) continue;
    auto failed = [&](const std::string& why) {
      return Status(ErrorCode::kSocketException, "cannot listen for HTTP on " + host + ":" +
                                                     std::to_string(server->port_) + ": " + why);
    };
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(server->port_);
    if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
      return failed(gai_strerror(rc));
    }
    sockaddr_storage addr{};
    std::memcpy(&addr, found->ai_addr, std::min<size_t>(found->ai_addrlen, sizeof(addr)));
    freeaddrinfo(found);
    // poll() rather than select(), which cannot watch descriptors past 1023 (a server with many
    // tables and connections has them).
    unsigned int flags =
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
    if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    std::vector<MHD_OptionItem> options = {
        {MHD_OPTION_SOCK_ADDR, 0, &addr},
        {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Callbacks::Completed), nullptr},
        {MHD_OPTION_CONNECTION_TIMEOUT, 300, nullptr},
        // Each connection may hold a body of up to max_body_bytes: bounded, as the wire port's.
        {MHD_OPTION_CONNECTION_LIMIT, kMaxConnections, nullptr}};
    if (tls != nullptr) {
      flags |= MHD_USE_TLS;
      options.push_back(
          {MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(tls->certificate_pem.c_str())});
      options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(tls->key_pem.c_str())});
      if (!tls->key_password.empty()) {
        options.push_back(
            {MHD_OPTION_HTTPS_KEY_PASSWORD, 0, const_cast<char*>(tls->key_password.c_str())});
      }
    }
    options.push_back({MHD_OPTION_END, 0, nullptr});
    auto daemon = std::make_unique<Daemon>();
    daemon->mhd = MHD_start_daemon(flags, static_cast<uint16_t>(server->port_), nullptr, nullptr,
                                   &Callbacks::Access, server.get(), MHD_OPTION_ARRAY,
                                   options.data(), MHD_OPTION_END);
    if (daemon->mhd == nullptr) {
      return failed(tls != nullptr
                        ? "the address is in use, or the TLS certificate or key cannot be used"
                        : std::strerror(errno != 0 ? errno : EADDRINUSE));
    }
    if (const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon->mhd, MHD_DAEMON_INFO_BIND_PORT)) {
      server->port_ = info->port;  // the port picked for 0, kept for the other addresses
    }
    server->daemons_.push_back(std::move(daemon));
  }
  if (server->daemons_.empty()) {
    return Status(ErrorCode::kBadValue, "no address to listen for HTTP on in '" + bind_ip + "'");
  }
  return server;
}

void HttpServer::Stop() { daemons_.clear(); }

HttpServer::~HttpServer() { Stop(); }

}  // namespace hourglass::http
