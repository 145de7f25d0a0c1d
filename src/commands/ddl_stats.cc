// dbStats and collStats. Sizes come from the catalog's running counts (logical data size) and
// from the storage engine (bytes of each table's file; 0 in memory).
#include <sys/statvfs.h>

#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/ddl_commands.h"
#include "commands/rollups.h"
#include "commands/timeseries_util.h"
#include "repl/replication_coordinator.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

namespace {

// The `scale` argument: a positive number, fractional part dropped (MongoDB documents this).
StatusWith<int64_t> ParseScale(std::string_view cmd_name, const BsonObj& cmd) {
  BsonElement e = cmd["scale"];
  if (e.eoo()) return int64_t{1};
  if (!e.IsNumber()) return WrongType(cmd_name, e, "[long, int, decimal, double]");
  int64_t scale = e.NumberLong();
  if (scale < 1) return Status(ErrorCode::kBadValue, "scale has to be >= 1");
  return scale;
}

Status RunDbStats(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"scale", "freeStorage"}));
  HG_RETURN_IF_ERROR(catalog::ValidateDbName(ctx.db));
  HG_ASSIGN_OR_RETURN(int64_t scale, ParseScale("dbStats", cmd));
  HG_ASSIGN_OR_RETURN(bool free_storage, GetBool("dbStats", cmd, "freeStorage", false));

  int64_t collections = 0, views = 0, objects = 0, data_size = 0, storage_size = 0;
  int64_t indexes = 0, index_size = 0;
  for (const auto& c : ctx.service.catalog->ListCollections(ctx.db)) {
    if (c->entry().type != "collection") {
      ++views;
      continue;
    }
    ++collections;
    HG_RETURN_IF_ERROR(c->read_barrier().Run());  // buckets not yet written count too
    objects += c->NumRecords();
    data_size += c->DataSize();
    storage_size += CollectionStorageSize(ctx, *c);
    for (const auto& idx : c->entry().indexes) {
      ++indexes;
      index_size += IndexStorageSize(ctx, idx);
    }
  }
  auto scaled = [scale](int64_t v) { return static_cast<double>(v / scale); };
  reply.AppendString("db", ctx.db);
  reply.AppendInt64("collections", collections);
  reply.AppendInt64("views", views);
  reply.AppendInt64("objects", objects);
  reply.AppendDouble("avgObjSize", objects == 0 ? 0.0 : static_cast<double>(data_size) / objects);
  reply.AppendDouble("dataSize", scaled(data_size));
  reply.AppendDouble("storageSize", scaled(storage_size));
  if (free_storage) reply.AppendDouble("freeStorageSize", 0.0);
  reply.AppendInt64("indexes", indexes);
  reply.AppendDouble("indexSize", scaled(index_size));
  if (free_storage) reply.AppendDouble("indexFreeStorageSize", 0.0);
  reply.AppendDouble("totalSize", scaled(storage_size + index_size));
  if (free_storage) reply.AppendDouble("totalFreeStorageSize", 0.0);
  reply.AppendInt64("scaleFactor", scale);
  struct statvfs fs {};
  const std::string& dbpath = ctx.service.options.dbpath;
  if (!ctx.service.options.in_memory && !dbpath.empty() && statvfs(dbpath.c_str(), &fs) == 0) {
    auto total = static_cast<int64_t>(fs.f_blocks) * static_cast<int64_t>(fs.f_frsize);
    auto avail = static_cast<int64_t>(fs.f_bfree) * static_cast<int64_t>(fs.f_frsize);
    reply.AppendDouble("fsUsedSize", scaled(total - avail));
    reply.AppendDouble("fsTotalSize", scaled(total));
  }
  return Status::OK();
}

Status RunCollStats(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"scale", "verbose", "waitForLock", "numericOnly"}));
  HG_ASSIGN_OR_RETURN(auto nss, CommandNamespace(ctx, cmd));
  HG_ASSIGN_OR_RETURN(int64_t scale, ParseScale("collStats", cmd));
  HG_ASSIGN_OR_RETURN(bool verbose, GetBool("collStats", cmd, "verbose", false));
  HG_ASSIGN_OR_RETURN(bool wait, GetBool("collStats", cmd, "waitForLock", true));
  HG_ASSIGN_OR_RETURN(bool numeric_only, GetBool("collStats", cmd, "numericOnly", false));
  (void)verbose;
  (void)wait;
  (void)numeric_only;

  reply.AppendString("ns", nss.ns());
  return AppendCollStats(ctx, nss, scale, reply);
}

}  // namespace

Status AppendCollStats(CommandContext& ctx, const catalog::NamespaceString& nss, int64_t scale,
                       BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(ctx.service.Read(), nss));
  std::shared_ptr<catalog::Collection> coll = resolved.collection;
  if (!coll) {
    // MongoDB answers ok with zeroed statistics for a missing collection.
    reply.AppendInt32("size", 0);
    reply.AppendInt32("count", 0);
    reply.AppendInt32("numOrphanDocs", 0);
    reply.AppendInt32("storageSize", 0);
    reply.AppendInt32("totalSize", 0);
    reply.AppendInt32("nindexes", 0);
    reply.AppendInt32("totalIndexSize", 0);
    reply.AppendObject("indexDetails", BsonObj());
    reply.AppendObject("indexSizes", BsonObj());
    reply.AppendInt32("scaleFactor", static_cast<int32_t>(scale));
    return Status::OK();
  }
  if (coll->entry().type == "view") {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Namespace " + nss.ns() + " is a view, not a collection");
  }
  const bool is_timeseries = coll->entry().type == "timeseries";
  const BsonObj view_options = coll->entry().options;
  if (is_timeseries) {
    // The statistics of a time-series collection are its bucket collection's, plus the bucket
    // catalog's counters for it; measurements are not counted.
    HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
    coll = resolved.timeseries->buckets;
  }
  HG_RETURN_IF_ERROR(coll->read_barrier().Run());  // buckets not yet written count too
  int64_t count = coll->NumRecords();
  int64_t data_size = coll->DataSize();
  int64_t storage_size = CollectionStorageSize(ctx, *coll);
  AppendNumber(reply, "size", data_size / scale);
  if (is_timeseries) {
    size_t t = reply.OpenObject("timeseries");
    reply.AppendString("bucketsNs", coll->ns());
    AppendNumber(reply, "bucketCount", count);
    if (count > 0) AppendNumber(reply, "avgBucketSize", data_size / count);
    if (ctx.service.bucket_catalog) {
      ctx.service.bucket_catalog->AppendCollectionStats(coll->entry().uuid, reply);
    }
    if (ctx.service.rollups && !view_options["rollupOf"].eoo()) {
      HG_RETURN_IF_ERROR(ctx.service.rollups->AppendStats(nss, reply));
    }
    reply.Close(t);
  } else {
    AppendNumber(reply, "count", count);
    if (count > 0) reply.AppendInt32("avgObjSize", static_cast<int32_t>(data_size / count));
  }
  reply.AppendInt32("numOrphanDocs", 0);
  AppendNumber(reply, "storageSize", storage_size / scale);
  AppendNumber(reply, "freeStorageSize", 0);
  // The oplog of a replica set member is the one capped collection (kept under its size).
  if (ctx.service.repl != nullptr && nss.db == "local" && nss.coll == "oplog.rs") {
    reply.AppendBool("capped", true);
    AppendNumber(reply, "maxSize", ctx.service.repl->OplogMaxBytes() / scale);
  } else {
    reply.AppendBool("capped", false);
  }
  // The record table's WiredTiger section: what drivers and tools read its compressor from.
  if (auto creation = ctx.service.engine->TableCreationString(coll->ident()); creation.ok()) {
    size_t wt = reply.OpenObject("wiredTiger");
    size_t md = reply.OpenObject("metadata");
    reply.AppendInt32("formatVersion", 1);
    reply.Close(md);
    reply.AppendString("creationString", creation.value());
    reply.AppendString("type", "file");
    reply.AppendString("uri", "statistics:table:" + coll->ident());
    reply.Close(wt);
  }
  const auto& indexes = coll->entry().indexes;
  reply.AppendInt32("nindexes", static_cast<int32_t>(indexes.size()));
  reply.AppendObject("indexDetails", BsonObj());
  reply.AppendArray("indexBuilds", BsonObj());
  BsonBuilder sizes;
  int64_t index_total = 0;
  for (const auto& idx : indexes) {
    int64_t size = IndexStorageSize(ctx, idx);
    index_total += size;
    AppendNumber(sizes, idx.name(), size / scale);
  }
  AppendNumber(reply, "totalIndexSize", index_total / scale);
  reply.AppendObject("indexSizes", sizes.Obj());
  AppendNumber(reply, "totalSize", (storage_size + index_total) / scale);
  reply.AppendInt32("scaleFactor", static_cast<int32_t>(scale));
  return Status::OK();
}

std::unique_ptr<Command> MakeDbStatsCommand() {
  return std::make_unique<DdlCommand>("dbStats", false, "storage statistics of a database",
                                      RunDbStats);
}

std::unique_ptr<Command> MakeCollStatsCommand() {
  return std::make_unique<DdlCommand>("collStats", false, "storage statistics of a collection",
                                      RunCollStats);
}

}  // namespace hourglass::commands
