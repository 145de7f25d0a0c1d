#include "exec/collection_scan.h"

#include "base/interrupt.h"
#include "catalog/record_store.h"

namespace hourglass::exec {

using bson::BsonObj;

namespace {
// Documents examined per storage session: large enough to amortize the session and re-seek, small
// enough that a client cursor never holds much memory.
constexpr int kChunkDocs = 1000;
}  // namespace

CollectionScan::CollectionScan(std::shared_ptr<catalog::Collection> coll, storage::KvEngine* engine,
                               std::optional<query::Matcher> filter, bool reverse)
    : coll_(std::move(coll)), engine_(engine), filter_(std::move(filter)), reverse_(reverse) {
  if (filter_ && filter_->MatchesEverything()) filter_.reset();
}

Status CollectionScan::ReadChunk() {
  auto session = engine_->NewSession();
  auto cursor_or = catalog::NaturalCursor::Open(*session, *coll_, !reverse_);
  if (!cursor_or.ok()) {
    // The collection was dropped under us: the scan simply ends, as MongoDB's would be killed.
    done_ = true;
    return Status::OK();
  }
  auto& cursor = cursor_or.value();
  if (last_position_) cursor.ResumeAfter(*last_position_);
  int examined = 0;
  while (true) {
    HG_RETURN_IF_ERROR(CheckForInterrupt());  // a filter may take long on each document
    HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
    if (!more) {
      done_ = true;
      break;
    }
    ++docs_examined_;
    BsonObj doc = cursor.doc();
    bool keep = true;
    if (filter_) {
      HG_ASSIGN_OR_RETURN(keep, filter_->Evaluate(doc));  // $expr errors fail the scan
    }
    if (keep && with_record_id_) {
      bson::BsonBuilder rid;
      rid.AppendInt64("", cursor.id());
      buffer_.push_back(AppendAnnotation(doc, kRecordIdAnnotation, rid.Obj().FirstElement()));
    } else if (keep) {
      buffer_.push_back(doc.Owned());
    }
    if (++examined >= kChunkDocs) {
      last_position_ = cursor.position();
      break;
    }
  }
  return Status::OK();
}

StatusWith<std::optional<BsonObj>> CollectionScan::Next() {
  HG_RETURN_IF_ERROR(CheckForInterrupt());  // killOp, maxTimeMS
  while (buffer_.empty() && !done_) {
    HG_RETURN_IF_ERROR(ReadChunk());
    HG_RETURN_IF_ERROR(CheckForInterrupt());
  }
  if (buffer_.empty()) return std::optional<BsonObj>();
  BsonObj out = std::move(buffer_.front());
  buffer_.pop_front();
  return std::optional<BsonObj>(std::move(out));
}

BsonObj AppendAnnotation(const BsonObj& doc, std::string_view name,
                         const bson::BsonElement& value) {
  bson::BsonBuilder b;
  for (bson::BsonElement e : doc) b.AppendElement(e);
  b.AppendElementAs(value, name);
  return b.Obj();
}

StatusWith<std::optional<BsonObj>> FindOutputStream::Next() {
  auto next = in_->Next();
  if (!next.ok() || !next.value().has_value()) return next;
  const BsonObj& in = *next.value();
  bson::BsonBuilder plain;
  bson::BsonElement rid, key;
  for (bson::BsonElement e : in) {
    if (e.FieldName() == kRecordIdAnnotation) {
      rid = e;
    } else if (e.FieldName() == kIndexKeyAnnotation) {
      key = e;
    } else {
      plain.AppendElement(e);
    }
  }
  BsonObj out;
  if (return_key_) {
    out = key.eoo() ? BsonObj() : key.Obj();
  } else {
    out = plain.Obj();
    if (projection_) {
      HG_ASSIGN_OR_RETURN(out, projection_->Apply(out));
    }
  }
  if (show_record_id_ && !rid.eoo()) out = AppendAnnotation(out, "$recordId", rid);
  return std::optional<BsonObj>(out.Owned());
}

StatusWith<std::optional<BsonObj>> ProjectionStream::Next() {
  auto next = in_->Next();
  if (!next.ok() || !next.value().has_value()) return next;
  HG_ASSIGN_OR_RETURN(BsonObj out, projection_.Apply(*next.value()));
  return std::optional<BsonObj>(std::move(out));
}

}  // namespace hourglass::exec
