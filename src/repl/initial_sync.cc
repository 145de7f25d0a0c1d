#include "repl/initial_sync.h"

#include <map>

#include "catalog/namespace.h"
#include "storage/cursor.h"
#include "storage/record_id.h"
#include "storage/session.h"
#include "storage/write_conflict.h"

namespace hourglass::repl {

namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

constexpr std::string_view kOplogNs = "local.oplog.rs";

bool IsLocal(const catalog::NamespaceString& nss) { return nss.db == "local"; }

}  // namespace

struct SnapshotClone::State {
  std::unique_ptr<storage::Session> session;
  std::vector<BsonObj> oplog_entries;             // oldest first
  std::vector<catalog::CollectionEntry> entries;  // every catalog entry but local's
  // Where Next() is: the oplog entry, then the entries, then each entry's documents, then the
  // retryable-write records.
  enum class Phase { kOplog, kEntries, kDocuments, kRecords, kDone } phase = Phase::kOplog;
  size_t index = 0;  // into `entries`
  std::unique_ptr<storage::Cursor> cursor;
};

SnapshotClone::SnapshotClone(std::unique_ptr<State> state) : state_(std::move(state)) {}

SnapshotClone::~SnapshotClone() {
  if (!state_->session) return;
  state_->cursor.reset();
  if (state_->session->InTransaction()) state_->session->Rollback();
}

StatusWith<std::unique_ptr<SnapshotClone>> SnapshotClone::Open(storage::KvEngine* engine,
                                                               uint64_t from_ts) {
  auto state = std::make_unique<State>();
  state->session = engine->NewSession();
  storage::Session& s = *state->session;
  // The snapshot: everything below is read in this one transaction, never committed.
  HG_RETURN_IF_ERROR(s.Begin());
  std::string oplog_ident;
  {
    HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(catalog::Catalog::kTable));
    while (true) {
      HG_ASSIGN_OR_RETURN(bool any, cursor->Next());
      if (!any) break;
      HG_RETURN_IF_ERROR(bson::ValidateBson(cursor->value()));
      HG_ASSIGN_OR_RETURN(catalog::CollectionEntry e,
                          catalog::CollectionEntry::FromBson(BsonObj(cursor->value().data())));
      if (e.nss.ns() == kOplogNs) oplog_ident = e.ident;
      if (!IsLocal(e.nss)) state->entries.push_back(std::move(e));
    }
  }
  if (oplog_ident.empty()) {
    return Status(ErrorCode::kIllegalOperation, "this server has no oplog to copy from");
  }
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(oplog_ident));
  HG_ASSIGN_OR_RETURN(bool any,
                      cursor->Seek(storage::EncodeRecordId(static_cast<int64_t>(from_ts)), false));
  if (!any) {
    HG_ASSIGN_OR_RETURN(any, cursor->SeekFirst());
  }
  while (any) {
    state->oplog_entries.push_back(BsonObj::CopyOf(cursor->value()));
    HG_ASSIGN_OR_RETURN(any, cursor->Next());
  }
  if (state->oplog_entries.empty()) {
    return Status(ErrorCode::kIllegalOperation, "this server's oplog is empty");
  }
  return std::unique_ptr<SnapshotClone>(new SnapshotClone(std::move(state)));
}

StatusWith<std::optional<BsonObj>> SnapshotClone::Next() {
  State& st = *state_;
  using Phase = State::Phase;
  while (true) {
    switch (st.phase) {
      case Phase::kOplog:
        if (st.index < st.oplog_entries.size()) {
          return std::optional<BsonObj>(
              BsonBuilder().AppendObject("oplog", st.oplog_entries[st.index++]).Obj());
        }
        st.oplog_entries.clear();
        st.phase = Phase::kEntries;
        st.index = 0;
        break;
      case Phase::kEntries:
        if (st.index < st.entries.size()) {
          return std::optional<BsonObj>(
              BsonBuilder().AppendObject("collection", st.entries[st.index++].ToBson()).Obj());
        }
        st.phase = Phase::kDocuments;
        st.index = 0;
        break;
      case Phase::kDocuments: {
        if (st.index >= st.entries.size()) {
          st.cursor.reset();
          st.phase = Phase::kRecords;
          break;
        }
        const catalog::CollectionEntry& e = st.entries[st.index];
        if (e.ident.empty()) {  // a view, a time-series collection's view: no documents
          ++st.index;
          break;
        }
        if (!st.cursor) {
          HG_ASSIGN_OR_RETURN(st.cursor, st.session->OpenCursorOrError(e.ident));
        }
        HG_ASSIGN_OR_RETURN(bool any, st.cursor->Next());
        if (!any) {
          st.cursor.reset();
          ++st.index;
          break;
        }
        BsonBuilder b;
        b.AppendString("ns", e.nss.ns());
        b.AppendObject("d", BsonObj(st.cursor->value().data()));
        return std::optional<BsonObj>(b.Obj());
      }
      case Phase::kRecords: {
        if (!st.cursor) {
          HG_ASSIGN_OR_RETURN(st.cursor,
                              st.session->OpenCursorOrError(catalog::TransactionTable::kTable));
        }
        HG_ASSIGN_OR_RETURN(bool any, st.cursor->Next());
        if (!any) {
          st.cursor.reset();
          st.phase = Phase::kDone;
          break;
        }
        return std::optional<BsonObj>(
            BsonBuilder().AppendObject("txn", BsonObj(st.cursor->value().data())).Obj());
      }
      case Phase::kDone:
        return std::optional<BsonObj>();
    }
  }
}

CloneBuilder::CloneBuilder(catalog::Catalog* catalog, catalog::TransactionTable* transactions,
                           storage::KvEngine* engine)
    : catalog_(catalog), transactions_(transactions), engine_(engine) {}

Status CloneBuilder::Start() {
  for (const std::string& db : catalog_->ListDatabases()) {
    if (db == "local") continue;
    HG_RETURN_IF_ERROR(catalog_->DropDatabase(db));
  }
  return Status::OK();
}

Status CloneBuilder::CreateCollections() {
  created_ = true;
  std::map<std::string, const catalog::CollectionEntry*> by_ns;
  for (const auto& e : entries_) by_ns[e.nss.ns()] = &e;
  // A time-series collection's bucket collection is made with its view.
  std::map<std::string, bool> with_view;
  for (const auto& e : entries_) {
    if (e.type != "timeseries") continue;
    const catalog::NamespaceString buckets{e.nss.db, "system.buckets." + e.nss.coll};
    auto b = by_ns.find(buckets.ns());
    if (b == by_ns.end()) {
      return Status(ErrorCode::kInternalError, "the copied catalog has time-series collection " +
                                                   e.nss.ns() + " without its bucket collection");
    }
    HG_RETURN_IF_ERROR(catalog_->CreateTimeseries(e.nss, e.options, buckets, b->second->options,
                                                  e.uuid, b->second->uuid));
    with_view[buckets.ns()] = true;
  }
  for (const auto& e : entries_) {
    if (e.type == "timeseries" || with_view.contains(e.nss.ns())) continue;
    HG_RETURN_IF_ERROR(catalog_->CreateCollection(e.nss, e.options, e.type, e.uuid).status());
  }
  // Then the indexes the creation did not make (every one but `_id` and a bucket collection's
  // series index), before the documents: they are filled as those are inserted.
  for (const auto& e : entries_) {
    if (e.indexes.empty()) continue;
    std::shared_ptr<catalog::Collection> coll = catalog_->Lookup(e.nss);
    if (!coll) continue;
    std::vector<BsonObj> missing;
    for (const auto& index : e.indexes) {
      const std::string_view name = index.spec["name"].type() == BsonType::kString
                                        ? index.spec["name"].Str()
                                        : std::string_view();
      bool has = false;
      for (const auto& mine : coll->entry().indexes) {
        has = has ||
              (mine.spec["name"].type() == BsonType::kString && mine.spec["name"].Str() == name);
      }
      if (!has) missing.push_back(index.spec);
    }
    if (!missing.empty()) HG_RETURN_IF_ERROR(catalog_->CreateIndexes(e.nss, missing));
  }
  return Status::OK();
}

Status CloneBuilder::Add(const std::vector<BsonObj>& pieces) {
  auto session = engine_->NewSession();
  storage::Session& s = *session;
  size_t i = 0;
  // The catalog's entries come first: they are gathered, then made before the first document.
  for (; i < pieces.size(); ++i) {
    const BsonObj& p = pieces[i];
    if (p["oplog"].type() == BsonType::kObject) {
      oplog_entries_.push_back(p["oplog"].Obj().Owned());
    } else if (p["collection"].type() == BsonType::kObject && !created_) {
      HG_ASSIGN_OR_RETURN(catalog::CollectionEntry e,
                          catalog::CollectionEntry::FromBson(p["collection"].Obj()));
      entries_.push_back(std::move(e));
    } else {
      break;
    }
  }
  if (i == pieces.size()) return Status::OK();
  if (!created_) HG_RETURN_IF_ERROR(CreateCollections());
  // The rest in one transaction per batch.
  return storage::RetryOnWriteConflict([&]() -> Status {
    storage::WriteUnit wu(s);
    HG_RETURN_IF_ERROR(wu.begin_status());
    struct Counts {
      std::shared_ptr<catalog::Collection> coll;
      int64_t records = 0;
      int64_t bytes = 0;
    };
    std::map<const catalog::Collection*, Counts> counts;  // what each collection gained
    std::shared_ptr<catalog::Collection> coll;
    int64_t added = 0;
    for (size_t k = i; k < pieces.size(); ++k) {
      const BsonObj& p = pieces[k];
      if (p["txn"].type() == BsonType::kObject) {
        if (transactions_ != nullptr) {
          HG_RETURN_IF_ERROR(transactions_->ApplyRecord(s, p["txn"].Obj()));
        }
        continue;
      }
      if (p["ns"].type() != BsonType::kString || p["d"].type() != BsonType::kObject) {
        return Status(ErrorCode::kInternalError,
                      "a piece of the copy that is not one: " + p.ToJson());
      }
      const std::string_view ns = p["ns"].Str();
      if (!coll || coll->nss().ns() != ns) {
        HG_ASSIGN_OR_RETURN(catalog::NamespaceString nss, catalog::ParseNamespace(ns));
        coll = catalog_->Lookup(nss);
        if (!coll || coll->IsView()) {
          return Status(ErrorCode::kNamespaceNotFound,
                        "the copy has documents of " + std::string(ns) + " but no collection");
        }
      }
      const BsonObj doc = p["d"].Obj();
      HG_RETURN_IF_ERROR(coll->Insert(s, doc).status());
      Counts& c = counts[coll.get()];
      c.coll = coll;
      ++c.records;
      c.bytes += static_cast<int64_t>(doc.bytes().size());
      ++added;
    }
    for (const auto& [key, c] : counts) {
      s.OnCommit([c] { c.coll->AdjustCounts(c.records, c.bytes); });
    }
    s.OnCommit([this, added] { documents_ += added; });
    return wu.Commit();
  });
}

StatusWith<std::vector<BsonObj>> CloneBuilder::Finish() {
  if (oplog_entries_.empty()) {
    return Status(ErrorCode::kOplogStartMissing, "the copy did not say where it stands");
  }
  if (!created_) HG_RETURN_IF_ERROR(CreateCollections());
  return oplog_entries_;
}

}  // namespace hourglass::repl
