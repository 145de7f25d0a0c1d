#include "storage/wiredtiger_kv_engine.h"

#include <dlfcn.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <utility>

#include "base/write_gate.h"
#include "storage/wiredtiger_error.h"

namespace hourglass::storage {
namespace internal {
namespace {

constexpr int kSessionMax = 20000;
// Idle handles kept for reuse; beyond this, released handles are closed.
constexpr size_t kMaxIdleHandles = 512;
// Drop attempts before deferring: sleeps of 1, 2, 4, ... 64 ms, about a quarter second in all.
constexpr int kDropAttempts = 8;
constexpr char kSessionConfig[] = "isolation=snapshot,cache_cursors=false";

// Codes our callers turn into precise Statuses themselves; WiredTiger's own message for them is
// noise in the log.
bool IsExpectedError(int error) {
  return error == EBUSY || error == ENOENT || error == WT_ROLLBACK || error == WT_NOTFOUND ||
         error == WT_DUPLICATE_KEY || error == WT_PREPARE_CONFLICT;
}

int HandleWtError(WT_EVENT_HANDLER*, WT_SESSION*, int error, const char* message) {
  if (error == WT_PANIC) {
    LogStorage("F", "WiredTiger panic", message ? message : "");
    std::abort();
  }
  if (!IsExpectedError(error)) LogStorage("E", "WiredTiger error", message ? message : "");
  return 0;
}

int HandleWtMessage(WT_EVENT_HANDLER*, WT_SESSION*, const char* message) {
  LogStorage("I", "WiredTiger message", message ? message : "");
  return 0;
}

int HandleWtProgress(WT_EVENT_HANDLER*, WT_SESSION*, const char*, uint64_t) { return 0; }

int HandleWtClose(WT_EVENT_HANDLER*, WT_SESSION*, WT_CURSOR*) { return 0; }

WT_EVENT_HANDLER event_handler = {HandleWtError, HandleWtMessage, HandleWtProgress, HandleWtClose};

// Debian's compressor extension `name` (libwiredtiger_<name>.so) sits next to libwiredtiger.so;
// fall back to the usual Debian paths when WiredTiger is linked statically. Empty if absent.
std::string FindExtension(const std::string& name) {
  const std::string file = "libwiredtiger_" + name + ".so";
  std::vector<std::string> candidates;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&wiredtiger_open), &info) != 0 && info.dli_fname) {
    std::filesystem::path lib(info.dli_fname);
    candidates.push_back((lib.parent_path() / file).string());
  }
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu/", "/usr/lib/", "/usr/local/lib/"}) {
    candidates.push_back(dir + file);
  }
  for (const auto& path : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return {};
}

Status ValidateIdent(std::string_view ident) {
  if (ident.empty() || ident.size() > 200) {
    return Status(ErrorCode::kBadValue, "table ident must be 1 to 200 characters");
  }
  for (char ch : ident) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.';
    if (!ok) {
      return Status(ErrorCode::kBadValue,
                    "invalid character in table ident '" + std::string(ident) + "'");
    }
  }
  if (ident.starts_with("WiredTiger")) {
    return Status(ErrorCode::kBadValue, "table idents must not start with 'WiredTiger'");
  }
  return Status::OK();
}

// A handle borrowed from the engine for one internal call.
class ScopedHandle {
 public:
  explicit ScopedHandle(WtKvEngine* engine) : engine_(engine), handle_(engine->AcquireHandle()) {}
  ~ScopedHandle() { engine_->ReleaseHandle(std::move(handle_)); }
  WT_SESSION* session() const { return handle_->session(); }

 private:
  WtKvEngine* engine_;
  std::unique_ptr<WtSessionHandle> handle_;
};

}  // namespace

std::string TableUri(std::string_view ident) {
  std::string uri = "table:";
  uri.append(ident);
  return uri;
}

// ---- WtSessionHandle ----

WtSessionHandle::WtSessionHandle(WT_SESSION* session, WtKvEngine* engine)
    : session_(session),
      engine_(engine),
      drop_epoch_(engine->drop_epoch()),
      seen_epoch_(drop_epoch_->load()) {}

WtSessionHandle::~WtSessionHandle() {
  int ret = session_->close(session_, nullptr);
  if (ret != 0) LogStorage("W", "closing a WiredTiger session failed", wiredtiger_strerror(ret));
}

void WtSessionHandle::CloseCachedCursors() {
  for (auto& [uri, cursors] : cache_) {
    for (WT_CURSOR* c : cursors) c->close(c);
  }
  cache_.clear();
}

void WtSessionHandle::SyncWithDropEpoch() {
  uint64_t current = drop_epoch_->load();
  if (current == seen_epoch_) return;
  CloseCachedCursors();
  seen_epoch_ = current;
}

size_t WtSessionHandle::CachedCursorCountForTest() const {
  size_t n = 0;
  for (const auto& [uri, cursors] : cache_) n += cursors.size();
  return n;
}

StatusWith<LentCursor> WtSessionHandle::AcquireCursor(std::string_view ident) {
  SyncWithDropEpoch();
  std::string uri = TableUri(ident);
  auto it = cache_.find(uri);
  if (it != cache_.end() && !it->second.empty()) {
    WT_CURSOR* c = it->second.back();
    it->second.pop_back();
    return LentCursor{c, seen_epoch_};
  }
  WT_CURSOR* c = nullptr;
  // A table being dropped is already gone for new users; opening a cursor would keep it busy.
  int ret = engine_->IsDropPending(ident)
                ? ENOENT
                : session_->open_cursor(session_, uri.c_str(), nullptr, "overwrite=false", &c);
  if (ret == ENOENT) {
    return Status(ErrorCode::kNamespaceNotFound,
                  "table '" + std::string(ident) + "' does not exist");
  }
  if (ret != 0) return WtStatus(ret, "opening a cursor on table '" + std::string(ident) + "'");
  return LentCursor{c, seen_epoch_};
}

void WtSessionHandle::ReleaseCursor(LentCursor lent) {
  WT_CURSOR* c = lent.cursor;
  if (lent.epoch != drop_epoch_->load()) {
    // A drop happened while the cursor was out; it may be the one keeping the table busy.
    c->close(c);
    SyncWithDropEpoch();
    return;
  }
  if (c->reset(c) != 0) {
    c->close(c);
    return;
  }
  cache_[std::string(c->uri)].push_back(c);
}

// ---- WtKvEngine ----

WtKvEngine::WtKvEngine(WT_CONNECTION* conn, EngineOptions opts, std::set<std::string> compressors)
    : conn_(conn), opts_(std::move(opts)), compressors_(std::move(compressors)) {
  checkpointer_ = std::thread([this] { CheckpointLoop(); });
  if (!opts_.in_memory && opts_.journal_commit_interval_ms > 0) {
    journal_flusher_ = std::thread([this] { JournalFlushLoop(); });
  }
}

WtKvEngine::~WtKvEngine() {
  {
    std::lock_guard<std::mutex> lock(bg_mu_);
    stopping_ = true;
  }
  bg_cv_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  if (journal_flusher_.joinable()) journal_flusher_.join();
  invariant(active_sessions_.load() == 0);
  // No Session is left, so no cursor can keep a deferred drop busy now.
  ProcessPendingDrops();
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    idle_.clear();
  }
  for (const auto& [name, log] : logs_) {
    Status st = log->Sync();
    if (!st.ok()) LogStorage("E", "syncing an append log failed", st.reason());
  }
  // Closing the connection takes a final checkpoint (unless in memory), so the next open needs
  // no journal recovery.
  int ret = conn_->close(conn_, nullptr);
  if (ret != 0) LogStorage("E", "closing WiredTiger failed", wiredtiger_strerror(ret));
}

std::unique_ptr<WtSessionHandle> WtKvEngine::AcquireHandle() {
  std::unique_ptr<WtSessionHandle> handle;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_.empty()) {
      handle = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (handle) {
    handle->SyncWithDropEpoch();
    return handle;
  }
  WT_SESSION* session = nullptr;
  int ret = conn_->open_session(conn_, nullptr, kSessionConfig, &session);
  if (ret != 0) {
    // Only reachable past session_max concurrent sessions or on a dying connection.
    LogStorage("F", "cannot open a WiredTiger session", wiredtiger_strerror(ret));
    invariant(ret == 0);
  }
  return std::make_unique<WtSessionHandle>(session, this);
}

void WtKvEngine::ReleaseHandle(std::unique_ptr<WtSessionHandle> handle) {
  handle->SyncWithDropEpoch();
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (idle_.size() < kMaxIdleHandles) {
      idle_.push_back(std::move(handle));
      return;
    }
  }
  handle.reset();  // closes the session outside the lock
}

std::unique_ptr<Session> WtKvEngine::NewSession() {
  active_sessions_.fetch_add(1);
  return MakeWtSession(this, AcquireHandle());
}

bool WtKvEngine::IsDropPending(std::string_view ident) {
  if (pending_drop_count_.load() == 0) return false;
  std::lock_guard<std::mutex> lock(drop_mu_);
  return pending_drops_.find(ident) != pending_drops_.end();
}

StatusWith<std::string> WtKvEngine::TableCreationString(std::string_view ident) {
  ScopedHandle h(this);
  WT_SESSION* session = h.session();
  WT_CURSOR* c = nullptr;
  int ret = session->open_cursor(session, "metadata:create", nullptr, nullptr, &c);
  if (ret != 0) return WtStatus(ret, "opening the metadata");
  const std::string uri = TableUri(ident);
  c->set_key(c, uri.c_str());
  ret = c->search(c);
  std::string out;
  if (ret == 0) {
    const char* value = nullptr;
    ret = c->get_value(c, &value);
    if (ret == 0) out = value;
  }
  c->close(c);
  if (ret == WT_NOTFOUND) {
    return Status(ErrorCode::kNamespaceNotFound, "no table '" + std::string(ident) + "'");
  }
  if (ret != 0) return WtStatus(ret, "reading the metadata of '" + uri + "'");
  return out;
}

Status WtKvEngine::CheckTableConfig(std::string_view config) {
  if (config.empty()) return Status::OK();
  const std::string c(config);
  ScopedHandle h(this);
  WT_SESSION* session = h.session();
  // WiredTiger reports what is wrong through the event handler (the storage log); the status
  // carries the gist.
  if (int ret = wiredtiger_config_validate(session, nullptr, "WT_SESSION.create", c.c_str())) {
    return Status(ErrorCode::kBadValue, "invalid WiredTiger table configuration '" + c +
                                            "': " + wiredtiger_strerror(ret));
  }
  WT_CONFIG_PARSER* parser = nullptr;
  if (wiredtiger_config_parser_open(session, c.data(), c.size(), &parser) != 0) {
    return Status(ErrorCode::kBadValue, "invalid WiredTiger table configuration '" + c + "'");
  }
  WT_CONFIG_ITEM value;
  Status st = Status::OK();
  if (parser->get(parser, "block_compressor", &value) == 0) {
    const std::string name(value.str, value.len);
    if (!name.empty() && name != "none" && !compressors_.contains(name)) {
      std::string have;
      for (const auto& n : compressors_) have += ", " + n;
      st = Status(ErrorCode::kBadValue, "invalid WiredTiger table configuration '" + c +
                                            "': unknown block compressor '" + name +
                                            "' (this server has none" + have + ")");
    }
  }
  parser->close(parser);
  return st;
}

Status WtKvEngine::CreateTable(std::string_view ident, std::string_view user_config) {
  HG_RETURN_IF_ERROR(ValidateIdent(ident));
  HG_RETURN_IF_ERROR(CheckTableConfig(user_config));
  if (IsDropPending(ident)) {
    ProcessPendingDrops();
    if (IsDropPending(ident)) {
      return Status(ErrorCode::kConflictingOperationInProgress,
                    "table '" + std::string(ident) + "' is still being dropped");
    }
  }
  // Values up to 64 MB stay on their leaf page (MongoDB's record-store setting: a bucket of tens
  // of kilobytes would otherwise become an overflow item, re-read whole by every modify). A page
  // may grow to 64 MB in memory before it is force-evicted: time-series inserts keep modifying
  // the same few pages (the newest buckets), and at MongoDB's 10 MB those pages were reconciled
  // and compressed over and over (bench/ts_run.sh, 4 connections, three alternating runs each:
  // 335k -> 366k measurements/s on average).
  std::string config =
      "key_format=u,value_format=u,leaf_value_max=64MB,memory_page_max=64m,split_pct=90";
  // "none" is spelled out, as mongod does, so the creation string names it.
  if (!opts_.in_memory) {
    config += ",block_compressor=";
    config += compressors_.contains(opts_.block_compressor) ? opts_.block_compressor : "none";
  }
  if (!user_config.empty() && !opts_.in_memory) {
    config += ",";
    config += user_config;
  }
  ScopedHandle h(this);
  int ret = h.session()->create(h.session(), TableUri(ident).c_str(), config.c_str());
  return WtStatus(ret, "creating table '" + std::string(ident) + "'");
}

int WtKvEngine::TryDrop(const std::string& ident) {
  // Every handle seeing the new epoch closes its cached cursors: idle ones right here, lent ones
  // at their next cursor use or when they come back to the pool.
  drop_epoch_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    for (auto& handle : idle_) handle->SyncWithDropEpoch();
  }
  ScopedHandle h(this);
  return h.session()->drop(h.session(), TableUri(ident).c_str(), "force=true");
}

void WtKvEngine::SetDropPending(const std::string& ident, bool pending) {
  std::lock_guard<std::mutex> lock(drop_mu_);
  if (pending) {
    pending_drops_.insert(ident);
  } else {
    pending_drops_.erase(ident);
  }
  pending_drop_count_.store(pending_drops_.size());
}

Status WtKvEngine::DropTable(std::string_view ident) {
  HG_RETURN_IF_ERROR(ValidateIdent(ident));
  std::string name(ident);
  // Marked first, so that no new cursor opens on the table while we wait for old ones to close.
  SetDropPending(name, true);
  for (int attempt = 0; attempt < kDropAttempts; ++attempt) {
    int ret = TryDrop(name);
    if (ret == 0) {
      SetDropPending(name, false);
      return Status::OK();
    }
    if (!IsWtBusy(ret)) {
      SetDropPending(name, false);
      return WtStatus(ret, "dropping table '" + name + "'");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1 << attempt));
  }
  LogStorage("I", "table busy; drop deferred", name);
  return Status::OK();
}

void WtKvEngine::ProcessPendingDrops() {
  std::vector<std::string> idents;
  {
    std::lock_guard<std::mutex> lock(drop_mu_);
    idents.assign(pending_drops_.begin(), pending_drops_.end());
  }
  for (const auto& ident : idents) {
    int ret = TryDrop(ident);
    if (IsWtBusy(ret)) continue;
    if (ret != 0) {
      LogStorage("E", "deferred drop failed", WtStatus(ret, ident).reason());
    }
    SetDropPending(ident, false);
  }
}

bool WtKvEngine::TableInMetadata(WT_SESSION* session, std::string_view ident) {
  WT_CURSOR* c = nullptr;
  if (session->open_cursor(session, "metadata:", nullptr, nullptr, &c) != 0) return false;
  std::string uri = TableUri(ident);
  c->set_key(c, uri.c_str());
  bool found = c->search(c) == 0;
  c->close(c);
  return found;
}

bool WtKvEngine::TableExists(std::string_view ident) {
  if (!ValidateIdent(ident).ok() || IsDropPending(ident)) return false;
  ScopedHandle h(this);
  return TableInMetadata(h.session(), ident);
}

std::vector<std::string> WtKvEngine::ListTables() {
  std::vector<std::string> out;
  {
    ScopedHandle h(this);
    WT_SESSION* s = h.session();
    WT_CURSOR* c = nullptr;
    if (s->open_cursor(s, "metadata:", nullptr, nullptr, &c) != 0) return out;
    constexpr std::string_view kPrefix = "table:";
    c->set_key(c, "table:");
    int exact = 0;
    int ret = c->search_near(c, &exact);
    if (ret == 0 && exact < 0) ret = c->next(c);
    while (ret == 0) {
      const char* key = nullptr;
      if (c->get_key(c, &key) != 0) break;
      std::string_view k(key);
      if (!k.starts_with(kPrefix)) break;
      out.emplace_back(k.substr(kPrefix.size()));
      ret = c->next(c);
    }
    c->close(c);
  }
  std::lock_guard<std::mutex> lock(drop_mu_);
  std::erase_if(out, [this](const std::string& ident) { return pending_drops_.count(ident) > 0; });
  return out;
}

Status WtKvEngine::Checkpoint() {
  if (opts_.in_memory) return Status::OK();
  ScopedHandle h(this);
  return WtStatus(h.session()->checkpoint(h.session(), nullptr), "checkpoint");
}

Status WtKvEngine::WaitForJournal() {
  if (opts_.in_memory) return Status::OK();
  std::vector<std::shared_ptr<AppendLog>> logs;
  {
    std::lock_guard<std::mutex> lock(logs_mu_);
    for (const auto& [name, log] : logs_) logs.push_back(log);
  }
  for (const auto& log : logs) HG_RETURN_IF_ERROR(log->Sync());
  ScopedHandle h(this);
  // log_flush(sync=on) writes out every buffered journal record — which includes every committed
  // transaction — and fsyncs the journal file before returning.
  return WtStatus(h.session()->log_flush(h.session(), "sync=on"), "flushing the journal");
}

StatusWith<std::shared_ptr<AppendLog>> WtKvEngine::OpenAppendLog(std::string_view name,
                                                                 uint64_t segment_bytes) {
  HG_RETURN_IF_ERROR(ValidateIdent(name));
  std::lock_guard<std::mutex> lock(logs_mu_);
  auto it = logs_.find(name);
  if (it != logs_.end()) return it->second;
  std::string dir =
      opts_.in_memory ? std::string() : (std::filesystem::path(opts_.dbpath) / name).string();
  HG_ASSIGN_OR_RETURN(std::unique_ptr<AppendLog> log,
                      AppendLog::Open(std::move(dir), segment_bytes));
  std::shared_ptr<AppendLog> shared = std::move(log);
  logs_.emplace(std::string(name), shared);
  return shared;
}

int64_t WtKvEngine::TableSizeBytes(std::string_view ident) {
  if (opts_.in_memory || !ValidateIdent(ident).ok()) return 0;
  std::error_code ec;
  auto path = std::filesystem::path(opts_.dbpath) / (std::string(ident) + ".wt");
  auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

StatusWith<int64_t> WtKvEngine::CompactTable(std::string_view ident) {
  HG_RETURN_IF_ERROR(ValidateIdent(ident));
  if (!TableExists(ident)) {
    return Status(ErrorCode::kNamespaceNotFound, "no table '" + std::string(ident) + "'");
  }
  if (opts_.in_memory) return int64_t{0};
  const int64_t before = TableSizeBytes(ident);
  ScopedHandle h(this);
  int ret = h.session()->compact(h.session(), TableUri(ident).c_str(), nullptr);
  if (ret != 0) return WtStatus(ret, "compacting table '" + std::string(ident) + "'");
  return std::max<int64_t>(0, before - TableSizeBytes(ident));
}

void WtKvEngine::CheckpointLoop() {
  using Clock = std::chrono::steady_clock;
  const bool periodic = opts_.checkpoint_interval_secs > 0 && !opts_.in_memory;
  auto next_checkpoint = Clock::now() + std::chrono::seconds(opts_.checkpoint_interval_secs);
  std::unique_lock<std::mutex> lock(bg_mu_);
  while (true) {
    // Wake every second for deferred drops even when checkpoints are rare.
    bg_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
    if (stopping_) return;
    lock.unlock();
    // Under the fsync lock the files must stay as its checkpoint left them: drops and
    // checkpoints wait for it to be released.
    if (auto writing = WriteGate::Get().TryEnter()) {
      ProcessPendingDrops();
      if (periodic && Clock::now() >= next_checkpoint) {
        Status st = Checkpoint();
        if (!st.ok()) LogStorage("E", "periodic checkpoint failed", st.reason());
        next_checkpoint = Clock::now() + std::chrono::seconds(opts_.checkpoint_interval_secs);
      }
    }
    lock.lock();
  }
}

void WtKvEngine::JournalFlushLoop() {
  const auto interval = std::chrono::milliseconds(opts_.journal_commit_interval_ms);
  std::unique_lock<std::mutex> lock(bg_mu_);
  while (true) {
    bg_cv_.wait_for(lock, interval, [this] { return stopping_; });
    if (stopping_) return;
    lock.unlock();
    Status st = WaitForJournal();
    if (!st.ok()) LogStorage("E", "journal flush failed", st.reason());
    lock.lock();
  }
}

}  // namespace internal

bool IsKnownBlockCompressor(std::string_view name) {
  return name == "none" || name == "snappy" || name == "zlib" || name == "zstd";
}

StatusWith<std::unique_ptr<KvEngine>> KvEngine::Open(const EngineOptions& opts) {
  if (opts.dbpath.empty()) return Status(ErrorCode::kBadValue, "dbpath must not be empty");
  if (opts.cache_size_mb <= 0) return Status(ErrorCode::kBadValue, "cache size must be positive");
  if (!IsKnownBlockCompressor(opts.block_compressor)) {
    return Status(ErrorCode::kBadValue, "unknown block compressor '" + opts.block_compressor +
                                            "': the choices are snappy, zlib, zstd and none");
  }
  std::string config = "create,cache_size=" + std::to_string(opts.cache_size_mb) + "M";
  config += ",session_max=" + std::to_string(internal::kSessionMax);
  config += ",statistics=(none)";
  if (opts.in_memory) {
    config += ",in_memory=true,log=(enabled=false)";
  } else {
    // The journal: every commit is logged; old log files are removed after each checkpoint.
    config += ",log=(enabled=true,archive=true)";
  }
  // Every compressor is loaded whatever the default, so tables made with any of them stay
  // readable; early_load makes them available to recovery, which reads table pages. zstd is
  // this program's own ("local": looked up in the running executable).
  std::set<std::string> compressors = {"zstd"};
  config +=
      ",extensions=[local=(entry=hourglass_wiredtiger_zstd_init,early_load=true,"
      "config=(compression_level=" +
      std::to_string(opts.zstd_level) + "))";
  for (const char* name : {"snappy", "zlib"}) {
    std::string path = internal::FindExtension(name);
    if (path.empty()) continue;
    config += ",\"" + path + "\"=(early_load=true)";
    compressors.insert(name);
  }
  config += "]";
  if (!opts.extra_config.empty()) config += "," + opts.extra_config;
  if (opts.block_compressor == "zlib" && !compressors.contains("zlib")) {
    return Status(ErrorCode::kBadValue,
                  "block compressor 'zlib' asked for, but WiredTiger's zlib extension "
                  "(libwiredtiger_zlib.so) is not installed");
  }

  WT_CONNECTION* conn = nullptr;
  int ret = wiredtiger_open(opts.dbpath.c_str(), &internal::event_handler, config.c_str(), &conn);
  if (ret == EBUSY) {
    return Status(ErrorCode::kConflictingOperationInProgress,
                  "dbpath '" + opts.dbpath +
                      "' is in use by another process (or another engine in this process): "
                      "cannot take the WiredTiger lock");
  }
  if (ret != 0) return internal::WtStatus(ret, "opening WiredTiger in '" + opts.dbpath + "'");
  if (opts.block_compressor == "snappy" && !compressors.contains("snappy")) {
    internal::LogStorage("W", "snappy extension not found; tables will not be compressed");
  }
  return std::unique_ptr<KvEngine>(
      std::make_unique<internal::WtKvEngine>(conn, opts, std::move(compressors)));
}

}  // namespace hourglass::storage
