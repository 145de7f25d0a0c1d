#include "server/options.h"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "auth/key_file.h"
#include "bson/bson.h"
#include "storage/kv_engine.h"

namespace hourglass::server {

namespace {

constexpr const char* kVersion = "0.1.0";

using commands::TlsMode;

// --tlsMode's names, in TlsMode's order.
constexpr const char* kTlsModeNames[] = {"disabled", "allowTLS", "preferTLS", "requireTLS"};

Status ParseTlsMode(const std::string& text, TlsMode* mode) {
  for (int i = 0; i < 4; ++i) {
    if (text == kTlsModeNames[i]) {
      *mode = static_cast<TlsMode>(i);
      return Status::OK();
    }
  }
  return Status(ErrorCode::kBadValue, "unsupported value for tlsMode " + text);
}

// --tlsDisabledProtocols: a comma-separated list of TLS1_0, TLS1_1, TLS1_2, TLS1_3 (or their
// older spelling noTLS1_0 ...), or "none".
Status ParseDisabledProtocols(const std::string& text, std::vector<std::string>* out) {
  out->clear();
  if (text == "none") return Status::OK();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string token = text.substr(start, comma == std::string::npos ? comma : comma - start);
    std::string name = token.starts_with("no") ? token.substr(2) : token;
    if (name != "TLS1_0" && name != "TLS1_1" && name != "TLS1_2" && name != "TLS1_3") {
      return Status(ErrorCode::kBadValue, "Unrecognized disabledProtocols '" + token + "'");
    }
    out->push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::OK();
}

// net.tls in the config file.
Status ApplyTlsSection(const YAML::Node& tls, commands::TlsOptions* out) {
  if (tls["mode"]) HG_RETURN_IF_ERROR(ParseTlsMode(tls["mode"].as<std::string>(), &out->mode));
  if (tls["certificateKeyFile"]) {
    out->certificate_key_file = tls["certificateKeyFile"].as<std::string>();
  }
  if (tls["certificateKeyFilePassword"]) {
    out->certificate_key_file_password = tls["certificateKeyFilePassword"].as<std::string>();
  }
  if (tls["CAFile"]) out->ca_file = tls["CAFile"].as<std::string>();
  if (tls["allowConnectionsWithoutCertificates"]) {
    out->allow_connections_without_certificates =
        tls["allowConnectionsWithoutCertificates"].as<bool>();
  }
  if (tls["allowInvalidCertificates"]) {
    out->allow_invalid_certificates = tls["allowInvalidCertificates"].as<bool>();
  }
  if (tls["allowInvalidHostnames"]) {
    out->allow_invalid_hostnames = tls["allowInvalidHostnames"].as<bool>();
  }
  if (tls["disabledProtocols"]) {
    HG_RETURN_IF_ERROR(ParseDisabledProtocols(tls["disabledProtocols"].as<std::string>(),
                                              &out->disabled_protocols));
  }
  return Status::OK();
}

// The TLS options hang together: a mode that speaks TLS has a certificate, and the CA-related
// options need a CA.
Status CheckTlsOptions(const commands::TlsOptions& tls) {
  if (tls.mode != TlsMode::kDisabled && tls.certificate_key_file.empty()) {
    return Status(ErrorCode::kBadValue,
                  "need tlsCertificateKeyFile or certificateSelector when TLS is enabled");
  }
  const commands::TlsOptions defaults;
  if (tls.mode == TlsMode::kDisabled &&
      (!tls.certificate_key_file.empty() || !tls.certificate_key_file_password.empty() ||
       !tls.ca_file.empty() || tls.allow_connections_without_certificates ||
       tls.disabled_protocols != defaults.disabled_protocols)) {
    return Status(ErrorCode::kBadValue,
                  "need to enable TLS via the sslMode/tlsMode flag when using TLS configuration "
                  "parameters");
  }
  return Status::OK();
}

// mongod's check of --oplogSize (replication.oplogSizeMB): a positive number of megabytes.
Status CheckOplogSize(int64_t mb) {
  if (mb <= 0) {
    return Status(ErrorCode::kBadValue,
                  "bad --oplogSize, arg must be greater than 0,found: " + std::to_string(mb));
  }
  return Status::OK();
}

Status CheckOplogMinRetentionHours(double hours) {
  if (!(hours >= 0)) {
    return Status(ErrorCode::kBadValue,
                  "bad --oplogMinRetentionHours, argument must be greater or equal to 0");
  }
  return Status::OK();
}

// The replica set's name: mongod's rules (not empty; the legacy "name/seed,list" form is gone),
// and a data directory on disk, where the replicated log lives.
Status CheckReplSetName(const ParsedOptions& out) {
  const std::string& name = out.server.repl_set;
  if (name.empty() || name.find('/') != std::string::npos) {
    return Status(ErrorCode::kInvalidOptions,
                  "Invalid --replSet (replication.replSetName): '" + name +
                      "'; a replica set's name is a non-empty string without '/'");
  }
  if (out.server.in_memory) {
    return Status(ErrorCode::kInvalidOptions,
                  "--replSet needs a --dbpath on disk for the replicated log: it cannot be "
                  "combined with --inMemory");
  }
  return Status::OK();
}

// Applies the YAML config file; command-line values given explicitly win (applied after).
Status ApplyConfigFile(const std::string& path, ParsedOptions* out) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status(ErrorCode::kInvalidOptions, "Error reading config file " + path);
  return ApplyConfigText(text.str(), path, out);
}

}  // namespace

Status ApplyConfigText(std::string_view yaml, const std::string& path, ParsedOptions* out) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInvalidOptions,
                  "Error reading config file " + path + ": " + e.what());
  }
  try {
    if (auto net = root["net"]) {
      if (net["port"]) out->server.port = net["port"].as<int>();
      if (net["bindIp"]) out->server.bind_ip = net["bindIp"].as<std::string>();
      if (net["bindIpAll"] && net["bindIpAll"].as<bool>()) out->server.bind_ip = "0.0.0.0";
      if (net["maxIncomingConnections"]) {
        out->server.max_conns = net["maxIncomingConnections"].as<int>();
      }
      if (auto tls = net["tls"]) HG_RETURN_IF_ERROR(ApplyTlsSection(tls, &out->server.tls));
      if (auto http = net["http"]) {
        if (http["port"]) out->http_port = http["port"].as<int>();
      }
    }
    if (auto storage = root["storage"]) {
      if (storage["dbPath"]) out->server.dbpath = storage["dbPath"].as<std::string>();
      if (storage["inMemory"]) out->server.in_memory = storage["inMemory"].as<bool>();
      auto cache = storage["wiredTiger"]["engineConfig"]["cacheSizeGB"];
      if (cache) out->cache_size_mb = static_cast<int>(cache.as<double>() * 1024);
      auto zstd_level = storage["wiredTiger"]["engineConfig"]["zstdCompressionLevel"];
      if (zstd_level) {
        out->zstd_level = zstd_level.as<int>();
        out->zstd_level_given = true;
      }
      if (storage["oplogMinRetentionHours"]) {
        out->oplog_min_retention_hours = storage["oplogMinRetentionHours"].as<double>();
        HG_RETURN_IF_ERROR(CheckOplogMinRetentionHours(out->oplog_min_retention_hours));
      }
      auto engine_config = storage["wiredTiger"]["engineConfig"]["configString"];
      if (engine_config) out->engine_config = engine_config.as<std::string>();
      auto compressor = storage["wiredTiger"]["collectionConfig"]["blockCompressor"];
      if (compressor) {
        out->block_compressor = compressor.as<std::string>();
        out->block_compressor_given = true;
      }
    }
    if (auto replication = root["replication"]) {
      if (replication["replSetName"]) {
        out->server.repl_set = replication["replSetName"].as<std::string>();
        out->repl_set_from_file = true;
      }
      if (replication["oplogSizeMB"]) {
        out->oplog_size_mb = replication["oplogSizeMB"].as<int64_t>();
        HG_RETURN_IF_ERROR(CheckOplogSize(out->oplog_size_mb));
      }
    }
    if (auto security = root["security"]) {
      if (security["authorization"]) {
        std::string v = security["authorization"].as<std::string>();
        if (v != "enabled" && v != "disabled") {
          return Status(ErrorCode::kInvalidOptions, "Invalid value for security.authorization: '" +
                                                        v +
                                                        "'; the choices are enabled and disabled");
        }
        out->server.auth = v == "enabled";
      }
      if (security["keyFile"]) out->server.key_file = security["keyFile"].as<std::string>();
    }
    if (auto log = root["systemLog"]) {
      if (log["path"]) out->server.logpath = log["path"].as<std::string>();
      if (log["logAppend"]) out->log_append = log["logAppend"].as<bool>();
      if (log["quiet"]) out->quiet = log["quiet"].as<bool>();
    }
    if (auto params = root["setParameter"]) {
      for (const auto& kv : params) {
        out->set_parameters.emplace_back(kv.first.as<std::string>(), kv.second.as<std::string>());
      }
    }
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInvalidOptions, "Error in config file " + path + ": " + e.what());
  }
  return Status::OK();
}

namespace {

// As mongod: the key file's password shows as "<password>" in getCmdLineOpts' argv.
void CensorPasswords(std::vector<std::string>& args) {
  constexpr std::string_view kFlag = "--tlsCertificateKeyFilePassword";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == kFlag && i + 1 < args.size()) {
      args[++i] = "<password>";
    } else if (args[i].starts_with(std::string(kFlag) + "=")) {
      args[i] = std::string(kFlag) + "=<password>";
    }
  }
}

}  // namespace

int DefaultCacheSizeMb(int64_t ram_mb) {
  return static_cast<int>(std::max<int64_t>(256, (ram_mb - 1024) / 2));
}

StatusWith<ParsedOptions> ParseOptions(int argc, char** argv) {
  ParsedOptions out;
  for (int i = 0; i < argc; ++i) out.server.argv.emplace_back(argv[i]);
  CensorPasswords(out.server.argv);

  CLI::App app{"hourglassd: a time-series database server that speaks the MongoDB wire protocol"};
  app.set_version_flag("--version", std::string("hourglassd version v") + kVersion);
  std::string config;
  int port = 0;
  std::string bind_ip, dbpath, logpath;
  bool bind_ip_all = false, in_memory = false, auth = false, noauth = false;
  int max_conns = 0;
  std::vector<std::string> set_params;
  std::optional<std::string> tls_mode, tls_key_file, tls_key_password, tls_ca_file,
      tls_disabled_protocols;
  bool tls_without_certs = false, tls_invalid_certs = false, tls_invalid_hostnames = false;
  app.add_option("--tlsMode", tls_mode,
                 "TLS on the port: disabled (default), allowTLS, preferTLS or requireTLS");
  app.add_option("--tlsCertificateKeyFile", tls_key_file,
                 "PEM file with the server's certificate and private key");
  app.add_option("--tlsCertificateKeyFilePassword", tls_key_password,
                 "Password of an encrypted private key in --tlsCertificateKeyFile");
  app.add_option("--tlsCAFile", tls_ca_file,
                 "PEM file of the certificate authorities client certificates must chain to");
  app.add_flag("--tlsAllowConnectionsWithoutCertificates", tls_without_certs,
               "With --tlsCAFile, accept clients that present no certificate");
  app.add_flag("--tlsAllowInvalidCertificates", tls_invalid_certs,
               "Accept client certificates that do not validate (they name no user)");
  app.add_flag("--tlsAllowInvalidHostnames", tls_invalid_hostnames,
               "Accepted for mongod compatibility (applies to outgoing connections)");
  app.add_option("--tlsDisabledProtocols", tls_disabled_protocols,
                 "TLS versions to refuse: TLS1_0,TLS1_1,TLS1_2,TLS1_3 or none "
                 "(default TLS1_0,TLS1_1)");
  app.add_option("-f,--config", config, "Configuration file (YAML, mongod.conf names)");
  app.add_option("--port", port, "Port to listen on (default 27017)");
  std::optional<int> http_port;
  app.add_option("--httpPort", http_port,
                 "Port of the HTTP API (InfluxDB and Prometheus writes, Prometheus reads, "
                 "/metrics, /health); off by default");
  app.add_option("--bind_ip", bind_ip, "Address to listen on (default 127.0.0.1)");
  app.add_flag("--bind_ip_all", bind_ip_all, "Listen on all IPv4 addresses");
  app.add_option("--dbpath", dbpath, "Data directory (default ./data)");
  std::optional<std::string> repl_set;
  app.add_option("--replSet", repl_set, "Name of the replica set this server is a member of");
  std::optional<double> oplog_min_retention_hours;
  app.add_option("--oplogMinRetentionHours", oplog_min_retention_hours,
                 "Minimum number of hours to preserve in the oplog. Default is 0 (turned off).");
  std::optional<int64_t> oplog_size;
  app.add_option("--oplogSize", oplog_size,
                 "Size to use (in MB) for replication op log. default is 5% of disk space");
  app.add_flag("--inMemory", in_memory, "Keep all data in memory (nothing is written to disk)");
  app.add_flag("--auth", auth, "Run with security: clients must authenticate (SCRAM)");
  app.add_flag("--noauth", noauth, "Run without security (the default)");
  std::optional<std::string> key_file;
  app.add_option("--keyFile", key_file,
                 "Private key for replica set members to authenticate to each other (implies "
                 "--auth)");
  app.add_option("--logpath", logpath, "Log file (default: stderr)");
  app.add_flag("--logappend", out.log_append, "Append to the log file instead of truncating");
  app.add_flag("--quiet", out.quiet, "Less log output");
  app.add_option("--maxConns", max_conns, "Maximum simultaneous connections");
  app.add_option("--setParameter", set_params, "Set a server parameter: name=value")->take_all();
  std::string block_compressor;
  app.add_option("--wiredTigerCollectionBlockCompressor", block_compressor,
                 "Block compressor of new collections: snappy (default), zlib, zstd or none");
  std::optional<int> zstd_level;
  app.add_option("--zstdDefaultCompressionLevel", zstd_level,
                 "Level of the zstd block compressor, -7 to 22 (default 1; mongod's is 6)");
  std::string engine_config;
  app.add_option("--wiredTigerEngineConfigString", engine_config,
                 "WiredTiger configuration appended to the engine's (wiredtiger_open) own");
  app.add_option("--wiredTigerCacheSizeGB", out.cache_size_mb, "WiredTiger cache size (MB)")
      ->transform(
          [](std::string s) { return std::to_string(static_cast<int>(std::stod(s) * 1024)); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    out.exit_now = true;
    return out;
  } catch (const CLI::CallForVersion&) {
    std::cout << "hourglassd version v" << kVersion << "\n";
    out.exit_now = true;
    return out;
  } catch (const CLI::ParseError& e) {
    return Status(ErrorCode::kInvalidOptions, e.what());
  }
  if (!config.empty()) HG_RETURN_IF_ERROR(ApplyConfigFile(config, &out));
  if (port != 0) out.server.port = port;
  if (port < 0 || port > 65535) return Status(ErrorCode::kInvalidOptions, "Invalid --port");
  if (http_port) out.http_port = *http_port;
  if (out.http_port < 0 || out.http_port > 65535) {
    return Status(ErrorCode::kInvalidOptions,
                  "Invalid --httpPort: it must be 1 to 65535 (0, the default, serves none)");
  }
  if (out.http_port != 0 && out.http_port == out.server.port) {
    return Status(ErrorCode::kInvalidOptions, "--httpPort must differ from --port");
  }
  if (!bind_ip.empty()) out.server.bind_ip = bind_ip;
  if (bind_ip_all) out.server.bind_ip = "0.0.0.0";
  if (!dbpath.empty()) out.server.dbpath = dbpath;
  if (in_memory) out.server.in_memory = true;
  if (!logpath.empty()) out.server.logpath = logpath;
  if (repl_set) {
    out.server.repl_set = *repl_set;
    out.repl_set_from_file = false;
  }
  if (!out.server.repl_set.empty() || repl_set) HG_RETURN_IF_ERROR(CheckReplSetName(out));
  if (oplog_size) {
    HG_RETURN_IF_ERROR(CheckOplogSize(*oplog_size));
    out.oplog_size_mb = *oplog_size;
  }
  if (oplog_min_retention_hours) {
    HG_RETURN_IF_ERROR(CheckOplogMinRetentionHours(*oplog_min_retention_hours));
    out.oplog_min_retention_hours = *oplog_min_retention_hours;
  }
  if (auth && noauth) {
    return Status(ErrorCode::kInvalidOptions, "--auth and --noauth cannot both be given");
  }
  if (auth) out.server.auth = true;
  if (noauth) out.server.auth = false;
  if (key_file) out.server.key_file = *key_file;
  if (!out.server.key_file.empty()) {
    // As mongod: members that authenticate to each other require their clients to.
    HG_ASSIGN_OR_RETURN(out.server.internal_key, auth::ReadKeyFile(out.server.key_file));
    out.server.auth = true;
  }
  if (max_conns > 0) out.server.max_conns = max_conns;
  commands::TlsOptions& tls = out.server.tls;
  if (tls_mode) HG_RETURN_IF_ERROR(ParseTlsMode(*tls_mode, &tls.mode));
  if (tls_key_file) tls.certificate_key_file = *tls_key_file;
  if (tls_key_password) tls.certificate_key_file_password = *tls_key_password;
  if (tls_ca_file) tls.ca_file = *tls_ca_file;
  if (tls_without_certs) tls.allow_connections_without_certificates = true;
  if (tls_invalid_certs) tls.allow_invalid_certificates = true;
  if (tls_invalid_hostnames) tls.allow_invalid_hostnames = true;
  if (tls_disabled_protocols) {
    HG_RETURN_IF_ERROR(ParseDisabledProtocols(*tls_disabled_protocols, &tls.disabled_protocols));
  }
  HG_RETURN_IF_ERROR(CheckTlsOptions(tls));
  if (!engine_config.empty()) out.engine_config = engine_config;
  if (!block_compressor.empty()) {
    out.block_compressor = block_compressor;
    out.block_compressor_given = true;
  }
  if (zstd_level) {
    out.zstd_level = *zstd_level;
    out.zstd_level_given = true;
  }
  if (out.zstd_level < -7 || out.zstd_level > 22) {
    return Status(ErrorCode::kInvalidOptions,
                  "Invalid value for storage.wiredTiger.engineConfig.zstdCompressionLevel "
                  "(--zstdDefaultCompressionLevel): " +
                      std::to_string(out.zstd_level) + "; it must be from -7 to 22");
  }
  if (!storage::IsKnownBlockCompressor(out.block_compressor)) {
    return Status(ErrorCode::kInvalidOptions,
                  "Invalid value for storage.wiredTiger.collectionConfig.blockCompressor "
                  "(--wiredTigerCollectionBlockCompressor): '" +
                      out.block_compressor + "'; the choices are snappy, zlib, zstd and none");
  }
  for (const auto& p : set_params) {
    size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status(ErrorCode::kInvalidOptions,
                    "Illegal --setParameter parameter: \"" + p + "\" (expected name=value)");
    }
    out.set_parameters.emplace_back(p.substr(0, eq), p.substr(eq + 1));
  }

  bson::BsonBuilder parsed;
  if (!config.empty()) parsed.AppendString("config", config);
  size_t net = parsed.OpenObject("net");
  parsed.AppendString("bindIp", out.server.bind_ip);
  parsed.AppendInt32("port", out.server.port);
  if (out.http_port != 0) {
    const size_t http_token = parsed.OpenObject("http");
    parsed.AppendInt32("port", out.http_port);
    parsed.Close(http_token);
  }
  if (tls.mode != TlsMode::kDisabled) {
    size_t tls_token = parsed.OpenObject("tls");
    parsed.AppendString("mode", kTlsModeNames[static_cast<int>(tls.mode)]);
    parsed.AppendString("certificateKeyFile", tls.certificate_key_file);
    // As mongod: the password never leaves the process.
    if (!tls.certificate_key_file_password.empty()) {
      parsed.AppendString("certificateKeyFilePassword", "<password>");
    }
    if (!tls.ca_file.empty()) parsed.AppendString("CAFile", tls.ca_file);
    if (tls.allow_connections_without_certificates) {
      parsed.AppendBool("allowConnectionsWithoutCertificates", true);
    }
    if (tls.allow_invalid_certificates) parsed.AppendBool("allowInvalidCertificates", true);
    if (tls.allow_invalid_hostnames) parsed.AppendBool("allowInvalidHostnames", true);
    const commands::TlsOptions defaults;
    if (tls.disabled_protocols != defaults.disabled_protocols) {
      std::string joined;
      for (const std::string& p : tls.disabled_protocols) joined += (joined.empty() ? "" : ",") + p;
      parsed.AppendString("disabledProtocols", joined.empty() ? "none" : joined);
    }
    parsed.Close(tls_token);
  }
  parsed.Close(net);
  if (!out.server.repl_set.empty() || out.oplog_size_mb > 0) {
    size_t replication = parsed.OpenObject("replication");
    if (out.oplog_size_mb > 0) {
      // The option's name is replication.oplogSizeMB; --oplogSize is its short form.
      parsed.AppendInt32("oplogSizeMB", static_cast<int32_t>(out.oplog_size_mb));
    }
    if (!out.server.repl_set.empty()) {
      parsed.AppendString(out.repl_set_from_file ? "replSetName" : "replSet", out.server.repl_set);
    }
    parsed.Close(replication);
  }
  size_t storage = parsed.OpenObject("storage");
  parsed.AppendString("dbPath", out.server.dbpath);
  if (out.server.in_memory) parsed.AppendBool("inMemory", true);
  if (out.oplog_min_retention_hours > 0) {
    parsed.AppendDouble("oplogMinRetentionHours", out.oplog_min_retention_hours);
  }
  if (out.block_compressor_given || out.zstd_level_given || !out.engine_config.empty()) {
    size_t wt = parsed.OpenObject("wiredTiger");
    if (out.zstd_level_given || !out.engine_config.empty()) {
      size_t ec = parsed.OpenObject("engineConfig");
      if (!out.engine_config.empty()) parsed.AppendString("configString", out.engine_config);
      if (out.zstd_level_given) parsed.AppendInt32("zstdCompressionLevel", out.zstd_level);
      parsed.Close(ec);
    }
    if (out.block_compressor_given) {
      size_t cc = parsed.OpenObject("collectionConfig");
      parsed.AppendString("blockCompressor", out.block_compressor);
      parsed.Close(cc);
    }
    parsed.Close(wt);
  }
  parsed.Close(storage);
  if (out.server.auth) {
    size_t security = parsed.OpenObject("security");
    parsed.AppendString("authorization", "enabled");
    if (!out.server.key_file.empty()) parsed.AppendString("keyFile", out.server.key_file);
    parsed.Close(security);
  }
  if (!out.server.logpath.empty()) {
    size_t log = parsed.OpenObject("systemLog");
    parsed.AppendString("destination", "file");
    parsed.AppendString("path", out.server.logpath);
    parsed.Close(log);
  }
  if (!out.set_parameters.empty()) {
    size_t sp = parsed.OpenObject("setParameter");
    for (const auto& [k, v] : out.set_parameters) parsed.AppendString(k, v);
    parsed.Close(sp);
  }
  out.server.parsed = parsed.Obj();
  return out;
}

}  // namespace hourglass::server
