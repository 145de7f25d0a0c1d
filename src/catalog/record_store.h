// Cursors over a collection's record table and its index tables: the one place above storage/
// that opens storage cursors and knows how those tables are keyed (src/storage/README.md "Index
// tables"; RecordIds in storage/record_id.h). Scans elsewhere speak RecordIds, key bounds in the
// index key encoding (bson/key_string.h) and opaque positions.
//
// Resuming across storage transactions: a cursor belongs to one storage::Session and cannot
// outlive it, while a client cursor or a chunked bulk pass spans many short sessions. A scan keeps
// what it returned last (a RecordCursor's id(), an IndexCursor's position()) and, in the next
// session, opens a new cursor and calls ResumeAfter with it: writes committed in between are
// seen, and nothing before the resume point is returned twice.
//
// Thread-safety: none; a cursor belongs to its Session's thread. Lifetime: destroy it before its
// Session. Views it returns (data(), doc(), key(), position(), meta()) point into storage memory
// and stay valid until the next call on the cursor or the end of the Session's transaction.
// Errors: NamespaceNotFound (26) from Open when the table is gone (a drop ran meanwhile: callers
// end their scan quietly), WriteConflict (112) and InternalError (1) from moves, as
// storage/cursor.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/collection.h"
#include "storage/cursor.h"
#include "storage/session.h"

namespace hourglass::catalog {

namespace detail {
// The move a cursor makes at its next Next(): to the start of its range, past a resume point,
// to a key (SkipTo), one step on, or none (exhausted).
enum class PendingMove { kStart, kAfter, kAt, kStep, kDone };
}  // namespace detail

// The records to read: RecordIds in [lo, hi] (nullopt: unbounded), in ascending RecordId order
// (forward) or descending.
struct RecordRange {
  std::optional<int64_t> lo;
  std::optional<int64_t> hi;
  bool forward = true;

  // Every record, in the given direction.
  static RecordRange All(bool forward) { return RecordRange{std::nullopt, std::nullopt, forward}; }
};

// The records of a clustered collection whose `_id` timestamps lie in [lo_seconds, hi_seconds].
RecordRange ClusteredTimeRange(uint32_t lo_seconds, uint32_t hi_seconds, bool forward = true);

class RecordCursor {
 public:
  // A cursor over `coll`'s records within `range`, reading in `s`'s transaction (or, outside
  // one, the latest committed data at each move). NamespaceNotFound if the table is gone.
  static StatusWith<RecordCursor> Open(storage::Session& s, const Collection& coll,
                                       RecordRange range = {});

  // Moves to the next record of the range in its direction: the first one on the first call,
  // the first past the resume point after ResumeAfter, the one after the SeekExact record after
  // SeekExact. False at the end of the range (and from then on until a ResumeAfter).
  StatusWith<bool> Next();
  // Makes the next Next() return the first record of the range past `last_id` in its direction.
  void ResumeAfter(int64_t last_id);
  // Positions on record `id` whatever the range; false (unpositioned) if there is none.
  StatusWith<bool> SeekExact(int64_t id);

  // The current record. Invariant: the last move returned true.
  int64_t id() const { return id_; }
  std::string_view data() const { return cursor_->value(); }
  // The record's document, borrowed (see the lifetime rule above); Owned() keeps it.
  bson::BsonObj doc() const { return bson::BsonObj(cursor_->value().data()); }

 private:
  RecordCursor(std::unique_ptr<storage::Cursor> cursor, RecordRange range)
      : cursor_(std::move(cursor)), range_(range) {}
  bool InRange(int64_t id) const;

  std::unique_ptr<storage::Cursor> cursor_;
  RecordRange range_;
  detail::PendingMove pending_ = detail::PendingMove::kStart;
  std::string seek_key_;  // for kAfter: the encoded resume RecordId
  int64_t id_ = 0;
};

// Which entries of an index to read: table keys from `start` (inclusive; empty: the first
// entry) to `end` (exclusive; nullopt: the last entry), bytewise, in ascending order (forward)
// or descending. Bounds are built from the index key encoding (bson/key_string.h) of the values,
// as the query planner's KeyRange does; an entry's table key may carry a RecordId suffix, which
// keeps it inside any bound made of whole values.
struct IndexBounds {
  std::string start;
  std::optional<std::string> end;
  bool forward = true;
};

class IndexCursor {
 public:
  // A cursor over `idx` (any of the collection's indexes: `_id_`, the series index of a bucket
  // collection, a user index), reading in `s`'s transaction. NamespaceNotFound if it is gone.
  static StatusWith<IndexCursor> Open(storage::Session& s, const SecondaryIndex& idx);

  // Makes the following Next() calls read within `bounds`, starting with their first entry.
  void SetBounds(IndexBounds bounds);
  // Makes the next Next() return the first entry past `position` (a position() of this index,
  // kept from an earlier cursor) within the current bounds.
  void ResumeAfter(std::string_view position);
  // Forward bounds only: makes the next Next() return the first entry whose table key is at or
  // after `key` (a key encoding prefix, e.g. the successor of one value to skip to the next).
  void SkipTo(std::string_view key);
  // Moves to the next entry within the bounds; false past their end.
  StatusWith<bool> Next();

  // The current entry. Invariant: the last Next() returned true.
  // The indexed values' encoding (bson/key_string.h), without the RecordId.
  std::string_view key() const;
  int64_t record_id() const;
  // The entry's place in the index: bytewise comparable with IndexBounds and with other
  // positions of the index, and what ResumeAfter takes. Not to be decoded.
  std::string_view position() const { return cursor_->key(); }
  // Series index only: the bucket's `meta` element (EOO when it has none).
  bson::BsonElement meta() const;
  // Series index only: the start of every entry of the current entry's series
  // (BucketIndexSeriesPrefix of its meta), so that bounds over one series can be built from it.
  std::string SeriesPrefix() const;

 private:
  IndexCursor(std::unique_ptr<storage::Cursor> cursor, const SecondaryIndex& idx)
      : cursor_(std::move(cursor)), idx_(&idx) {}
  bool InBounds() const;

  std::unique_ptr<storage::Cursor> cursor_;
  const SecondaryIndex* idx_;
  IndexBounds bounds_;
  detail::PendingMove pending_ = detail::PendingMove::kStart;
  std::string seek_key_;  // for kAfter and kAt
};

// A collection's records in its natural order: RecordId order, or `_id` order through the `_id_`
// index for a collection clustered by `_id` (Collection::ClusteredIndexSpec), as MongoDB stores
// those. Resumable in a later session from a position() kept before. Errors as the cursors above.
class NaturalCursor {
 public:
  static StatusWith<NaturalCursor> Open(storage::Session& s, Collection& coll, bool forward);

  // Moves to the next record (the first on the first call, the first past the resume point after
  // ResumeAfter); false at the end.
  StatusWith<bool> Next();
  // Makes the next Next() return the first record past `position` (a position() of a cursor over
  // the same collection).
  void ResumeAfter(std::string_view position);

  // The current record. Invariant: the last Next() returned true.
  int64_t id() const { return by_id_ ? found_->id : records_->id(); }
  // Borrowed, as RecordCursor::doc().
  bson::BsonObj doc() const { return by_id_ ? found_->doc : records_->doc(); }
  // Where the cursor is, for ResumeAfter; not to be decoded.
  std::string position() const;

 private:
  NaturalCursor(storage::Session& s, Collection& coll) : session_(&s), coll_(&coll) {}

  storage::Session* session_;
  Collection* coll_;
  bool by_id_ = false;
  std::optional<RecordCursor> records_;
  std::optional<IndexCursor> index_;
  std::optional<Record> found_;
};

// The start-time part of series index keys: the encoding of the date `millis`. A series' entries
// whose bucket starts in [a, b] lie in [prefix + BucketIndexStartKey(a),
// prefix + BucketIndexStartKey(b) + "\xff").
std::string BucketIndexStartKey(int64_t millis);

}  // namespace hourglass::catalog
