#include "server/server.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include "auth/key_file.h"
#include "auth/scram.h"
#include "auth/user_store.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "base/write_gate.h"
#include "catalog/catalog.h"
#include "catalog/transaction_table.h"
#include "commands/admin_commands.h"
#include "commands/rollups.h"
#include "commands/timeseries_write.h"
#include "exec/cursor_manager.h"
#include "exec/timeseries_read.h"
#include "http/http_api.h"
#include "net/listener.h"
#include "net/tls.h"
#include "pipeline/block_read_ahead.h"
#include "pipeline/memory_parameters.h"
#include "pipeline/spill_file.h"
#include "repl/replication_coordinator.h"
#include "server/options.h"
#include "storage/kv_engine.h"
#include "timeseries/bucket_catalog.h"
#include "timeseries/rollup_marks.h"
#include "timeseries/ttl_monitor.h"

namespace hourglass::server {

namespace {

// TLS needs something to check client certificates against: --tlsCAFile, or the system's
// certificate authorities by tlsUseSystemCA, as mongod 7.0 demands.
Status CheckChainOfTrust(const commands::TlsOptions& tls, bool use_system_ca) {
  if (!tls.ca_file.empty() && use_system_ca) {
    return Status(ErrorCode::kInvalidOptions,
                  "The use of both a CA File and the System Certificate store is not supported");
  }
  if (tls.ca_file.empty() && !use_system_ca) {
    return Status(ErrorCode::kInvalidOptions,
                  "The use of TLS without specifying a chain of trust is no longer supported. "
                  "Specify --tlsCAFile, or --setParameter tlsUseSystemCA=true to trust the "
                  "system's certificate authorities");
  }
  return Status::OK();
}

// Exit codes follow mongod's where they exist.
constexpr int kExitBadOptions = 2;
constexpr int kExitDbpathInUse = 100;  // mongod's "DBPathInUse"
constexpr int kExitNetwork = 48;

// Holds an exclusive flock on <dbpath>/mongod.lock for the life of the process, so a second server
// on the same data stops with a clear message instead of corrupting it.
class DbPathLock {
 public:
  Status Acquire(const std::string& dbpath) {
    path_ = dbpath + "/mongod.lock";
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd_ < 0) {
      return Status(ErrorCode::kIllegalOperation, "Unable to create/open the lock file: " + path_ +
                                                      " (" + std::strerror(errno) + ")");
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fd_ = -1;
      return Status(ErrorCode::kConflictingOperationInProgress,
                    "Unable to lock the lock file: " + path_ +
                        ". Another hourglassd instance is already running on the " + dbpath +
                        " directory");
    }
    std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) != 0 || ::write(fd_, pid.data(), pid.size()) < 0) {
      return Status(ErrorCode::kInternalError, "Unable to write the lock file " + path_);
    }
    ::fsync(fd_);
    return Status::OK();
  }
  ~DbPathLock() {
    if (fd_ >= 0) {
      // An empty lock file marks a clean shutdown, as mongod's does.
      if (::ftruncate(fd_, 0) != 0) {
      }
      ::flock(fd_, LOCK_UN);
      ::close(fd_);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

std::mutex g_shutdown_mu;
std::condition_variable g_shutdown_cv;
bool g_shutdown_requested = false;

void RequestShutdown() {
  std::lock_guard lk(g_shutdown_mu);
  g_shutdown_requested = true;
  g_shutdown_cv.notify_all();
}

// For builds that use glibc's malloc (hourglassd links tcmalloc unless built without it, see
// CMakeLists.txt; tcmalloc takes mallopt as a no-op): glibc returns freed memory at the top of a
// heap to the kernel once it exceeds 128 KiB and serves blocks from 128 KiB (growing with use) by
// mmap, so a server that builds and frees request buffers, journal entries and bucket images by
// the megabyte takes a page fault for every page of them, again and again. Keep up to 128 MiB
// free per heap, grow heaps 16 MiB at a time, and map only blocks past 32 MiB.
void TuneAllocator() {
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

}  // namespace

int RunServer(int argc, char** argv) {
  TuneAllocator();
  // Signals are taken synchronously by one thread; every other thread inherits the blocked mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGHUP);
  sigaddset(&sigs, SIGUSR2);  // internal: wakes the signal thread at shutdown
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  SetThreadLogContext("initandlisten");
  auto parsed_or = ParseOptions(argc, argv);
  if (!parsed_or.ok()) {
    std::cerr << "Error parsing command line: " << parsed_or.status().reason() << "\n"
              << "try '" << argv[0] << " --help' for more information\n";
    return kExitBadOptions;
  }
  ParsedOptions parsed = std::move(parsed_or).value();
  // The key file's password leaves the command line that ps shows, as mongod's does.
  for (int i = 1; i < argc; ++i) {
    char* value = nullptr;
    if (std::strcmp(argv[i], "--tlsCertificateKeyFilePassword") == 0 && i + 1 < argc) {
      value = argv[i + 1];
    } else if (std::strncmp(argv[i], "--tlsCertificateKeyFilePassword=", 32) == 0) {
      value = argv[i] + 32;
    }
    if (value != nullptr) std::memset(value, 'x', std::strlen(value));
  }
  if (parsed.cache_size_mb <= 0) {
    const int64_t ram_mb = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) *
                           static_cast<int64_t>(sysconf(_SC_PAGE_SIZE)) / (1024 * 1024);
    parsed.cache_size_mb = DefaultCacheSizeMb(ram_mb);
  }
  parsed.server.cache_size_mb = parsed.cache_size_mb;
  if (parsed.exit_now) return parsed.exit_code;

  std::string err;
  if (!parsed.server.logpath.empty() &&
      !Logger::Get().SetLogPath(parsed.server.logpath, parsed.log_append, &err)) {
    std::cerr << err << "\n";
    return kExitBadOptions;
  }
  Logger::Get().SetQuiet(parsed.quiet);

  auto& params = ServerParameterRegistry::Get();
  ServerParameter* cursor_timeout =
      params.Register("cursorTimeoutMillis", int64_t{600000}, true, true);
  // TLS trusts the system's certificate authorities only when asked to (no --tlsCAFile).
  ServerParameter* tls_use_system_ca = params.Register("tlsUseSystemCA", false, true, false);
  timeseries::RegisterTimeseriesParameters();
  http::RegisterHttpParameters();
  timeseries::TtlMonitor::RegisterParameters();
  commands::Rollups::RegisterParameters();
  repl::ReplicationCoordinator::RegisterParameters();
  exec::RegisterTimeseriesRewriteParameter();
  commands::RegisterTimeseriesWriteParameters();
  pipeline::RegisterMemoryParameters();
  pipeline::RegisterBlockReadAheadParameters();
  RegisterEnableTestCommands();
  for (const auto& [name, value] : parsed.set_parameters) {
    ServerParameter* p = params.Find(name);
    if (p == nullptr || !p->settable_at_startup()) {
      std::cerr << "Error parsing command line: Unknown --setParameter '" << name << "'\n";
      return kExitBadOptions;
    }
    Status st = p->SetFromString(value);
    if (!st.ok()) {
      std::cerr << "Bad value for parameter \"" << name << "\": " << st.reason() << "\n";
      return kExitBadOptions;
    }
  }

  commands::ServiceContext service;
  service.options = parsed.server;
  LOGI("CONTROL", 4615611, "Hourglass starting",
       "{\"pid\":" + std::to_string(::getpid()) +
           ",\"port\":" + std::to_string(parsed.server.port) +
           ",\"dbPath\":" + JsonQuote(parsed.server.dbpath) + ",\"version\":\"0.1.0\"}");

  DbPathLock lock;
  if (!parsed.server.in_memory) {
    std::error_code ec;
    std::filesystem::create_directories(parsed.server.dbpath, ec);
    if (ec) {
      LOGE("STORAGE", 20557, "Cannot create the data directory",
           "{\"dbPath\":" + JsonQuote(parsed.server.dbpath) +
               ",\"error\":" + JsonQuote(ec.message()) + "}");
      return kExitBadOptions;
    }
    Status st = lock.Acquire(parsed.server.dbpath);
    if (!st.ok()) {
      LOGE("STORAGE", 20557, "DBException in initAndListen, terminating",
           "{\"error\":" + JsonQuote(st.ToString()) + "}");
      std::cerr << st.reason() << "\n";
      return kExitDbpathInUse;
    }
    // Spill files of a server that did not shut down cleanly; nothing else uses them.
    pipeline::RemoveStaleSpillFiles(pipeline::SpillDirectory(parsed.server.dbpath));
  }

  storage::EngineOptions eopts;
  eopts.dbpath = parsed.server.dbpath;
  eopts.in_memory = parsed.server.in_memory;
  eopts.cache_size_mb = parsed.cache_size_mb;
  eopts.block_compressor = parsed.block_compressor;
  eopts.zstd_level = parsed.zstd_level;
  eopts.extra_config = parsed.engine_config;
  auto engine_or = storage::KvEngine::Open(eopts);
  if (!engine_or.ok()) {
    LOGE("STORAGE", 28595, "Failed to open the storage engine",
         "{\"error\":" + JsonQuote(engine_or.status().ToString()) + "}");
    return kExitDbpathInUse;
  }
  std::unique_ptr<storage::KvEngine> engine = std::move(engine_or).value();
  auto catalog_or = catalog::Catalog::Open(engine.get());
  if (!catalog_or.ok()) {
    LOGE("STORAGE", 28596, "Failed to load the catalog",
         "{\"error\":" + JsonQuote(catalog_or.status().ToString()) + "}");
    return 1;
  }
  std::unique_ptr<catalog::Catalog> catalog = std::move(catalog_or).value();
  exec::CursorManager cursors;
  timeseries::BucketCatalog bucket_catalog(int64_t{parsed.cache_size_mb} << 20);
  // Buckets written before now may still have room: inserts look for them on disk. At startup,
  // and when a replica set member stops being primary (`forget`): another primary may write
  // those buckets next, so what this one knew of them is forgotten.
  auto look_for_stored_buckets = [&bucket_catalog, &catalog](bool forget) {
    for (const std::string& db : catalog->ListDatabases()) {
      for (const auto& c : catalog->ListCollections(db)) {
        if (!c->nss().IsTimeseriesBuckets()) continue;
        if (forget) bucket_catalog.ClearCollection(c->entry().uuid);
        bucket_catalog.MarkMayHaveStoredBuckets(c->entry().uuid);
      }
    }
  };
  look_for_stored_buckets(false);
  service.engine = engine.get();
  service.catalog = catalog.get();
  // Rollups observe their sources before the journal's measurements are written into them.
  auto rollup_marks = timeseries::RollupMarks::Open(engine.get());
  if (!rollup_marks.ok()) {
    LOGE("STORAGE", 8800202, "Failed to open the rollup marks",
         "{\"error\":" + JsonQuote(rollup_marks.status().ToString()) + "}");
    return 1;
  }
  commands::Rollups rollups(&service, std::move(rollup_marks).value());
  if (Status st = rollups.Refresh(); !st.ok()) {
    LOGE("STORAGE", 8800203, "Failed to read the rollups",
         "{\"error\":" + JsonQuote(st.ToString()) + "}");
    return 1;
  }
  service.rollups = &rollups;
  // A replica set member writes its buckets with each commit: the replicated log takes them
  // from there (docs/replication.md).
  if (Status st =
          bucket_catalog.OpenJournal(engine.get(), *catalog, parsed.server.repl_set.empty());
      !st.ok()) {
    LOGE("STORAGE", 8800104, "Failed to write the time-series measurements the journal holds",
         "{\"error\":" + JsonQuote(st.ToString()) + "}");
    return 1;
  }
  service.bucket_catalog = &bucket_catalog;
  auto transactions_or = catalog::TransactionTable::Open(engine.get());
  if (!transactions_or.ok()) {
    LOGE("STORAGE", 8800109, "Failed to open the retryable writes' table",
         "{\"error\":" + JsonQuote(transactions_or.status().ToString()) + "}");
    return 1;
  }
  std::unique_ptr<catalog::TransactionTable> transactions = std::move(transactions_or).value();
  service.transactions = transactions.get();
  bucket_catalog.SetTransactionTable(transactions.get());
  timeseries::TtlMonitor ttl_monitor(engine.get(), catalog.get());
  ttl_monitor.Start();
  service.cursors = &cursors;
  auth::UserStore users(engine.get(), catalog.get());
  if (!parsed.server.internal_key.empty()) {
    // The members' internal user: the key is its password, root its role.
    auth::UserDocument internal;
    internal.name = {auth::kInternalUser, auth::kInternalUserDb};
    internal.user_id = std::string(16, '\0');
    auto credentials = auth::MakeScramCredentials(
        auth::ScramMechanism::kSha256, auth::kInternalUser, parsed.server.internal_key, 15000);
    if (!credentials.ok()) {
      LOGE("ACCESS", 8800500, "The key file's key cannot be a SCRAM password",
           "{\"error\":" + JsonQuote(credentials.status().ToString()) + "}");
      return 1;
    }
    internal.credentials[auth::ScramMechanism::kSha256] = std::move(credentials).value();
    internal.roles.push_back({"root", "admin"});
    users.SetInternalUser(std::move(internal));
  }
  service.users = &users;
  if (Status st = rollups.Recover(); !st.ok()) {
    LOGW("STORAGE", 8800204, "Rollups not recovered",
         "{\"error\":" + JsonQuote(st.ToString()) + "}");
  }
  rollups.Start();
  // A replica set member: its stored configuration, and the Raft member that elects the primary.
  std::unique_ptr<repl::ReplicationCoordinator> coordinator;
  if (!parsed.server.repl_set.empty()) {
    coordinator = std::make_unique<repl::ReplicationCoordinator>(
        repl::ReplicationCoordinator::Options{
            parsed.server.repl_set, parsed.server.dbpath, parsed.server.port, parsed.server.bind_ip,
            [&] { look_for_stored_buckets(true); }, parsed.oplog_size_mb,
            parsed.oplog_min_retention_hours, transactions.get(), parsed.server.internal_key},
        engine.get(), catalog.get());
    if (Status st = coordinator->Start(); !st.ok()) {
      LOGE("REPL", 8800301, "Failed to start the replica set member",
           "{\"error\":" + JsonQuote(st.ToString()) + "}");
      return 1;
    }
    service.repl = coordinator.get();
  }
  if (!parsed.server.auth) {
    Logger::Get().AddStartupWarning(
        "CONTROL", 22120,
        "Access control is not enabled for the database. Read and write access to data "
        "and configuration is unrestricted");
  }
  service.request_shutdown = RequestShutdown;

  std::unique_ptr<net::TlsContext> tls;
  if (parsed.server.tls.mode != commands::TlsMode::kDisabled) {
    Status trust = CheckChainOfTrust(parsed.server.tls, tls_use_system_ca->GetBool());
    auto created = trust.ok() ? net::TlsContext::Create(parsed.server.tls)
                              : StatusWith<std::unique_ptr<net::TlsContext>>(trust);
    if (!created.ok()) {
      const Status& st = created.status();
      LOGE("CONTROL", 20574, "Error during global initialization",
           "{\"error\":{\"code\":" + std::to_string(st.code_number()) +
               ",\"codeName\":" + JsonQuote(std::string(st.code_name())) +
               ",\"errmsg\":" + JsonQuote(st.reason()) + "}}");
      std::cerr << st.reason() << "\n";
      return 1;
    }
    tls = std::move(created).value();
    service.tls_info =
        commands::TlsServerInfo{tls->server_subject(), tls->server_expiration() * 1000};
    if (parsed.server.tls.allow_invalid_certificates) {
      Logger::Get().AddStartupWarning(
          "CONTROL", 22124,
          "While invalid X509 certificates may be used to connect to this server, they will "
          "not be considered permissible for authentication");
    }
  }
  net::Listener listener(service, tls.get());
  Status bound = listener.Bind(parsed.server.bind_ip, parsed.server.port);
  if (!bound.ok()) {
    LOGE("NETWORK", 23024, "Failed to set up listener",
         "{\"error\":" + JsonQuote(bound.reason()) + "}");
    return kExitNetwork;
  }
  // The HTTP port, after the wire port: the same addresses, and HTTPS with the wire port's
  // certificate where TLS is preferred or required (one port cannot tell HTTP from HTTPS, so
  // allowTLS, whose clients are plain by default, keeps plain HTTP).
  std::unique_ptr<http::HttpServer> http_server;
  if (parsed.http_port != 0) {
    std::optional<http::HttpsOptions> https;
    const commands::TlsOptions& t = parsed.server.tls;
    if (t.mode == commands::TlsMode::kPreferTls || t.mode == commands::TlsMode::kRequireTls) {
      std::ifstream in(t.certificate_key_file, std::ios::binary);
      std::stringstream pem;
      pem << in.rdbuf();
      https = http::HttpsOptions{pem.str(), pem.str(), t.certificate_key_file_password};
    }
    StatusWith<std::unique_ptr<http::HttpServer>> started =
        http::HttpServer::Start(parsed.server.bind_ip, parsed.http_port, http::kMaxBodyBytes,
                                http::MakeHttpApi(service), std::move(https));
    if (!started.ok()) {
      LOGE("NETWORK", 8800401, "Failed to set up the HTTP listener",
           "{\"error\":" + JsonQuote(started.status().reason()) + "}");
      std::cerr << started.status().reason() << "\n";
      return kExitNetwork;
    }
    http_server = std::move(started).value();
    LOGI("NETWORK", 8800402, "Waiting for HTTP requests",
         "{\"port\":" + std::to_string(http_server->port()) + "}");
  }

  listener.Start();
  LOGI("NETWORK", 23016, "Waiting for connections",
       "{\"port\":" + std::to_string(listener.port()) +
           ",\"ssl\":" + std::string(tls ? "\"on\"" : "\"off\"") + "}");

  std::thread signal_thread([&] {
    SetThreadLogContext("signalProcessingThread");
    int sig = 0;
    while (sigwait(&sigs, &sig) == 0) {
      if (sig == SIGHUP) continue;  // log rotation is not implemented; ignore like a no-op
      if (sig == SIGUSR2) break;
      LOGI("CONTROL", 23377, "Received signal", "{\"signal\":" + std::to_string(sig) + "}");
      RequestShutdown();
      break;
    }
  });
  std::thread reaper([&] {
    SetThreadLogContext("clientcursormon");
    std::unique_lock lk(g_shutdown_mu);
    for (int64_t pass = 1; !g_shutdown_requested; ++pass) {
      g_shutdown_cv.wait_for(lk, std::chrono::seconds(1));
      lk.unlock();
      int n = cursors.ReapIdle(std::chrono::milliseconds(cursor_timeout->GetInt()));
      service.counters.cursors_timed_out += n;
      if (pass % 60 == 0) {
        // Retryable writes of sessions idle past their timeout are not retried any more.
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        const int64_t before =
            now.count() - int64_t{commands::kLogicalSessionTimeoutMinutes} * 60'000;
        if (auto reaped = transactions->Reap(before); !reaped.ok()) {
          LOGW("STORAGE", 8800110, "Retryable writes of expired sessions not removed",
               "{\"error\":" + JsonQuote(reaped.status().ToString()) + "}");
        }
      }
      lk.lock();
    }
  });

  {
    std::unique_lock lk(g_shutdown_mu);
    g_shutdown_cv.wait(lk, [] { return g_shutdown_requested; });
  }
  LOGI("CONTROL", 4784900, "Shutting down", "{}");
  service.shutting_down = true;
  WriteGate::Get().ReleaseAll();  // writes waiting for an fsync lock end with their connections
  if (coordinator) coordinator->BeginShutdown();  // as do replSetStepDown's and initiate's waits
  listener.Shutdown();
  if (http_server) http_server->Stop();
  reaper.join();
  ttl_monitor.Stop();
  rollups.Stop();
  if (coordinator) coordinator->Shutdown();
  if (Status st = bucket_catalog.FlushAll(); !st.ok()) {
    // They stay in the journal: the next start writes them.
    LOGW("STORAGE", 8800105, "Time-series measurements stay in the journal",
         "{\"error\":" + JsonQuote(st.ToString()) + "}");
  }
  // Wake the signal thread if shutdown came from the command rather than a signal.
  pthread_kill(signal_thread.native_handle(), SIGUSR2);
  signal_thread.join();
  cursors.KillAll();
  catalog.reset();
  engine.reset();  // final checkpoint
  LOGI("CONTROL", 20565, "Now exiting", "{}");
  return 0;
}

}  // namespace hourglass::server
