#include "exec/index_scan.h"

#include <algorithm>

#include "base/interrupt.h"
#include "bson/bson_compare.h"
#include "bson/key_string.h"
#include "catalog/record_store.h"
#include "exec/collection_scan.h"

namespace hourglass::exec {

using bson::BsonElement;
using bson::BsonObj;

namespace {
// Keys read per storage session: small at first, so a limited query (limit, findOne) reads few
// keys past what it returns, then growing to amortize sessions on long scans.
constexpr int64_t kMaxChunkKeys = 1000;

// Whether a decoded key value may not be the document's: keys keep values, not types (numbers
// of every type share one encoding, an object's numbers too), and a missing field indexes as null.
bool KeyValueNeedsDocument(const BsonElement& v) {
  switch (v.type()) {
    case bson::BsonType::kInt32:
    case bson::BsonType::kInt64:
    case bson::BsonType::kDouble:
    case bson::BsonType::kDecimal128:
    case bson::BsonType::kNull:
    case bson::BsonType::kUndefined:
    case bson::BsonType::kObject:
    case bson::BsonType::kArray:
      return true;
    default:
      return false;
  }
}
}  // namespace

Status ScanIndexEntries(storage::Session& s, const QueryPlan& plan, IndexScanPosition& pos,
                        int64_t max_keys, const std::function<Status(int64_t, bool*)>& fn,
                        int64_t* keys_examined) {
  if (pos.done) return Status::OK();
  const size_t n_ranges = plan.ranges.size();
  if (n_ranges == 0) {
    pos.done = true;
    return Status::OK();
  }
  HG_ASSIGN_OR_RETURN(auto cursor, catalog::IndexCursor::Open(s, *plan.index));
  auto read_range = [&] {
    const KeyRange& r = plan.ranges[plan.forward ? pos.range : n_ranges - 1 - pos.range];
    cursor.SetBounds({r.start, r.end, plan.forward});
  };
  read_range();
  if (pos.started) cursor.ResumeAfter(pos.last_key);
  pos.started = true;
  int64_t n = 0;
  while (true) {
    HG_RETURN_IF_ERROR(CheckForInterrupt());  // each key's document may take long to filter
    HG_ASSIGN_OR_RETURN(bool have, cursor.Next());
    if (!have) {
      if (++pos.range >= n_ranges) {
        pos.done = true;
        return Status::OK();
      }
      read_range();
      continue;
    }
    ++*keys_examined;
    pos.last_key.assign(cursor.position());  // reuses the buffer: no allocation per key
    pos.key = cursor.key();
    bool stop = false;
    Status st = fn(cursor.record_id(), &stop);
    pos.key = {};
    HG_RETURN_IF_ERROR(st);
    if (stop) {
      pos.done = true;
      return Status::OK();
    }
    if (++n >= max_keys) return Status::OK();
  }
}

StatusWith<std::vector<BsonObj>> DistinctScan(storage::Session& s, catalog::Collection& coll,
                                              const QueryPlan& plan, int64_t* keys_examined,
                                              int64_t* docs_examined) {
  std::vector<BsonObj> out;
  const catalog::SecondaryIndex& idx = *plan.index;
  BsonElement first = idx.desc.key.FirstElement();
  const bool descending = bson::IsDescending(first);
  HG_ASSIGN_OR_RETURN(auto cursor, catalog::IndexCursor::Open(s, idx));
  for (const KeyRange& r : plan.ranges) {
    cursor.SetBounds({r.start, r.end});
    HG_ASSIGN_OR_RETURN(bool have, cursor.Next());
    while (have) {
      ++*keys_examined;
      HG_ASSIGN_OR_RETURN(BsonObj values, bson::DecodeIndexKey(cursor.key(), idx.desc.key));
      BsonElement v = values.FirstElement();
      bson::KeyStringBuilder prefix;
      prefix.AppendElement(v, descending);
      std::optional<std::string> next_value = catalog::PrefixSuccessor(std::string(prefix.bytes()));
      if (KeyValueNeedsDocument(v)) {
        // The documents of this value, until one holds the field (null: missing fields share
        // the key).
        while (true) {
          HG_ASSIGN_OR_RETURN(auto rec, coll.FindRecord(s, cursor.record_id()));
          if (rec) {
            ++*docs_examined;
            BsonElement own = rec->doc.GetPath(first.FieldName());
            if (!own.eoo()) {
              bson::BsonBuilder b;
              b.AppendElementAs(own, "");
              out.push_back(b.Obj());
              break;
            }
          }
          HG_ASSIGN_OR_RETURN(have, cursor.Next());
          if (!have || (next_value && cursor.position() >= std::string_view(*next_value))) break;
          ++*keys_examined;
        }
      } else {
        bson::BsonBuilder b;
        b.AppendElementAs(v, "");
        out.push_back(b.Obj());
      }
      if (!next_value) break;
      cursor.SkipTo(*next_value);
      HG_ASSIGN_OR_RETURN(have, cursor.Next());
    }
  }
  return out;
}

IndexScan::IndexScan(std::shared_ptr<catalog::Collection> coll, storage::KvEngine* engine,
                     QueryPlan plan, std::optional<query::Matcher> filter)
    : coll_(std::move(coll)), engine_(engine), plan_(std::move(plan)), filter_(std::move(filter)) {
  if (filter_ && filter_->MatchesEverything()) filter_.reset();
  scans_ = plan_.Scans();
  done_ = scans_.empty();
}

Status IndexScan::ReadChunk(int64_t max_keys) {
  if (done_) return Status::OK();
  auto session = engine_->NewSession();
  const bool dedupe = plan_.multikey || plan_.IsOr();
  Status st = ScanIndexEntries(
      *session, *scans_[scan_], pos_, max_keys,
      [&](int64_t rid, bool*) -> Status {
        if (dedupe && !seen_.insert(rid).second) return Status::OK();
        if (plan_.covered_fields) {
          HG_ASSIGN_OR_RETURN(bool done, CoveredEntry());
          if (done) return Status::OK();
        }
        HG_ASSIGN_OR_RETURN(auto rec, coll_->FindRecord(*session, rid));
        if (!rec) return Status::OK();  // deleted since the key was read
        ++docs_examined_;
        if (!filter_ || filter_->Matches(rec->doc)) {
          if (plan_.with_index_key || plan_.with_record_id) {
            HG_ASSIGN_OR_RETURN(rec->doc, Annotate(rec->doc, rid));
          }
          buffer_.push_back(std::move(rec->doc));
          ++produced_;
        }
        return Status::OK();
      },
      &keys_examined_);
  if (st.code() == ErrorCode::kNamespaceNotFound) {
    // The index or collection was dropped under us: the scan ends.
    done_ = true;
    return Status::OK();
  }
  HG_RETURN_IF_ERROR(st);
  if (pos_.done) {
    pos_ = IndexScanPosition();
    if (++scan_ >= scans_.size()) done_ = true;
  }
  return Status::OK();
}

StatusWith<BsonObj> IndexScan::Annotate(const BsonObj& doc, int64_t rid) const {
  BsonObj out = doc;
  if (plan_.with_index_key) {
    HG_ASSIGN_OR_RETURN(BsonObj values, bson::DecodeIndexKey(pos_.key, plan_.KeyPattern()));
    bson::BsonBuilder b;
    auto value = values.begin();
    for (BsonElement f : plan_.KeyPattern()) {
      BsonElement v = *value;
      ++value;
      // The key holds values, not numeric types: the document's own value, when it is the
      // key's (not an array element, not a hash), gives the type back.
      BsonElement own = doc.GetPath(f.FieldName());
      if (f.type() != bson::BsonType::kString && !own.eoo() &&
          own.type() != bson::BsonType::kArray && bson::CompareElementValues(own, v) == 0) {
        v = own;
      }
      b.AppendElementAs(v, f.FieldName());
    }
    bson::BsonBuilder holder;
    holder.AppendObject("", b.Obj());
    out = AppendAnnotation(out, kIndexKeyAnnotation, holder.Obj().FirstElement());
  }
  if (plan_.with_record_id) {
    bson::BsonBuilder holder;
    holder.AppendInt64("", rid);
    out = AppendAnnotation(out, kRecordIdAnnotation, holder.Obj().FirstElement());
  }
  return out;
}

StatusWith<bool> IndexScan::CoveredEntry() {
  const std::vector<std::string>& fields = *plan_.covered_fields;
  if (fields.empty()) {  // a count: the key is the answer
    buffer_.emplace_back();
    ++produced_;
    return true;
  }
  HG_ASSIGN_OR_RETURN(BsonObj values, bson::DecodeIndexKey(pos_.key, plan_.KeyPattern()));
  bson::BsonBuilder b;
  auto value = values.begin();
  for (BsonElement f : plan_.KeyPattern()) {
    BsonElement v = *value;
    ++value;
    if (std::find(fields.begin(), fields.end(), f.FieldName()) == fields.end()) continue;
    if (KeyValueNeedsDocument(v)) return false;  // read from the document
    b.AppendElementAs(v, f.FieldName());
  }
  buffer_.push_back(b.Obj());
  ++produced_;
  return true;
}

StatusWith<std::optional<BsonObj>> IndexScan::Next() {
  HG_RETURN_IF_ERROR(CheckForInterrupt());  // killOp, maxTimeMS
  while (buffer_.empty() && !done_) {
    HG_RETURN_IF_ERROR(ReadChunk(chunk_keys_));
    HG_RETURN_IF_ERROR(CheckForInterrupt());
    chunk_keys_ = std::min(chunk_keys_ * 2, kMaxChunkKeys);
  }
  if (buffer_.empty()) return std::optional<BsonObj>();
  BsonObj out = std::move(buffer_.front());
  buffer_.pop_front();
  return std::optional<BsonObj>(std::move(out));
}

}  // namespace hourglass::exec
