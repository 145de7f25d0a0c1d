// drop, dropDatabase and renameCollection.
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/ddl_commands.h"
#include "commands/rollups.h"
#include "commands/timeseries_util.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// The bucket catalog forgets a bucket collection being dropped, with its unwritten measurements.
Status ForgetBuckets(CommandContext& ctx, const std::string& uuid) {
  auto session = ctx.service.engine->NewSession();
  return ctx.service.bucket_catalog->DropCollection(uuid, *session);
}

// Drops the bucket collection of the time-series collection `nss`, with what the bucket catalog
// holds of it, if there is one; whether it did.
StatusWith<bool> DropBucketsOf(CommandContext& ctx, const catalog::NamespaceString& nss) {
  catalog::NamespaceString buckets = exec::BucketsNamespace(nss);
  auto b = ctx.service.catalog->Lookup(buckets);
  if (!b || b->IsView()) return false;
  if (ctx.service.bucket_catalog) HG_RETURN_IF_ERROR(ForgetBuckets(ctx, b->entry().uuid));
  Status st = ctx.service.catalog->DropCollection(buckets);
  if (st.code() == ErrorCode::kNamespaceNotFound) return false;  // dropped concurrently
  HG_RETURN_IF_ERROR(st);
  return true;
}

Status RunDrop(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"collectionUUID"}));
  HG_ASSIGN_OR_RETURN(auto nss, CommandNamespace(ctx, cmd));
  catalog::Catalog& catalog = *ctx.service.catalog;
  auto coll = catalog.Lookup(nss);
  if (!coll) {
    // Since MongoDB 7.0 dropping a missing collection succeeds with a bare {ok: 1}. When only
    // X's bucket collection exists (restored alone), MongoDB drops it with X.
    if (nss.IsTimeseriesBuckets()) return Status::OK();
    HG_ASSIGN_OR_RETURN(bool dropped, DropBucketsOf(ctx, nss));
    if (dropped) reply.AppendString("ns", nss.ns());
    return Status::OK();
  }
  if (coll->entry().type == "timeseries") {
    // The view and its buckets go together.
    HG_RETURN_IF_ERROR(DropBucketsOf(ctx, nss).status());
    HG_RETURN_IF_ERROR(RemoveViewDefinition(ctx, nss));
  } else if (nss.IsTimeseriesBuckets() && ctx.service.bucket_catalog) {
    HG_RETURN_IF_ERROR(ForgetBuckets(ctx, coll->entry().uuid));
  }
  // A dropped rollup no longer needs its source's changes, nor a rollup those of a dropped
  // source.
  std::vector<std::string> rollups;
  if (ctx.service.rollups) {
    HG_ASSIGN_OR_RETURN(rollups, ctx.service.rollups->AffectedBy(nss.db, nss.coll));
  }
  Status st = catalog.DropCollection(nss);
  if (st.code() == ErrorCode::kNamespaceNotFound) return Status::OK();  // dropped concurrently
  HG_RETURN_IF_ERROR(st);
  if (ctx.service.rollups) {
    HG_RETURN_IF_ERROR(ctx.service.rollups->Refresh());
    HG_RETURN_IF_ERROR(ctx.service.rollups->Forget(rollups));
  }
  if (coll->entry().type == "view") HG_RETURN_IF_ERROR(RemoveViewDefinition(ctx, nss));
  if (coll->entry().type == "collection") {
    reply.AppendInt32("nIndexesWas", static_cast<int32_t>(coll->entry().indexes.size()));
  }
  reply.AppendString("ns", nss.ns());
  return Status::OK();
}

Status RunDropDatabase(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {}));
  BsonElement param = cmd.FirstElement();
  bool is_one = (param.IsNumber() && param.NumberDouble() == 1.0) ||
                (param.type() == BsonType::kBool && param.Bool());
  if (!is_one) {
    return Status(ErrorCode::kIllegalOperation, "have to pass 1 as db parameter");
  }
  HG_RETURN_IF_ERROR(catalog::ValidateDbName(ctx.db));
  catalog::Catalog& catalog = *ctx.service.catalog;
  const auto colls = catalog.ListCollections(ctx.db);
  if (ctx.service.bucket_catalog) {
    for (const auto& c : colls) {
      if (c->nss().IsTimeseriesBuckets()) HG_RETURN_IF_ERROR(ForgetBuckets(ctx, c->entry().uuid));
    }
  }
  bool existed = !colls.empty();
  std::vector<std::string> rollups;
  if (ctx.service.rollups) {
    HG_ASSIGN_OR_RETURN(rollups, ctx.service.rollups->AffectedBy(ctx.db, std::nullopt));
  }
  HG_RETURN_IF_ERROR(catalog.DropDatabase(ctx.db));
  if (ctx.service.rollups) {
    HG_RETURN_IF_ERROR(ctx.service.rollups->Refresh());
    HG_RETURN_IF_ERROR(ctx.service.rollups->Forget(rollups));
  }
  if (existed) reply.AppendString("dropped", ctx.db);
  return Status::OK();
}

StatusWith<catalog::NamespaceString> ParseRenameNamespace(std::string_view full,
                                                          std::string_view which) {
  auto nss = catalog::ParseNamespace(full);
  if (!nss.ok() || nss.value().coll.empty() || !catalog::ValidateCollectionName(nss.value()).ok()) {
    return Status(ErrorCode::kInvalidNamespace,
                  "Invalid " + std::string(which) + " namespace: " + std::string(full));
  }
  return nss;
}

Status RunRenameCollection(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"to", "dropTarget", "stayTemp", "collectionUUID"}));
  BsonElement source = cmd.FirstElement();
  if (source.type() != BsonType::kString) return WrongType("renameCollection", source, "string");
  HG_ASSIGN_OR_RETURN(auto target, GetString("renameCollection", cmd, "to"));
  if (!target) {
    return MissingField("renameCollection", "to");
  }
  HG_ASSIGN_OR_RETURN(bool drop_target, GetBool("renameCollection", cmd, "dropTarget", false));
  HG_ASSIGN_OR_RETURN(bool stay_temp, GetBool("renameCollection", cmd, "stayTemp", false));
  (void)stay_temp;  // no temporary collections exist here

  HG_ASSIGN_OR_RETURN(auto from, ParseRenameNamespace(source.Str(), "source"));
  HG_ASSIGN_OR_RETURN(auto to, ParseRenameNamespace(*target, "target"));
  if (from.ns() == to.ns()) {
    return Status(ErrorCode::kIllegalOperation, "Can't rename a collection to itself");
  }
  catalog::Catalog& catalog = *ctx.service.catalog;
  auto src = catalog.Lookup(from);
  if (!src) {
    return Status(ErrorCode::kNamespaceNotFound,
                  "Source collection " + from.ns() + " does not exist");
  }
  if (src->entry().type == "view" || src->entry().type == "timeseries") {
    // A time-series collection is a view on its buckets, and views cannot be renamed.
    return Status(ErrorCode::kCommandNotSupportedOnView, "cannot rename view: " + from.ns());
  }
  if (from.IsTimeseriesBuckets()) {
    return Status(ErrorCode::kIllegalOperation, "Renaming a timeseries collection is not allowed");
  }
  if (to.IsTimeseriesBuckets()) {
    return Status(ErrorCode::kIllegalOperation, "Renaming to a bucket namespace is not allowed");
  }
  if (auto dst = catalog.Lookup(to); dst && dst->entry().type != "collection" && drop_target) {
    return Status(ErrorCode::kCommandNotSupported,
                  "dropping a view or time-series collection through renameCollection is not "
                  "supported");
  }
  return catalog.RenameCollection(from, to, drop_target);
}

}  // namespace

std::unique_ptr<Command> MakeDropCommand() {
  return std::make_unique<DdlCommand>("drop", false, "drop a collection", RunDrop);
}

std::unique_ptr<Command> MakeDropDatabaseCommand() {
  return std::make_unique<DdlCommand>("dropDatabase", false, "drop (delete) this database",
                                      RunDropDatabase);
}

std::unique_ptr<Command> MakeRenameCollectionCommand() {
  return std::make_unique<DdlCommand>("renameCollection", true,
                                      "renames a collection, possibly into another database",
                                      RunRenameCollection);
}

}  // namespace hourglass::commands
