#include "http/http_api.h"

#include <zlib.h>

#include <atomic>
#include <map>

#include "auth/crypto.h"
#include "auth/scram.h"
#include "auth/user_store.h"
#include "base/clock.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "bson/bson.h"
#include "commands/admin_commands.h"
#include "commands/dispatcher.h"
#include "http/measurement_writer.h"
#include "http/metrics.h"
#include "http/prometheus_remote.h"
#include "lineprotocol/line_protocol.h"

namespace hourglass::http {

namespace {

using commands::ClientState;
using commands::ServiceContext;

// The InfluxDB API level these endpoints answer as (clients read it from /ping).
constexpr std::string_view kInfluxVersion = "1.8.10";
// A gzip body may inflate to the body limit, as InfluxDB applies its max-body-size to the
// inflated bytes; beyond, 413.
constexpr size_t kMaxInflatedBytes = kMaxBodyBytes;

HttpResponse Json(int status, std::string body) {
  return HttpResponse{.status = status,
                      .content_type = "application/json",
                      .body = std::move(body),
                      .headers = {{"X-Influxdb-Version", std::string(kInfluxVersion)}}};
}
HttpResponse NoContent() {
  return HttpResponse{.status = 204,
                      .content_type = "",
                      .body = "",
                      .headers = {{"X-Influxdb-Version", std::string(kInfluxVersion)}}};
}
// InfluxDB 1.x's error body, and 2.x's.
HttpResponse V1Error(int status, std::string_view message) {
  HttpResponse r = Json(status, "{\"error\":" + JsonQuote(message) + "}");
  // A header holds one line (libmicrohttpd refuses CR and LF in it): the first.
  r.headers.emplace_back("X-Influxdb-Error", std::string(message.substr(
                                                 0, std::min(message.find('\n'), size_t{1024}))));
  return r;
}
HttpResponse V2Error(int status, std::string_view code, std::string_view message) {
  return Json(status, "{\"code\":" + JsonQuote(code) + ",\"message\":" + JsonQuote(message) + "}");
}

StatusWith<std::string> Gunzip(std::string_view in) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) {
    return Status(ErrorCode::kInternalError, "cannot start gzip decompression");
  }
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (out.size() > kMaxInflatedBytes) break;
    const size_t at = out.size();
    out.resize(at + std::max<size_t>(in.size() * 4, 64 << 10));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + at);
    z.avail_out = static_cast<uInt>(out.size() - at);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(out.size() - z.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      return Status(ErrorCode::kBadValue, "gzip: invalid body");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      return Status(ErrorCode::kBadValue, "gzip: unexpected EOF");
    }
  }
  inflateEnd(&z);
  if (out.size() > kMaxInflatedBytes) {
    return Status(ErrorCode::kBSONObjectTooLarge, "Request Entity Too Large");
  }
  return out;
}

struct Credentials {
  bool given = false;
  std::string user;
  std::string password;
};

// HTTP Basic, InfluxDB 1.8's "Token user:password", or the u and p parameters of 1.x.
StatusWith<Credentials> CredentialsOf(const HttpRequest& req) {
  Credentials c;
  auto header = req.headers.find("authorization");
  if (header != req.headers.end()) {
    std::string_view v = header->second;
    std::string pair;
    if (v.starts_with("Basic ")) {
      auto decoded = auth::Base64Decode(v.substr(6));
      if (!decoded.ok()) return Status(ErrorCode::kBadValue, "");
      pair = decoded.value();
    } else if (v.starts_with("Token ")) {
      pair = std::string(v.substr(6));
    } else {
      return Status(ErrorCode::kBadValue, "");
    }
    const size_t colon = pair.find(':');
    if (colon == std::string::npos) return Status(ErrorCode::kBadValue, "");
    c.given = true;
    c.user = pair.substr(0, colon);
    c.password = pair.substr(colon + 1);
    return c;
  }
  auto u = req.query.find("u");
  auto p = req.query.find("p");
  if (u != req.query.end() || p != req.query.end()) {
    c.given = true;
    if (u != req.query.end()) c.user = u->second;
    if (p != req.query.end()) c.password = p->second;
  }
  return c;
}

// Whether `password` is the one `creds` were made from.
bool PasswordMatches(auth::ScramMechanism mechanism, const auth::ScramCredentials& creds,
                     const std::string& user, const std::string& password) {
  auto prepared = auth::ScramPassword(mechanism, user, password);
  if (!prepared.ok()) return false;
  auth::ScramCredentials derived =
      auth::DeriveScramCredentials(mechanism, prepared.value(), creds.salt, creds.iteration_count);
  return auth::ConstantTimeEqual(derived.stored_key, creds.stored_key);
}

// Logs the request's client in as the admin user the credentials name. The failures InfluxDB
// 1.x gives (401): none given, or they do not match a user.
Status Authenticate(ServiceContext& service, ClientState& client, const Credentials& c) {
  const auto unauthorized = Status(ErrorCode::kAuthenticationFailed, "authorization failed");
  // The generation first, as the wire port reads it: a change after it makes the login re-resolve.
  const uint64_t generation = service.users->generation();
  auto found = service.users->Find(auth::UserName{c.user, "admin"});
  if (!found.ok()) return found.status();
  // The wire port's failed-login line (20249), the mechanism named for what it is here.
  auto failed = [&](std::string_view result) {
    LOGI("ACCESS", 20249, "Authentication failed",
         "{\"mechanism\":\"PLAIN over HTTP\",\"user\":" + JsonQuote(c.user) +
             ",\"db\":\"admin\",\"client\":" + JsonQuote(client.remote) +
             ",\"result\":" + JsonQuote(result) + "}");
    return unauthorized;
  };
  if (!found.value() || found.value()->external) {
    return failed("UserNotFound: Could not find user \"" + c.user + "\" for db \"admin\"");
  }
  const auth::UserDocument& user = *found.value();
  bool ok = false;
  for (auth::ScramMechanism m : {auth::ScramMechanism::kSha256, auth::ScramMechanism::kSha1}) {
    auto creds = user.credentials.find(m);
    if (creds == user.credentials.end()) continue;
    ok = PasswordMatches(m, creds->second, c.user, c.password);
    break;  // the strongest mechanism the user has decides
  }
  if (!ok) return failed("AuthenticationFailed: SCRAM authentication failed, storedKey mismatch");
  return client.auth.Login(user, generation, *service.users);
}

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) {
    if (!s.empty()) s += "\n";
    s += p;
  }
  return s;
}

std::atomic<int64_t> g_http_clients{int64_t{1} << 40};

class Api {
 public:
  explicit Api(ServiceContext& service) : service_(service) {}

  HttpResponse Handle(const HttpRequest& req) {
    const bool read = req.method == "GET" || req.method == "HEAD";
    if (req.path == "/ping") {
      if (!read) return MethodNotAllowed();
      auto verbose = req.query.find("verbose");
      if (verbose != req.query.end() && verbose->second != "" && verbose->second != "0" &&
          verbose->second != "false") {
        return Json(200, "{\"version\":" + JsonQuote(kInfluxVersion) + "}");
      }
      return NoContent();
    }
    if (req.path == "/health") {
      if (!read) return MethodNotAllowed();
      const bool down = service_.shutting_down.load();
      return Json(down ? 503 : 200,
                  std::string("{\"name\":\"hourglassd\",\"message\":") +
                      (down ? "\"shutting down\"" : "\"ready for queries and writes\"") +
                      ",\"status\":" + (down ? "\"fail\"" : "\"pass\"") +
                      ",\"checks\":[],\"version\":" + JsonQuote(commands::kReportedMongoVersion) +
                      "}");
    }
    if (req.path == "/metrics") {
      if (!read) return MethodNotAllowed();
      return Metrics(req);
    }
    if (req.path == "/api/v1/read") {
      if (req.method != "POST") return MethodNotAllowed();
      return PrometheusRead(req);
    }
    if (req.path == "/api/v1/write") {
      if (req.method != "POST") return MethodNotAllowed();
      return PrometheusWrite(req);
    }
    if (req.path == "/write" || req.path == "/api/v2/write") {
      if (req.method != "POST") return MethodNotAllowed();
      return Write(req, /*v2=*/req.path != "/write");
    }
    return HttpResponse{.status = 404,
                        .content_type = "text/plain; charset=utf-8",
                        .body = "404 page not found\n",
                        .headers = {}};
  }

 private:
  static HttpResponse MethodNotAllowed() {
    return HttpResponse{.status = 405,
                        .content_type = "text/plain; charset=utf-8",
                        .body = "Method Not Allowed\n",
                        .headers = {}};
  }

  // The request's internal client, logged in with its credentials under --auth; the answer
  // refusing the request when they are missing or wrong.
  template <typename ErrorFn>
  std::optional<HttpResponse> LogIn(const HttpRequest& req, ClientState& client,
                                    const ErrorFn& error) {
    client.connection_id = g_http_clients.fetch_add(1);
    client.remote = req.remote;
    client.local = req.local;
    if (!service_.options.auth) return std::nullopt;
    auto creds = CredentialsOf(req);
    if (!creds.ok() || !creds.value().given) {
      return error(401, "unauthorized", "unable to parse authentication credentials");
    }
    Status st = Authenticate(service_, client, creds.value());
    if (st.ok()) return std::nullopt;
    return st.code() == ErrorCode::kAuthenticationFailed
               ? error(401, "unauthorized", st.reason())
               : error(500, "internal error", st.reason());
  }

  HttpResponse Metrics(const HttpRequest& req) {
    auto error = [](int status, std::string_view, std::string_view message) {
      return V1Error(status, message);
    };
    ClientState client;
    if (std::optional<HttpResponse> refused = LogIn(req, client, error)) return *refused;
    StatusWith<std::string> text = RenderMetrics(service_, client);
    if (!text.ok()) {
      return error(text.status().code() == ErrorCode::kUnauthorized ? 403 : 500, "",
                   text.status().reason());
    }
    return HttpResponse{.status = 200,
                        .content_type = "text/plain; version=0.0.4; charset=utf-8",
                        .body = std::move(text).value(),
                        .headers = {}};
  }

  // Prometheus reads only the status (2xx done, 4xx dropped, 5xx retried) and logs the body.
  static HttpResponse PrometheusError(int status, std::string_view, std::string_view message) {
    return HttpResponse{.status = status,
                        .content_type = "text/plain; charset=utf-8",
                        .body = std::string(message) + "\n",
                        .headers = {}};
  }
  static std::string PrometheusDb(const HttpRequest& req) {
    auto param = req.query.find("db");
    return param == req.query.end() || param->second.empty() ? std::string(kPrometheusDefaultDb)
                                                             : param->second;
  }

  HttpResponse PrometheusRead(const HttpRequest& req) {
    ClientState client;
    if (auto refused = LogIn(req, client, PrometheusError)) return *refused;
    auto answer = AnswerRemoteRead(service_, client, PrometheusDb(req), req.body);
    if (!answer.ok()) {
      const ErrorCode code = answer.status().code();
      return PrometheusError(code == ErrorCode::kUnauthorized ? 403
                             : code == ErrorCode::kBadValue   ? 400
                                                              : 500,
                             "", answer.status().reason());
    }
    return HttpResponse{.status = 200,
                        .content_type = "application/x-protobuf",
                        .body = std::move(answer).value(),
                        .headers = {{"Content-Encoding", "snappy"}}};
  }

  HttpResponse PrometheusWrite(const HttpRequest& req) {
    auto error = PrometheusError;
    const std::string db = PrometheusDb(req);
    ClientState client;
    if (std::optional<HttpResponse> refused = LogIn(req, client, error)) return *refused;
    auto decoded = DecodeRemoteWrite(req.body);
    if (!decoded.ok()) return error(400, "", decoded.status().reason());
    WriteOutcome outcome;
    for (const MetricSamples& m : decoded.value()) {
      WriteMeasurements(service_, client, db, m.metric, kPrometheusMetaField, m.docs, &outcome);
      if (!outcome.fatal.ok()) break;
    }
    if (!outcome.fatal.ok()) {
      return error(outcome.fatal.code() == ErrorCode::kUnauthorized ? 403 : 503, "",
                   outcome.fatal.reason());
    }
    if (outcome.dropped > 0) {
      return error(
          400, "",
          Join(outcome.errors) + " (dropped " + std::to_string(outcome.dropped) + " samples)");
    }
    return HttpResponse{.status = 204, .content_type = "", .body = "", .headers = {}};
  }

  HttpResponse Write(const HttpRequest& req, bool v2) {
    auto error = [&](int status, std::string_view code, std::string_view message) {
      return v2 ? V2Error(status, code, message) : V1Error(status, message);
    };
    std::string db;
    if (v2) {
      auto bucket = req.query.find("bucket");
      if (bucket == req.query.end() || bucket->second.empty()) {
        return error(400, "invalid", "bucket is required");
      }
      db = bucket->second.substr(0, bucket->second.find('/'));  // "db/rp": the database
    } else {
      auto param = req.query.find("db");
      if (param == req.query.end() || param->second.empty()) {
        return error(400, "invalid", "database is required");
      }
      db = param->second;
    }
    auto precision_param = req.query.find("precision");
    auto precision = lineprotocol::ParsePrecision(
        precision_param == req.query.end() ? "" : precision_param->second, v2);
    if (!precision.ok()) return error(400, "invalid", precision.status().reason());

    ClientState client;
    if (std::optional<HttpResponse> refused = LogIn(req, client, error)) return *refused;

    std::string inflated;
    std::string_view body = req.body;
    auto encoding = req.headers.find("content-encoding");
    if (encoding != req.headers.end() && encoding->second == "gzip") {
      auto out = Gunzip(req.body);
      if (!out.ok()) {
        return out.status().code() == ErrorCode::kBSONObjectTooLarge
                   ? error(413, "request too large", out.status().reason())
                   : error(400, "invalid", out.status().reason());
      }
      inflated = std::move(out).value();
      body = inflated;
    } else if (encoding != req.headers.end() && encoding->second != "identity") {
      return error(415, "invalid", "unsupported Content-Encoding: " + encoding->second);
    }

    lineprotocol::ParseResult parsed = lineprotocol::Parse(body);
    if (parsed.points.empty() && parsed.errors.empty()) return NoContent();
    // InfluxDB 2.x refuses the whole batch for one bad line; 1.x writes the good ones.
    if (!parsed.errors.empty() && (v2 || parsed.points.empty())) {
      return error(400, "invalid", Join(parsed.errors));
    }
    const int64_t now = NowMillis();
    WriteOutcome outcome;
    std::map<std::string, std::vector<bson::BsonObj>> by_measurement;
    std::vector<std::string> refused;
    for (const lineprotocol::Point& p : parsed.points) {
      auto doc = lineprotocol::ToDocument(p, precision.value(), now);
      if (!doc.ok()) {
        if (v2) return error(400, "invalid", doc.status().reason());
        outcome.Drop(1, doc.status().reason());
        continue;
      }
      by_measurement[p.measurement].push_back(std::move(doc).value());
    }
    for (const auto& [measurement, docs] : by_measurement) {
      WriteMeasurements(service_, client, db, measurement, lineprotocol::kMetaField, docs,
                        &outcome);
      if (!outcome.fatal.ok()) break;
    }
    if (!outcome.fatal.ok()) {
      if (outcome.fatal.code() == ErrorCode::kUnauthorized) {
        return error(403, "forbidden", outcome.fatal.reason());
      }
      return error(503, "unavailable", outcome.fatal.reason());
    }
    if (outcome.dropped == 0 && parsed.errors.empty()) return NoContent();
    std::vector<std::string> reasons = parsed.errors;
    reasons.insert(reasons.end(), outcome.errors.begin(), outcome.errors.end());
    return error(400, "invalid",
                 "partial write: " + Join(reasons) + " dropped=" + std::to_string(outcome.dropped));
  }

  ServiceContext& service_;
};

}  // namespace

void RegisterHttpParameters() { (void)HttpWriteGranularity(); }

HttpServer::Handler MakeHttpApi(commands::ServiceContext& service) {
  auto api = std::make_shared<Api>(service);
  return [api](const HttpRequest& req) { return api->Handle(req); };
}

}  // namespace hourglass::http
