#include "timeseries/bucket_scan.h"

#include <cstring>

#include "storage/write_conflict.h"

namespace hourglass::timeseries {

using bson::BsonObj;

Status ForEachBucketChunk(
    storage::KvEngine* engine, catalog::Collection& buckets, const catalog::RecordRange& range,
    const std::function<bool(const BsonObj&)>& keep,
    const std::function<StatusWith<ChunkOutcome>(const std::vector<catalog::Record>&)>& fn) {
  std::optional<int64_t> resume;
  catalog::RecordRange forward = range;
  forward.forward = true;
  int reads_again = 0;
  while (true) {
    std::vector<catalog::Record> chunk;
    bool more_keys = false;
    std::optional<int64_t> next_resume;
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
            next_resume = cursor.id();
            more_keys = true;
            break;
          }
        }
        more = cursor.Next();
      }
      HG_RETURN_IF_ERROR(more.status());
    }
    ChunkOutcome outcome = ChunkOutcome::kNext;
    if (!chunk.empty()) {
      HG_ASSIGN_OR_RETURN(outcome, fn(chunk));
    }
    if (outcome == ChunkOutcome::kReadAgain) {
      if (++reads_again >= 100) {
        return Status(ErrorCode::kWriteConflict,
                      "time-series buckets kept changing while they were being rewritten");
      }
      continue;  // from the same resume point
    }
    reads_again = 0;
    resume = next_resume;
    if (!more_keys || outcome == ChunkOutcome::kStop) return Status::OK();
  }
}

StatusWith<std::optional<std::vector<int64_t>>> ApplyBucketChanges(
    storage::KvEngine* engine, catalog::Collection& buckets, const BucketChanges& changes,
    const std::function<void()>& after_commit) {
  std::vector<int64_t> ids;
  if (changes.empty()) return std::optional<std::vector<int64_t>>(ids);
  // The read barrier runs now, once for the operation: under the exclusive guard, the flush it
  // may run would wait for the guard.
  catalog::ReadBarrier::OperationScope operation;
  HG_RETURN_IF_ERROR(buckets.read_barrier().Run());
  auto exclusive = buckets.ExclusiveWriteGuard();
  bool stale = false;
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
    stale = false;
    ids.clear();
    auto session = engine->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    auto unchanged = [&](const catalog::Record& rec) -> StatusWith<bool> {
      HG_ASSIGN_OR_RETURN(auto now, buckets.FindRecord(*session, rec.id));
      return now && now->doc.size() == rec.doc.size() &&
             std::memcmp(now->doc.data(), rec.doc.data(), rec.doc.size()) == 0;
    };
    for (const auto* rec : changes.removed) {
      HG_ASSIGN_OR_RETURN(bool same, unchanged(*rec));
      if (!same) {
        stale = true;
        return Status::OK();  // rolled back
      }
      HG_RETURN_IF_ERROR(buckets.Remove(*session, rec->id, rec->doc, changes.origin));
    }
    for (const auto& [rec, doc] : changes.rewritten) {
      HG_ASSIGN_OR_RETURN(bool same, unchanged(*rec));
      if (!same) {
        stale = true;
        return Status::OK();
      }
      HG_RETURN_IF_ERROR(buckets.Update(*session, rec->id, rec->doc, doc));
    }
    for (const BsonObj& doc : changes.inserted) {
      HG_ASSIGN_OR_RETURN(int64_t id, buckets.Insert(*session, doc));
      ids.push_back(id);
    }
    if (changes.before_commit) HG_RETURN_IF_ERROR(changes.before_commit(*session));
    return wu.Commit();
  }));
  if (stale) return std::optional<std::vector<int64_t>>();
  int64_t bytes = 0;
  for (const auto* rec : changes.removed) bytes -= rec->doc.size();
  for (const auto& [rec, doc] : changes.rewritten) bytes += doc.size() - rec->doc.size();
  for (const BsonObj& doc : changes.inserted) bytes += doc.size();
  buckets.AdjustCounts(
      static_cast<int64_t>(changes.inserted.size()) - static_cast<int64_t>(changes.removed.size()),
      bytes);
  if (after_commit) after_commit();
  return std::optional<std::vector<int64_t>>(std::move(ids));
}

}  // namespace hourglass::timeseries
