// A collection's durable description (CollectionEntry) and its runtime handle (Collection): the
// record table (RecordId → BSON document) and its indexes, for now the unique `_id` index whose
// table maps the order-preserving key of `_id` (bson/key_string.h) to the RecordId.
//
// Thread-safety: a Collection is immutable except for its counters (atomics) and RecordId
// allocator; DDL replaces the Collection object in the Catalog instead of mutating it, so a handle
// obtained by a command stays consistent for the command's life. Data methods run inside the
// caller's storage transaction (a WriteUnit) and surface conflicts as WriteConflict (112).
//
// A clustered collection (option `clusteredIndex: true`, used for time-series buckets) has no `_id`
// index: its record table is keyed by the `_id` itself. `_id` must then be an ObjectId and the
// RecordId is its first 8 bytes (timestamp + 4 more bytes, see ClusteredRecordId), so records sit
// in `_id` (for buckets: time) order and an `_id` range is a key range.
//
// Secondary indexes (for now only the `{meta: 1, control.min.<time>: 1}` index of a bucket
// collection with a metaField) are tables keyed by the order-preserving encoding of the indexed
// fields (bson/key_string.h) followed by the RecordId. A bucket index key is
// BucketIndexSeriesPrefix(meta) + encoding(control.min.<time>) + RecordId and its value is the
// bucket's `meta` element (a single EOO byte when it has none), so a scan can test metas without
// fetching buckets. Insert/Update/Remove keep them in step with the records.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/namespace.h"
#include "storage/kv_engine.h"
#include "storage/session.h"

namespace hourglass::catalog {

struct IndexEntry {
  bson::BsonObj spec;  // {v: 2, key: {...}, name: "..." [, unique: true, ...]}
  std::string ident;
  std::string name() const { return std::string(spec["name"].Str()); }
  bson::BsonObj key() const { return spec["key"].Obj(); }
};

struct CollectionEntry {
  NamespaceString nss;
  std::string uuid;       // 16 bytes
  std::string type;       // "collection", "view" or "timeseries"
  bson::BsonObj options;  // the create options as given (validated)
  std::string ident;      // record table; empty for views
  std::vector<IndexEntry> indexes;

  bson::BsonObj ToBson() const;
  static StatusWith<CollectionEntry> FromBson(const bson::BsonObj& obj);
};

struct Record {
  int64_t id;
  bson::BsonObj doc;  // owned
};

// The RecordId of a clustered collection's record: the big-endian first 8 bytes of the ObjectId, in
// the form whose storage encoding (storage/record_id.h) is exactly those bytes.
int64_t ClusteredRecordId(const bson::ObjectId& oid);
// The smallest and largest RecordIds of ObjectIds whose timestamp is `seconds`.
int64_t ClusteredRecordIdLow(uint32_t seconds);
int64_t ClusteredRecordIdHigh(uint32_t seconds);

// The start of every bucket index key of the series whose meta element is `meta` (EOO: no meta):
// the order-preserving encoding of the meta value, then of its exact bytes (type and value), so
// that values equal in index order but distinct as series (1 and NumberLong(1), null and
// missing) never share a prefix. The bucket's start time and RecordId follow.
std::string BucketIndexSeriesPrefix(const bson::BsonElement& meta);

class Collection {
 public:
  Collection(storage::KvEngine* engine, CollectionEntry entry, int64_t next_record_id);

  const CollectionEntry& entry() const { return entry_; }
  const NamespaceString& nss() const { return entry_.nss; }
  std::string ns() const { return entry_.nss.ns(); }
  const std::string& ident() const { return entry_.ident; }
  bool IsView() const { return entry_.type != "collection"; }
  bool IsClustered() const { return clustered_; }

  // Stores `doc` (which must already have an `_id` and be valid) under a new RecordId and adds
  // its index keys. DuplicateKey (11000) with keyPattern/keyValue if `_id` exists (for clustered
  // collections: if a record with the same RecordId exists). BadValue if a clustered collection's
  // `_id` is not an ObjectId.
  StatusWith<int64_t> Insert(storage::Session& s, const bson::BsonObj& doc);
  // Replaces the document at `id` (`old_doc` is what it holds now). `_id` must be unchanged
  // (callers check).
  Status Update(storage::Session& s, int64_t id, const bson::BsonObj& old_doc,
                const bson::BsonObj& new_doc);
  Status Remove(storage::Session& s, int64_t id, const bson::BsonObj& doc);
  StatusWith<std::optional<Record>> FindById(storage::Session& s, const bson::BsonElement& id);
  StatusWith<std::optional<Record>> FindRecord(storage::Session& s, int64_t id);

  // The bucket index (see above), or nullptr.
  const IndexEntry* BucketIndex() const { return bucket_index_; }

  // The RecordId the next insert will get (a renamed collection continues from it).
  int64_t NextRecordId() const { return next_record_id_.load(); }

  // Approximate counts for count/collStats/dbStats, adjusted by callers after a commit.
  int64_t NumRecords() const { return num_records_.load(); }
  int64_t DataSize() const { return data_size_.load(); }
  void AdjustCounts(int64_t records, int64_t bytes) {
    num_records_ += records;
    data_size_ += bytes;
  }
  void SetCounts(int64_t records, int64_t bytes) {
    num_records_ = records;
    data_size_ = bytes;
  }

 private:
  Status DuplicateKeyError(const bson::BsonElement& id) const;
  // The entry of `doc` in secondary index `idx`: key and value.
  std::pair<std::string, std::string> IndexEntryFor(const IndexEntry& idx, const bson::BsonObj& doc,
                                                    int64_t rid) const;

  storage::KvEngine* engine_;
  CollectionEntry entry_;
  std::string id_index_ident_;  // empty for views and clustered collections
  bool clustered_;
  std::vector<const IndexEntry*> secondary_;  // every index but `_id_`, into entry_.indexes
  const IndexEntry* bucket_index_ = nullptr;
  std::atomic<int64_t> next_record_id_;
  std::atomic<int64_t> num_records_{0};
  std::atomic<int64_t> data_size_{0};
};

}  // namespace hourglass::catalog
