#include "catalog/transaction_table.h"

#include <chrono>

#include "base/interrupt.h"
#include "base/uuid.h"
#include "catalog/op_observer.h"
#include "storage/write_conflict.h"

namespace hourglass::catalog {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr size_t kSessionBytes = 16;
constexpr size_t kKeyBytes = kSessionBytes + 8 + 8;

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void AppendBigEndian(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

uint64_t ReadBigEndian(std::string_view in) {
  uint64_t v = 0;
  for (char c : in.substr(0, 8)) v = v << 8 | static_cast<unsigned char>(c);
  return v;
}

// The session's id as mongod prints it in TransactionTooOld: its UUID, then the uid of a client
// that has not authenticated (SHA-256 of the empty user name, in base64).
std::string SessionForMessage(const std::string& session) {
  return UuidString(session) + " - 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= -  - ";
}

Status BadRecord(std::string_view why) {
  return Status(ErrorCode::kBadValue, "invalid retryable write record: " + std::string(why));
}

}  // namespace

BsonObj StatementRecord::ToBson() const {
  BsonBuilder b;
  size_t lsid = b.OpenObject("lsid");
  b.AppendBinData("id", 4, session);
  b.Close(lsid);
  b.AppendInt64("txnNumber", txn_number);
  size_t ids = b.OpenArray("stmtId");
  for (size_t i = 0; i < stmt_ids.size(); ++i) b.AppendInt32(std::to_string(i), stmt_ids[i]);
  b.Close(ids);
  b.AppendDate("wall", NowMillis());
  if (!result.IsEmpty()) b.AppendObject("result", result);
  return b.Obj();
}

StatusWith<StatementRecord> StatementRecord::FromBson(const BsonObj& doc) {
  StatementRecord rec;
  BsonElement lsid = doc["lsid"];
  if (lsid.type() != BsonType::kObject || lsid.Obj()["id"].type() != BsonType::kBinData ||
      lsid.Obj()["id"].BinData().size() != kSessionBytes) {
    return BadRecord("'lsid' must hold a 16-byte 'id'");
  }
  rec.session = std::string(lsid.Obj()["id"].BinData());
  if (doc["txnNumber"].type() != BsonType::kInt64 || doc["txnNumber"].NumberLong() < 0) {
    return BadRecord("'txnNumber' must be a non-negative long");
  }
  rec.txn_number = doc["txnNumber"].NumberLong();
  if (doc["stmtId"].type() != BsonType::kArray) return BadRecord("'stmtId' must be an array");
  for (BsonElement id : doc["stmtId"].Obj()) {
    if (id.type() != BsonType::kInt32) return BadRecord("'stmtId' must hold ints");
    rec.stmt_ids.push_back(static_cast<int32_t>(id.NumberLong()));
  }
  if (BsonElement result = doc["result"]; result.type() == BsonType::kObject) {
    rec.result = result.Obj().Owned();
  } else if (!result.eoo()) {
    return BadRecord("'result' must be an object");
  }
  return rec;
}

TransactionTable::TransactionTable(storage::KvEngine* engine)
    : engine_(engine),
      // Unique among a session's rows of one txnNumber across restarts as long as the clock
      // moves forward; a clash is refused (DuplicateKey), never overwritten.
      next_seq_(static_cast<uint64_t>(NowMillis()) * 1000) {}

StatusWith<std::unique_ptr<TransactionTable>> TransactionTable::Open(storage::KvEngine* engine) {
  if (!engine->TableExists(kTable)) HG_RETURN_IF_ERROR(engine->CreateTable(kTable, ""));
  return std::unique_ptr<TransactionTable>(new TransactionTable(engine));
}

std::string TransactionTable::Key(const std::string& session, int64_t txn_number, uint64_t seq) {
  std::string key = session;
  key.resize(kSessionBytes);
  AppendBigEndian(key, static_cast<uint64_t>(txn_number));
  AppendBigEndian(key, seq);
  return key;
}

TransactionTable::Checkout::~Checkout() { table_->Release(session_); }

std::optional<BsonObj> TransactionTable::Checkout::Executed(int32_t stmt_id) const {
  auto it = executed_.find(stmt_id);
  if (it == executed_.end()) return std::nullopt;
  return it->second;
}

Status TransactionTable::Load(const std::string& session, SessionState* state) {
  state->txn_number = -1;
  state->executed.clear();
  auto s = engine_->NewSession();
  HG_ASSIGN_OR_RETURN(auto cursor, s->OpenCursorOrError(kTable));
  // The session's newest row names its newest txnNumber; that number's rows, its statements.
  std::string after = session;
  after.resize(kSessionBytes);
  after.append(16, '\xff');
  HG_ASSIGN_OR_RETURN(bool found, cursor->Seek(after, /*forward=*/false));
  if (!found || cursor->key().size() != kKeyBytes ||
      cursor->key().substr(0, kSessionBytes) != session) {
    return Status::OK();
  }
  const int64_t newest = static_cast<int64_t>(ReadBigEndian(cursor->key().substr(kSessionBytes)));
  state->txn_number = newest;
  while (found && cursor->key().size() == kKeyBytes &&
         cursor->key().substr(0, kSessionBytes) == session &&
         static_cast<int64_t>(ReadBigEndian(cursor->key().substr(kSessionBytes))) == newest) {
    HG_ASSIGN_OR_RETURN(StatementRecord rec,
                        StatementRecord::FromBson(BsonObj(cursor->value().data()).Owned()));
    for (int32_t id : rec.stmt_ids) state->executed[id] = rec.result;
    HG_ASSIGN_OR_RETURN(found, cursor->Prev());
  }
  return Status::OK();
}

StatusWith<std::unique_ptr<TransactionTable::Checkout>> TransactionTable::CheckOut(
    const std::string& session, int64_t txn_number, int64_t epoch) {
  std::unique_lock<std::mutex> lock(mu_);
  // Wait for the session, a slice at a time so that killOp and maxTimeMS end the wait.
  while (sessions_[session].checked_out) {
    lock.unlock();
    HG_RETURN_IF_ERROR(CheckForInterrupt());
    lock.lock();
    released_.wait_for(lock, std::chrono::milliseconds(20));
  }
  // Node-based: the state stays where it is while the session is held (Reap skips held ones).
  SessionState* state = &sessions_[session];
  state->checked_out = true;
  state->last_used_ms = NowMillis();
  auto give_back = [&](Status st) {  // under mu_
    state->checked_out = false;
    released_.notify_all();
    return st;
  };
  if (!state->loaded || state->epoch != epoch) {
    // Held: no other write of the session changes its rows meanwhile (a replica set member
    // applies the log only while it is not primary, when no write is let through).
    lock.unlock();
    SessionState loaded;
    Status st = Load(session, &loaded);
    lock.lock();
    if (!st.ok()) return give_back(st);
    state->txn_number = loaded.txn_number;
    state->executed = std::move(loaded.executed);
    state->epoch = epoch;
    state->loaded = true;
  }
  if (txn_number < state->txn_number) {
    return give_back(Status(ErrorCode::kTransactionTooOld,
                            "Retryable write with txnNumber " + std::to_string(txn_number) +
                                " is prohibited on session " + SessionForMessage(session) +
                                " because a newer retryable write with txnNumber " +
                                std::to_string(state->txn_number) +
                                " has already started on this session."));
  }
  bool forget_older = false;
  if (txn_number > state->txn_number) {
    // A new write of the session: what the earlier ones ran is no longer asked about.
    forget_older = state->txn_number >= 0;
    state->txn_number = txn_number;
    state->executed.clear();
  }
  // What ran before this write: only this write changes it while it holds the session.
  std::map<int32_t, BsonObj> executed = state->executed;
  lock.unlock();
  std::unique_ptr<Checkout> out(
      new Checkout(this, session, txn_number, std::move(executed)));  // releases from here
  if (forget_older) {
    auto s = engine_->NewSession();
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
      storage::WriteUnit wu(*s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_RETURN_IF_ERROR(RemoveOlder(*s, session, txn_number));
      return wu.Commit();
    }));
  }
  return out;
}

void TransactionTable::Release(const std::string& session) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_[session].checked_out = false;
  }
  released_.notify_all();
}

Status TransactionTable::Record(storage::Session& s, const StatementRecord& rec) {
  const BsonObj doc = rec.ToBson();
  HG_RETURN_IF_ERROR(s.Insert(kTable, Key(rec.session, rec.txn_number, next_seq_++), doc.bytes()));
  if (OpObserver* observer = GetOpObserver()) HG_RETURN_IF_ERROR(observer->OnStatements(s, doc));
  s.OnCommit([this, rec] {
    ++counters_.records_written;
    Learn(rec);
  });
  return Status::OK();
}

Status TransactionTable::ApplyRecord(storage::Session& s, const BsonObj& doc) {
  HG_ASSIGN_OR_RETURN(StatementRecord rec, StatementRecord::FromBson(doc));
  HG_RETURN_IF_ERROR(RemoveOlder(s, rec.session, rec.txn_number));
  HG_RETURN_IF_ERROR(s.Insert(kTable, Key(rec.session, rec.txn_number, next_seq_++), doc.bytes()));
  s.OnCommit([this] { ++counters_.records_written; });
  return Status::OK();
}

Status TransactionTable::Forget(storage::Session& s, const BsonObj& doc) {
  HG_ASSIGN_OR_RETURN(StatementRecord rec, StatementRecord::FromBson(doc));
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kTable));
  const std::string prefix = Key(rec.session, rec.txn_number, 0).substr(0, kKeyBytes - 8);
  std::vector<std::string> doomed;
  HG_ASSIGN_OR_RETURN(bool found, cursor->Seek(prefix));
  while (found && cursor->key().starts_with(prefix)) {
    if (cursor->value() == doc.bytes()) doomed.emplace_back(cursor->key());
    HG_ASSIGN_OR_RETURN(found, cursor->Next());
  }
  cursor.reset();
  for (const std::string& key : doomed) HG_RETURN_IF_ERROR(s.Remove(kTable, key));
  s.OnCommit([this, session = rec.session] {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = sessions_.find(session); it != sessions_.end()) it->second.loaded = false;
  });
  return Status::OK();
}

void TransactionTable::Learn(const StatementRecord& rec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(rec.session);
  if (it == sessions_.end() || !it->second.loaded || it->second.txn_number != rec.txn_number) {
    return;  // read from the table when next checked out
  }
  for (int32_t id : rec.stmt_ids) it->second.executed[id] = rec.result;
}

Status TransactionTable::RemoveOlder(storage::Session& s, const std::string& session,
                                     int64_t txn_number) {
  // The (session, txnNumber) pairs this transaction removed the older rows of.
  using Removed = std::vector<std::pair<std::string, int64_t>>;
  std::shared_ptr<void>& slot = s.TransactionState(this);
  if (!slot) slot = std::make_shared<Removed>();
  Removed& removed = *static_cast<Removed*>(slot.get());
  for (const auto& [done_session, done_txn] : removed) {
    if (done_session == session && done_txn >= txn_number) return Status::OK();
  }
  int64_t from_txn = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = sessions_.find(session); it != sessions_.end()) {
      from_txn = it->second.rows_from_txn;
    }
  }
  if (from_txn >= txn_number) return Status::OK();
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kTable));
  const std::string from = Key(session, from_txn, 0);
  const std::string until = Key(session, txn_number, 0);
  std::vector<std::string> doomed;
  HG_ASSIGN_OR_RETURN(bool found, cursor->Seek(from));
  while (found && cursor->key() < until) {
    doomed.emplace_back(cursor->key());
    HG_ASSIGN_OR_RETURN(found, cursor->Next());
  }
  cursor.reset();
  for (const std::string& key : doomed) HG_RETURN_IF_ERROR(s.Remove(kTable, key));
  removed.emplace_back(session, txn_number);
  s.OnCommit([this, session, txn_number] {
    std::lock_guard<std::mutex> lock(mu_);
    SessionState& state = sessions_[session];
    state.rows_from_txn = std::max(state.rows_from_txn, txn_number);
  });
  return Status::OK();
}

StatusWith<int64_t> TransactionTable::Reap(int64_t before_ms) {
  auto s = engine_->NewSession();
  // Each session's rows are adjacent; a session whose newest row is old goes whole.
  std::vector<std::string> doomed;
  std::vector<std::string> sessions;
  {
    HG_ASSIGN_OR_RETURN(auto cursor, s->OpenCursorOrError(kTable));
    HG_ASSIGN_OR_RETURN(bool found, cursor->SeekFirst());
    std::string current;
    std::vector<std::string> rows;
    int64_t newest_wall = 0;
    auto finish = [&] {
      if (!current.empty() && newest_wall < before_ms) {
        doomed.insert(doomed.end(), rows.begin(), rows.end());
        sessions.push_back(current);
      }
      rows.clear();
      newest_wall = 0;
    };
    while (found) {
      std::string_view key = cursor->key();
      if (key.size() == kKeyBytes) {
        if (key.substr(0, kSessionBytes) != current) {
          finish();
          current = std::string(key.substr(0, kSessionBytes));
        }
        rows.emplace_back(key);
        newest_wall = std::max(newest_wall, BsonObj(cursor->value().data())["wall"].DateMillis());
      }
      HG_ASSIGN_OR_RETURN(found, cursor->Next());
    }
    finish();
  }
  for (const std::string& key : doomed) {
    Status st = s->Remove(kTable, key);
    if (!st.ok() && st.code() != ErrorCode::kNoSuchKey) return st;  // a concurrent reap took it
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (!it->second.checked_out && it->second.last_used_ms < before_ms) {
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
  return static_cast<int64_t>(sessions.size());
}

}  // namespace hourglass::catalog
