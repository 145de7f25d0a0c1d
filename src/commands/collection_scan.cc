#include "commands/collection_scan.h"

namespace hourglass::commands {

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
  auto cursor_or = session->OpenCursorOrError(coll_->ident());
  if (!cursor_or.ok()) {
    // The collection was dropped under us: the scan simply ends, as MongoDB's would be killed.
    done_ = true;
    return Status::OK();
  }
  auto& cursor = cursor_or.value();
  StatusWith<bool> more = started_   ? cursor->SeekAfter(last_key_, !reverse_)
                          : reverse_ ? cursor->SeekLast()
                                     : cursor->SeekFirst();
  started_ = true;
  int examined = 0;
  while (true) {
    if (!more.ok()) return more.status();
    if (!more.value()) {
      done_ = true;
      break;
    }
    ++docs_examined_;
    BsonObj doc(cursor->value().data());
    bool keep = true;
    if (filter_) {
      HG_ASSIGN_OR_RETURN(keep, filter_->Evaluate(doc));  // $expr errors fail the scan
    }
    if (keep) buffer_.push_back(doc.Owned());
    if (++examined >= kChunkDocs) {
      last_key_ = std::string(cursor->key());
      break;
    }
    more = reverse_ ? cursor->Prev() : cursor->Next();
  }
  return Status::OK();
}

StatusWith<std::optional<BsonObj>> CollectionScan::Next() {
  while (buffer_.empty() && !done_) HG_RETURN_IF_ERROR(ReadChunk());
  if (buffer_.empty()) return std::optional<BsonObj>();
  BsonObj out = std::move(buffer_.front());
  buffer_.pop_front();
  return std::optional<BsonObj>(std::move(out));
}

StatusWith<std::optional<BsonObj>> ProjectionStream::Next() {
  auto next = in_->Next();
  if (!next.ok() || !next.value().has_value()) return next;
  HG_ASSIGN_OR_RETURN(BsonObj out, projection_.Apply(*next.value()));
  return std::optional<BsonObj>(std::move(out));
}

}  // namespace hourglass::commands
