// Server-wide state shared by every connection and command: the storage engine, the catalog, the
// cursor manager, the startup options, counters for serverStatus, and the shutdown hook. One
// ServiceContext lives for the whole process; its members are thread-safe or immutable after
// startup. ClientState is per connection and touched only by that connection's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "auth/authorization_session.h"
#include "auth/user_store.h"
#include "bson/bson.h"
#include "exec/read_context.h"
#include "wire/op_compressed.h"

// (exec/read_context.h declares the storage engine, the catalog and the bucket catalog.)
namespace hourglass::exec {
class CursorManager;
}
namespace hourglass::catalog {
class TransactionTable;
}
namespace hourglass::repl {
class ReplicationCoordinator;
}

namespace hourglass::commands {

// mongod's --tlsMode: whether the port speaks TLS. allowTLS and preferTLS accept both TLS and
// plain connections (they differ only in what a mongod dials out with, which this server never
// does); requireTLS closes plain ones.
enum class TlsMode { kDisabled, kAllowTls, kPreferTls, kRequireTls };

// --tls* options and their net.tls.* names in YAML.
struct TlsOptions {
  TlsMode mode = TlsMode::kDisabled;
  std::string certificate_key_file;  // PEM: the server's certificate chain and private key
  std::string certificate_key_file_password;
  // PEM of the certificate authorities client certificates must chain to; when set, clients are
  // asked for a certificate.
  std::string ca_file;
  bool allow_connections_without_certificates = false;
  bool allow_invalid_certificates = false;
  bool allow_invalid_hostnames = false;  // only for outgoing connections: accepted and kept
  // TLS1_0 ... TLS1_3; by default TLS 1.0 and 1.1 are off.
  std::vector<std::string> disabled_protocols = {"TLS1_0", "TLS1_1"};
};

struct ServerOptions {
  int port = 27017;
  std::string bind_ip = "127.0.0.1";
  std::string dbpath = "./data";
  bool in_memory = false;
  std::string logpath;
  int max_conns = 1000000;
  int cache_size_mb = 0;  // the WiredTiger cache in effect
  // --auth / security.authorization: clients must authenticate and hold the privileges each
  // command needs.
  bool auth = false;
  // --keyFile / security.keyFile: the key replica set members authenticate to each other with
  // (auth/key_file.h), read at startup; empty without one. Implies `auth`.
  std::string key_file;
  std::string internal_key;
  TlsOptions tls;
  // --replSet / replication.replSetName: the replica set this server is a member of; empty for a
  // standalone.
  std::string repl_set;
  std::vector<std::string> argv;
  // The options as a document, for getCmdLineOpts's "parsed" field.
  bson::BsonObj parsed;
};

// Bytes through one network compressor, as serverStatus.network.compression reports them.
struct CompressionCounters {
  std::atomic<int64_t> compressor_bytes_in{0}, compressor_bytes_out{0};
  std::atomic<int64_t> decompressor_bytes_in{0}, decompressor_bytes_out{0};
};

struct ServerCounters {
  std::atomic<int64_t> op_insert{0}, op_query{0}, op_update{0}, op_delete{0}, op_getmore{0},
      op_command{0};
  // Logical bytes are messages after decompression / before compression; physical bytes are what
  // crossed the socket.
  std::atomic<int64_t> bytes_in{0}, bytes_out{0}, num_requests{0};
  std::atomic<int64_t> physical_bytes_in{0}, physical_bytes_out{0};
  // Indexed by wire::Compressor (noop, snappy, zlib, zstd).
  CompressionCounters compression[4];
  std::atomic<int64_t> connections_current{0}, connections_total{0}, connections_rejected{0};
  std::atomic<int64_t> cursors_timed_out{0};
  // Connections that completed a TLS handshake, and by version: 1.0, 1.1, 1.2, 1.3, unknown
  // (serverStatus.transportSecurity).
  std::atomic<int64_t> tls_connections{0};
  std::atomic<int64_t> tls_versions[5] = {};
};

// The server certificate, for serverStatus.security (set when --tlsMode is not disabled).
struct TlsServerInfo {
  std::string subject;    // RFC 2253
  int64_t expiration_ms;  // notAfter
};

class Rollups;

class ServiceContext {
 public:
  storage::KvEngine* engine = nullptr;
  catalog::Catalog* catalog = nullptr;
  exec::CursorManager* cursors = nullptr;
  timeseries::BucketCatalog* bucket_catalog = nullptr;
  auth::UserStore* users = nullptr;
  Rollups* rollups = nullptr;  // absent in tests that do not start it
  // What retryable writes ran (catalog/transaction_table.h); absent in tests that do not open it,
  // where retryable writes run as plain ones.
  catalog::TransactionTable* transactions = nullptr;
  // The replica set member (--replSet); nullptr on a standalone.
  repl::ReplicationCoordinator* repl = nullptr;
  ServerOptions options;
  ServerCounters counters;
  std::optional<TlsServerInfo> tls_info;
  std::chrono::steady_clock::time_point start_time = std::chrono::steady_clock::now();
  bson::ObjectId process_id = bson::ObjectId::Generate();
  // Compressors this server accepts, in preference order.
  std::vector<wire::Compressor> compressors = {wire::Compressor::kSnappy, wire::Compressor::kZstd,
                                               wire::Compressor::kZlib};
  // Asks the server to shut down (stop accepting, finish, close storage); returns at once.
  std::function<void()> request_shutdown;
  std::atomic<bool> shutting_down{false};

  // What the query engine needs of this server (exec/read_context.h).
  exec::ReadContext Read() const { return {engine, catalog, bucket_catalog, options.dbpath}; }
};

struct ClientState {
  int64_t connection_id = 0;
  std::string remote;  // "127.0.0.1:53422"
  std::string local;
  int socket_fd = -1;  // the connection's socket, while the connection lives
  // Compressors agreed in the handshake (hello's `compression`), in the client's order.
  std::vector<wire::Compressor> compressors;
  bson::BsonObj client_metadata;  // the handshake's `client` document
  bool sent_handshake = false;
  bool tls = false;  // the connection speaks TLS
  // The subject of the client's verified certificate in RFC 2253 form ("CN=c,OU=o,..."), empty
  // without one: the user name MONGODB-X509 authenticates as.
  std::string peer_subject;
  auth::AuthorizationSession auth;
  // The server's own work (rollup maintenance), as MongoDB's internal __system user: every action
  // is allowed, and rollups take writes only from it.
  bool internal = false;
  // The OP_QUERY request being run carries the secondaryOk bit (legacy clients' way of allowing
  // reads from a secondary); set only for the duration of that request.
  bool op_query_secondary_ok = false;
  // Set by a command that takes the connection over once its reply is sent (a replica set
  // member's Raft connection, hgRaftConnect): the listener hands it a duplicate of the socket
  // and ends its own loop.
  std::function<void(int fd)> take_over_connection;
  // Whether the client connects from this machine (the localhost exception's condition).
  bool IsLocalhost() const {
    return remote.starts_with("127.") || remote.starts_with("[::1]") || remote.starts_with("::1");
  }
};

}  // namespace hourglass::commands
