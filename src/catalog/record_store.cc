#include "catalog/record_store.h"

#include "bson/key_string.h"
#include "storage/record_id.h"

namespace hourglass::catalog {

using detail::PendingMove;

namespace {
// Makes `c`'s pending move: `start()` (the first entry of the range), past `key` or to `key`, or
// one step in the direction `forward`. False when there is no entry there.
template <typename Start>
StatusWith<bool> MakePendingMove(storage::Cursor& c, PendingMove move, bool forward,
                                 std::string_view key, const Start& start) {
  switch (move) {
    case PendingMove::kStart:
      return start();
    case PendingMove::kAfter:
      return c.SeekAfter(key, forward);
    case PendingMove::kAt:
      return c.Seek(key);
    case PendingMove::kStep:
      return forward ? c.Next() : c.Prev();
    case PendingMove::kDone:
      break;
  }
  return false;
}
}  // namespace

RecordRange ClusteredTimeRange(uint32_t lo_seconds, uint32_t hi_seconds, bool forward) {
  return RecordRange{storage::ClusteredRecordIdLow(lo_seconds),
                     storage::ClusteredRecordIdHigh(hi_seconds), forward};
}

StatusWith<RecordCursor> RecordCursor::Open(storage::Session& s, const Collection& coll,
                                            RecordRange range) {
  HG_RETURN_IF_ERROR(coll.read_barrier().Run());
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(coll.ident()));
  return RecordCursor(std::move(cursor), range);
}

bool RecordCursor::InRange(int64_t id) const {
  return (!range_.lo || id >= *range_.lo) && (!range_.hi || id <= *range_.hi);
}

void RecordCursor::ResumeAfter(int64_t last_id) {
  pending_ = PendingMove::kAfter;
  seek_key_ = storage::EncodeRecordId(last_id);
}

StatusWith<bool> RecordCursor::Next() {
  const bool fwd = range_.forward;
  HG_ASSIGN_OR_RETURN(
      bool more, MakePendingMove(*cursor_, pending_, fwd, seek_key_, [&]() -> StatusWith<bool> {
        if (fwd) {
          return range_.lo ? cursor_->Seek(storage::EncodeRecordId(*range_.lo))
                           : cursor_->SeekFirst();
        }
        return range_.hi ? cursor_->Seek(storage::EncodeRecordId(*range_.hi), false)
                         : cursor_->SeekLast();
      }));
  if (more) {
    id_ = storage::DecodeRecordId(cursor_->key());
    if (InRange(id_)) {
      pending_ = PendingMove::kStep;
      return true;
    }
  }
  pending_ = PendingMove::kDone;
  return false;
}

StatusWith<bool> RecordCursor::SeekExact(int64_t id) {
  const std::string key = storage::EncodeRecordId(id);
  HG_ASSIGN_OR_RETURN(bool found, cursor_->Seek(key));
  if (!found || cursor_->key() != key) {
    pending_ = PendingMove::kDone;
    return false;
  }
  id_ = id;
  pending_ = PendingMove::kStep;
  return true;
}

StatusWith<IndexCursor> IndexCursor::Open(storage::Session& s, const SecondaryIndex& idx) {
  if (idx.read_barrier) HG_RETURN_IF_ERROR(idx.read_barrier->Run());
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(idx.entry->ident));
  return IndexCursor(std::move(cursor), idx);
}

void IndexCursor::SetBounds(IndexBounds bounds) {
  bounds_ = std::move(bounds);
  pending_ = PendingMove::kStart;
}

void IndexCursor::ResumeAfter(std::string_view position) {
  seek_key_.assign(position);
  pending_ = PendingMove::kAfter;
}

void IndexCursor::SkipTo(std::string_view key) {
  invariant(bounds_.forward);
  seek_key_.assign(key);
  pending_ = PendingMove::kAt;
}

bool IndexCursor::InBounds() const {
  std::string_view key = cursor_->key();
  return bounds_.forward ? (!bounds_.end || key < std::string_view(*bounds_.end))
                         : key >= std::string_view(bounds_.start);
}

StatusWith<bool> IndexCursor::Next() {
  const bool fwd = bounds_.forward;
  HG_ASSIGN_OR_RETURN(
      bool more, MakePendingMove(*cursor_, pending_, fwd, seek_key_, [&]() -> StatusWith<bool> {
        if (fwd) return bounds_.start.empty() ? cursor_->SeekFirst() : cursor_->Seek(bounds_.start);
        // Entries of the last value carry a RecordId suffix: the last entry before `end`.
        return bounds_.end ? cursor_->SeekAfter(*bounds_.end, false) : cursor_->SeekLast();
      }));
  if (more && InBounds()) {
    pending_ = PendingMove::kStep;
    return true;
  }
  pending_ = PendingMove::kDone;
  return false;
}

// Index table formats (src/storage/README.md): a unique index (and `_id_`) maps key -> RecordId;
// a non-unique user index maps key + RecordId -> RecordId; the series index maps key + RecordId
// -> the bucket's meta element.
std::string_view IndexCursor::key() const {
  std::string_view k = cursor_->key();
  if (idx_->kind == IndexKind::kSeries || !idx_->desc.unique) {
    k.remove_suffix(std::min(k.size(), storage::kRecordIdSize));
  }
  return k;
}

int64_t IndexCursor::record_id() const {
  if (idx_->kind == IndexKind::kSeries) {
    std::string_view k = cursor_->key();
    return storage::DecodeRecordId(k.substr(k.size() - storage::kRecordIdSize));
  }
  return storage::DecodeRecordId(cursor_->value());
}

bson::BsonElement IndexCursor::meta() const {
  invariant(idx_->kind == IndexKind::kSeries);
  std::string_view value = cursor_->value();
  if (value.empty() || value[0] == '\0') return bson::BsonElement();
  return bson::BsonElement(value.data());
}

std::string IndexCursor::SeriesPrefix() const {
  // The key is the series prefix, the start time and the RecordId. Start times are dates (the
  // bucket validator requires it), all encoded in the same number of bytes after the same rank
  // byte, so the prefix is sliced off; a start of another type is re-encoded.
  static const std::string kDateEncoding = BucketIndexStartKey(0);
  std::string_view k = cursor_->key();
  const size_t tail = kDateEncoding.size() + storage::kRecordIdSize;
  if (k.size() > tail && k[k.size() - tail] == kDateEncoding[0]) {
    return std::string(k.substr(0, k.size() - tail));
  }
  return BucketIndexSeriesPrefix(meta());
}

std::string BucketIndexStartKey(int64_t millis) {
  bson::KeyStringBuilder k;
  k.AppendDate(millis);
  return k.Release();
}

StatusWith<NaturalCursor> NaturalCursor::Open(storage::Session& s, Collection& coll, bool forward) {
  NaturalCursor c(s, coll);
  const SecondaryIndex* id_index = coll.IdIndex();
  if (coll.ClusteredIndexSpec() && id_index != nullptr) {
    HG_ASSIGN_OR_RETURN(auto index, IndexCursor::Open(s, *id_index));
    index.SetBounds({std::string(), std::nullopt, forward});
    c.by_id_ = true;
    c.index_.emplace(std::move(index));
  } else {
    HG_ASSIGN_OR_RETURN(auto records, RecordCursor::Open(s, coll, RecordRange::All(forward)));
    c.records_.emplace(std::move(records));
  }
  return c;
}

StatusWith<bool> NaturalCursor::Next() {
  if (!by_id_) return records_->Next();
  while (true) {
    HG_ASSIGN_OR_RETURN(bool more, index_->Next());
    if (!more) return false;
    HG_ASSIGN_OR_RETURN(found_, coll_->FindRecord(*session_, index_->record_id()));
    // An index entry always has its record in the same snapshot; none would be a torn read.
    if (found_) return true;
  }
}

void NaturalCursor::ResumeAfter(std::string_view position) {
  if (by_id_) {
    index_->ResumeAfter(position);
  } else {
    records_->ResumeAfter(storage::DecodeRecordId(position));
  }
}

std::string NaturalCursor::position() const {
  return by_id_ ? std::string(index_->position()) : storage::EncodeRecordId(records_->id());
}

}  // namespace hourglass::catalog
