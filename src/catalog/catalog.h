// The Catalog: every database's collections, views and indexes, kept durably in the WiredTiger
// table "_catalog" (namespace → CollectionEntry BSON, index specs included) and cached in memory;
// which indexes are multikey is kept in "_index_multikey" (collection.h). Databases exist
// implicitly while they hold a collection.
//
// Thread-safety: all methods are thread-safe. Lookups take a shared lock and return a
// shared_ptr<Collection> that stays valid after a concurrent drop (its tables may then fail with
// NamespaceNotFound). DDL operations are serialized by one mutex and are atomic on disk.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/collection.h"
#include "catalog/namespace.h"
#include "storage/kv_engine.h"

namespace hourglass::catalog {

class Catalog {
 public:
  // The table of catalog entries (namespace → CollectionEntry BSON).
  static constexpr std::string_view kTable = "_catalog";

  // Loads the catalog, creating its table on a new dbpath, and recomputes collection counts.
  static StatusWith<std::unique_ptr<Catalog>> Open(storage::KvEngine* engine);

  // nullptr if the namespace does not exist.
  std::shared_ptr<Collection> Lookup(const NamespaceString& nss) const;

  // Creates a collection (type "collection", with its `_id` index) or, for type "view"/
  // "timeseries", a catalog entry without tables. NamespaceExists (48) if the namespace exists.
  // `uuid` (16 bytes): the new entry's, when given (a replica set member applying the log).
  StatusWith<std::shared_ptr<Collection>> CreateCollection(const NamespaceString& nss,
                                                           const bson::BsonObj& options,
                                                           std::string type = "collection",
                                                           const std::string& uuid = "");
  // Creates a time-series collection in one transaction: the entry `view` (type "timeseries", no
  // tables) and the clustered bucket collection `buckets` (`buckets_options` must hold
  // `clusteredIndex: true`). NamespaceExists (48) if either exists.
  Status CreateTimeseries(const NamespaceString& view, const bson::BsonObj& view_options,
                          const NamespaceString& buckets, const bson::BsonObj& buckets_options,
                          const std::string& view_uuid = "", const std::string& buckets_uuid = "");
  // Replaces the options of existing entries in one transaction (collMod). NamespaceNotFound if
  // one is missing.
  Status SetOptions(const std::vector<std::pair<NamespaceString, bson::BsonObj>>& updates);

  // Builds secondary indexes on the regular collection `nss` from complete, validated specs
  // ({v, key, name, ...options}): creates their tables, makes writes maintain them, fills them
  // from the existing documents in short transactions, then records them in the catalog. If the
  // build fails (DuplicateKey for a unique index, 171, 16766) no trace of the new indexes is
  // left. NamespaceNotFound if the collection does not exist. Blocks other DDL while it runs.
  Status CreateIndexes(const NamespaceString& nss, const std::vector<bson::BsonObj>& specs);
  // Drops the named secondary indexes (callers check names and `_id_`).
  Status DropIndexes(const NamespaceString& nss, const std::vector<std::string>& names);
  // Replaces the stored specs of existing indexes, matched by name (collMod hidden/TTL changes).
  Status ReplaceIndexSpecs(const NamespaceString& nss, const std::vector<bson::BsonObj>& specs);

  // Looks the collection up, creating it with default options if it does not exist (implicit
  // creation by inserts, updates with upsert, ...).
  StatusWith<std::shared_ptr<Collection>> GetOrCreateCollection(const NamespaceString& nss);

  // NamespaceNotFound (26) if absent.
  Status DropCollection(const NamespaceString& nss);
  Status DropDatabase(const std::string& db);
  // Moves `from` to `to`. NamespaceNotFound if `from` is missing; NamespaceExists if `to` exists
  // and !drop_target.
  Status RenameCollection(const NamespaceString& from, const NamespaceString& to, bool drop_target);

  // Collections (and views) of `db`, sorted by name.
  std::vector<std::shared_ptr<Collection>> ListCollections(const std::string& db) const;
  // Names of databases that have at least one collection, sorted.
  std::vector<std::string> ListDatabases() const;

  storage::KvEngine* engine() const { return engine_; }

 private:
  explicit Catalog(storage::KvEngine* engine) : engine_(engine) {}
  // Writes `e` to the catalog table in one transaction, with what `log` adds to it (the
  // OpObserver's entry for the change).
  using LogFn = std::function<Status(storage::Session&)>;
  Status PersistEntry(const CollectionEntry& e, const LogFn& log = {});
  // A new entry's tables: the record table, and the `_id` index unless clustered.
  StatusWith<CollectionEntry> NewCollectionEntry(const NamespaceString& nss,
                                                 const bson::BsonObj& options);
  // Drops the record and index tables of an entry already removed from the catalog.
  Status DropTables(const CollectionEntry& e);
  std::string NewIdent(std::string_view kind);
  // Replaces `cur` in the map by a Collection with entry `e` sharing its counters.
  std::shared_ptr<Collection> Install(const Collection& cur, CollectionEntry e);
  // Removes an index's row from the multikey table (best effort: a leftover row is harmless).
  void ForgetMultikey(const std::string& ident);
  // Fills the not-ready indexes of `coll` from its documents.
  Status BuildIndexes(const Collection& coll);

  storage::KvEngine* engine_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<Collection>> collections_;  // by "db.coll"; guarded by mu_
  std::mutex ddl_mu_;  // serializes DDL; taken before mu_
};

}  // namespace hourglass::catalog
