// Rollback: undoes the writes of oplog entries a replica set member holds but the set's log never
// committed — a deposed primary's writes that had not replicated when it lost its role (a kill -9
// with writes in flight, a partition). As mongod, the member puts every document those entries
// touched back as it was before them, and keeps what it removed or overwrote in rollback files:
// `<rollback dir>/<collection uuid>/removed.<time>.bson`, the documents one after the other.
//
// Nothing is written ahead of time for this: a document's earlier state is rebuilt from the
// oplog itself — from the newest entry before the undone ones that gives it whole (its insert, a
// replacement, its delete), then the diffs and byte edits logged after it. docs/replication.md
// ("Rollback") has the design.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "catalog/catalog.h"
#include "catalog/collection.h"
#include "catalog/transaction_table.h"
#include "storage/kv_engine.h"

namespace hourglass::repl {

struct RollbackSummary {
  int64_t entries = 0;             // oplog entries undone
  int64_t documents = 0;           // documents put back, removed or restored
  std::vector<std::string> files;  // rollback files written
};

// Undoes, in one storage transaction, the entries of `oplog` (local.oplog.rs) after timestamp
// `after_ts` that were written in terms below `below_term` (the run stops at the first entry of a
// later term): their documents go back to what they were at `after_ts`, their rows leave the
// oplog, and the retryable-write records they carried leave `transactions` (may be null).
// The caller marks its thread as applying (the undo is not logged again). Rollback files go
// under `rollback_dir` (none when empty). OplogOperationUnsupported when an entry is a catalog
// change or the oplog no longer reaches back far enough to rebuild a document (the member needs
// a resync); nothing is undone then.
StatusWith<RollbackSummary> RollBackOplogTail(storage::KvEngine* engine, catalog::Catalog* catalog,
                                              catalog::Collection& oplog,
                                              catalog::TransactionTable* transactions,
                                              const std::string& rollback_dir, uint64_t after_ts,
                                              int64_t below_term);

}  // namespace hourglass::repl
