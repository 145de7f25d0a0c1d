#include "catalog/record_store.h"

#include "bson/key_string.h"
#include "storage/record_id.h"

namespace hourglass::catalog {

RecordRange ClusteredTimeRange(uint32_t lo_seconds, uint32_t hi_seconds, bool forward) {
  return RecordRange{storage::ClusteredRecordIdLow(lo_seconds),
                     storage::ClusteredRecordIdHigh(hi_seconds), forward};
}

StatusWith<RecordCursor> RecordCursor::Open(storage::Session& s, const Collection& coll,
                                            RecordRange range) {
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(coll.ident()));
  return RecordCursor(std::move(cursor), range);
}

bool RecordCursor::InRange(int64_t id) const {
  return (!range_.lo || id >= *range_.lo) && (!range_.hi || id <= *range_.hi);
}

void RecordCursor::ResumeAfter(int64_t last_id) {
  pending_ = Pending::kAfter;
  resume_id_ = last_id;
}

StatusWith<bool> RecordCursor::Next() {
  const bool fwd = range_.forward;
  StatusWith<bool> more = false;
  switch (pending_) {
    case Pending::kDone:
      return false;
    case Pending::kStart:
      if (fwd) {
        more =
            range_.lo ? cursor_->Seek(storage::EncodeRecordId(*range_.lo)) : cursor_->SeekFirst();
      } else {
        more = range_.hi ? cursor_->Seek(storage::EncodeRecordId(*range_.hi), false)
                         : cursor_->SeekLast();
      }
      break;
    case Pending::kAfter:
      more = cursor_->SeekAfter(storage::EncodeRecordId(resume_id_), fwd);
      break;
    case Pending::kMove:
      more = fwd ? cursor_->Next() : cursor_->Prev();
      break;
  }
  HG_RETURN_IF_ERROR(more.status());
  if (more.value()) {
    id_ = storage::DecodeRecordId(cursor_->key());
    if (InRange(id_)) {
      pending_ = Pending::kMove;
      return true;
    }
  }
  pending_ = Pending::kDone;
  return false;
}

StatusWith<bool> RecordCursor::SeekExact(int64_t id) {
  const std::string key = storage::EncodeRecordId(id);
  HG_ASSIGN_OR_RETURN(bool found, cursor_->Seek(key));
  if (!found || cursor_->key() != key) {
    pending_ = Pending::kDone;
    return false;
  }
  id_ = id;
  pending_ = Pending::kMove;
  return true;
}

StatusWith<IndexCursor> IndexCursor::Open(storage::Session& s, const SecondaryIndex& idx) {
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(idx.entry->ident));
  return IndexCursor(std::move(cursor), idx);
}

void IndexCursor::SetBounds(IndexBounds bounds) {
  bounds_ = std::move(bounds);
  pending_ = Pending::kStart;
}

void IndexCursor::ResumeAfter(std::string_view position) {
  seek_key_.assign(position);
  pending_ = Pending::kAfter;
}

void IndexCursor::SkipTo(std::string_view key) {
  invariant(bounds_.forward);
  seek_key_.assign(key);
  pending_ = Pending::kAt;
}

bool IndexCursor::InBounds() const {
  std::string_view key = cursor_->key();
  return bounds_.forward ? (!bounds_.end || key < std::string_view(*bounds_.end))
                         : key >= std::string_view(bounds_.start);
}

StatusWith<bool> IndexCursor::Next() {
  const bool fwd = bounds_.forward;
  StatusWith<bool> more = false;
  switch (pending_) {
    case Pending::kDone:
      return false;
    case Pending::kStart:
      if (fwd) {
        more = bounds_.start.empty() ? cursor_->SeekFirst() : cursor_->Seek(bounds_.start);
      } else {
        // Entries of the last value carry a RecordId suffix: the last entry before `end`.
        more = bounds_.end ? cursor_->SeekAfter(*bounds_.end, false) : cursor_->SeekLast();
      }
      break;
    case Pending::kAfter:
      more = cursor_->SeekAfter(seek_key_, fwd);
      break;
    case Pending::kAt:
      more = cursor_->Seek(seek_key_);
      break;
    case Pending::kMove:
      more = fwd ? cursor_->Next() : cursor_->Prev();
      break;
  }
  HG_RETURN_IF_ERROR(more.status());
  if (more.value() && InBounds()) {
    pending_ = Pending::kMove;
    return true;
  }
  pending_ = Pending::kDone;
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
  bson::BsonBuilder b;
  b.AppendDate("", millis);
  bson::KeyStringBuilder k;
  k.AppendElement(b.Obj().FirstElement());
  return k.Release();
}

}  // namespace hourglass::catalog
