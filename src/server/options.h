// Command-line and config-file options of hourglassd (mongod's names: --port, --bind_ip,
// --dbpath, --config with net.port / net.bindIp / storage.dbPath / systemLog.path, ...).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "commands/service_context.h"
#include "storage/kv_engine.h"

namespace hourglass::server {

struct ParsedOptions {
  commands::ServerOptions server;
  bool log_append = false;
  bool quiet = false;
  // --wiredTigerCacheSizeGB in MB; 0: mongod's default, the larger of 50% of (RAM - 1 GB) and
  // 256 MB (DefaultCacheSizeMb).
  int cache_size_mb = 0;
  // --wiredTigerCollectionBlockCompressor / storage.wiredTiger.collectionConfig.blockCompressor:
  // the block compressor of collections created from now on (snappy, zlib, zstd or none).
  std::string block_compressor = "snappy";
  bool block_compressor_given = false;  // for getCmdLineOpts' "parsed"
  // --zstdDefaultCompressionLevel / storage.wiredTiger.engineConfig.zstdCompressionLevel: the
  // level of the zstd block compressor, -7 to 22.
  int zstd_level = storage::kDefaultZstdLevel;
  bool zstd_level_given = false;  // for getCmdLineOpts' "parsed"
  // mongod's --wiredTigerEngineConfigString: appended to WiredTiger's open configuration.
  std::string engine_config;
  // --httpPort / net.http.port: the HTTP port of InfluxDB's write APIs (src/http/README.md); 0,
  // the default, serves none.
  int http_port = 0;
  bool repl_set_from_file = false;  // replication.replSetName rather than --replSet
  // --oplogSize / replication.oplogSizeMB: the oplog's size in MB when it is first sized; 0: the
  // default (repl::ReplicationCoordinator::Options).
  int64_t oplog_size_mb = 0;
  // --oplogMinRetentionHours / storage.oplogMinRetentionHours: 0, the default, keeps entries by
  // size alone.
  double oplog_min_retention_hours = 0;
  // name=value pairs from --setParameter and the config file's setParameter section.
  std::vector<std::pair<std::string, std::string>> set_parameters;
  bool exit_now = false;  // --help / --version printed
  int exit_code = 0;
};

// mongod's default WiredTiger cache size in MB for a machine with `ram_mb` of memory.
int DefaultCacheSizeMb(int64_t ram_mb);

// Parses argv (and the YAML file named by --config / -f). InvalidOptions (72) with a message
// naming the bad option.
StatusWith<ParsedOptions> ParseOptions(int argc, char** argv);

// Applies the mongod.conf-style YAML `yaml` (read from `path`, named in errors) to `out`: what
// --config does with its file's text. InvalidOptions (72), or BadValue (2) for a TLS setting,
// naming the bad setting; never an exception.
Status ApplyConfigText(std::string_view yaml, const std::string& path, ParsedOptions* out);

}  // namespace hourglass::server
