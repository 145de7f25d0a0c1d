#include "timeseries/bucket_scan.h"

#include "storage/write_conflict.h"

namespace hourglass::timeseries {

using bson::BsonObj;

Status ForEachBucketChunk(
    storage::KvEngine* engine, catalog::Collection& buckets, const catalog::RecordRange& range,
    const std::function<bool(const BsonObj&)>& keep,
    const std::function<Status(const std::vector<catalog::Record>&, bool* stop)>& fn) {
  std::optional<int64_t> resume;
  catalog::RecordRange forward = range;
  forward.forward = true;
  while (true) {
    std::vector<catalog::Record> chunk;
    bool more_keys = false;
    {
      auto session = engine->NewSession();
      auto cursor_or = catalog::RecordCursor::Open(*session, buckets, forward);
      if (!cursor_or.ok()) {
        // Dropped meanwhile, or an error (the read barrier's flush failing) that is the read's.
        return cursor_or.status().code() == ErrorCode::kNamespaceNotFound ? Status::OK()
                                                                          : cursor_or.status();
      }
      auto& cursor = cursor_or.value();
      if (resume) cursor.ResumeAfter(*resume);
      auto more = cursor.Next();
      while (more.ok() && more.value()) {
        BsonObj bucket = cursor.doc();
        if (keep(bucket)) {
          chunk.push_back({cursor.id(), bucket.Owned()});
          if (chunk.size() >= 100) {
            resume = cursor.id();
            more_keys = true;
            break;
          }
        }
        more = cursor.Next();
      }
      HG_RETURN_IF_ERROR(more.status());
    }
    bool stop = false;
    if (!chunk.empty()) HG_RETURN_IF_ERROR(fn(chunk, &stop));
    if (!more_keys || stop) return Status::OK();
  }
}

Status RemoveAndRewriteBuckets(
    storage::KvEngine* engine, catalog::Collection& buckets,
    const std::vector<const catalog::Record*>& removed,
    const std::vector<std::pair<const catalog::Record*, BsonObj>>& rewritten) {
  if (removed.empty() && rewritten.empty()) return Status::OK();
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    auto guard = buckets.WriteGuard();  // until the commit (index builds wait for it)
    auto session = engine->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    for (const auto* rec : removed) {
      Status st = buckets.Remove(*session, rec->id, rec->doc);
      if (!st.ok() && st.code() != ErrorCode::kNoSuchKey) return st;
    }
    for (const auto& [rec, doc] : rewritten) {
      HG_RETURN_IF_ERROR(buckets.Update(*session, rec->id, rec->doc, doc));
    }
    return wu.Commit();
  }));
  int64_t bytes = 0;
  for (const auto* rec : removed) bytes -= rec->doc.size();
  for (const auto& [rec, doc] : rewritten) bytes += doc.size() - rec->doc.size();
  buckets.AdjustCounts(-static_cast<int64_t>(removed.size()), bytes);
  return Status::OK();
}

}  // namespace hourglass::timeseries
