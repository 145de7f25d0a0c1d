#include "repl/oplog.h"

#include <chrono>
#include <limits>
#include <vector>

#include "base/logger.h"
#include "catalog/collection.h"
#include "catalog/record_store.h"
#include "catalog/update_diff.h"
#include "repl/oplog_entry.h"
#include "repl/rollback.h"
#include "storage/session.h"
#include "storage/write_conflict.h"

namespace hourglass::repl {

namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

// Set while this thread applies log entries: their writes are not reported again.
thread_local bool t_applying = false;

struct ApplyingScope {
  ApplyingScope() : was(t_applying) { t_applying = true; }
  ~ApplyingScope() { t_applying = was; }
  bool was;  // scopes nest (Apply rolls back first)
};

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `o` without its first field (a command's name): the options or spec it carries.
BsonObj WithoutFirstField(const BsonObj& o) {
  BsonBuilder b;
  bool first = true;
  for (BsonElement e : o) {
    if (!first) b.AppendElement(e);
    first = false;
  }
  return b.Obj();
}

Status CannotApply(const BsonObj& op, std::string why) {
  return Status(ErrorCode::kOplogOperationUnsupported,
                "cannot apply oplog entry " + op.ToJson() + ": " + std::move(why));
}

}  // namespace

// One operation of a transaction, before it has its timestamp.
struct Oplog::Pending {
  char op;  // 'i', 'u', 'd', 'c'
  std::string ns;
  std::string uuid;  // 16 bytes, or empty
  BsonObj o;
  BsonObj o2;
};

// What a transaction with replicated writes keeps until it ends (Session::TransactionState):
// dropped after its commit hooks, which releases the oplog's mutex taken at pre-commit.
struct Oplog::Transaction {
  std::vector<Pending> ops;
  std::vector<BsonObj> statements;  // retryable-write records
  std::unique_lock<std::mutex> lock;
  BsonObj batch;
  uint64_t last_ts = 0;
  int64_t bytes = 0;
};

Oplog::Oplog(storage::KvEngine* engine, catalog::Catalog* catalog,
             catalog::TransactionTable* transactions)
    : engine_(engine), catalog_(catalog), transactions_(transactions) {}

Status Oplog::Open(Hooks hooks) {
  hooks_ = std::move(hooks);
  HG_ASSIGN_OR_RETURN(oplog_, catalog_->GetOrCreateCollection({"local", "oplog.rs"}));
  auto session = engine_->NewSession();
  HG_ASSIGN_OR_RETURN(auto cursor, catalog::RecordCursor::Open(*session, *oplog_,
                                                               catalog::RecordRange::All(false)));
  HG_ASSIGN_OR_RETURN(bool any, cursor.Next());
  std::lock_guard<std::mutex> lock(mu_);
  if (any) last_ts_ = last_appended_ts_ = newest_row_ts_ = static_cast<uint64_t>(cursor.id());
  return Status::OK();
}

uint64_t Oplog::NextTimestampLocked() {
  // This second, counting up within it, never going back.
  uint64_t candidate = static_cast<uint64_t>(NowMillis() / 1000) << 32 | 1;
  last_ts_ = candidate > last_ts_ ? candidate : last_ts_ + 1;
  return last_ts_;
}

void Oplog::WithNextTimestamp(const std::function<void(uint64_t ts)>& fn) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t ts = NextTimestampLocked();
  fn(ts);
  last_appended_ts_ = ts;
}

uint64_t Oplog::NewestTimestamp() const { return newest_row_ts_.load(); }

uint64_t Oplog::ClockTimestamp() const { return last_ts_.load(); }

void Oplog::SetLimits(int64_t max_bytes, double min_retention_hours) {
  max_bytes_.store(max_bytes);
  min_retention_hours_.store(min_retention_hours);
}

int64_t Oplog::DataSize() const { return oplog_ ? oplog_->DataSize() : 0; }

StatusWith<int64_t> Oplog::Truncate(uint64_t keep_from) {
  const int64_t limit = max_bytes_.load();
  if (limit <= 0 || oplog_->DataSize() <= limit) return int64_t{0};
  const double hours = min_retention_hours_.load();
  const int64_t retained_after_ms = hours > 0
                                        ? NowMillis() - static_cast<int64_t>(hours * 3600 * 1000)
                                        : std::numeric_limits<int64_t>::max();
  auto session = engine_->NewSession();
  int64_t removed = 0;
  bool reached_kept = false;
  while (!reached_kept && oplog_->DataSize() > limit) {
    // Oldest first, in transactions of at most 1,000 entries: each commits what it removed.
    const int64_t excess = oplog_->DataSize() - limit;
    int64_t rows = 0;
    int64_t bytes = 0;
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
      rows = bytes = 0;
      reached_kept = false;
      storage::WriteUnit wu(*session);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_ASSIGN_OR_RETURN(auto cursor, catalog::RecordCursor::Open(
                                           *session, *oplog_, catalog::RecordRange::All(true)));
      while (rows < 1000 && bytes < excess) {
        HG_ASSIGN_OR_RETURN(bool any, cursor.Next());
        BsonObj entry = any ? cursor.doc() : BsonObj();
        if (!any || static_cast<uint64_t>(cursor.id()) >= keep_from ||
            entry["wall"].DateMillis() > retained_after_ms) {
          reached_kept = true;
          break;
        }
        const int64_t id = cursor.id();
        const int64_t size = static_cast<int64_t>(entry.bytes().size());
        HG_RETURN_IF_ERROR(oplog_->Remove(*session, id, entry.Owned()));
        ++rows;
        bytes += size;
      }
      session->OnCommit([this, rows, bytes] { oplog_->AdjustCounts(-rows, -bytes); });
      return wu.Commit();
    }));
    removed += rows;
    if (rows == 0) break;
  }
  return removed;
}

void Oplog::AdvanceTo(uint64_t ts) {
  if (ts <= last_ts_.load()) return;  // most requests: no need to wait for a commit's mutex
  std::lock_guard<std::mutex> lock(mu_);
  if (ts > last_ts_) last_ts_ = ts;
}

uint64_t Oplog::last_appended_ts() const { return last_appended_ts_.load(); }

// --- The primary: writes become entries ---------------------------------------------------

Status Oplog::OnInsert(storage::Session& s, const catalog::Collection& coll, const BsonObj& doc) {
  if (t_applying) return Status::OK();
  return Add(s, Pending{'i', coll.ns(), coll.entry().uuid, doc.Owned(), BsonObj()});
}

Status Oplog::OnUpdate(storage::Session& s, const catalog::Collection& coll, const BsonObj& doc,
                       const BsonObj* before) {
  if (t_applying) return Status::OK();
  // As mongod logs an update: its diff ({$v: 2, diff}) where one says it, else the document.
  if (before != nullptr) {
    if (std::optional<BsonObj> diff = catalog::ComputeUpdateDiff(*before, doc)) {
      return OnUpdateDiff(s, coll, doc["_id"], *diff);
    }
  }
  BsonBuilder id;
  id.AppendElement(doc["_id"]);
  return Add(s, Pending{'u', coll.ns(), coll.entry().uuid, doc.Owned(), id.Obj()});
}

Status Oplog::OnUpdateDiff(storage::Session& s, const catalog::Collection& coll,
                           const BsonElement& id, const BsonObj& diff) {
  if (t_applying) return Status::OK();
  BsonBuilder o;
  o.AppendInt32("$v", 2);
  o.AppendObject("diff", diff);
  BsonBuilder o2;
  o2.AppendElementAs(id, "_id");
  return Add(s, Pending{'u', coll.ns(), coll.entry().uuid, o.Obj(), o2.Obj()});
}

Status Oplog::OnDelete(storage::Session& s, const catalog::Collection& coll, const BsonObj& doc) {
  if (t_applying) return Status::OK();
  BsonBuilder id;
  id.AppendElement(doc["_id"]);
  return Add(s, Pending{'d', coll.ns(), coll.entry().uuid, id.Obj(), BsonObj()});
}

bool Oplog::AcceptsWrites() const {
  int64_t term = 0;
  return hooks_.may_write && hooks_.may_write(&term);
}

Status Oplog::OnCommand(storage::Session& s, const std::string& db, const std::string& uuid,
                        const BsonObj& o, const BsonObj& o2) {
  if (t_applying) return Status::OK();
  return Add(s, Pending{'c', db + ".$cmd", uuid, o.Owned(), o2.Owned()});
}

Status Oplog::OnStatements(storage::Session& s, const BsonObj& record) {
  if (t_applying) return Status::OK();
  if (!s.InTransaction()) {
    return Status(ErrorCode::kInternalError, "a retryable write outside a storage transaction");
  }
  TransactionOf(s).statements.push_back(record.Owned());
  return Status::OK();
}

Status Oplog::Add(storage::Session& s, Pending op) {
  if (!s.InTransaction()) {
    // Its entry could not commit with it.
    return Status(ErrorCode::kInternalError,
                  "a replicated write to " + op.ns + " outside a storage transaction");
  }
  TransactionOf(s).ops.push_back(std::move(op));
  return Status::OK();
}

Oplog::Transaction& Oplog::TransactionOf(storage::Session& s) {
  std::shared_ptr<void>& slot = s.TransactionState(this);
  if (!slot) {
    auto txn = std::make_shared<Transaction>();
    Transaction* t = txn.get();
    slot = std::move(txn);
    s.OnPreCommit([this, &s, t] { return PrepareCommit(s, *t); });
    s.OnCommit([this, t] {
      if (t->ops.empty()) return;  // only records of unreplicated writes (PrepareCommit)
      // Still under the mutex PrepareCommit took: batches reach the log in timestamp order.
      hooks_.append(t->batch);
      last_appended_ts_ = t->last_ts;
      if (t->last_ts > newest_row_ts_) newest_row_ts_ = t->last_ts;
      oplog_->AdjustCounts(static_cast<int64_t>(t->ops.size()), t->bytes);
    });
  }
  return *static_cast<Transaction*>(slot.get());
}

Status Oplog::PrepareCommit(storage::Session& s, Transaction& txn) {
  int64_t term = 0;
  if (!hooks_.may_write(&term)) {
    // A write on a member that is not the writable primary (a background task, or a primary
    // that just stepped down): it would not be in the set's log.
    return Status(ErrorCode::kNotWritablePrimary, "not primary");
  }
  if (txn.ops.empty()) {
    // Records of statements that wrote nothing replicated (the `local` database): nothing to
    // carry them, nothing for a retry elsewhere to find.
    return Status::OK();
  }
  txn.lock = std::unique_lock<std::mutex>(mu_);
  const int64_t wall = NowMillis();
  bson::BsonArrayBuilder ops;
  for (const Pending& p : txn.ops) {
    uint64_t ts = NextTimestampLocked();
    BsonBuilder b;
    b.AppendString("op", std::string_view(&p.op, 1));
    b.AppendString("ns", p.ns);
    if (!p.uuid.empty()) b.AppendBinData("ui", 4, p.uuid);
    b.AppendObject("o", p.o);
    if (!p.o2.IsEmpty()) b.AppendObject("o2", p.o2);
    b.AppendTimestamp("ts", ts);
    b.AppendInt64("t", term);
    b.AppendInt64("v", 2);
    b.AppendDate("wall", wall);
    if (&p == &txn.ops.back() && !txn.statements.empty()) {
      bson::BsonArrayBuilder records;
      for (const BsonObj& r : txn.statements) records.AppendObject(r);
      b.AppendArray(kStatementsField, records.Obj());
    }
    BsonObj entry = b.Obj();
    HG_RETURN_IF_ERROR(oplog_->InsertAt(s, static_cast<int64_t>(ts), entry));
    ops.AppendObject(entry);
    txn.last_ts = ts;
    txn.bytes += static_cast<int64_t>(entry.bytes().size());
  }
  BsonBuilder batch;
  batch.AppendTimestamp("ts", txn.last_ts);
  batch.AppendInt64("t", term);
  batch.AppendDate("wall", wall);
  batch.AppendArray("ops", ops.Obj());
  txn.batch = batch.Obj();
  return Status::OK();
}

// --- Every member: entries become writes ---------------------------------------------------

StatusWith<bool> Oplog::Holds(storage::Session& s, const BsonObj& op) {
  HG_ASSIGN_OR_RETURN(auto found,
                      oplog_->FindRecord(s, static_cast<int64_t>(op["ts"].TimestampValue())));
  if (!found) return false;
  if (found->doc["t"].NumberLong() != op["t"].NumberLong()) {
    // Another primary's entry under the same timestamp: this member holds writes the set's log
    // never committed (it was a primary that lost its role before they replicated).
    return Status(ErrorCode::kOplogStartMissing, "this member's oplog holds an entry of term " +
                                                     std::to_string(found->doc["t"].NumberLong()) +
                                                     " the set's log does not have (resync it)");
  }
  return true;
}

Status Oplog::WriteRow(storage::Session& s, const BsonObj& op) {
  uint64_t ts = op["ts"].TimestampValue();
  HG_RETURN_IF_ERROR(oplog_->InsertAt(s, static_cast<int64_t>(ts), op));
  int64_t bytes = static_cast<int64_t>(op.bytes().size());
  s.OnCommit([this, bytes] { oplog_->AdjustCounts(1, bytes); });
  std::lock_guard<std::mutex> lock(mu_);
  if (ts > last_ts_) last_ts_ = ts;
  if (ts > newest_row_ts_) newest_row_ts_ = ts;
  return Status::OK();
}

Status Oplog::Apply(const BsonObj& entry) {
  ApplyingScope applying;
  std::vector<BsonObj> ops;
  if (BsonElement list = entry["ops"]; list.type() == BsonType::kArray) {
    for (BsonElement op : list.Obj()) {
      if (op.type() != BsonType::kObject) return CannotApply(entry, "a batch holds a non-object");
      ops.push_back(op.Obj());
    }
  } else {
    // A no-op the coordinator wrote: its row is the entry without the configuration it carries.
    BsonBuilder b;
    for (BsonElement e : entry) {
      if (e.FieldName() != "config") b.AppendElement(e);
    }
    ops.push_back(b.Obj());
  }
  if (ops.empty()) return Status::OK();
  auto session = engine_->NewSession();
  // The primary that wrote a batch holds it already, as does a member that applied it before a
  // restart; a batch's rows commit together, so its last one tells.
  const uint64_t entry_ts = ops.back()["ts"].TimestampValue();
  StatusWith<bool> held = Holds(*session, ops.back());
  if ((!held.ok() || !held.value()) && newest_row_ts_.load() > handled_ts_.load()) {
    // Rows past what the log handed here, written by this member as a primary: those of
    // earlier terms than this entry's will never be in the set's log.
    HG_RETURN_IF_ERROR(RollBack(handled_ts_.load(), ops.back()["t"].NumberLong()));
    held = Holds(*session, ops.back());
  }
  HG_ASSIGN_OR_RETURN(bool applied, std::move(held));
  if (!applied) HG_RETURN_IF_ERROR(ApplyOps(*session, ops));
  MarkHandled(entry_ts);
  return Status::OK();
}

bool Oplog::HoldsEntry(const BsonObj& op) {
  auto session = engine_->NewSession();
  StatusWith<bool> held = Holds(*session, op);
  return held.ok() && held.value();
}

Status Oplog::InstallCopy(const std::function<StatusWith<std::vector<BsonObj>>()>& copy) {
  ApplyingScope applying;
  HG_ASSIGN_OR_RETURN(std::vector<BsonObj> entries, copy());
  auto session = engine_->NewSession();
  return storage::RetryOnWriteConflict([&] {
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    for (const BsonObj& e : entries) HG_RETURN_IF_ERROR(WriteRow(*session, e));
    return wu.Commit();
  });
}

void Oplog::MarkHandled(uint64_t ts) {
  uint64_t cur = handled_ts_.load();
  while (ts > cur && !handled_ts_.compare_exchange_weak(cur, ts)) {
  }
}

Status Oplog::RollBack(uint64_t after_ts, int64_t below_term) {
  ApplyingScope applying;
  const auto start = std::chrono::steady_clock::now();
  HG_ASSIGN_OR_RETURN(RollbackSummary summary,
                      RollBackOplogTail(engine_, catalog_, *oplog_, transactions_,
                                        hooks_.rollback_dir ? hooks_.rollback_dir() : std::string(),
                                        after_ts, below_term));
  if (summary.entries == 0) return Status::OK();
  // The newest row is now the newest one left (at most `after_ts`, unless a later term's rows
  // follow the undone ones).
  auto session = engine_->NewSession();
  HG_ASSIGN_OR_RETURN(auto cursor, catalog::RecordCursor::Open(*session, *oplog_,
                                                               catalog::RecordRange::All(false)));
  HG_ASSIGN_OR_RETURN(bool any, cursor.Next());
  {
    std::lock_guard<std::mutex> lock(mu_);
    newest_row_ts_ = any ? static_cast<uint64_t>(cursor.id()) : 0;
  }
  bson::BsonArrayBuilder files;
  for (const std::string& f : summary.files) files.AppendString(f);
  LOGI("REPL", 21612, "Rollback summary",
       "{\"commonPointTs\": " + std::to_string(after_ts) +
           ", \"entriesRolledBack\": " + std::to_string(summary.entries) +
           ", \"documentsRolledBack\": " + std::to_string(summary.documents) +
           ", \"rollbackFiles\": " + files.Obj().ToJson() + ", \"durationMillis\": " +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count()) +
           "}");
  return Status::OK();
}

Status Oplog::ApplyOps(storage::Session& s, const std::vector<BsonObj>& ops) {
  size_t i = 0;
  while (i < ops.size()) {
    if (ops[i]["op"].type() == BsonType::kString && ops[i]["op"].Str() == "c") {
      // A catalog change runs in the catalog's own transactions; re-applying one after a crash
      // between it and its row finds it done.
      HG_ASSIGN_OR_RETURN(bool held, Holds(s, ops[i]));
      if (!held) {
        HG_RETURN_IF_ERROR(ApplyCommand(ops[i]));
        HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
          storage::WriteUnit wu(s);
          HG_RETURN_IF_ERROR(wu.begin_status());
          HG_RETURN_IF_ERROR(WriteRow(s, ops[i]));
          return wu.Commit();
        }));
      }
      ++i;
      continue;
    }
    size_t end = i;
    while (end < ops.size() &&
           !(ops[end]["op"].type() == BsonType::kString && ops[end]["op"].Str() == "c")) {
      ++end;
    }
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
      storage::WriteUnit wu(s);
      HG_RETURN_IF_ERROR(wu.begin_status());
      for (size_t k = i; k < end; ++k) {
        HG_ASSIGN_OR_RETURN(bool held, Holds(s, ops[k]));
        if (held) continue;
        HG_RETURN_IF_ERROR(ApplyCrud(s, ops[k]));
        HG_RETURN_IF_ERROR(ApplyStatements(s, ops[k]));
        HG_RETURN_IF_ERROR(WriteRow(s, ops[k]));
      }
      return wu.Commit();
    }));
    i = end;
  }
  return Status::OK();
}

Status Oplog::ApplyStatements(storage::Session& s, const BsonObj& op) {
  BsonElement records = op[kStatementsField];
  if (records.eoo()) return Status::OK();
  if (records.type() != BsonType::kArray || transactions_ == nullptr) {
    return CannotApply(op, "malformed retryable-write records");
  }
  for (BsonElement r : records.Obj()) {
    if (r.type() != BsonType::kObject) return CannotApply(op, "a retryable-write record");
    HG_RETURN_IF_ERROR(transactions_->ApplyRecord(s, r.Obj()));
  }
  return Status::OK();
}

Status Oplog::ApplyCrud(storage::Session& s, const BsonObj& op) {
  BsonElement kind = op["op"];
  if (kind.type() != BsonType::kString) return CannotApply(op, "no 'op'");
  if (kind.Str() == "n") return Status::OK();
  if (op["ns"].type() != BsonType::kString || op["o"].type() != BsonType::kObject) {
    return CannotApply(op, "no 'ns' or 'o'");
  }
  HG_ASSIGN_OR_RETURN(catalog::NamespaceString nss, catalog::ParseNamespace(op["ns"].Str()));
  std::shared_ptr<catalog::Collection> coll = catalog_->Lookup(nss);
  if (!coll || coll->IsView()) return CannotApply(op, "no collection " + nss.ns());
  const BsonObj o = op["o"].Obj();
  if (kind.Str() == "i") {
    HG_RETURN_IF_ERROR(coll->Insert(s, o).status());
    int64_t bytes = static_cast<int64_t>(o.bytes().size());
    s.OnCommit([coll, bytes] { coll->AdjustCounts(1, bytes); });
    return Status::OK();
  }
  if (kind.Str() == "u") {
    if (op["o2"].type() != BsonType::kObject) return CannotApply(op, "no 'o2'");
    HG_ASSIGN_OR_RETURN(auto found, coll->FindById(s, op["o2"].Obj()["_id"]));
    if (BsonElement edits = o[kEditsField]; edits.type() == BsonType::kArray) {
      if (!found) return CannotApply(op, "the record it edits is missing");
      StatusWith<std::vector<storage::Session::Modification>> parsed = ParseEdits(edits.Obj());
      if (!parsed.ok()) return CannotApply(op, parsed.status().reason());
      return ApplyEdits(s, parsed.value(), coll, found->id, op["o2"].Obj()["_id"]);
    }
    BsonObj after = o;
    if (o["$v"].IsNumber() && o["$v"].NumberLong() == 2) {
      // A diff of the document ({$v: 2, diff}): applied in place, by the edits it makes, unless it
      // moves the record's series (the series index is keyed by what it changes). A document of
      // a regular collection with user indexes is rewritten instead: its indexes need it before
      // and after, which Update takes as built here and in place would read again; a bucket,
      // large and growing by appends, is edited in place whatever it costs to read.
      if (!found) return CannotApply(op, "the document it changes is missing");
      if (o["diff"].type() != BsonType::kObject) return CannotApply(op, "no 'diff'");
      const BsonObj diff = o["diff"].Obj();
      const bool in_place = coll->Indexes().empty() || coll->entry().nss.IsTimeseriesBuckets();
      if (in_place && coll->CanModifyInPlace(diff)) {
        auto edits = catalog::UpdateDiffEdits(found->doc, diff);
        if (!edits.ok()) return CannotApply(op, edits.status().reason());
        return ApplyEdits(s, edits.value(), coll, found->id, op["o2"].Obj()["_id"]);
      }
      StatusWith<BsonObj> applied = catalog::ApplyUpdateDiff(found->doc, diff);
      if (!applied.ok()) return CannotApply(op, applied.status().reason());
      after = std::move(applied).value();
    } else if (!found) {
      // As MongoDB applies a replacement: an upsert.
      HG_RETURN_IF_ERROR(coll->Insert(s, o).status());
      int64_t bytes = static_cast<int64_t>(o.bytes().size());
      s.OnCommit([coll, bytes] { coll->AdjustCounts(1, bytes); });
      return Status::OK();
    }
    HG_RETURN_IF_ERROR(coll->Update(s, found->id, found->doc, after));
    int64_t delta = static_cast<int64_t>(after.bytes().size()) -
                    static_cast<int64_t>(found->doc.bytes().size());
    s.OnCommit([coll, delta] { coll->AdjustCounts(0, delta); });
    return Status::OK();
  }
  if (kind.Str() == "d") {
    HG_ASSIGN_OR_RETURN(auto found, coll->FindById(s, o["_id"]));
    if (!found) return Status::OK();  // MongoDB's rule too: deleting nothing is not an error
    HG_RETURN_IF_ERROR(coll->Remove(s, found->id, found->doc));
    int64_t bytes = static_cast<int64_t>(found->doc.bytes().size());
    s.OnCommit([coll, bytes] { coll->AdjustCounts(-1, -bytes); });
    return Status::OK();
  }
  return CannotApply(op, "unknown op '" + std::string(kind.Str()) + "'");
}

Status Oplog::ApplyEdits(storage::Session& s,
                         const std::vector<storage::Session::Modification>& edits,
                         const std::shared_ptr<catalog::Collection>& coll, int64_t rid,
                         const BsonElement& id) {
  int64_t delta = 0;
  for (const storage::Session::Modification& m : edits) {
    delta += static_cast<int64_t>(m.data.size()) - static_cast<int64_t>(m.size);
  }
  // Not logged again (this member applies the log), so no diff to give; not this member's bucket
  // catalog's write, so the caches of what its buckets hold are stale after it.
  HG_RETURN_IF_ERROR(
      coll->ModifyRecord(s, rid, id, edits, BsonObj(), catalog::Collection::WriteOrigin::kOther));
  s.OnCommit([coll, delta] { coll->AdjustCounts(0, delta); });
  return Status::OK();
}

Status Oplog::ApplyCommand(const BsonObj& op) {
  if (op["ns"].type() != BsonType::kString || op["o"].type() != BsonType::kObject ||
      op["o"].Obj().IsEmpty()) {
    return CannotApply(op, "no 'ns' or 'o'");
  }
  std::string_view ns = op["ns"].Str();
  if (!ns.ends_with(".$cmd")) return CannotApply(op, "a command's 'ns' must be <db>.$cmd");
  const std::string db(ns.substr(0, ns.size() - 5));
  const BsonObj o = op["o"].Obj();
  const BsonObj o2 = op["o2"].type() == BsonType::kObject ? op["o2"].Obj() : BsonObj();
  const std::string uuid =
      op["ui"].type() == BsonType::kBinData ? std::string(op["ui"].BinData()) : std::string();
  const BsonElement first = o.FirstElement();
  const std::string_view name = first.FieldName();
  if (name == "renameCollection") {
    if (first.type() != BsonType::kString || o["to"].type() != BsonType::kString) {
      return CannotApply(op, "renameCollection needs the two namespaces");
    }
    HG_ASSIGN_OR_RETURN(auto from, catalog::ParseNamespace(first.Str()));
    HG_ASSIGN_OR_RETURN(auto to, catalog::ParseNamespace(o["to"].Str()));
    return catalog_->RenameCollection(from, to, o["dropTarget"].Truthy());
  }
  if (first.type() != BsonType::kString) return CannotApply(op, "no collection name");
  const catalog::NamespaceString nss{db, std::string(first.Str())};
  if (name == "create") {
    Status st = Status::OK();
    if (o2["bucketsUuid"].type() == BsonType::kBinData &&
        o2["bucketsOptions"].type() == BsonType::kObject) {
      st = catalog_->CreateTimeseries(nss, WithoutFirstField(o), {db, "system.buckets." + nss.coll},
                                      o2["bucketsOptions"].Obj(), uuid,
                                      std::string(o2["bucketsUuid"].BinData()));
    } else {
      std::string type =
          o2["type"].type() == BsonType::kString ? std::string(o2["type"].Str()) : "collection";
      st = catalog_->CreateCollection(nss, WithoutFirstField(o), type, uuid).status();
    }
    // Created before a crash that came before its row.
    if (st.code() == ErrorCode::kNamespaceExists) return Status::OK();
    return st;
  }
  if (name == "drop") {
    Status st = catalog_->DropCollection(nss);
    return st.code() == ErrorCode::kNamespaceNotFound ? Status::OK() : st;
  }
  if (name == "createIndexes") return catalog_->CreateIndexes(nss, {WithoutFirstField(o)});
  if (name == "dropIndexes") {
    if (o["index"].type() != BsonType::kString) return CannotApply(op, "no index name");
    return catalog_->DropIndexes(nss, {std::string(o["index"].Str())});
  }
  if (name == "collMod") {
    if (o2["options"].type() == BsonType::kObject) {
      return catalog_->SetOptions({{nss, o2["options"].Obj()}});
    }
    if (o2["indexSpecs"].type() == BsonType::kArray) {
      std::vector<BsonObj> specs;
      for (BsonElement spec : o2["indexSpecs"].Obj()) {
        if (spec.type() != BsonType::kObject) return CannotApply(op, "an index spec not an object");
        specs.push_back(spec.Obj());
      }
      return catalog_->ReplaceIndexSpecs(nss, specs);
    }
    return CannotApply(op, "collMod without its options or index specs");
  }
  return CannotApply(op, "unknown command '" + std::string(name) + "'");
}

}  // namespace hourglass::repl
