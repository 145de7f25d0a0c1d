#include "commands/timeseries_write.h"

#include <unordered_map>

#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "storage/kv_engine.h"

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

StatusWith<InsertOutcome> InsertMeasurements(CommandContext& ctx,
                                             const timeseries::TimeseriesCollection& coll,
                                             const BsonObj& documents, bool ordered) {
  timeseries::BucketCatalog& catalog = *ctx.service.bucket_catalog;
  auto session = ctx.service.engine->NewSession();
  InsertOutcome out;
  const std::string& time_field = coll.options.time_field;
  // Each staged measurement's batch, in document order; a batch is committed once.
  std::vector<std::pair<int, std::shared_ptr<timeseries::WriteBatch>>> staged;
  std::vector<BsonObj> keep_alive;
  keep_alive.reserve(static_cast<size_t>(documents.NumFields()));
  int index = 0;
  for (BsonElement e : documents) {
    if (e.type() != BsonType::kObject) return WrongType("insert", e, "object");
    Status st = Status::OK();
    auto prepared = PrepareInsertDocument(e.Obj());
    if (!prepared.ok()) {
      st = prepared.status();
    } else if (prepared.value()[time_field].type() != BsonType::kDate) {
      st = Status(
          ErrorCode::kBadValue,
          "'" + time_field + "' must be present and contain a valid BSON UTC datetime value");
    } else {
      keep_alive.push_back(std::move(prepared).value());
      auto batch = catalog.Insert(coll, *session, keep_alive.back());
      if (batch.ok()) {
        staged.emplace_back(index, std::move(batch).value());
      } else {
        st = batch.status();
      }
    }
    if (!st.ok()) {
      out.errors.emplace_back(index, st);
      if (ordered) break;
    }
    ++index;
  }
  // Commit every batch, even after an error: other writers may have measurements in them.
  std::unordered_map<timeseries::WriteBatch*, Status> results;
  for (const auto& [i, batch] : staged) {
    if (results.count(batch.get())) continue;
    results.emplace(batch.get(), catalog.Commit(coll, *session, batch));
  }
  for (const auto& [i, batch] : staged) {
    const Status& st = results.at(batch.get());
    if (st.ok()) {
      ++out.n;
    } else {
      out.errors.emplace_back(i, st);
    }
  }
  std::sort(out.errors.begin(), out.errors.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  if (ordered && out.errors.size() > 1) out.errors.erase(out.errors.begin() + 1, out.errors.end());
  return out;
}

}  // namespace hourglass::commands
