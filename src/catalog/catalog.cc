#include "catalog/catalog.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>

#include "base/interrupt.h"
#include "base/uuid.h"
#include "catalog/op_observer.h"
#include "catalog/record_store.h"
#include "storage/write_conflict.h"

namespace hourglass::catalog {

using bson::BsonBuilder;
using bson::BsonObj;

namespace {
constexpr std::string_view kCatalogTable = Catalog::kTable;

std::string RandomBytes(size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>(rng());
  return out;
}

// (count, bytes) of `coll`'s records, and the RecordId after its last.
Status ScanRecords(storage::KvEngine* engine, const Collection& coll, int64_t* next_id,
                   int64_t* count, int64_t* bytes) {
  auto session = engine->NewSession();
  HG_ASSIGN_OR_RETURN(auto cursor, RecordCursor::Open(*session, coll));
  *next_id = 1;
  *count = 0;
  *bytes = 0;
  HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
  while (more) {
    ++*count;
    *bytes += static_cast<int64_t>(cursor.data().size());
    *next_id = cursor.id() + 1;
    HG_ASSIGN_OR_RETURN(more, cursor.Next());
  }
  return Status::OK();
}
}  // namespace

StatusWith<std::unique_ptr<Catalog>> Catalog::Open(storage::KvEngine* engine) {
  std::unique_ptr<Catalog> cat(new Catalog(engine));
  HG_RETURN_IF_ERROR(engine->CreateTable(kCatalogTable));
  HG_RETURN_IF_ERROR(engine->CreateTable(kMultikeyTable));
  std::vector<CollectionEntry> entries;
  std::set<std::string> multikey;
  std::map<std::string, std::vector<std::string>> wildcard_paths;
  {
    auto session = engine->NewSession();
    HG_ASSIGN_OR_RETURN(auto mk, session->OpenCursorOrError(kMultikeyTable));
    HG_ASSIGN_OR_RETURN(bool more_mk, mk->SeekFirst());
    while (more_mk) {
      std::string key(mk->key());
      // "<ident>" rows mark multikey indexes, "<ident>/<path>" rows a wildcard index's paths.
      size_t slash = key.find('/');
      if (slash == std::string::npos) {
        multikey.insert(key);
      } else {
        wildcard_paths[key.substr(0, slash)].push_back(key.substr(slash + 1));
      }
      HG_ASSIGN_OR_RETURN(more_mk, mk->Next());
    }
  }
  {
    auto session = engine->NewSession();
    HG_ASSIGN_OR_RETURN(auto cursor, session->OpenCursorOrError(kCatalogTable));
    HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
    while (more) {
      std::string_view v = cursor->value();
      HG_RETURN_IF_ERROR(bson::ValidateBson(v).WithContext("corrupt catalog entry: "));
      HG_ASSIGN_OR_RETURN(auto e, CollectionEntry::FromBson(BsonObj::CopyOf(v)));
      entries.push_back(std::move(e));
      HG_ASSIGN_OR_RETURN(more, cursor->Next());
    }
  }
  for (auto& e : entries) {
    for (auto& idx : e.indexes) {
      if (multikey.count(idx.ident)) idx.multikey->store(true);
      for (const auto& path : wildcard_paths[idx.ident]) idx.multikey_paths->Confirm(path);
    }
    std::string key = e.nss.ns();
    auto coll = std::make_shared<Collection>(engine, std::move(e), 1);
    if (!coll->ident().empty()) {
      // Read through a first handle; the one installed continues the RecordIds after the last.
      int64_t next_id = 1, count = 0, bytes = 0;
      HG_RETURN_IF_ERROR(ScanRecords(engine, *coll, &next_id, &count, &bytes));
      coll = std::make_shared<Collection>(engine, coll->entry(), next_id);
      coll->SetCounts(count, bytes);
    }
    cat->collections_[key] = std::move(coll);
  }
  return cat;
}

std::string Catalog::NewIdent(std::string_view kind) {
  return std::string(kind) + "-" + bson::LowerHex(RandomBytes(8));
}

std::shared_ptr<Collection> Catalog::Lookup(const NamespaceString& nss) const {
  std::shared_lock lk(mu_);
  auto it = collections_.find(nss.ns());
  return it == collections_.end() ? nullptr : it->second;
}

namespace {

// Reports a catalog change of `db` to the OpObserver inside the transaction `s` that makes it.
Status LogCommand(storage::Session& s, const std::string& db, const std::string& uuid,
                  const BsonObj& o, const BsonObj& o2 = BsonObj()) {
  OpObserver* op = OpObserverFor(db);
  return op ? op->OnCommand(s, db, uuid, o, o2) : Status::OK();
}

// {<command>: <collection name>} followed by the fields of `rest`.
BsonObj CommandOn(std::string_view command, const std::string& coll, const BsonObj& rest) {
  BsonBuilder b;
  b.AppendString(command, coll);
  b.AppendElementsOf(rest);
  return b.Obj();
}

// The WiredTiger configuration of a collection's record table: its
// storageEngine.wiredTiger.configString, else for a time-series bucket collection zstd block
// compression (MongoDB's default for buckets since 5.0, whatever the server-wide compressor).
// Options of other storage engines are accepted and unused, as mongod keeps them.
StatusWith<std::string> RecordTableConfig(const NamespaceString& nss, const BsonObj& options) {
  bson::BsonElement engines = options["storageEngine"];
  if (engines.type() == bson::BsonType::kObject) {
    bson::BsonElement wt = engines.Obj()["wiredTiger"];
    if (!wt.eoo()) {
      if (wt.type() != bson::BsonType::kObject) {
        return Status(ErrorCode::kBadValue,
                      "'storageEngine.wiredTiger' has to be an embedded document");
      }
      std::optional<std::string> config;
      for (bson::BsonElement f : wt.Obj()) {
        if (f.FieldName() != "configString") {
          return Status(ErrorCode::kBadValue, "unknown field 'storageEngine.wiredTiger." +
                                                  std::string(f.FieldName()) +
                                                  "': only configString is supported");
        }
        if (f.type() != bson::BsonType::kString) {
          return Status(ErrorCode::kTypeMismatch,
                        "'storageEngine.wiredTiger.configString' must be a string");
        }
        config = std::string(f.Str());
      }
      if (config) return *config;
    }
  }
  if (nss.IsTimeseriesBuckets()) return std::string("block_compressor=zstd");
  return std::string();
}

}  // namespace

StatusWith<CollectionEntry> Catalog::NewCollectionEntry(const NamespaceString& nss,
                                                        const BsonObj& options) {
  CollectionEntry e;
  e.nss = nss;
  e.uuid = NewUuid();
  e.type = "collection";
  e.options = options.Owned();
  e.ident = NewIdent("collection");
  HG_ASSIGN_OR_RETURN(std::string table_config, RecordTableConfig(nss, options));
  HG_RETURN_IF_ERROR(engine_->CreateTable(e.ident, table_config));
  bson::BsonElement clustered = options["clusteredIndex"];
  if (clustered.type() == bson::BsonType::kBool && clustered.Bool()) {
    // A time-series bucket collection with a metaField gets its series index (spec 2.1), listed
    // as MongoDB lists it, {meta: 1, control.min.<time>: 1, control.max.<time>: 1}, and named as
    // MongoDB names the user-facing {M: 1, T: 1}. Its entries key the meta and the start alone
    // (collection.h): control.max.<time> changes with every append.
    BsonObj ts = options["timeseries"].type() == bson::BsonType::kObject
                     ? options["timeseries"].Obj()
                     : BsonObj();
    if (nss.IsTimeseriesBuckets() && ts["metaField"].type() == bson::BsonType::kString &&
        ts["timeField"].type() == bson::BsonType::kString) {
      std::string m(ts["metaField"].Str()), t(ts["timeField"].Str());
      BsonBuilder spec;
      spec.AppendInt32("v", 2);
      size_t k = spec.OpenObject("key");
      spec.AppendInt32("meta", 1);
      spec.AppendInt32("control.min." + t, 1);
      spec.AppendInt32("control.max." + t, 1);
      spec.Close(k);
      spec.AppendString("name", m + "_1_" + t + "_1");
      // Listed with the collection's collation, as MongoDB's is; its keys hold metas by their
      // bytes whatever it is (reads test metas under theirs: exec/timeseries_scan.h).
      if (BsonObj c = CollationOption(options); !c.IsEmpty()) spec.AppendObject("collation", c);
      IndexEntry idx{spec.Obj(), NewIdent("index")};
      idx.series = true;
      HG_RETURN_IF_ERROR(engine_->CreateTable(idx.ident));
      e.indexes.push_back(std::move(idx));
    }
    return e;
  }
  // The oplog is keyed by its entries' timestamps and has no `_id` index, as MongoDB's.
  if (nss.db == "local" && nss.coll == "oplog.rs") return e;
  BsonBuilder spec;
  spec.AppendInt32("v", 2);
  size_t k = spec.OpenObject("key");
  spec.AppendInt32("_id", 1);
  spec.Close(k);
  spec.AppendString("name", "_id_");
  // The `_id` index takes the collection's default collation, as in MongoDB.
  if (BsonObj c = CollationOption(options); !c.IsEmpty()) spec.AppendObject("collation", c);
  IndexEntry idx{spec.Obj(), NewIdent("index")};
  HG_RETURN_IF_ERROR(engine_->CreateTable(idx.ident));
  e.indexes.push_back(std::move(idx));
  return e;
}

StatusWith<std::shared_ptr<Collection>> Catalog::CreateCollection(const NamespaceString& nss,
                                                                  const BsonObj& options,
                                                                  std::string type,
                                                                  const std::string& uuid) {
  HG_RETURN_IF_ERROR(ValidateCollectionName(nss));
  std::lock_guard ddl(ddl_mu_);
  if (Lookup(nss)) {
    return Status(ErrorCode::kNamespaceExists, "Collection " + nss.ns() + " already exists.");
  }
  CollectionEntry e;
  if (type == "collection") {
    HG_ASSIGN_OR_RETURN(e, NewCollectionEntry(nss, options));
  } else {
    e.nss = nss;
    e.uuid = NewUuid();
    e.type = type;
    e.options = options.Owned();
  }
  if (!uuid.empty()) e.uuid = uuid;
  Status st = PersistEntry(e, [&](storage::Session& s) {
    return LogCommand(
        s, nss.db, e.uuid, CommandOn("create", nss.coll, options),
        type == "collection" ? BsonObj() : BsonBuilder().AppendString("type", type).Obj());
  });
  if (!st.ok()) {
    (void)DropTables(e);
    return st;
  }
  auto coll = std::make_shared<Collection>(engine_, std::move(e), 1);
  std::unique_lock lk(mu_);
  collections_[nss.ns()] = coll;
  return coll;
}

Status Catalog::CreateTimeseries(const NamespaceString& view, const BsonObj& view_options,
                                 const NamespaceString& buckets, const BsonObj& buckets_options,
                                 const std::string& view_uuid, const std::string& buckets_uuid) {
  HG_RETURN_IF_ERROR(ValidateCollectionName(view));
  HG_RETURN_IF_ERROR(ValidateCollectionName(buckets));
  std::lock_guard ddl(ddl_mu_);
  for (const auto* nss : {&view, &buckets}) {
    if (Lookup(*nss)) {
      return Status(ErrorCode::kNamespaceExists, "Collection " + nss->ns() + " already exists.");
    }
  }
  CollectionEntry v;
  v.nss = view;
  v.uuid = view_uuid.empty() ? NewUuid() : view_uuid;
  v.type = "timeseries";
  v.options = view_options.Owned();
  HG_ASSIGN_OR_RETURN(CollectionEntry b, NewCollectionEntry(buckets, buckets_options));
  if (!buckets_uuid.empty()) b.uuid = buckets_uuid;
  BsonObj vo = v.ToBson(), bo = b.ToBson();
  // One entry for both, as they are made in one transaction: the view's create, with the
  // bucket collection's options and uuid beside it.
  BsonBuilder o2;
  o2.AppendObject("bucketsOptions", buckets_options);
  o2.AppendBinData("bucketsUuid", 4, b.uuid);
  BsonObj details = o2.Obj();
  Status st = storage::RetryOnWriteConflict([&] {
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_RETURN_IF_ERROR(session->Put(kCatalogTable, view.ns(), vo.bytes()));
    HG_RETURN_IF_ERROR(session->Put(kCatalogTable, buckets.ns(), bo.bytes()));
    HG_RETURN_IF_ERROR(LogCommand(*session, view.db, v.uuid,
                                  CommandOn("create", view.coll, view_options), details));
    return wu.Commit();
  });
  if (!st.ok()) {
    (void)DropTables(b);
    return st;
  }
  std::unique_lock lk(mu_);
  collections_[view.ns()] = std::make_shared<Collection>(engine_, std::move(v), 1);
  collections_[buckets.ns()] = std::make_shared<Collection>(engine_, std::move(b), 1);
  return Status::OK();
}

Status Catalog::SetOptions(const std::vector<std::pair<NamespaceString, BsonObj>>& updates) {
  std::lock_guard ddl(ddl_mu_);
  std::vector<std::shared_ptr<Collection>> replaced;
  for (const auto& [nss, options] : updates) {
    auto cur = Lookup(nss);
    if (!cur) return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
    CollectionEntry e = cur->entry();
    e.options = options.Owned();
    // The new handle shares the RecordId allocator and counters with the old one.
    replaced.push_back(std::make_shared<Collection>(std::move(e), *cur));
  }
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    for (const auto& c : replaced) {
      BsonObj obj = c->entry().ToBson();
      HG_RETURN_IF_ERROR(session->Put(kCatalogTable, c->ns(), obj.bytes()));
      HG_RETURN_IF_ERROR(LogCommand(
          *session, c->nss().db, c->entry().uuid, CommandOn("collMod", c->nss().coll, BsonObj()),
          BsonBuilder().AppendObject("options", c->entry().options).Obj()));
    }
    return wu.Commit();
  }));
  {
    std::unique_lock lk(mu_);
    for (const auto& c : replaced) collections_[c->ns()] = c;
  }
  for (const auto& c : replaced) Collection::InstallAsLatest(c);
  return Status::OK();
}

std::shared_ptr<Collection> Catalog::Install(const Collection& cur, CollectionEntry e) {
  auto next = std::make_shared<Collection>(std::move(e), cur);
  {
    std::unique_lock lk(mu_);
    collections_[next->ns()] = next;
  }
  Collection::InstallAsLatest(next);
  return next;
}

Status Catalog::PersistEntry(const CollectionEntry& e, const LogFn& log) {
  BsonObj obj = e.ToBson();
  return storage::RetryOnWriteConflict([&] {
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_RETURN_IF_ERROR(session->Put(kCatalogTable, e.nss.ns(), obj.bytes()));
    if (log) HG_RETURN_IF_ERROR(log(*session));
    return wu.Commit();
  });
}

Status Catalog::BuildIndexes(const Collection& coll) {
  std::vector<const SecondaryIndex*> building;
  for (const auto& idx : coll.Indexes()) {
    if (!idx.entry->ready) building.push_back(&idx);
  }
  // Short transactions of a few hundred documents: writes running meanwhile maintain the new
  // indexes themselves (adding a key twice is harmless), and no transaction grows large.
  constexpr int kChunkDocs = 500;
  // Records inserted from now on are indexed by their writers (every write maintains the newest
  // handle's indexes): the scan stops where the RecordIds stand now instead of chasing them.
  // A clustered collection's RecordIds come from its `_id`s, not from the allocator: it is read
  // to its end (a record inserted meanwhile may be indexed twice, which is harmless).
  RecordRange range;
  if (!coll.IsClustered()) range.hi = coll.NextRecordId() - 1;
  std::optional<int64_t> last_id;
  bool more = true;
  while (more) {
    // A build stopped (killOp, createIndexes' maxTimeMS) leaves no index: the caller drops it.
    HG_RETURN_IF_ERROR(CheckForInterrupt());
    std::optional<int64_t> chunk_last;
    bool chunk_more = false;
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
      auto session = engine_->NewSession();
      storage::WriteUnit wu(*session);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_ASSIGN_OR_RETURN(auto cursor, RecordCursor::Open(*session, coll, range));
      if (last_id) cursor.ResumeAfter(*last_id);
      HG_ASSIGN_OR_RETURN(bool m, cursor.Next());
      int n = 0;
      while (m && n < kChunkDocs) {
        const int64_t rid = cursor.id();
        chunk_last = rid;
        BsonObj doc = BsonObj::CopyOf(cursor.data());
        for (const SecondaryIndex* idx : building) {
          HG_RETURN_IF_ERROR(coll.AddIndexKeys(*session, *idx, doc, rid));
        }
        HG_RETURN_IF_ERROR(coll.RewriteForIndexBuild(*session, rid, doc));
        ++n;
        HG_ASSIGN_OR_RETURN(m, cursor.Next());
      }
      chunk_more = m;
      return wu.Commit();
    }));
    if (chunk_last) last_id = chunk_last;
    more = chunk_more;
  }
  return Status::OK();
}

Status Catalog::CreateIndexes(const NamespaceString& nss, const std::vector<BsonObj>& specs) {
  std::lock_guard ddl(ddl_mu_);
  auto cur = Lookup(nss);
  if (!cur || cur->IsView()) {
    return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
  }
  CollectionEntry e = cur->entry();
  const size_t first_new = e.indexes.size();
  std::vector<std::string> idents;
  for (const BsonObj& spec : specs) {
    // A concurrent createIndexes may have built it since the caller looked.
    bool exists = false;
    for (const auto& idx : e.indexes) {
      if (idx.name() != spec["name"].Str()) continue;
      if (!SameKeyPattern(idx.key(), spec["key"].Obj())) {
        for (const auto& id : idents) (void)engine_->DropTable(id);
        return Status(
            ErrorCode::kIndexKeySpecsConflict,
            "An existing index has the same name as the requested index: " + idx.spec.ToJson());
      }
      exists = true;
    }
    if (exists) continue;
    IndexEntry idx{spec.Owned(), NewIdent("index")};
    idx.ready = false;
    Status st = engine_->CreateTable(idx.ident);
    if (!st.ok()) {
      for (const auto& id : idents) (void)engine_->DropTable(id);
      return st;
    }
    idents.push_back(idx.ident);
    e.indexes.push_back(std::move(idx));
  }
  auto building = Install(*cur, e);
  Status st = BuildIndexes(*building);
  if (st.ok()) {
    for (size_t i = first_new; i < e.indexes.size(); ++i) e.indexes[i].ready = true;
    st = PersistEntry(e, [&](storage::Session& s) {
      for (size_t i = first_new; i < e.indexes.size(); ++i) {
        HG_RETURN_IF_ERROR(
            LogCommand(s, nss.db, e.uuid, CommandOn("createIndexes", nss.coll, e.indexes[i].spec)));
      }
      return Status::OK();
    });
  }
  if (!st.ok()) {
    e.indexes.resize(first_new);
    Install(*building, std::move(e));
    for (const auto& id : idents) (void)engine_->DropTable(id);
    return st;
  }
  Install(*building, std::move(e));
  return Status::OK();
}

Status Catalog::DropIndexes(const NamespaceString& nss, const std::vector<std::string>& names) {
  std::lock_guard ddl(ddl_mu_);
  auto cur = Lookup(nss);
  if (!cur) return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
  CollectionEntry e = cur->entry();
  std::vector<std::string> dropped;
  std::vector<BsonObj> dropped_specs;
  std::erase_if(e.indexes, [&](const IndexEntry& idx) {
    bool drop = std::find(names.begin(), names.end(), idx.name()) != names.end();
    if (drop) {
      dropped.push_back(idx.ident);
      dropped_specs.push_back(idx.spec);
    }
    return drop;
  });
  HG_RETURN_IF_ERROR(PersistEntry(e, [&](storage::Session& s) {
    for (const BsonObj& spec : dropped_specs) {
      BsonBuilder o;
      o.AppendString("dropIndexes", nss.coll);
      o.AppendString("index", spec["name"].Str());
      HG_RETURN_IF_ERROR(LogCommand(s, nss.db, e.uuid, o.Obj(), spec));
    }
    return Status::OK();
  }));
  Install(*cur, std::move(e));
  for (const auto& ident : dropped) {
    HG_RETURN_IF_ERROR(engine_->DropTable(ident));
    ForgetMultikey(ident);
  }
  return Status::OK();
}

Status Catalog::ReplaceIndexSpecs(const NamespaceString& nss, const std::vector<BsonObj>& specs) {
  std::lock_guard ddl(ddl_mu_);
  auto cur = Lookup(nss);
  if (!cur) return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
  CollectionEntry e = cur->entry();
  for (const BsonObj& spec : specs) {
    for (auto& idx : e.indexes) {
      if (idx.name() == spec["name"].Str()) idx.spec = spec.Owned();
    }
  }
  HG_RETURN_IF_ERROR(PersistEntry(e, [&](storage::Session& s) {
    bson::BsonArrayBuilder list;
    for (const BsonObj& spec : specs) list.AppendObject(spec);
    return LogCommand(s, nss.db, e.uuid, CommandOn("collMod", nss.coll, BsonObj()),
                      BsonBuilder().AppendArray("indexSpecs", list.Obj()).Obj());
  }));
  Install(*cur, std::move(e));
  return Status::OK();
}

StatusWith<std::shared_ptr<Collection>> Catalog::GetOrCreateCollection(const NamespaceString& nss) {
  if (auto c = Lookup(nss)) return c;
  auto created = CreateCollection(nss, BsonObj());
  if (created.status().code() == ErrorCode::kNamespaceExists) {
    if (auto c = Lookup(nss)) return c;
  }
  return created;
}

Status Catalog::DropTables(const CollectionEntry& e) {
  if (!e.ident.empty()) HG_RETURN_IF_ERROR(engine_->DropTable(e.ident));
  for (const auto& idx : e.indexes) {
    HG_RETURN_IF_ERROR(engine_->DropTable(idx.ident));
    if (idx.multikey->load()) ForgetMultikey(idx.ident);
  }
  return Status::OK();
}

void Catalog::ForgetMultikey(const std::string& ident) {
  (void)storage::RetryOnWriteConflict([&] {
    auto session = engine_->NewSession();
    Status st = session->Remove(kMultikeyTable, ident);
    if (!st.ok() && st.code() != ErrorCode::kNoSuchKey) return st;
    // A wildcard index's path rows: "<ident>/<path>".
    std::vector<std::string> rows;
    {
      const std::string prefix = ident + "/";
      HG_ASSIGN_OR_RETURN(auto cursor, session->OpenCursorOrError(kMultikeyTable));
      HG_ASSIGN_OR_RETURN(bool more, cursor->Seek(prefix));
      while (more && cursor->key().starts_with(prefix)) {
        rows.emplace_back(cursor->key());
        HG_ASSIGN_OR_RETURN(more, cursor->Next());
      }
    }
    for (const auto& row : rows) {
      st = session->Remove(kMultikeyTable, row);
      if (!st.ok() && st.code() != ErrorCode::kNoSuchKey) return st;
    }
    return Status::OK();
  });
}

Status Catalog::DropCollection(const NamespaceString& nss) {
  std::lock_guard ddl(ddl_mu_);
  auto coll = Lookup(nss);
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "ns not found");
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_RETURN_IF_ERROR(session->Remove(kCatalogTable, nss.ns()));
    HG_RETURN_IF_ERROR(
        LogCommand(*session, nss.db, coll->entry().uuid, CommandOn("drop", nss.coll, BsonObj())));
    return wu.Commit();
  }));
  {
    std::unique_lock lk(mu_);
    collections_.erase(nss.ns());
  }
  return DropTables(coll->entry());
}

Status Catalog::DropDatabase(const std::string& db) {
  for (const auto& c : ListCollections(db)) {
    Status st = DropCollection(c->nss());
    if (!st.ok() && st.code() != ErrorCode::kNamespaceNotFound) return st;
  }
  return Status::OK();
}

Status Catalog::RenameCollection(const NamespaceString& from, const NamespaceString& to,
                                 bool drop_target) {
  HG_RETURN_IF_ERROR(ValidateCollectionName(to));
  std::lock_guard ddl(ddl_mu_);
  auto src = Lookup(from);
  if (!src) {
    return Status(ErrorCode::kNamespaceNotFound,
                  "Source collection " + from.ns() + " does not exist");
  }
  auto target = Lookup(to);
  if (target && !drop_target) return Status(ErrorCode::kNamespaceExists, "target namespace exists");
  CollectionEntry e = src->entry();
  e.nss = to;
  BsonObj obj = e.ToBson();
  // One transaction moves the entry and, with dropTarget, replaces the target's entry, so no
  // reader or crash ever sees both or neither.
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_RETURN_IF_ERROR(session->Remove(kCatalogTable, from.ns()));
    HG_RETURN_IF_ERROR(session->Put(kCatalogTable, to.ns(), obj.bytes()));
    BsonBuilder o;
    o.AppendString("renameCollection", from.ns());
    o.AppendString("to", to.ns());
    o.AppendBool("dropTarget", drop_target);
    HG_RETURN_IF_ERROR(LogCommand(*session, from.db, e.uuid, o.Obj()));
    return wu.Commit();
  }));
  auto moved = std::make_shared<Collection>(engine_, std::move(e), src->NextRecordId());
  moved->SetCounts(src->NumRecords(), src->DataSize());
  {
    std::unique_lock lk(mu_);
    collections_.erase(from.ns());
    collections_[to.ns()] = std::move(moved);
  }
  return target ? DropTables(target->entry()) : Status::OK();
}

std::vector<std::shared_ptr<Collection>> Catalog::ListCollections(const std::string& db) const {
  std::shared_lock lk(mu_);
  std::vector<std::shared_ptr<Collection>> out;
  std::string prefix = db + ".";
  for (auto it = collections_.lower_bound(prefix);
       it != collections_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    out.push_back(it->second);
  }
  return out;
}

std::vector<std::string> Catalog::ListDatabases() const {
  std::shared_lock lk(mu_);
  std::vector<std::string> out;
  for (const auto& [ns, c] : collections_) {
    if (out.empty() || out.back() != c->nss().db) out.push_back(c->nss().db);
  }
  return out;
}

}  // namespace hourglass::catalog
