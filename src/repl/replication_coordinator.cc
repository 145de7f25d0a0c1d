#include "repl/replication_coordinator.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/interrupt.h"
#include "base/logger.h"
#include "base/server_parameters.h"
#include "catalog/op_observer.h"
#include "repl/initial_sync.h"
#include "repl/oplog.h"
#include "repl/oplog_fetcher.h"
#include "repl/quorum_check.h"
#include "repl/wire_transport.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::repl {

namespace {

// The member's own table: the configuration in force and which member this server is in it.
constexpr std::string_view kStateTable = "_repl_state";
constexpr std::string_view kConfigKey = "config";
// The oplog's size, {maxSize: <bytes>}, chosen once (--oplogSize or the default) and changed by
// replSetResizeOplog.
constexpr std::string_view kOplogSizeKey = "oplogSize";

// mongod's default oplog size for a disk engine: 5% of the free space, from 990 MB to 50 GB.
int64_t DefaultOplogBytes(const std::string& dbpath) {
  constexpr int64_t kMb = 1024 * 1024;
  struct statvfs fs {};
  int64_t free_bytes = 0;
  if (statvfs(dbpath.c_str(), &fs) == 0) {
    free_bytes = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
  }
  return std::clamp<int64_t>(free_bytes / 20, 990 * kMb, 50 * 1024 * kMb);
}

// The Raft log's entries are BSON documents shaped as MongoDB's oplog entries: {ts, t, wall, op,
// ns, o}; the entry that carries a configuration has it under `config` as well.
bson::BsonObj MakeEntry(OpTime at, int64_t wall_ms, std::string_view msg,
                        const bson::BsonObj* config) {
  bson::BsonBuilder b;
  b.AppendTimestamp("ts", at.ts);
  b.AppendInt64("t", at.term);
  b.AppendDate("wall", wall_ms);
  b.AppendString("op", "n");
  b.AppendString("ns", "");
  size_t o = b.OpenObject("o");
  b.AppendString("msg", msg);
  b.Close(o);
  if (config != nullptr) b.AppendObject("config", *config);
  return b.Obj();
}

// `doc` in a buffer of raft_malloc's, zero-padded to a multiple of 8 bytes: canonical/raft's log
// writer requires entries of whole 8-byte words (an assertion its release builds compile out,
// writing a corrupt segment instead).
raft_buffer RaftCopy(const bson::BsonObj& doc) {
  raft_buffer buf;
  size_t size = doc.bytes().size();
  buf.len = (size + 7) / 8 * 8;
  buf.base = raft_malloc(buf.len);
  if (buf.base == nullptr) {
    buf.len = 0;
    return buf;
  }
  std::memcpy(buf.base, doc.data(), size);
  std::memset(static_cast<char*>(buf.base) + size, 0, buf.len - size);
  return buf;
}

// mongod's periodic no-op writer: writePeriodicNoops (startup, default true) and
// periodicNoopIntervalSecs (startup, 1 to 10, default 10).
ServerParameter* WritePeriodicNoopsParameter() {
  static ServerParameter* p =
      ServerParameterRegistry::Get().Register("writePeriodicNoops", true, true, false);
  return p;
}

// mongod's createRollbackDataFiles (startup and runtime, default true): whether a rollback keeps
// what it removes in <dbpath>/rollback.
ServerParameter* CreateRollbackDataFilesParameter() {
  static ServerParameter* p =
      ServerParameterRegistry::Get().Register("createRollbackDataFiles", true, true, true);
  return p;
}

ServerParameter* PeriodicNoopIntervalParameter() {
  static ServerParameter* p = ServerParameterRegistry::Get().Register(
      "periodicNoopIntervalSecs", int64_t{10}, true, false, [](const ParameterValue& v) {
        const int64_t secs = std::holds_alternative<int32_t>(v)   ? std::get<int32_t>(v)
                             : std::holds_alternative<int64_t>(v) ? std::get<int64_t>(v)
                                                                  : 0;
        if (secs < 1 || secs > 10) {
          return Status(ErrorCode::kBadValue,
                        "Invalid value for parameter periodicNoopIntervalSecs: must be from 1 "
                        "to 10");
        }
        return Status::OK();
      });
  return p;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The addresses of this machine's interfaces, as text.
std::vector<std::string> InterfaceAddresses() {
  std::vector<std::string> out;
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (struct ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (i->ifa_addr->sa_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                sizeof(text));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, text,
                sizeof(text));
    } else {
      continue;
    }
    out.emplace_back(text);
  }
  freeifaddrs(list);
  return out;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace

std::string_view MemberStateName(MemberState state) {
  switch (state) {
    case MemberState::kStartup:
      return "STARTUP";
    case MemberState::kPrimary:
      return "PRIMARY";
    case MemberState::kSecondary:
      return "SECONDARY";
    case MemberState::kRecovering:
      return "RECOVERING";
    case MemberState::kStartup2:
      return "STARTUP2";
    case MemberState::kUnknown:
      return "UNKNOWN";
    case MemberState::kArbiter:
      return "ARBITER";
    case MemberState::kDown:
      return "DOWN";
    case MemberState::kRollback:
      return "ROLLBACK";
    case MemberState::kRemoved:
      return "REMOVED";
  }
  return "UNKNOWN";
}

bson::ObjectId ElectionIdForTerm(int64_t term) {
  bson::ObjectId id{};
  id.bytes[0] = 0x7f;
  id.bytes[1] = id.bytes[2] = id.bytes[3] = 0xff;
  for (int i = 0; i < 8; ++i) {
    id.bytes[4 + i] = static_cast<uint8_t>(static_cast<uint64_t>(term) >> (56 - 8 * i));
  }
  return id;
}

// Everything Raft touches lives on the loop thread: the raft instance, its I/O and transport are
// created, driven and closed there, and other threads reach it only through Post().
class ReplicationCoordinator::Impl {
 public:
  Impl(Options options, storage::KvEngine* engine, catalog::Catalog* catalog)
      : opts_(std::move(options)),
        engine_(engine),
        catalog_(catalog),
        oplog_(engine, catalog, opts_.transactions) {}

  ~Impl() {
    Shutdown();
    StopTruncator();
    StopApplier();
  }

  Status Start() {
    if (engine_->TableExists(kStateTable) == false) {
      HG_RETURN_IF_ERROR(engine_->CreateTable(kStateTable, ""));
    }
    HG_RETURN_IF_ERROR(oplog_.Open(Oplog::Hooks{
        [this](int64_t* term) {
          *term = writable_term_.load();
          return *term >= 0;
        },
        [this](bson::BsonObj batch) {
          OpTime at{batch["ts"].TimestampValue(), batch["t"].NumberLong()};
          {
            std::lock_guard<std::mutex> lock(last_write_mu_);
            last_write_ = at;
          }
          EnqueueAppend(std::move(batch), at, nullptr);
        },
        [this] {
          return CreateRollbackDataFilesParameter()->GetBool() ? opts_.dbpath + "/rollback"
                                                               : std::string();
        }}));
    HG_RETURN_IF_ERROR(SizeOplog());
    catalog::SetOpObserver(&oplog_);
    StartApplier();
    StartTruncator();
    HG_RETURN_IF_ERROR(StartLoop());
    auto session = engine_->NewSession();
    HG_ASSIGN_OR_RETURN(auto stored, session->Get(kStateTable, kConfigKey));
    if (!stored) return Status::OK();
    HG_RETURN_IF_ERROR(bson::ValidateBson(*stored));
    bson::BsonObj doc = bson::BsonObj::CopyOf(*stored);
    HG_ASSIGN_OR_RETURN(ReplicaSetConfig config, ReplicaSetConfig::Parse(doc["config"].Obj()));
    int self_id = static_cast<int>(doc["self"].NumberLong());
    int self = -1;
    for (size_t i = 0; i < config.members.size(); ++i) {
      if (config.members[i].id == self_id) self = static_cast<int>(i);
    }
    if (self < 0) {
      return Status(ErrorCode::kInvalidReplicaSetConfig,
                    "the stored replica set configuration does not list this member");
    }
    if (config.set_name != opts_.set_name) {
      return Status(ErrorCode::kInvalidReplicaSetConfig,
                    "this member's stored configuration is for replica set '" + config.set_name +
                        "', not '" + opts_.set_name + "' (--replSet)");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      view_.config = config;
      view_.self = self;
      view_.state = MemberState::kStartup2;
      Changed();
    }
    bool initiator = doc["initiator"].Bool();
    return RunOnLoop(
        [this, member = config.members[self], initiator] { return OpenRaft(member, initiator); });
  }

  void BeginShutdown() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_flag_ = true;
    cv_.notify_all();
  }

  void Shutdown() {
    BeginShutdown();
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      if (!loop_running_ || stopping_) return;
      stopping_ = true;
    }
    uv_async_send(&wake_);
    loop_thread_.join();
    uv_loop_close(&loop_);
    StopTruncator();
    StopApplier();
    if (catalog::GetOpObserver() == &oplog_) catalog::SetOpObserver(nullptr);
    appends_.clear();
    std::lock_guard<std::mutex> lock(mu_);
    view_.state = MemberState::kStartup;
    view_.writable_primary = false;
    view_.primary = -1;
    Changed();
  }

  const std::string& set_name() const { return opts_.set_name; }

  ReplicaSetView View() const {
    std::lock_guard<std::mutex> lock(mu_);
    return view_;
  }

  Status Initiate(const bson::BsonObj* given) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (view_.config || initiating_) {
        return Status(ErrorCode::kAlreadyInitialized, "already initialized");
      }
      initiating_ = true;
    }
    Status st = InitiateLocked(given);
    std::lock_guard<std::mutex> lock(mu_);
    initiating_ = false;
    return st;
  }

  Status StepDown(int64_t step_down_secs, int64_t catch_up_secs, bool force) {
    ReplicaSetView now = View();
    if (now.state != MemberState::kPrimary) {
      return Status(ErrorCode::kNotWritablePrimary, "not primary so can't step down");
    }
    bool others = false;
    for (size_t i = 0; i < now.config->members.size(); ++i) {
      others = others || (static_cast<int>(i) != now.self && now.config->members[i].Electable() &&
                          now.member_states.at(i) == MemberState::kSecondary);
    }
    if (others) {
      // Out of elections for the period: while this member leads, Poll hands the leadership to a
      // voter that has caught up with the log (Raft's transfer).
      std::unique_lock<std::mutex> lock(mu_);
      view_.step_down_until_ms = NowMillis() + step_down_secs * 1000;
      Recompute();
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::seconds(std::max<int64_t>(catch_up_secs, 10));
      if (cv_.wait_until(lock, deadline, [this] {
            return (view_.primary >= 0 && view_.primary != view_.self) || stopping_flag_;
          })) {
        return Status::OK();
      }
      if (force) return Status::OK();  // stays out; Poll keeps trying
      view_.step_down_until_ms = 0;
      Recompute();
      return Status(ErrorCode::kExceededTimeLimit,
                    "No electable secondaries caught up as of " + FormatIsoDate(NowMillis()) +
                        ". Please use the replSetStepDown command with the argument "
                        "{force: true} to force node to step down.");
    }
    // In a set of one nobody can take over: without force, wait for the catch-up period in vain.
    if (!force) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::seconds(catch_up_secs), [this] { return stopping_flag_; });
      return Status(ErrorCode::kExceededTimeLimit,
                    "No electable secondaries caught up as of " + FormatIsoDate(NowMillis()) +
                        ". Please use the replSetStepDown command with the argument "
                        "{force: true} to force node to step down.");
    }
    std::lock_guard<std::mutex> lock(mu_);
    view_.step_down_until_ms = NowMillis() + step_down_secs * 1000;
    Recompute();
    return Status::OK();
  }

  Status Freeze(int64_t secs, std::string* info) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!view_.config) {
      return Status(ErrorCode::kNotYetInitialized, "no replset config has been received");
    }
    if (view_.state == MemberState::kPrimary) {
      return Status(ErrorCode::kNotSecondary,
                    "cannot freeze node when primary or running for election. state: Primary");
    }
    if (secs == 0) {
      *info = "unfreezing";
      view_.step_down_until_ms = 0;
    } else {
      view_.step_down_until_ms = NowMillis() + secs * 1000;
    }
    Recompute();
    return Status::OK();
  }

  void AwaitTopologyChange(int64_t counter, std::chrono::steady_clock::time_point deadline,
                           const std::atomic<bool>& stop) const {
    std::unique_lock<std::mutex> lock(mu_);
    while (view_.topology_counter == counter && !stop.load()) {
      // Short waits: `stop` is not signalled through this condition variable.
      auto next =
          std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
      cv_.wait_until(lock, next);
      if (std::chrono::steady_clock::now() >= deadline) return;
    }
  }

  bool HasWriteRoom() const { return uncommitted_entries_.load() <= kMaxUncommittedEntries; }

  bool AwaitWriteRoom() {
    if (HasWriteRoom()) return true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, until, [&] {
      return uncommitted_entries_.load() <= kMaxUncommittedEntries || !view_.writable_primary ||
             stopping_flag_;
    });
    return view_.writable_primary;
  }

  Status AwaitMajority(OpTime write, int64_t wtimeout_ms) {
    // This member handed its term's entries to Raft in time order, and Raft commits in log
    // order: an entry of the write's term committed at or past it commits the write. An entry of
    // a later term does not — the member lost the term, and the write may have missed the log
    // (it is then rolled back here).
    return AwaitReplication(
        [&] {
          return view_.last_committed.term == write.term && view_.last_committed.ts >= write.ts;
        },
        write, wtimeout_ms);
  }

  OpTime LastWriteOpTime() const {
    std::lock_guard<std::mutex> lock(last_write_mu_);
    return last_write_;
  }
  int64_t WritableTerm() const { return writable_term_.load(); }

  uint64_t ClusterTime() const {
    const uint64_t logged = oplog_.ClockTimestamp();
    std::lock_guard<std::mutex> lock(mu_);
    if (!view_.config) return 0;
    return std::max({logged, view_.last_applied.ts, view_.last_committed.ts});
  }

  void AdvanceClusterTime(uint64_t ts) { oplog_.AdvanceTo(ts); }

  uint64_t LastVisibleTimestamp() const {
    // The primary's commits are visible once logged (the oplog's mutex is held to the commit's
    // end); a secondary's once its applier applied them.
    const uint64_t logged = oplog_.last_appended_ts();
    std::lock_guard<std::mutex> lock(mu_);
    return std::max(logged, view_.last_applied.ts);
  }

  uint64_t LastCommittedTimestamp() const {
    std::lock_guard<std::mutex> lock(mu_);
    return view_.last_committed.ts;
  }

  Status AwaitVisible(uint64_t ts) {
    if (LastVisibleTimestamp() >= ts) return Status::OK();
    if (writable_term_.load() >= 0) {
      // No write has reached `ts` here: a no-op later than it, so that the wait ends (mongod's
      // "noop write for afterClusterTime read concern").
      oplog_.AdvanceTo(ts);
      HG_RETURN_IF_ERROR(RunOnLoop([this] {
        Append("noop write for afterClusterTime read concern", nullptr, [](int) {});
        return Status::OK();
      }));
    }
    return AwaitFor([&] { return LastVisibleTimestamp() >= ts; }, false);
  }

  int64_t OplogMaxBytes() const { return oplog_.max_bytes(); }

  OplogTruncationStats OplogTruncation() const {
    return {truncate_count_.load(), truncating_micros_.load(), oplog_.min_retention_hours()};
  }

  Status ResizeOplog(std::optional<int64_t> max_bytes, std::optional<double> hours) {
    // One at a time: each keeps the field the other changed.
    std::lock_guard<std::mutex> resizing(resize_mu_);
    if (max_bytes) HG_RETURN_IF_ERROR(StoreOplogSize(*max_bytes));
    oplog_.SetLimits(max_bytes.value_or(oplog_.max_bytes()),
                     hours.value_or(oplog_.min_retention_hours()));
    LOGI("REPL", 20497, "replSetResizeOplog success",
         "{\"size\": " + std::to_string(oplog_.max_bytes()) +
             ", \"minRetentionHours\": " + std::to_string(oplog_.min_retention_hours()) + "}");
    truncator_cv_.notify_all();
    return Status::OK();
  }

  Status AwaitCommitted(uint64_t ts) {
    return AwaitFor([&] { return LastCommittedTimestamp() >= ts; }, true);
  }

  Status ConfirmPrimary() {
    if (writable_term_.load() < 0) {
      return Status(ErrorCode::kNotWritablePrimary,
                    "cannot satisfy linearizable read concern on non-primary node");
    }
    // The no-op's outcome, set on the loop thread (kPending until then): the wait below may end
    // first (maxTimeMS, shutdown).
    constexpr int kPending = 1 << 30;
    auto outcome = std::make_shared<std::atomic<int>>(kPending);
    HG_RETURN_IF_ERROR(RunOnLoop([this, outcome] {
      Append("linearizable read", nullptr, [outcome](int status) { outcome->store(status); });
      return Status::OK();
    }));
    HG_RETURN_IF_ERROR(AwaitFor([&] { return outcome->load() != kPending; }, false));
    if (int status = outcome->load(); status != 0) {
      return Status(
          ErrorCode::kPrimarySteppedDown,
          std::string("the primary could not confirm its role for a linearizable read: ") +
              raft_strerror(status));
    }
    return Status::OK();
  }

  // Waits for `done()` (tested without mu_, at least every 10 ms and at each change of the view)
  // for a read: stops with the running operation's interruption, ShutdownInProgress, or — with
  // `primary` — PrimarySteppedDown when this member stops being the writable primary.
  Status AwaitFor(const std::function<bool()>& done, bool primary) {
    while (!done()) {
      if (const auto& op = OperationControl::Current()) HG_RETURN_IF_ERROR(op->Check());
      std::unique_lock<std::mutex> lock(mu_);
      if (stopping_flag_) {
        return Status(ErrorCode::kShutdownInProgress, "the server is shutting down");
      }
      if (primary && !view_.writable_primary) {
        return Status(ErrorCode::kPrimarySteppedDown,
                      "Primary stepped down while waiting for a majority read");
      }
      cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
    return Status::OK();
  }

  Status AwaitMembers(OpTime write, int64_t n, int64_t wtimeout_ms) {
    return AwaitReplication(
        [&] {
          // The members' progress is the leader's, in the log it built in its term.
          if (writable_term_.load() != write.term) return false;
          int64_t count = 0;
          for (size_t i = 0; i < view_.member_optimes.size(); ++i) {
            // This member holds its own writes once they committed here.
            if (static_cast<int>(i) == view_.self || view_.member_optimes[i].ts >= write.ts) {
              ++count;
            }
          }
          return count >= n;
        },
        write, wtimeout_ms);
  }

  // Waits (holding mu_ while it tests) until `done()`, for a write concern on `write`:
  // WriteConcernFailed after `wtimeout_ms` (0: no limit), PrimarySteppedDown once this member is
  // no longer the writable primary of the write's term, ShutdownInProgress.
  Status AwaitReplication(const std::function<bool()>& done, OpTime write, int64_t wtimeout_ms) {
    if (write.ts == 0) return Status::OK();  // nothing written here yet
    // A write of a term before the one this member is primary in now (a command that wrote
    // nothing itself): the member applied its log through its own term's first entry, which
    // committed everything before it, before taking writes.
    if (writable_term_.load() > write.term) return Status::OK();
    auto deadline = wtimeout_ms > 0
                        ? std::chrono::steady_clock::now() + std::chrono::milliseconds(wtimeout_ms)
                        : std::chrono::steady_clock::time_point::max();
    const std::shared_ptr<OperationControl>& op = OperationControl::Current();
    std::unique_lock<std::mutex> lock(mu_);
    while (!done()) {
      if (stopping_flag_) {
        return Status(ErrorCode::kShutdownInProgress, "the server is shutting down");
      }
      if (writable_term_.load() != write.term) {
        return Status(ErrorCode::kPrimarySteppedDown,
                      "Primary stepped down while waiting for replication");
      }
      if (op) {
        // killOp and maxTimeMS end the wait, as mongod's (a slice at a time).
        lock.unlock();
        HG_RETURN_IF_ERROR(op->Check());
        lock.lock();
        if (done()) break;
      }
      const auto slice = std::min(
          deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(op ? 20 : 1000));
      if (cv_.wait_until(lock, slice) == std::cv_status::timeout && !done() &&
          std::chrono::steady_clock::now() >= deadline) {
        return Status(ErrorCode::kWriteConcernFailed, "waiting for replication timed out");
      }
    }
    return Status::OK();
  }

  Status PrepareRaftConnection(std::string_view set_name, int64_t from, int64_t to,
                               std::string_view to_address) {
    if (set_name != opts_.set_name) {
      return Status(ErrorCode::kInvalidReplicaSetConfig,
                    "member " + std::to_string(from) + " is of replica set '" +
                        std::string(set_name) + "', this one of '" + opts_.set_name + "'");
    }
    return RunOnLoop([this, to, address = std::string(to_address)] {
      if (raft_open_) {
        if (static_cast<int64_t>(raft_.id) == to) return Status::OK();
        return Status(ErrorCode::kInvalidReplicaSetConfig, "this member is Raft member " +
                                                               std::to_string(raft_.id) + ", not " +
                                                               std::to_string(to));
      }
      if (to < 1 || to > (int64_t{1} << 31)) {
        return Status(ErrorCode::kBadValue, "a Raft member's id is 1 + its member _id");
      }
      // Not configured yet: the set's primary is adding this member. It joins with the id and
      // address the configuration gives it, and learns the configuration from the log.
      MemberConfig self;
      self.id = static_cast<int>(to - 1);
      self.host = address;
      return OpenRaft(self, false);
    });
  }

  void AdoptRaftConnection(int fd, int64_t from, std::string from_address) {
    bool posted = Post([this, fd, from, from_address] {
      if (transport_ == nullptr) {
        close(fd);
        return;
      }
      transport_->Adopt(fd, static_cast<uint64_t>(from), from_address);
    });
    if (!posted) close(fd);
  }

  bool IsSelf(std::string_view host_and_port) const {
    size_t colon = host_and_port.rfind(':');
    std::string host(host_and_port.substr(0, colon));
    int port = colon == std::string_view::npos
                   ? 27017
                   : std::atoi(std::string(host_and_port.substr(colon + 1)).c_str());
    if (port != opts_.port) return false;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    std::string lower = ToLower(host);
    if (lower == "localhost" || lower == ToLower(HostName())) return true;
    struct addrinfo hints = {};
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo* found = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0) return false;
    std::vector<std::string> mine = InterfaceAddresses();
    bool self = false;
    for (struct addrinfo* a = found; a != nullptr && !self; a = a->ai_next) {
      char text[INET6_ADDRSTRLEN] = {};
      if (a->ai_family == AF_INET) {
        auto* in = reinterpret_cast<sockaddr_in*>(a->ai_addr);
        // All of 127.0.0.0/8 is this machine.
        if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) self = true;
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      } else if (a->ai_family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text,
                  sizeof(text));
      }
      for (const std::string& m : mine) self = self || m == text;
    }
    freeaddrinfo(found);
    return self;
  }

 private:
  // --- Loop thread plumbing -------------------------------------------------------------

  Status StartLoop() {
    if (uv_loop_init(&loop_) != 0) {
      return Status(ErrorCode::kInternalError, "cannot start the replication event loop");
    }
    loop_.data = this;
    uv_async_init(&loop_, &wake_,
                  [](uv_async_t* a) { static_cast<Impl*>(a->loop->data)->RunTasks(); });
    uv_timer_init(&loop_, &tick_);
    uv_timer_start(
        &tick_, [](uv_timer_t* t) { static_cast<Impl*>(t->loop->data)->Poll(); }, 20, 20);
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      loop_running_ = true;
    }
    loop_thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
    return Status::OK();
  }

  // Queues `fn` for the loop thread; false when the loop is stopping.
  bool Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      if (!loop_running_ || stopping_) return false;
      tasks_.push_back(std::move(fn));
      // Under the lock: Shutdown cannot close the handle in between.
      uv_async_send(&wake_);
    }
    return true;
  }

  // Runs `fn` on the loop thread and waits for its Status.
  Status RunOnLoop(std::function<Status()> fn) {
    std::promise<Status> done;
    std::future<Status> result = done.get_future();
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      if (!loop_running_ || stopping_) {
        return Status(ErrorCode::kShutdownInProgress, "the server is shutting down");
      }
      tasks_.push_back([&done, &fn] { done.set_value(fn()); });
      uv_async_send(&wake_);
    }
    return result.get();
  }

  void RunTasks() {
    std::vector<std::function<void()>> tasks;
    bool stop;
    {
      std::lock_guard<std::mutex> lock(tasks_mu_);
      tasks.swap(tasks_);
      stop = stopping_;
    }
    for (auto& t : tasks) t();
    if (stop && !closing_) CloseLoop();
  }

  void CloseLoop() {
    closing_ = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_flag_ = true;
    }
    cv_.notify_all();
    uv_timer_stop(&tick_);
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    if (!raft_open_) {
      uv_close(reinterpret_cast<uv_handle_t*>(&wake_), nullptr);
      return;
    }
    raft_close(&raft_, [](struct raft* r) {
      auto* self = static_cast<Impl*>(r->data);
      raft_uv_close(&self->io_);
      self->transport_.reset();
      self->raft_open_ = false;
      uv_close(reinterpret_cast<uv_handle_t*>(&self->wake_), nullptr);
    });
  }

  // --- Raft ------------------------------------------------------------------------------

  // Opens this member's Raft instance in <dbpath>/raft and starts it. The member that ran
  // replSetInitiate (`bootstrap`) starts the log with itself as the only voter (when the
  // directory is new) and adds the others once elected; the others start empty and learn the log
  // from it.
  Status OpenRaft(const MemberConfig& self, bool bootstrap) {
    if (raft_open_) {
      return Status(ErrorCode::kIllegalOperation,
                    "the Raft member is already open; restart the server to start it again");
    }
    std::string dir = opts_.dbpath + "/raft";
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status(ErrorCode::kInternalError, "cannot create " + dir + ": " + strerror(errno));
    }
    initiator_ = bootstrap;
    transport_ = std::make_unique<WireTransport>(&loop_, opts_.set_name, opts_.internal_key);
    if (int rv = raft_uv_init(&io_, &loop_, dir.c_str(), transport_->raft_transport()); rv != 0) {
      return Status(ErrorCode::kInternalError,
                    std::string("cannot open the replicated log in ") + dir + ": " + io_.errmsg);
    }
    std::memset(&fsm_, 0, sizeof(fsm_));
    fsm_.version = 1;
    fsm_.data = this;
    fsm_.apply = [](raft_fsm* f, const raft_buffer* buf, void** result) {
      *result = nullptr;
      return static_cast<Impl*>(f->data)->Apply(*buf);
    };
    fsm_.snapshot = [](raft_fsm* f, raft_buffer* bufs[], unsigned* n) {
      return static_cast<Impl*>(f->data)->Snapshot(bufs, n);
    };
    fsm_.restore = [](raft_fsm* f, raft_buffer* buf) {
      // The buffer is ours only when the restore succeeds (Raft frees it otherwise).
      int rv = static_cast<Impl*>(f->data)->Apply(*buf, /*restore=*/true);
      if (rv == 0) raft_free(buf->base);
      return rv;
    };
    raft_id id = static_cast<raft_id>(self.id) + 1;  // Raft ids start at 1, member ids at 0
    if (int rv = raft_init(&raft_, &io_, &fsm_, id, self.host.c_str()); rv != 0) {
      std::string why = raft_errmsg(&raft_);
      raft_uv_close(&io_);
      return Status(ErrorCode::kInternalError, "cannot start the Raft member: " + why);
    }
    raft_.data = this;
    raft_open_ = true;
    if (bootstrap) {
      struct raft_configuration conf;
      raft_configuration_init(&conf);
      raft_configuration_add(&conf, id, self.host.c_str(), RAFT_VOTER);
      int rv = raft_bootstrap(&raft_, &conf);
      raft_configuration_close(&conf);
      if (rv != 0 && rv != RAFT_CANTBOOTSTRAP) {
        return Status(ErrorCode::kInternalError,
                      std::string("cannot bootstrap the replicated log: ") + raft_errmsg(&raft_));
      }
    }
    raft_set_election_timeout(&raft_, 1000);
    raft_set_heartbeat_timeout(&raft_, 100);
    // A member cut off (or removed) does not disrupt the others' leader when it comes back.
    raft_set_pre_vote(&raft_, true);
    if (int start = raft_start(&raft_); start != 0) {
      return Status(ErrorCode::kInternalError,
                    std::string("cannot start the Raft member: ") + raft_errmsg(&raft_));
    }
    LOGI("REPL", 21392, "Raft member started",
         "{\"id\": " + std::to_string(id) + ", \"address\": " + JsonQuote(self.host) + "}");
    return Status::OK();
  }

  // The state machine: entries are applied in log order on every member. This slice's entries
  // are no-ops and configurations.
  // `restore`: the entry is a snapshot (Snapshot), the position of the data a member holds
  // rather than a change to apply; a member that holds less catches up from the primary's oplog.
  int Apply(const raft_buffer& buf, bool restore = false) {
    // The document, without the padding RaftCopy added.
    if (buf.len < 5) return RAFT_MALFORMED;
    size_t size = static_cast<size_t>(bson::ReadInt32(static_cast<const char*>(buf.base)));
    if (size > buf.len) return RAFT_MALFORMED;
    std::string_view bytes(static_cast<const char*>(buf.base), size);
    if (!bson::ValidateBson(bytes).ok()) return RAFT_MALFORMED;
    bson::BsonObj entry(static_cast<const char*>(buf.base));
    OpTime at{entry["ts"].TimestampValue(), entry["t"].NumberLong()};
    int64_t wall = entry["wall"].DateMillis();
    if (!restore && entry["ops"].type() != bson::BsonType::kArray) {
      // An entry the coordinator wrote (no row anywhere yet) follows the entry before it in
      // time. A new primary names its "new primary" no-op before it has applied the entries of
      // the earlier term its log holds (Raft commits those only with an entry of the new term),
      // so the no-op's time may not pass theirs: every member moves it past the entry before,
      // the same way, and the oplog's times keep the log's order.
      uint64_t floor;
      {
        std::lock_guard<std::mutex> lock(mu_);
        floor = view_.last_committed.ts + 1;
      }
      if (at.ts < floor) {
        at.ts = floor;
        bson::BsonBuilder b;
        for (bson::BsonElement e : entry) {
          if (e.FieldName() == "ts") {
            b.AppendTimestamp("ts", at.ts);
          } else {
            b.AppendElement(e);
          }
        }
        entry = b.Obj();
      }
    }
    if (restore) {
      // The applier catches up with what the snapshot stands for (CatchUp: from the primary's
      // oplog, or an initial sync) before it applies the entries after it — off this thread, as
      // a copy may take minutes. The entries still queued come before the snapshot, which
      // stands for them too.
      {
        std::lock_guard<std::mutex> lock(apply_mu_);
        to_apply_.clear();
        if (at.ts > pending_catch_up_ts_.load()) pending_catch_up_ts_.store(at.ts);
        apply_cv_.notify_all();
      }
      // A snapshot Raft restored is on disk: what it stands for is never applied again.
      last_snapshot_ts_.store(at.ts);
      kept_snapshot_ts_.store(at.ts);
    }
    if (bson::BsonElement c = entry["config"]; c.type() == bson::BsonType::kObject) {
      auto config = ReplicaSetConfig::Parse(c.Obj());
      if (config.ok()) {
        applied_config_version_ = config.value().version;
        TakeConfig(config.value());
      }
    }
    if (!restore) {
      // The applier writes its operations; Raft has committed it (w: "majority" needs no more).
      std::lock_guard<std::mutex> lock(apply_mu_);
      to_apply_.push_back(ToApply{entry.Owned(), at, wall});
      apply_cv_.notify_all();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (restore) {
      view_.last_applied = at;
      view_.last_applied_wall_ms = wall;
      Recompute();  // a catch-up is pending now
    }
    // An entry reaches the state machine only once Raft has committed it.
    uncommitted_entries_.store(static_cast<int64_t>(raft_last_index(&raft_) - raft_.commit_index));
    view_.last_committed = at;
    view_.last_committed_wall_ms = wall;
    cv_.notify_all();  // write concerns wait for it
    return 0;
  }

  void StartApplier() {
    applier_ = std::thread([this] {
      SetThreadLogContext("ReplApplier");
      std::unique_lock<std::mutex> lock(apply_mu_);
      while (true) {
        apply_cv_.wait(lock, [&] {
          return applier_stop_ || !to_apply_.empty() || pending_catch_up_ts_.load() != 0;
        });
        if (applier_stop_) return;
        if (const uint64_t pending = pending_catch_up_ts_.load(); pending != 0) {
          applying_ = true;
          lock.unlock();
          const bool done = CatchUp(pending);
          if (done) {
            oplog_.MarkHandled(pending);
            // A later snapshot may have come meanwhile: then its catch-up is next.
            uint64_t expected = pending;
            pending_catch_up_ts_.compare_exchange_strong(expected, 0);
            std::lock_guard<std::mutex> view_lock(mu_);
            Recompute();  // a leader that was catching up may take writes now
          }
          lock.lock();
          applying_ = false;
          apply_cv_.notify_all();
          if (!done) {
            // The primary cannot be reached yet: again in a second.
            apply_cv_.wait_for(lock, std::chrono::seconds(1), [&] { return applier_stop_; });
          }
          continue;
        }
        ToApply next = std::move(to_apply_.front());
        to_apply_.pop_front();
        applying_ = true;
        lock.unlock();
        Status st = oplog_.Apply(next.entry);
        {
          std::lock_guard<std::mutex> view_lock(mu_);
          if (!st.ok()) {
            // The member no longer holds what the primary holds: it says so and stops serving
            // reads.
            LOGE("REPL", 8800310, "Cannot apply a replicated log entry: this member needs a resync",
                 "{\"error\": " + JsonQuote(st.ToString()) + "}");
            needs_resync_ = true;
          }
          view_.last_applied = next.at;
          view_.last_applied_wall_ms = next.wall_ms;
          Recompute();
          cv_.notify_all();
        }
        lock.lock();
        applying_ = false;
        apply_cv_.notify_all();
      }
    });
  }

  // --- The oplog's size ---------------------------------------------------------------------

  Status StoreOplogSize(int64_t bytes) {
    bson::BsonBuilder b;
    b.AppendInt64("maxSize", bytes);
    auto session = engine_->NewSession();
    HG_RETURN_IF_ERROR(session->Put(kStateTable, kOplogSizeKey, b.Obj().bytes()));
    return engine_->WaitForJournal();
  }

  // The size is the member's, kept from when it was first chosen: a later --oplogSize does not
  // change it (replSetResizeOplog does), as with mongod.
  Status SizeOplog() {
    auto session = engine_->NewSession();
    HG_ASSIGN_OR_RETURN(auto stored, session->Get(kStateTable, kOplogSizeKey));
    int64_t bytes = 0;
    if (stored && bson::ValidateBson(*stored).ok()) {
      bytes = bson::BsonObj::CopyOf(*stored)["maxSize"].NumberLong();
    }
    const int64_t given = opts_.oplog_size_mb * 1024 * 1024;
    if (bytes <= 0) {
      bytes = given > 0 ? given : DefaultOplogBytes(opts_.dbpath);
      HG_RETURN_IF_ERROR(StoreOplogSize(bytes));
      LOGI("REPL", 21251, "Creating replication oplog",
           "{\"oplogSizeMB\": " + std::to_string(bytes / (1024 * 1024)) + "}");
    } else if (given > 0 && given != bytes) {
      LOGW("REPL", 21249, "The oplog keeps its size: --oplogSize differs from it",
           "{\"oplogSizeBytes\": " + std::to_string(bytes) +
               ", \"commandLineBytes\": " + std::to_string(given) + "}");
    }
    oplog_.SetLimits(bytes, opts_.oplog_min_retention_hours);
    return Status::OK();
  }

  // About every second (and at each resize), removes the oldest oplog entries beyond the size.
  // Entries Raft could hand to the state machine again after a restart (those after its
  // snapshot before last: the last one may not be written yet) stay, for the applier tells
  // what it applied by the oplog's rows; so do those the set has not committed or this member
  // not applied.
  // An idle primary logs {msg: "periodic noop"} every periodicNoopIntervalSecs, as mongod's
  // does: its members' optimes keep moving, and a read on a secondary waiting for a cluster time
  // nobody writes after ends.
  void WritePeriodicNoop() {
    if (!WritePeriodicNoopsParameter()->GetBool() || writable_term_.load() < 0) return;
    const uint64_t now_secs = static_cast<uint64_t>(NowMillis() / 1000);
    const uint64_t last_secs = oplog_.last_appended_ts() >> 32;
    if (now_secs < last_secs + static_cast<uint64_t>(PeriodicNoopIntervalParameter()->GetInt())) {
      return;
    }
    Status st = RunOnLoop([this] {
      Append("periodic noop", nullptr, [](int) {});
      return Status::OK();
    });
    if (!st.ok() && st.code() != ErrorCode::kShutdownInProgress) {
      LOGW("REPL", 8800314, "Cannot write the periodic no-op",
           "{\"error\": " + JsonQuote(st.ToString()) + "}");
    }
  }

  void StartTruncator() {
    truncator_ = std::thread([this] {
      SetThreadLogContext("OplogCapMaintainer");
      std::unique_lock<std::mutex> lock(truncator_mu_);
      while (!truncator_stop_) {
        truncator_cv_.wait_for(lock, std::chrono::seconds(1));
        if (truncator_stop_) return;
        lock.unlock();
        uint64_t keep_from = kept_snapshot_ts_.load();
        {
          std::lock_guard<std::mutex> view_lock(mu_);
          keep_from = std::min({keep_from, view_.last_applied.ts, view_.last_committed.ts});
        }
        if (keep_from > 0) {
          const auto start = std::chrono::steady_clock::now();
          StatusWith<int64_t> removed = oplog_.Truncate(keep_from);
          if (!removed.ok()) {
            LOGW("REPL", 8800313, "Cannot truncate the oplog",
                 "{\"error\": " + JsonQuote(removed.status().ToString()) + "}");
          } else if (removed.value() > 0) {
            truncate_count_.fetch_add(1);
            truncating_micros_.fetch_add(std::chrono::duration_cast<std::chrono::microseconds>(
                                             std::chrono::steady_clock::now() - start)
                                             .count());
          }
        }
        WritePeriodicNoop();
        ReportStalledLoop();
        lock.lock();
      }
    });
  }

  // Raft, elections and catch-up all run on the loop thread (Poll every 20 ms): a loop held up
  // for seconds stops this member's part in the set, so it is said once per stall.
  void ReportStalledLoop() {
    const int64_t last = last_poll_ms_.load();
    const int64_t idle = NowMillis() - last;
    if (last == 0 || idle < 5000) {
      stall_reported_ = false;
      return;
    }
    if (stall_reported_) return;
    stall_reported_ = true;
    LOGW("REPL", 8800318, "The replication loop has not run for seconds",
         "{\"millis\": " + std::to_string(idle) + "}");
  }

  void StopTruncator() {
    {
      std::lock_guard<std::mutex> lock(truncator_mu_);
      truncator_stop_ = true;
    }
    truncator_cv_.notify_all();
    if (truncator_.joinable()) truncator_.join();
  }

  // Waits until the applier has applied every entry handed to it (a snapshot stands for them).
  void DrainApplier() {
    std::unique_lock<std::mutex> lock(apply_mu_);
    apply_cv_.wait(lock, [&] { return applier_stop_ || (to_apply_.empty() && !applying_); });
  }

  void StopApplier() {
    catch_up_cancel_.store(true);  // a copy or catch-up under way ends at its next batch
    {
      std::lock_guard<std::mutex> lock(apply_mu_);
      applier_stop_ = true;
      // What is left stays in Raft's log, applied at the next start.
      to_apply_.clear();
      apply_cv_.notify_all();
    }
    if (applier_.joinable()) applier_.join();
  }

  // ShutdownInProgress once the applier stops: a catch-up or copy ends at its next batch.
  Status CatchUpCancelled() const {
    return catch_up_cancel_.load()
               ? Status(ErrorCode::kShutdownInProgress, "the server is shutting down")
               : Status::OK();
  }

  // A snapshot (loop thread): Raft's log no longer holds the entries before `snapshot_ts`, and
  // the data they made is the WiredTiger files. A member whose oplog ends before it — it was
  // down or cut off while the others went on, or it is new — reads the entries it misses from
  // the primary's oplog and applies them, as a mongod secondary catches up. When the primary no
  // longer holds this member's newest entry (the member holds writes the set never committed)
  // the member cannot catch up: it turns RECOVERING and says so.
  // Applies the entries of `leader`'s oplog after `mine` (the newest this member holds, which the
  // leader must hold too: OplogStartMissing otherwise) up to `snapshot_ts`.
  Status CatchUpFrom(const char* leader, uint64_t mine, uint64_t snapshot_ts) {
    bool first = true;
    return FetchOplog(
        leader, opts_.internal_key, mine, snapshot_ts, [&](const std::vector<bson::BsonObj>& docs) {
          HG_RETURN_IF_ERROR(CatchUpCancelled());
          size_t skip = 0;
          if (first && mine > 0) {
            // The same entry: its time and its term (another primary's may have the same time).
            if (docs.front()["ts"].TimestampValue() != mine || !oplog_.HoldsEntry(docs.front())) {
              return Status(ErrorCode::kOplogStartMissing,
                            "the primary's oplog does not hold this member's newest entry");
            }
            // Everything up to it is in the set's log.
            oplog_.MarkHandled(mine);
            skip = 1;
          }
          first = false;
          bson::BsonArrayBuilder ops;
          for (size_t i = skip; i < docs.size(); ++i) ops.AppendObject(docs[i]);
          return oplog_.Apply(bson::BsonBuilder().AppendArray("ops", ops.Obj()).Obj());
        });
  }

  // Initial sync (repl/initial_sync.h): a member that holds nothing of the set's log copies the
  // primary's data, read in one snapshot, with the primary's oplog entries from the one at or
  // before `snapshot_ts` on.
  Status InitialSync(const char* leader, uint64_t snapshot_ts) {
    LOGI("REPL", 8800316, "Initial sync started", "{\"syncSource\": " + JsonQuote(leader) + "}");
    const auto start = std::chrono::steady_clock::now();
    CloneBuilder copy(catalog_, opts_.transactions, engine_);
    HG_RETURN_IF_ERROR(oplog_.InstallCopy([&]() -> StatusWith<std::vector<bson::BsonObj>> {
      HG_RETURN_IF_ERROR(copy.Start());
      HG_RETURN_IF_ERROR(FetchCopy(leader, opts_.internal_key, snapshot_ts,
                                   [&](const std::vector<bson::BsonObj>& p) {
                                     HG_RETURN_IF_ERROR(CatchUpCancelled());
                                     return copy.Add(p);
                                   }));
      return copy.Finish();
    }));
    LOGI("REPL", 8800317, "Initial sync done",
         "{\"syncSource\": " + JsonQuote(leader) +
             ", \"documents\": " + std::to_string(copy.documents()) + ", \"durationMillis\": " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count()) +
             "}");
    return Status::OK();
  }

  // False when it could not reach the primary's oplog (a network error, no primary yet): it is
  // tried again.
  bool CatchUp(uint64_t snapshot_ts) {
    uint64_t mine = oplog_.NewestTimestamp();
    if (mine >= snapshot_ts) return true;
    std::string source;
    {
      std::lock_guard<std::mutex> lock(mu_);
      source = catch_up_source_;
    }
    const char* leader = source.c_str();
    Status st = source.empty() ? Status(ErrorCode::kHostUnreachable, "no primary to catch up from")
                               : Status::OK();
    if (st.ok() && mine == 0) {
      // A new or wiped member: nothing of the log is here to catch up from.
      st = InitialSync(leader, snapshot_ts);
      mine = oplog_.NewestTimestamp();
    }
    if (st.ok() && mine < snapshot_ts) {
      st = CatchUpFrom(leader, mine, snapshot_ts);
      const uint64_t handled = oplog_.handled_ts();
      if (st.code() == ErrorCode::kOplogStartMissing && handled > 0 && handled < mine) {
        // Past the last entry the log handed it, this member holds entries the primary does
        // not: a deposed primary's, which go (rollback); it goes on from the last one handed.
        st = oplog_.RollBack(handled, std::numeric_limits<int64_t>::max());
        if (st.ok()) st = CatchUpFrom(leader, oplog_.NewestTimestamp(), snapshot_ts);
      }
    }
    if (st.ok() && oplog_.NewestTimestamp() < snapshot_ts) {
      st = Status(ErrorCode::kOplogStartMissing, "the primary's oplog ends before the snapshot");
    }
    if (st.ok()) {
      LOGI("REPL", 8800312, "Caught up from the primary's oplog",
           "{\"from\": " + JsonQuote(leader) + "}");
      return true;
    }
    if (st.code() == ErrorCode::kShutdownInProgress) return false;
    // The primary out of reach, or not letting this member in (another key file): nothing is
    // wrong with this member's data, so it tries again.
    if (st.code() == ErrorCode::kHostUnreachable || st.code() == ErrorCode::kNetworkTimeout ||
        st.code() == ErrorCode::kAuthenticationFailed || st.code() == ErrorCode::kUnauthorized) {
      LOGW("REPL", 8800315, "Cannot catch up from the primary's oplog yet; trying again",
           "{\"error\": " + JsonQuote(st.ToString()) + "}");
      return false;
    }
    LOGE("REPL", 8800320, "This member cannot catch up with the replica set: it needs a resync",
         "{\"error\": " + JsonQuote(st.ToString()) + "}");
    std::lock_guard<std::mutex> lock(mu_);
    needs_resync_ = true;
    Recompute();
    return true;
  }

  // A configuration the log brought (loop thread): kept when newer than this member's, stored
  // with this member's place in it.
  void TakeConfig(const ReplicaSetConfig& config) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (view_.config && view_.config->version >= config.version) return;
    }
    int self = -1;
    for (size_t i = 0; i < config.members.size(); ++i) {
      if (static_cast<raft_id>(config.members[i].id) + 1 == raft_.id) self = static_cast<int>(i);
    }
    if (self >= 0) {
      bson::BsonBuilder stored;
      stored.AppendObject("config", config.ToBson());
      stored.AppendInt32("self", config.members[self].id);
      stored.AppendBool("initiator", initiator_);
      auto session = engine_->NewSession();
      Status st = session->Put(kStateTable, kConfigKey, stored.Obj().bytes());
      if (!st.ok()) {
        LOGE("REPL", 8800302, "Cannot store the replica set configuration",
             "{\"error\": " + JsonQuote(st.ToString()) + "}");
      }
    }
    config_taken_ms_ = NowMillis();
    std::lock_guard<std::mutex> lock(mu_);
    view_.config = config;
    view_.self = self;
    Recompute();
    Changed();
  }

  bool NeedsResync() const {
    std::lock_guard<std::mutex> lock(mu_);
    return needs_resync_;
  }

  // On the Raft leader (loop thread): a member that steps down, is frozen, may not be primary
  // (priority 0), needs a resync or still catches up with a snapshot hands the leadership to
  // another voter, when there is one.
  void MaybeHandOver() {
    if (transferring_ || NowMillis() < next_transfer_ms_) return;
    ReplicaSetView now = View();
    if (!now.config || now.self < 0) return;
    bool stay_out = NowMillis() < now.step_down_until_ms ||
                    !now.config->members[now.self].Electable() || NeedsResync() ||
                    pending_catch_up_ts_.load() != 0;
    if (!stay_out) return;
    bool other_voter = false;
    for (unsigned i = 0; i < raft_.configuration.n; ++i) {
      other_voter = other_voter || (raft_.configuration.servers[i].id != raft_.id &&
                                    raft_.configuration.servers[i].role == RAFT_VOTER);
    }
    if (!other_voter) return;  // a set of one: nobody to hand over to
    transfer_.data = this;
    transferring_ = true;
    DrainAppends();  // what is committed so far goes first
    int rv = raft_transfer(&raft_, &transfer_, 0, [](struct raft_transfer* req) {
      // Done or given up (the other voter did not win): not again before an election timeout,
      // or every attempt would start another term.
      auto* self = static_cast<Impl*>(req->data);
      self->transferring_ = false;
      self->next_transfer_ms_ = NowMillis() + 1000;
    });
    if (rv != 0) {
      transferring_ = false;
      next_transfer_ms_ = NowMillis() + 500;
    }
  }

  // On the primary (loop thread): brings Raft's membership to the configuration's, one change at
  // a time — a member is added, then made a voter once it has caught up with the log.
  void ReconcileMembership() {
    if (changing_ || NowMillis() < next_change_ms_) return;
    ReplicaSetView now = View();
    if (!now.config) return;
    for (const MemberConfig& m : now.config->members) {
      raft_id id = static_cast<raft_id>(m.id) + 1;
      const raft_server* found = nullptr;
      for (unsigned i = 0; i < raft_.configuration.n; ++i) {
        if (raft_.configuration.servers[i].id == id) found = &raft_.configuration.servers[i];
      }
      int role = m.votes > 0 ? RAFT_VOTER : RAFT_STANDBY;
      if (found != nullptr && found->role == role) continue;
      changing_ = true;
      change_.data = this;
      auto done = [](struct raft_change* req, int status) {
        auto* self = static_cast<Impl*>(req->data);
        self->changing_ = false;
        // A member that is down or behind is tried again a little later.
        if (status != 0) self->next_change_ms_ = NowMillis() + 1000;
      };
      int rv = found == nullptr ? raft_add(&raft_, &change_, id, m.host.c_str(), done)
                                : raft_assign(&raft_, &change_, id, role, done);
      if (rv != 0) {
        changing_ = false;
        next_change_ms_ = NowMillis() + 1000;
      }
      return;
    }
    // Members the configuration no longer names leave Raft's configuration — a second after it
    // was applied here, so that they hear of its commit (and that they are out) first: the
    // leader stops talking to a member the moment it removes it.
    if (NowMillis() < config_taken_ms_ + 1000) return;
    for (unsigned i = 0; i < raft_.configuration.n; ++i) {
      raft_id id = raft_.configuration.servers[i].id;
      if (id == raft_.id || now.config->FindMemberById(static_cast<int>(id) - 1) != nullptr) {
        continue;
      }
      changing_ = true;
      change_.data = this;
      int rv = raft_remove(&raft_, &change_, id, [](struct raft_change* req, int status) {
        auto* self = static_cast<Impl*>(req->data);
        self->changing_ = false;
        if (status != 0) self->next_change_ms_ = NowMillis() + 1000;
      });
      if (rv != 0) {
        changing_ = false;
        next_change_ms_ = NowMillis() + 1000;
      }
      return;
    }
  }

  // A snapshot is the last applied position; the data it stands for is in WiredTiger.
  int Snapshot(raft_buffer* bufs[], unsigned* n) {
    // Not while a catch-up waits: this member does not hold what the last snapshot stands for,
    // and its applier waits for the catch-up (which the loop, here, runs) — draining it would
    // never end. Raft tries again at its next threshold.
    if (pending_catch_up_ts_.load() != 0) return RAFT_BUSY;
    // Everything the snapshot stands for must be applied and outlive a crash: Raft drops the
    // entries before it.
    DrainApplier();
    if (!engine_->WaitForJournal().ok()) return RAFT_IOERR;
    ReplicaSetView now = View();
    bson::BsonObj config = now.config ? now.config->ToBson() : bson::BsonObj();
    bson::BsonObj entry = MakeEntry(now.last_applied, now.last_applied_wall_ms, "snapshot",
                                    now.config ? &config : nullptr);
    *bufs = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
    if (*bufs == nullptr) return RAFT_NOMEM;
    (*bufs)[0] = RaftCopy(entry);
    if ((*bufs)[0].base == nullptr) {
      raft_free(*bufs);
      return RAFT_NOMEM;
    }
    kept_snapshot_ts_.store(last_snapshot_ts_.load());
    last_snapshot_ts_.store(now.last_applied.ts);
    *n = 1;
    return 0;
  }

  // Appends an entry as leader (loop thread); `done` runs on the loop thread with the outcome
  // once applied. Its timestamp comes from the oplog, and it joins the queue of the writes'
  // batches in timestamp order.
  void Append(std::string_view msg, const bson::BsonObj* config, std::function<void(int)> done) {
    oplog_.WithNextTimestamp([&](uint64_t ts) {
      OpTime at{ts, static_cast<int64_t>(raft_.current_term)};
      EnqueueAppend(MakeEntry(at, NowMillis(), msg, config), at, std::move(done));
    });
    DrainAppends();
  }

  // Queues an entry for the Raft log (any thread, in timestamp order: under the oplog's mutex,
  // which is why it only queues the document; the loop thread copies it for Raft).
  void EnqueueAppend(bson::BsonObj entry, OpTime at, std::function<void(int)> done) {
    {
      std::lock_guard<std::mutex> lock(appends_mu_);
      appends_.push_back(PendingAppend{std::move(entry), at, std::move(done)});
    }
    Post([this] { DrainAppends(); });
  }

  // Loop thread: hands the queued entries to Raft, in order. Each run of the writes' batches
  // queued together goes as one batch (up to kMergeBytes): Raft's cost is per entry, and a
  // request that committed many transactions (a time-series insert commits one per bucket) then
  // waits for one entry rather than a hundred. The merged batch applies as its parts would.
  void DrainAppends() {
    // Raft refuses entries while the leadership is being handed over, and the member may stay
    // leader of this term when the hand-over fails: entries refused then would leave their rows,
    // committed here, out of the set's log for good. They wait for the outcome instead (Poll),
    // and reach the log, or are rolled back once another member's term reaches this one.
    if (raft_state(&raft_) == RAFT_LEADER && raft_.transfer != nullptr) return;
    std::deque<PendingAppend> queued;
    {
      std::lock_guard<std::mutex> lock(appends_mu_);
      queued.swap(appends_);
    }
    constexpr size_t kMergeBytes = 4 << 20;
    for (size_t k = 0; k < queued.size();) {
      size_t end = k + 1;
      if (!queued[k].done) {
        size_t bytes = queued[k].entry.bytes().size();
        while (end < queued.size() && !queued[end].done &&
               bytes + queued[end].entry.bytes().size() <= kMergeBytes) {
          bytes += queued[end].entry.bytes().size();
          ++end;
        }
      }
      bson::BsonObj entry = queued[k].entry;
      if (end > k + 1) {
        bson::BsonArrayBuilder ops;
        for (size_t i = k; i < end; ++i) {
          for (bson::BsonElement op : queued[i].entry["ops"].Obj()) ops.Append(op);
        }
        const bson::BsonObj& last = queued[end - 1].entry;
        bson::BsonBuilder b;
        b.AppendElement(last["ts"]);
        b.AppendElement(last["t"]);
        b.AppendElement(last["wall"]);
        b.AppendArray("ops", ops.Obj());
        entry = b.Obj();
      }
      HandToRaft(entry, queued[end - 1].at, std::move(queued[k].done));
      k = end;
    }
  }

  // Loop thread: one entry to Raft; `done` (if any) runs with the outcome once it is applied.
  void HandToRaft(const bson::BsonObj& entry, OpTime at, std::function<void(int)> done) {
    struct Request {
      struct raft_apply req;
      std::function<void(int)> done;
    };
    raft_buffer buf = RaftCopy(entry);
    int rv = RAFT_NOMEM;
    if (buf.base != nullptr) {
      auto* r = new Request{};
      r->done = std::move(done);
      r->req.data = r;
      rv = raft_apply(&raft_, &r->req, &buf, 1, [](struct raft_apply* req, int status, void*) {
        auto* r = static_cast<Request*>(req->data);
        if (r->done) r->done(status);
        delete r;
      });
      if (rv == 0) {
        appended_.emplace_back(raft_last_index(&raft_), at);
        uncommitted_entries_.store(
            static_cast<int64_t>(raft_last_index(&raft_) - raft_.commit_index));
        return;
      }
      raft_free(buf.base);
      done = std::move(r->done);
      delete r;
    }
    if (done) {
      done(rv);
    } else {
      // Writes committed here that the set's log will not hold: this member lost the primary's
      // role between their commit and now.
      LOGE("REPL", 8800311, "Writes committed on this member did not reach the replicated log",
           "{\"error\": " + JsonQuote(raft_strerror(rv)) + "}");
    }
  }

  // Every 20 ms on the loop thread: Raft has no callback for its state changes, so they are
  // read here and published.
  void Poll() {
    last_poll_ms_.store(NowMillis());
    // A primary that stepped down (here or on another thread's step-down) forgets what it knew
    // of the buckets it was writing: the next primary writes them.
    const bool writable = writable_term_.load() >= 0;
    if (was_writable_ && !writable && opts_.on_role_change) opts_.on_role_change();
    was_writable_ = writable;
    if (!raft_open_ || closing_) return;
    transport_->Poll();
    DrainAppends();  // entries held back during a leadership hand-over
    int state = raft_state(&raft_);
    int64_t term = static_cast<int64_t>(raft_.current_term);
    raft_id leader_id = 0;
    const char* leader_address = nullptr;
    raft_leader(&raft_, &leader_id, &leader_address);
    {
      // Where the applier catches up from (CatchUp): another member that leads.
      std::lock_guard<std::mutex> lock(mu_);
      catch_up_source_ =
          leader_address != nullptr && leader_id != raft_.id ? leader_address : std::string();
    }
    if (state == RAFT_LEADER && ready_term_ != term && announcing_term_ != term) {
      // A new primary first writes MongoDB's "new primary" no-op in its term: once it is applied,
      // every entry of the earlier terms is applied too, and writes may begin. The configuration
      // follows it into the log when the log does not have it yet (replSetInitiate).
      announcing_term_ = term;
      auto announce = [this, term](int status) {
        if (status != 0) {
          announcing_term_ = -1;
          return;
        }
        // Before this term's writes: buckets this member held open in memory may be older than
        // what the log has written into them since (another primary's appends, a rollback, an
        // insert cut off by the last step-down), so they are read again from storage.
        if (opts_.on_role_change) opts_.on_role_change();
        std::lock_guard<std::mutex> lock(mu_);
        ready_term_ = term;
        // Writes begin once the applier has applied this entry too (Recompute).
        ready_ts_ = view_.last_committed.ts;
        // As mongod: the configuration takes the term of the election that follows it.
        if (view_.config && view_.config->term < term) view_.config->term = term;
        view_.election_optime = view_.last_committed;
        view_.election_wall_ms = view_.last_committed_wall_ms;
        Recompute();
      };
      // The configuration is checked after the no-op: only then has a restarted member applied
      // (again) the entries its log already holds.
      Append("new primary", nullptr, [this, announce](int status) {
        ReplicaSetView now = View();
        if (status != 0 || !now.config || applied_config_version_ >= now.config->version) {
          return announce(status);
        }
        bson::BsonObj config = now.config->ToBson();
        Append("initiating set", &config, announce);
      });
    }
    if (state != RAFT_LEADER) announcing_term_ = -1;
    if (state == RAFT_LEADER && ready_term_ == term) ReconcileMembership();
    if (state == RAFT_LEADER) MaybeHandOver();
    // Raft's view of the members: their roles, and on the leader whether each was heard from
    // lately. Raft clears a follower's recent_recv every election timeout and sets it again at
    // its next answer, so a member counts as down only after two timeouts without one.
    std::vector<std::pair<raft_id, bool>> members;
    int64_t now_ms = NowMillis();
    if (state != RAFT_LEADER) last_heard_ms_.clear();
    for (unsigned i = 0; i < raft_.configuration.n; ++i) {
      raft_id id = raft_.configuration.servers[i].id;
      bool heard = true;
      if (state == RAFT_LEADER && id != raft_.id) {
        auto [it, added] = last_heard_ms_.emplace(id, now_ms);
        if (raft_.leader_state.progress[i].recent_recv) it->second = now_ms;
        heard = now_ms - it->second < 2 * static_cast<int64_t>(raft_.election_timeout);
        (void)added;
      }
      members.emplace_back(id, heard);
    }
    std::vector<OpTime> member_optimes = MemberOptimes(state);
    std::lock_guard<std::mutex> lock(mu_);
    if (member_optimes != view_.member_optimes) {
      view_.member_optimes = std::move(member_optimes);
      cv_.notify_all();  // w: <n> waits for them
    }
    if (state != RAFT_LEADER) ready_term_ = -1;
    raft_state_ = state;
    raft_leader_id_ = static_cast<int64_t>(leader_id);
    raft_members_ = std::move(members);
    view_.term = term;
    Recompute();
  }

  // On the leader (loop thread): each configured member's newest entry as Raft's replication
  // progress says (its match index, read through appended_); empty elsewhere.
  std::vector<OpTime> MemberOptimes(int state) {
    std::vector<OpTime> out;
    ReplicaSetView now = View();
    if (state != RAFT_LEADER || !now.config) {
      appended_.clear();
      return out;
    }
    raft_index lowest = raft_last_index(&raft_);
    for (const MemberConfig& m : now.config->members) {
      OpTime at;
      for (unsigned i = 0; i < raft_.configuration.n; ++i) {
        if (raft_.configuration.servers[i].id != static_cast<raft_id>(m.id) + 1) continue;
        raft_index match = raft_.configuration.servers[i].id == raft_.id
                               ? raft_last_index(&raft_)
                               : raft_.leader_state.progress[i].match_index;
        lowest = std::min(lowest, match);
        auto it = std::upper_bound(
            appended_.begin(), appended_.end(), match,
            [](raft_index v, const std::pair<raft_index, OpTime>& e) { return v < e.first; });
        if (it != appended_.begin()) at = std::prev(it)->second;
      }
      out.push_back(at);
    }
    // Entries every member holds are no longer needed, but the newest of them.
    while (appended_.size() > 1 && appended_[1].first <= lowest) appended_.pop_front();
    return out;
  }

  // Derives the published state from Raft's and from step-downs; bumps the topology counter on
  // any change. Holds mu_.
  void Recompute() {
    MemberState state = MemberState::kStartup;
    bool writable = false;
    int primary = -1;
    bool stepped_down = NowMillis() < view_.step_down_until_ms;
    if (view_.config && view_.self < 0) {
      state = MemberState::kRemoved;  // a configuration that does not name this member
    } else if (view_.config) {
      switch (raft_state_) {
        case RAFT_LEADER:
          // A member that could not apply the log does not hold the set's data: elected
          // anyway (Raft knows nothing of it), it takes no writes and hands the leadership over
          // (MaybeHandOver).
          if (needs_resync_) {
            state = MemberState::kRecovering;
            break;
          }
          state = stepped_down ? MemberState::kSecondary : MemberState::kPrimary;
          // Not while it still catches up with a snapshot: its data is behind its log.
          writable = !stepped_down && ready_term_ == view_.term &&
                     view_.last_applied.ts >= ready_ts_ && pending_catch_up_ts_.load() == 0;
          break;
        case RAFT_FOLLOWER:
        case RAFT_CANDIDATE:
          // A member that holds nothing yet and has a snapshot to catch up with is in its
          // initial sync: STARTUP2, as mongod.
          state = needs_resync_ ? MemberState::kRecovering
                  : pending_catch_up_ts_.load() != 0 && oplog_.NewestTimestamp() == 0
                      ? MemberState::kStartup2
                      : MemberState::kSecondary;
          break;
        default:
          state = MemberState::kStartup2;
          break;
      }
      if (raft_leader_id_ > 0 && !(stepped_down && raft_state_ == RAFT_LEADER)) {
        for (size_t i = 0; i < view_.config->members.size(); ++i) {
          if (view_.config->members[i].id + 1 == raft_leader_id_) primary = static_cast<int>(i);
        }
      }
    }
    std::vector<MemberState> member_states;
    if (view_.config) {
      for (size_t i = 0; i < view_.config->members.size(); ++i) {
        MemberState s = MemberState::kStartup;
        if (static_cast<int>(i) == view_.self) {
          s = state;
        } else if (static_cast<int>(i) == primary) {
          s = MemberState::kPrimary;
        } else {
          for (const auto& [id, heard] : raft_members_) {
            if (id != static_cast<raft_id>(view_.config->members[i].id) + 1) continue;
            s = heard ? MemberState::kSecondary : MemberState::kDown;
          }
        }
        member_states.push_back(s);
      }
    }
    if (member_states != view_.member_states) {
      view_.member_states = std::move(member_states);
      Changed();
    }
    if (state != view_.state || writable != view_.writable_primary || primary != view_.primary ||
        view_.term != published_term_) {
      if (state != view_.state || writable != view_.writable_primary) {
        LOGI("REPL", 21358, "Replica set state transition",
             "{\"newState\": " + JsonQuote(MemberStateName(state)) +
                 ", \"oldState\": " + JsonQuote(MemberStateName(view_.state)) + ", \"writable\": " +
                 (writable ? "true" : "false") + ", \"term\": " + std::to_string(view_.term) + "}");
      }
      view_.state = state;
      view_.writable_primary = writable;
      writable_term_.store(writable ? view_.term : -1);
      view_.primary = primary;
      published_term_ = view_.term;
      Changed();
    }
  }

  void Changed() {
    ++view_.topology_counter;
    cv_.notify_all();
  }

  // --- replSetReconfig -------------------------------------------------------------------

 public:
  Status Reconfig(const bson::BsonObj& doc, bool force) {
    ReplicaSetView now = View();
    if (!now.config) {
      return Status(ErrorCode::kNotYetInitialized, "no replset config has been received");
    }
    if (!now.writable_primary) {
      // mongod applies a forced configuration on a secondary too; here it travels in the log,
      // which only the primary appends to.
      return Status(ErrorCode::kNotWritablePrimary,
                    std::string("replSetReconfig should only be run on a writable PRIMARY. "
                                "Current state ") +
                        std::string(MemberStateName(now.state)) + ";");
    }
    StatusWith<ReplicaSetConfig> fields = ReplicaSetConfig::ParseFields(doc);
    if (!fields.ok()) {
      return Status(ErrorCode::kInvalidReplicaSetConfig, fields.status().reason());
    }
    ReplicaSetConfig config = std::move(fields).value();
    if (Status valid = config.Validate(); !valid.ok()) {
      return Status(ErrorCode::kNewReplicaSetConfigurationIncompatible, valid.reason());
    }
    const ReplicaSetConfig& old = *now.config;
    auto incompatible = [](std::string why) {
      return Status(ErrorCode::kNewReplicaSetConfigurationIncompatible, std::move(why));
    };
    if (config.set_name != old.set_name) {
      return incompatible("New and old configurations differ in replica set name; old was " +
                          old.set_name + ", and new is " + config.set_name);
    }
    if (!config.settings.replica_set_id) {
      config.settings.replica_set_id = old.settings.replica_set_id;
    } else if (!(*config.settings.replica_set_id == *old.settings.replica_set_id)) {
      return incompatible("New and old configurations differ in replica set ID");
    }
    if (force) {
      // As mongod: a forced configuration jumps the version so that it wins over any other.
      config.version = old.version + 10000 + static_cast<int64_t>(NowMillis() % 90000);
    } else if (config.version <= old.version) {
      return incompatible("New config is rejected as it has a lower or equal version (" +
                          std::to_string(config.version) + ") than the current config version (" +
                          std::to_string(old.version) + ")");
    }
    int self = -1;
    int voters_changed = 0;
    for (size_t i = 0; i < config.members.size(); ++i) {
      const MemberConfig& m = config.members[i];
      if (IsSelf(m.host)) self = static_cast<int>(i);
      const MemberConfig* before = old.FindMemberById(m.id);
      if ((before == nullptr ? 0 : before->votes) != m.votes) ++voters_changed;
    }
    for (const MemberConfig& m : old.members) {
      if (config.FindMemberById(m.id) == nullptr && m.votes > 0) ++voters_changed;
    }
    if (self < 0 || config.members[self].id != old.members[now.self].id) {
      return Status(ErrorCode::kNodeNotFound,
                    "No host described in new configuration with {version: " +
                        std::to_string(config.version) + ", term: " + std::to_string(now.term) +
                        "} for replica set " + config.set_name + " maps to this node");
    }
    if (!force && voters_changed > 1) {
      return incompatible(
          "Non force replica set reconfig can only add or remove at most 1 voting member.");
    }
    if (!force) {
      // As mongod: a forced configuration is taken whoever answers.
      HG_RETURN_IF_ERROR(CheckQuorum(config, self, opts_.internal_key, QuorumFor::kReconfig));
    }
    config.term = now.term;
    bson::BsonObj config_doc = config.ToBson();
    LOGI("REPL", 21352, "replSetReconfig admin command received from client",
         "{\"newConfig\": " + config_doc.ToJson() + "}");
    // The configuration travels in the log; every member takes it when it applies the entry
    // (TakeConfig), this one before answering.
    std::promise<int> applied;
    std::future<int> outcome = applied.get_future();
    HG_RETURN_IF_ERROR(RunOnLoop([this, &config_doc, &applied] {
      Append("Reconfig set", &config_doc, [&applied](int status) { applied.set_value(status); });
      return Status::OK();
    }));
    int status = outcome.get();
    if (status != 0) {
      return Status(
          ErrorCode::kPrimarySteppedDown,
          std::string("the new configuration was not committed: ") + raft_strerror(status));
    }
    return Status::OK();
  }

 private:
  // --- replSetInitiate -------------------------------------------------------------------

  Status InitiateLocked(const bson::BsonObj* given) {
    bson::BsonObj doc;
    if (given != nullptr && !given->IsEmpty()) {
      doc = *given;
    } else {
      doc = DefaultConfig();
    }
    // rs.initiate({_id, members}) is how MongoDB's manual spells it: version 1 is implied.
    if (doc["version"].eoo()) {
      bson::BsonBuilder with_version;
      for (bson::BsonElement e : doc) with_version.AppendElement(e);
      with_version.AppendInt32("version", 1);
      doc = with_version.Obj();
    }
    // As mongod: every reason the document is refused is an InvalidReplicaSetConfig.
    StatusWith<ReplicaSetConfig> parsed = ReplicaSetConfig::Parse(doc);
    if (!parsed.ok()) {
      return Status(ErrorCode::kInvalidReplicaSetConfig, parsed.status().reason());
    }
    ReplicaSetConfig config = std::move(parsed).value();
    HG_RETURN_IF_ERROR(config.ValidateForInitiate());
    if (config.set_name != opts_.set_name) {
      return Status(ErrorCode::kInvalidReplicaSetConfig,
                    "Attempting to initiate a replica set with name " + config.set_name +
                        ", but command line reports " + opts_.set_name + "; rejecting");
    }
    int self = -1;
    for (size_t i = 0; i < config.members.size(); ++i) {
      if (!IsSelf(config.members[i].host)) continue;
      if (self >= 0) {
        return Status(ErrorCode::kInvalidReplicaSetConfig,
                      "Found multiple members that map to this node: " + config.members[self].host +
                          " and " + config.members[i].host);
      }
      self = static_cast<int>(i);
    }
    if (self < 0) {
      return Status(ErrorCode::kNodeNotFound,
                    "No host described in new configuration with {version: " +
                        std::to_string(config.version) + ", term: 0} for replica set " +
                        config.set_name + " maps to this node");
    }
    if (!config.members[self].Electable()) {
      return Status(ErrorCode::kInvalidReplicaSetConfig,
                    "This node, " + config.members[self].host + ", with _id " +
                        std::to_string(config.members[self].id) +
                        " is not electable under the new configuration with {version: " +
                        std::to_string(config.version) + "} for replica set " + config.set_name);
    }
    HG_RETURN_IF_ERROR(CheckQuorum(config, self, opts_.internal_key, QuorumFor::kInitiate));
    if (!config.settings.replica_set_id)
      config.settings.replica_set_id = bson::ObjectId::Generate();
    config.term = 0;

    bson::BsonBuilder stored;
    stored.AppendObject("config", config.ToBson());
    stored.AppendInt32("self", config.members[self].id);
    stored.AppendBool("initiator", true);
    bson::BsonObj stored_doc = stored.Obj();
    {
      auto session = engine_->NewSession();
      HG_RETURN_IF_ERROR(session->Put(kStateTable, kConfigKey, stored_doc.bytes()));
      HG_RETURN_IF_ERROR(engine_->WaitForJournal());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      view_.config = config;
      view_.self = self;
      view_.state = MemberState::kStartup2;
      Changed();
    }
    LOGI("REPL", 21356, "replSetInitiate admin command received from client", stored_doc.ToJson());
    Status opened =
        RunOnLoop([this, member = config.members[self]] { return OpenRaft(member, true); });
    if (!opened.ok()) {
      auto session = engine_->NewSession();
      (void)session->Remove(kStateTable, kConfigKey);
      std::lock_guard<std::mutex> lock(mu_);
      view_.config.reset();
      view_.self = -1;
      view_.state = MemberState::kStartup;
      Changed();
      return opened;
    }
    // MongoDB answers once the member has taken the configuration; here it is also the primary
    // moments later, which clients that initiate and then write expect.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30),
                 [this] { return view_.writable_primary || stopping_flag_; });
    return Status::OK();
  }

  // replSetInitiate without a configuration: this server alone, named as mongod names itself
  // (its host name) — or, when it listens only on loopback, by the first address it listens on,
  // so that the drivers that follow the configuration's host names can reach it.
  bson::BsonObj DefaultConfig() const {
    std::string host = HostName();
    std::string first = opts_.bind_ip.substr(0, opts_.bind_ip.find(','));
    bool loopback_only = true;
    size_t start = 0;
    while (start <= opts_.bind_ip.size()) {
      size_t end = opts_.bind_ip.find(',', start);
      std::string a =
          opts_.bind_ip.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!(a.starts_with("127.") || a == "localhost" || a == "::1")) loopback_only = false;
      if (end == std::string::npos) break;
      start = end + 1;
    }
    if (loopback_only && !first.empty()) host = first;
    bson::BsonBuilder b;
    b.AppendString("_id", opts_.set_name);
    b.AppendInt32("version", 1);
    bson::BsonArrayBuilder members;
    bson::BsonBuilder m;
    m.AppendInt32("_id", 0);
    m.AppendString("host", host + ":" + std::to_string(opts_.port));
    members.AppendObject(m.Obj());
    b.AppendArray("members", members.Obj());
    return b.Obj();
  }

  Options opts_;
  storage::KvEngine* engine_;
  catalog::Catalog* catalog_;

  mutable std::mutex mu_;  // guards view_ and the fields below it
  mutable std::condition_variable cv_;
  ReplicaSetView view_;
  bool initiating_ = false;
  bool stopping_flag_ = false;
  int raft_state_ = RAFT_UNAVAILABLE;
  int64_t raft_leader_id_ = 0;
  std::vector<std::pair<raft_id, bool>> raft_members_;  // Raft's members: id, heard from
  int64_t published_term_ = 0;
  int64_t ready_term_ = -1;  // the term whose "new primary" entry is applied
  uint64_t ready_ts_ = 0;    // that entry's timestamp: writes wait for the applier to reach it

  // The applier: a thread of its own applies the committed entries the state machine hands it,
  // in order, so that a secondary acknowledges Raft's next entries while it applies earlier ones.
  struct ToApply {
    bson::BsonObj entry;
    OpTime at;
    int64_t wall_ms;
  };
  std::thread applier_;
  // The oplog's truncation (StartTruncator).
  std::thread truncator_;
  std::mutex truncator_mu_;
  std::mutex resize_mu_;  // serializes replSetResizeOplog
  std::condition_variable truncator_cv_;
  bool truncator_stop_ = false;  // guarded by truncator_mu_
  // The timestamps of Raft's last snapshot and of the one before it: entries up to the older are
  // never handed to the state machine again.
  std::atomic<uint64_t> last_snapshot_ts_{0};
  std::atomic<uint64_t> kept_snapshot_ts_{0};
  std::atomic<int64_t> truncate_count_{0};  // passes that removed entries
  std::atomic<int64_t> truncating_micros_{0};
  std::mutex apply_mu_;
  std::condition_variable apply_cv_;
  std::deque<ToApply> to_apply_;  // guarded by apply_mu_
  bool applying_ = false;         // guarded by apply_mu_: an entry is being applied
  bool applier_stop_ = false;     // guarded by apply_mu_
  // The snapshot the applier is to catch up with first (0: none): set by a restore on the loop
  // thread, cleared by the applier once caught up.
  std::atomic<uint64_t> pending_catch_up_ts_{0};
  std::atomic<bool> catch_up_cancel_{false};
  std::string catch_up_source_;  // guarded by mu_: the leader's address, "" when none or self

  // The loop and its task queue.
  uv_loop_t loop_{};
  uv_async_t wake_{};
  uv_timer_t tick_{};
  std::thread loop_thread_;
  std::mutex tasks_mu_;
  std::vector<std::function<void()>> tasks_;
  bool loop_running_ = false;
  bool stopping_ = false;

  // Loop thread only.
  bool closing_ = false;
  bool raft_open_ = false;
  struct raft raft_ {};
  struct raft_io io_ {};
  struct raft_fsm fsm_ {};
  std::unique_ptr<WireTransport> transport_;
  bool initiator_ = false;  // this member ran replSetInitiate: it bootstraps the log
  struct raft_change change_ {};
  struct raft_transfer transfer_ {};
  bool transferring_ = false;
  int64_t next_transfer_ms_ = 0;
  std::map<raft_id, int64_t> last_heard_ms_;  // on the leader: when each follower last answered
  bool changing_ = false;
  int64_t next_change_ms_ = 0;
  int64_t config_taken_ms_ = 0;  // when the last configuration was applied here
  int64_t announcing_term_ = -1;
  int64_t applied_config_version_ = 0;
  bool was_writable_ = false;
  bool needs_resync_ = false;  // guarded by mu_: CatchUp failed
  // Entries waiting for the loop thread to hand them to Raft, in timestamp order.
  struct PendingAppend {
    bson::BsonObj entry;
    OpTime at;
    std::function<void(int)> done;  // null for the writes' batches
  };
  // Loop thread, on the leader: the Raft index of each entry appended (and not yet known to be
  // on every member), so that the members' replicated indexes read as optimes.
  std::deque<std::pair<raft_index, OpTime>> appended_;
  // Entries of this member's Raft log past the commit index (flow control, AwaitWriteRoom), as
  // of its last append or commit; and how many a primary may run ahead.
  std::atomic<int64_t> uncommitted_entries_{0};
  static constexpr int64_t kMaxUncommittedEntries = 128;
  std::mutex appends_mu_;
  std::deque<PendingAppend> appends_;  // guarded by appends_mu_
  Oplog oplog_;
  // The term while this member is the writable primary, -1 otherwise (Recompute).
  std::atomic<int64_t> writable_term_{-1};
  std::atomic<int64_t> last_poll_ms_{0};  // when Poll last ran (ReportStalledLoop)
  bool stall_reported_ = false;           // truncator thread only
  // The newest write's batch handed to the log (LastWriteOpTime).
  mutable std::mutex last_write_mu_;
  OpTime last_write_;
};

ReplicationCoordinator::ReplicationCoordinator(Options options, storage::KvEngine* engine,
                                               catalog::Catalog* catalog)
    : impl_(std::make_unique<Impl>(std::move(options), engine, catalog)) {}
ReplicationCoordinator::~ReplicationCoordinator() = default;
void ReplicationCoordinator::RegisterParameters() {
  WritePeriodicNoopsParameter();
  PeriodicNoopIntervalParameter();
  CreateRollbackDataFilesParameter();
}
Status ReplicationCoordinator::Start() { return impl_->Start(); }
void ReplicationCoordinator::BeginShutdown() { impl_->BeginShutdown(); }
void ReplicationCoordinator::Shutdown() { impl_->Shutdown(); }
const std::string& ReplicationCoordinator::set_name() const { return impl_->set_name(); }
ReplicaSetView ReplicationCoordinator::View() const { return impl_->View(); }
Status ReplicationCoordinator::Initiate(const bson::BsonObj* config) {
  return impl_->Initiate(config);
}
Status ReplicationCoordinator::Reconfig(const bson::BsonObj& config, bool force) {
  return impl_->Reconfig(config, force);
}
Status ReplicationCoordinator::StepDown(int64_t step_down_secs, int64_t catch_up_secs, bool force) {
  return impl_->StepDown(step_down_secs, catch_up_secs, force);
}
Status ReplicationCoordinator::Freeze(int64_t secs, std::string* info) {
  return impl_->Freeze(secs, info);
}
void ReplicationCoordinator::AwaitTopologyChange(int64_t counter,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 const std::atomic<bool>& stop) const {
  impl_->AwaitTopologyChange(counter, deadline, stop);
}
Status ReplicationCoordinator::PrepareRaftConnection(std::string_view set_name, int64_t from,
                                                     int64_t to, std::string_view to_address) {
  return impl_->PrepareRaftConnection(set_name, from, to, to_address);
}
void ReplicationCoordinator::AdoptRaftConnection(int fd, int64_t from, std::string from_address) {
  impl_->AdoptRaftConnection(fd, from, std::move(from_address));
}
bool ReplicationCoordinator::AwaitWriteRoom() { return impl_->AwaitWriteRoom(); }
bool ReplicationCoordinator::HasWriteRoom() const { return impl_->HasWriteRoom(); }
Status ReplicationCoordinator::AwaitMajority(OpTime write, int64_t wtimeout_ms) {
  return impl_->AwaitMajority(write, wtimeout_ms);
}
OpTime ReplicationCoordinator::LastWriteOpTime() const { return impl_->LastWriteOpTime(); }
int64_t ReplicationCoordinator::WritableTerm() const { return impl_->WritableTerm(); }
int64_t ReplicationCoordinator::OplogMaxBytes() const { return impl_->OplogMaxBytes(); }
Status ReplicationCoordinator::ResizeOplog(std::optional<int64_t> max_bytes,
                                           std::optional<double> min_retention_hours) {
  return impl_->ResizeOplog(max_bytes, min_retention_hours);
}
ReplicationCoordinator::OplogTruncationStats ReplicationCoordinator::OplogTruncation() const {
  return impl_->OplogTruncation();
}
uint64_t ReplicationCoordinator::ClusterTime() const { return impl_->ClusterTime(); }
void ReplicationCoordinator::AdvanceClusterTime(uint64_t ts) { impl_->AdvanceClusterTime(ts); }
uint64_t ReplicationCoordinator::LastVisibleTimestamp() const {
  return impl_->LastVisibleTimestamp();
}
uint64_t ReplicationCoordinator::LastCommittedTimestamp() const {
  return impl_->LastCommittedTimestamp();
}
Status ReplicationCoordinator::AwaitVisible(uint64_t ts) { return impl_->AwaitVisible(ts); }
Status ReplicationCoordinator::AwaitCommitted(uint64_t ts) { return impl_->AwaitCommitted(ts); }
Status ReplicationCoordinator::ConfirmPrimary() { return impl_->ConfirmPrimary(); }
Status ReplicationCoordinator::AwaitMembers(OpTime write, int64_t n, int64_t wtimeout_ms) {
  return impl_->AwaitMembers(write, n, wtimeout_ms);
}
bool ReplicationCoordinator::IsSelf(std::string_view host_and_port) const {
  return impl_->IsSelf(host_and_port);
}

}  // namespace hourglass::repl
