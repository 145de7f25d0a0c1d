#include "repl/rollback.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "base/uuid.h"
#include "catalog/record_store.h"
#include "catalog/update_diff.h"
#include "repl/oplog_entry.h"
#include "storage/session.h"
#include "storage/write_conflict.h"

namespace hourglass::repl {

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

Status CannotRollBack(const BsonObj& op, std::string why) {
  return Status(ErrorCode::kOplogOperationUnsupported, "cannot roll back oplog entry " +
                                                           op.ToJson() + ": " + std::move(why) +
                                                           " (this member needs a resync)");
}

char OpKind(const BsonObj& op) {
  BsonElement kind = op["op"];
  return kind.type() == BsonType::kString && kind.Str().size() == 1 ? kind.Str()[0] : '?';
}

// The `_id` of the document a CRUD entry is about (`o2._id` for an update, else `o._id`).
BsonElement DocumentId(const BsonObj& op) {
  BsonElement holder = OpKind(op) == 'u' ? op["o2"] : op["o"];
  return holder.type() == BsonType::kObject ? holder.Obj()["_id"] : BsonElement();
}

// A document's identity across the oplog: its collection's uuid, then its `_id`'s type and value
// bytes (the same document is logged with the same bytes).
std::string DocumentKey(const BsonObj& op, const BsonElement& id) {
  std::string key(op["ui"].BinData());
  key.push_back(static_cast<char>(id.type()));
  key.append(id.value(), id.ValueSize());
  return key;
}

// Whether `op` gives its document whole (or says it is gone), whatever it was before.
bool GivesWhole(const BsonObj& op) {
  const char kind = OpKind(op);
  if (kind == 'i' || kind == 'd') return true;
  const BsonObj o = op["o"].Obj();
  return !o.HasField(kEditsField) && !(o["$v"].IsNumber() && o["$v"].NumberLong() == 2);
}

// The document after `op`, given it before (`doc`; nullopt: there is none).
Status Replay(const BsonObj& op, std::optional<std::string>& doc) {
  const char kind = OpKind(op);
  const BsonObj o = op["o"].Obj();
  if (kind == 'd') {
    doc.reset();
    return Status::OK();
  }
  if (GivesWhole(op)) {
    doc = std::string(o.bytes());
    return Status::OK();
  }
  if (!doc) return CannotRollBack(op, "it changes a document the oplog says is missing");
  if (BsonElement list = o[kEditsField]; list.type() == BsonType::kArray) {
    StatusWith<std::vector<storage::Session::Modification>> edits = ParseEdits(list.Obj());
    if (!edits.ok()) return CannotRollBack(op, edits.status().reason());
    storage::ApplyModifications(*doc, edits.value());
  } else {
    if (o["diff"].type() != BsonType::kObject) return CannotRollBack(op, "no 'diff'");
    StatusWith<BsonObj> after = catalog::ApplyUpdateDiff(BsonObj::CopyOf(*doc), o["diff"].Obj());
    if (!after.ok()) return CannotRollBack(op, after.status().reason());
    doc = std::string(after.value().bytes());
  }
  if (!bson::ValidateBson(*doc).ok()) {
    return CannotRollBack(op, "the document it rebuilds is not valid BSON");
  }
  return Status::OK();
}

// One document the undone entries touched.
struct Touched {
  std::string ns;  // its collection's name in the newest undone entry about it
  std::string uuid;
  BsonObj id;  // {_id: ...}
  // Its state at the rollback's point: known once `settled` (nullopt: it did not exist). Until
  // then, the entries about it found walking back from that point, newest first.
  bool settled = false;
  std::optional<std::string> before;
  std::vector<BsonObj> later;
};

// mongod's rollback file names: removed.<UTC time, '-' for ':'>.<n>.bson.
std::string FileTime() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H-%M-%S", &tm);
  return buf;
}

Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return Status::OK();
  return Status(ErrorCode::kInternalError, "cannot create " + path + ": " + strerror(errno));
}

// Writes `docs` (BSON documents back to back) to a new file under `dir`/`uuid`; its path.
StatusWith<std::string> WriteRollbackFile(const std::string& dir, const std::string& uuid,
                                          const std::string& docs) {
  HG_RETURN_IF_ERROR(MakeDirectory(dir));
  const std::string sub = dir + "/" + UuidString(uuid);
  HG_RETURN_IF_ERROR(MakeDirectory(sub));
  const std::string stem = sub + "/removed." + FileTime() + ".";
  for (int n = 0;; ++n) {
    std::string path = stem + std::to_string(n) + ".bson";
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      return Status(ErrorCode::kInternalError, "cannot create " + path + ": " + strerror(errno));
    }
    size_t done = 0;
    while (done < docs.size()) {
      ssize_t w = write(fd, docs.data() + done, docs.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    const bool ok = done == docs.size() && fsync(fd) == 0;
    close(fd);
    if (!ok) return Status(ErrorCode::kInternalError, "cannot write " + path);
    return path;
  }
}

// A collection an undone entry created; undoing it drops the collection.
struct Created {
  catalog::NamespaceString nss;
  std::string uuid;
};

// The entries after `after_ts` of terms below `below_term`, oldest first, with their record ids.
StatusWith<std::vector<std::pair<int64_t, BsonObj>>> ReadTail(storage::Session& s,
                                                              catalog::Collection& oplog,
                                                              uint64_t after_ts,
                                                              int64_t below_term) {
  std::vector<std::pair<int64_t, BsonObj>> tail;
  catalog::RecordRange range{static_cast<int64_t>(after_ts) + 1, std::nullopt, true};
  HG_ASSIGN_OR_RETURN(auto cursor, catalog::RecordCursor::Open(s, oplog, range));
  while (true) {
    HG_ASSIGN_OR_RETURN(bool any, cursor.Next());
    if (!any) break;
    BsonObj op = cursor.doc().Owned();
    if (op["t"].NumberLong() >= below_term) break;
    tail.emplace_back(cursor.id(), std::move(op));
  }
  return tail;
}

// The catalog changes among `tail`: the collections they create, in order. A regular
// collection's creation is undone (its first insert creates one implicitly, so a deposed primary
// often holds one); any other change is OplogOperationUnsupported.
StatusWith<std::vector<Created>> CreatedIn(const std::vector<std::pair<int64_t, BsonObj>>& tail) {
  std::vector<Created> created;
  for (const auto& [rid, op] : tail) {
    if (OpKind(op) != 'c') continue;
    const BsonObj o = op["o"].type() == BsonType::kObject ? op["o"].Obj() : BsonObj();
    const BsonObj o2 = op["o2"].type() == BsonType::kObject ? op["o2"].Obj() : BsonObj();
    const BsonElement first = o.FirstElement();
    const bool regular =
        o2["bucketsUuid"].eoo() && (o2["type"].eoo() || (o2["type"].type() == BsonType::kString &&
                                                         o2["type"].Str() == "collection"));
    if (first.FieldName() != "create" || first.type() != BsonType::kString || !regular ||
        op["ui"].type() != BsonType::kBinData || op["ns"].type() != BsonType::kString ||
        !op["ns"].Str().ends_with(".$cmd")) {
      return CannotRollBack(op, "it is a catalog change other than a collection's creation");
    }
    const std::string_view ns = op["ns"].Str();
    created.push_back(Created{{std::string(ns.substr(0, ns.size() - 5)), std::string(first.Str())},
                              std::string(op["ui"].BinData())});
  }
  return created;
}

// Undoes the creation of `created`, newest first: each collection that is still there goes, its
// documents to a rollback file (named in `summary`). Done before the tail's other entries are
// undone: a crash between the two finds the collection gone and the entries still there, and the
// next rollback goes on from there.
Status DropCreated(storage::KvEngine* engine, catalog::Catalog* catalog,
                   const std::vector<Created>& created, const std::string& rollback_dir,
                   RollbackSummary& summary) {
  for (auto c = created.rbegin(); c != created.rend(); ++c) {
    std::shared_ptr<catalog::Collection> coll = catalog->Lookup(c->nss);
    if (!coll || coll->IsView() || coll->entry().uuid != c->uuid) continue;
    std::string docs;
    {
      auto session = engine->NewSession();
      HG_ASSIGN_OR_RETURN(auto cursor, catalog::RecordCursor::Open(
                                           *session, *coll, catalog::RecordRange::All(true)));
      while (true) {
        HG_ASSIGN_OR_RETURN(bool any, cursor.Next());
        if (!any) break;
        docs.append(cursor.doc().bytes());
        ++summary.documents;
      }
    }
    if (!rollback_dir.empty() && !docs.empty()) {
      HG_ASSIGN_OR_RETURN(std::string path, WriteRollbackFile(rollback_dir, c->uuid, docs));
      summary.files.push_back(std::move(path));
    }
    Status st = catalog->DropCollection(c->nss);
    if (!st.ok() && st.code() != ErrorCode::kNamespaceNotFound) return st;
  }
  return Status::OK();
}

}  // namespace

StatusWith<RollbackSummary> RollBackOplogTail(storage::KvEngine* engine, catalog::Catalog* catalog,
                                              catalog::Collection& oplog,
                                              catalog::TransactionTable* transactions,
                                              const std::string& rollback_dir, uint64_t after_ts,
                                              int64_t below_term) {
  auto session = engine->NewSession();
  storage::Session& s = *session;
  // The entries to undo, oldest first, read once: only this thread writes the oplog's tail
  // while the member is not primary. Collections they created go first (DropCreated); the
  // documents of the others are then put back. Nothing is undone when the tail holds what
  // cannot be.
  HG_ASSIGN_OR_RETURN(const auto tail, ReadTail(s, oplog, after_ts, below_term));
  if (tail.empty()) return RollbackSummary{};
  HG_ASSIGN_OR_RETURN(const std::vector<Created> created, CreatedIn(tail));
  std::set<std::string> created_uuids;
  for (const Created& c : created) created_uuids.insert(c.uuid);
  RollbackSummary summary;
  // Undoes the tail's document changes in one transaction — or, without `apply`, only checks
  // that it can.
  auto undo = [&](bool apply) -> Status {
    summary = RollbackSummary{};
    storage::WriteUnit wu(s);
    HG_RETURN_IF_ERROR(wu.begin_status());
    // The documents they touch; one inserted by the first entry about it did not exist before.
    std::map<std::string, Touched> docs;
    size_t unsettled = 0;
    for (const auto& [rid, op] : tail) {
      const char kind = OpKind(op);
      if (kind == 'n' || kind == 'c') continue;  // creations: DropCreated
      if (op["ui"].type() == BsonType::kBinData &&
          created_uuids.contains(std::string(op["ui"].BinData()))) {
        continue;  // its collection goes whole
      }
      BsonElement id = DocumentId(op);
      if ((kind != 'i' && kind != 'u' && kind != 'd') || id.eoo() ||
          op["ui"].type() != BsonType::kBinData || op["ns"].type() != BsonType::kString ||
          op["o"].type() != BsonType::kObject) {
        return CannotRollBack(op, "it is not an entry this member writes");
      }
      auto [it, added] = docs.try_emplace(DocumentKey(op, id));
      Touched& t = it->second;
      t.ns = std::string(op["ns"].Str());
      if (!added) continue;
      t.uuid = std::string(op["ui"].BinData());
      t.id = bson::BsonBuilder().AppendElementAs(id, "_id").Obj();
      t.settled = kind == 'i';
      if (!t.settled) ++unsettled;
    }
    // The others' state at `after_ts`, rebuilt from the oplog walking back from there.
    if (unsettled > 0) {
      catalog::RecordRange range{std::nullopt, static_cast<int64_t>(after_ts), false};
      HG_ASSIGN_OR_RETURN(auto cursor, catalog::RecordCursor::Open(s, oplog, range));
      while (unsettled > 0) {
        HG_ASSIGN_OR_RETURN(bool any, cursor.Next());
        if (!any) break;
        const BsonObj op = cursor.doc();
        const char kind = OpKind(op);
        if ((kind != 'i' && kind != 'u' && kind != 'd') || op["ui"].type() != BsonType::kBinData ||
            op["o"].type() != BsonType::kObject) {
          continue;
        }
        BsonElement id = DocumentId(op);
        if (id.eoo()) continue;
        auto it = docs.find(DocumentKey(op, id));
        if (it == docs.end() || it->second.settled) continue;
        Touched& t = it->second;
        if (!GivesWhole(op)) {
          t.later.push_back(op.Owned());
          continue;
        }
        HG_RETURN_IF_ERROR(Replay(op, t.before));
        for (auto later = t.later.rbegin(); later != t.later.rend(); ++later) {
          HG_RETURN_IF_ERROR(Replay(*later, t.before));
        }
        t.later.clear();
        t.settled = true;
        --unsettled;
      }
      if (unsettled > 0) {
        for (const auto& [key, t] : docs) {
          if (!t.settled) {
            return CannotRollBack(tail.front().second, "the oplog no longer holds what document " +
                                                           t.id.ToJson() + " of " + t.ns +
                                                           " was before it");
          }
        }
      }
    }
    if (!apply) return Status::OK();  // the transaction ends unwritten
    // Put each document back; keep what goes, per collection.
    std::map<std::string, std::string> removed;  // uuid -> documents back to back
    for (const auto& [key, t] : docs) {
      HG_ASSIGN_OR_RETURN(catalog::NamespaceString nss, catalog::ParseNamespace(t.ns));
      std::shared_ptr<catalog::Collection> coll = catalog->Lookup(nss);
      if (!coll || coll->IsView() || coll->entry().uuid != t.uuid) {
        return CannotRollBack(tail.front().second, "collection " + t.ns + " is not there");
      }
      HG_ASSIGN_OR_RETURN(auto found, coll->FindById(s, t.id["_id"]));
      if (found && t.before && found->doc.bytes() == *t.before) continue;
      if (!found && !t.before) continue;
      ++summary.documents;
      if (found) removed[t.uuid].append(found->doc.bytes());
      if (!t.before) {
        HG_RETURN_IF_ERROR(coll->Remove(s, found->id, found->doc));
        const int64_t bytes = static_cast<int64_t>(found->doc.bytes().size());
        s.OnCommit([coll, bytes] { coll->AdjustCounts(-1, -bytes); });
        continue;
      }
      const BsonObj before = BsonObj::CopyOf(*t.before);
      const int64_t bytes = static_cast<int64_t>(before.bytes().size());
      if (!found) {
        HG_RETURN_IF_ERROR(coll->Insert(s, before).status());
        s.OnCommit([coll, bytes] { coll->AdjustCounts(1, bytes); });
        continue;
      }
      HG_RETURN_IF_ERROR(coll->Update(s, found->id, found->doc, before));
      const int64_t delta = bytes - static_cast<int64_t>(found->doc.bytes().size());
      s.OnCommit([coll, delta] { coll->AdjustCounts(0, delta); });
    }
    // The entries leave the oplog, with the retryable-write records they carried.
    int64_t bytes = 0;
    for (const auto& [rid, op] : tail) {
      HG_RETURN_IF_ERROR(oplog.Remove(s, rid, op));
      bytes += static_cast<int64_t>(op.bytes().size());
      if (BsonElement records = op[kStatementsField];
          records.type() == BsonType::kArray && transactions != nullptr) {
        for (BsonElement r : records.Obj()) {
          if (r.type() == BsonType::kObject) HG_RETURN_IF_ERROR(transactions->Forget(s, r.Obj()));
        }
      }
    }
    const auto rows = static_cast<int64_t>(tail.size());
    s.OnCommit([&oplog, rows, bytes] { oplog.AdjustCounts(-rows, -bytes); });
    summary.entries = rows;
    // The files before the commit: a crash between the two leaves a file and the entries, which
    // the next rollback writes again.
    if (!rollback_dir.empty()) {
      for (const auto& [uuid, bytes_of_docs] : removed) {
        HG_ASSIGN_OR_RETURN(std::string path, WriteRollbackFile(rollback_dir, uuid, bytes_of_docs));
        summary.files.push_back(std::move(path));
      }
    }
    return wu.Commit();
  };
  RollbackSummary dropped;
  if (!created.empty()) {
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] { return undo(false); }));
    HG_RETURN_IF_ERROR(DropCreated(engine, catalog, created, rollback_dir, dropped));
  }
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] { return undo(true); }));
  summary.documents += dropped.documents;
  summary.files.insert(summary.files.begin(), dropped.files.begin(), dropped.files.end());
  return summary;
}

}  // namespace hourglass::repl
