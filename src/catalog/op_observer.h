// OpObserver: what replication (repl/oplog_writer.h) is told of every change to the data — each
// record a collection's write functions insert, change or remove, and each catalog change (DDL)
// — inside the transaction that makes it, so that the change and its log entry commit together.
// One per process, installed before the first write (SetOpObserver) and removed after the last;
// without one, writes are not reported. Writes to the `local` database are never reported: it is
// each member's own (MongoDB's rule).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/session.h"

namespace hourglass::catalog {

class Collection;

class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // `doc`: the record as inserted.
  virtual Status OnInsert(storage::Session& s, const Collection& coll,
                          const bson::BsonObj& doc) = 0;
  // `doc`: the whole record after the change (its `_id` unchanged); `before`: the record before
  // it, when the writer has it (null otherwise).
  virtual Status OnUpdate(storage::Session& s, const Collection& coll, const bson::BsonObj& doc,
                          const bson::BsonObj* before) = 0;
  // `diff`: an update of the record whose `_id` is `id`, as an update diff (catalog/update_diff.h;
  // the bucket catalog's appends and rewrites, which have no document before at hand).
  virtual Status OnUpdateDiff(storage::Session& s, const Collection& coll,
                              const bson::BsonElement& id, const bson::BsonObj& diff) = 0;
  // `doc`: the record removed.
  virtual Status OnDelete(storage::Session& s, const Collection& coll,
                          const bson::BsonObj& doc) = 0;
  // `record`: statements of a retryable write that ran in this transaction (a StatementRecord,
  // transaction_table.h), to travel with its writes.
  virtual Status OnStatements(storage::Session& s, const bson::BsonObj& record) = 0;
  // Whether this server may write now (a replica set's writable primary): a write made when it
  // may not fails at its commit.
  virtual bool AcceptsWrites() const = 0;
  // A catalog change of database `db`, as an oplog command entry: `o` is its command document
  // ({create: "c", ...}), `uuid` (16 bytes, or empty) the collection it is about, `o2` extra
  // details (may be empty).
  virtual Status OnCommand(storage::Session& s, const std::string& db, const std::string& uuid,
                           const bson::BsonObj& o, const bson::BsonObj& o2) = 0;
};

// The process's observer, or nullptr. Set it while no write runs.
void SetOpObserver(OpObserver* observer);
OpObserver* GetOpObserver();
// The observer of writes to database `db`: GetOpObserver(), but none for `local`.
OpObserver* OpObserverFor(std::string_view db);
// Whether background writers (TTL deletes, rollup maintenance) should run: true unless this
// server is a replica set member that is not the writable primary (MongoDB's TTL monitor runs on
// the primary only; the secondaries apply its deletes).
bool ThisServerAcceptsWrites();

}  // namespace hourglass::catalog
