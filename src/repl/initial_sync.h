// Initial sync: how a new or wiped replica set member gets the set's data when Raft hands it a
// snapshot (the log before it compacted away), as a mongod's initial sync does. The source (the
// primary) reads everything in one storage snapshot, so the copy stands at exactly one point of
// the oplog — the newest entry that snapshot holds — and the member then applies the entries
// after it (catch-up). A logical copy: collections are created with the source's uuids, options
// and indexes, and their documents inserted (buckets as they are); the `local` database (each
// member's own) is not copied. docs/replication.md ("Initial sync") has the design.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/catalog.h"
#include "catalog/transaction_table.h"
#include "storage/kv_engine.h"

namespace hourglass::repl {

// The source's side: the pieces of the copy, read in one snapshot, in this order: the oplog
// entries from the newest at or before `from_ts` to the newest of all, each {oplog: <entry>}
// (the member holds them after the copy: the Raft entries after its snapshot that the copy
// already holds are then known as held); one {collection: <catalog entry>} per collection, view
// and time-series collection; {ns, d: <document>} per document; {txn: <retryable-write record>}
// per record. Holds its snapshot (a storage transaction) until destroyed. Not thread-safe (one
// getMore at a time uses it).
class SnapshotClone {
 public:
  // IllegalOperation (20) when the oplog is empty (not a replica set member's data).
  static StatusWith<std::unique_ptr<SnapshotClone>> Open(storage::KvEngine* engine,
                                                         uint64_t from_ts);
  ~SnapshotClone();

  // The next piece; nullopt after the last.
  StatusWith<std::optional<bson::BsonObj>> Next();

 private:
  struct State;
  explicit SnapshotClone(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The member's side: builds the copy from the pieces a SnapshotClone gives, in order. The caller
// runs it unlogged (Oplog::UnloggedScope). Start() first drops every database but `local`, so
// a copy that failed half-way is started again from nothing.
class CloneBuilder {
 public:
  CloneBuilder(catalog::Catalog* catalog, catalog::TransactionTable* transactions,
               storage::KvEngine* engine);

  Status Start();
  Status Add(const std::vector<bson::BsonObj>& pieces);
  // The oplog entries the copy came with, oldest first (the newest is where the copy stands),
  // once every piece was added. OplogStartMissing (120) when there were none.
  StatusWith<std::vector<bson::BsonObj>> Finish();

  int64_t documents() const { return documents_; }

 private:
  // Creates the collections of the catalog entries gathered so far, with their indexes.
  Status CreateCollections();

  catalog::Catalog* catalog_;
  catalog::TransactionTable* transactions_;
  storage::KvEngine* engine_;
  std::vector<bson::BsonObj> oplog_entries_;
  std::vector<catalog::CollectionEntry> entries_;
  bool created_ = false;
  int64_t documents_ = 0;
};

}  // namespace hourglass::repl
