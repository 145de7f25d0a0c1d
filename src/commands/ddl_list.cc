// listCollections, listDatabases and listIndexes.
#include <optional>

#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/ddl_commands.h"
#include "commands/timeseries_util.h"
#include "query/matcher.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonObj;

namespace {

StatusWith<std::optional<query::Matcher>> ParseFilter(std::string_view cmd_name,
                                                      const BsonObj& cmd) {
  HG_ASSIGN_OR_RETURN(auto filter, GetObject(cmd_name, cmd, "filter"));
  if (!filter) return std::optional<query::Matcher>();
  HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(*filter));
  return std::optional<query::Matcher>(std::move(matcher));
}

// The listCollections entry of a collection, view or time-series collection.
BsonObj CollectionInfo(const catalog::Collection& c) {
  const catalog::CollectionEntry& e = c.entry();
  BsonBuilder b;
  b.AppendString("name", e.nss.coll);
  b.AppendString("type", e.type);
  b.AppendObject("options", e.options);
  size_t info = b.OpenObject("info");
  b.AppendBool("readOnly", e.type == "view");
  // Views and time-series collections (views on their buckets) have no UUID of their own.
  if (e.type == "collection") b.AppendBinData("uuid", 4, e.uuid);
  b.Close(info);
  if (e.type == "collection" && !c.ClusteredIndexSpec()) {
    for (const auto& idx : e.indexes) {
      if (idx.name() == "_id_") b.AppendObject("idIndex", idx.spec);
    }
  }
  return b.Obj();
}

Status RunListCollections(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(
      cmd, {"filter", "nameOnly", "authorizedCollections", "cursor", "includePendingDrops"}));
  HG_RETURN_IF_ERROR(catalog::ValidateDbName(ctx.db));
  HG_ASSIGN_OR_RETURN(auto matcher, ParseFilter("listCollections", cmd));
  HG_ASSIGN_OR_RETURN(bool name_only, GetBool("listCollections", cmd, "nameOnly", false));
  HG_ASSIGN_OR_RETURN(bool authorized,
                      GetBool("listCollections", cmd, "authorizedCollections", false));
  HG_ASSIGN_OR_RETURN(bool pending, GetBool("listCollections", cmd, "includePendingDrops", false));
  (void)authorized;  // no access control: every collection is authorized
  (void)pending;     // drops are never pending in the catalog
  HG_ASSIGN_OR_RETURN(int64_t batch_size, ParseCursorBatchSize("listCollections", cmd));

  std::vector<BsonObj> docs;
  for (const auto& c : ctx.service.catalog->ListCollections(ctx.db)) {
    BsonObj info = CollectionInfo(*c);
    if (matcher && !matcher->Matches(info)) continue;
    if (name_only) {
      BsonBuilder b;
      b.AppendElement(info["name"]);
      b.AppendElement(info["type"]);
      info = b.Obj();
    }
    docs.push_back(std::move(info));
  }
  return ReplyWithDocuments(ctx, ctx.db + ".$cmd.listCollections", std::move(docs), batch_size,
                            reply);
}

Status RunListDatabases(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"filter", "nameOnly", "authorizedDatabases"}));
  HG_ASSIGN_OR_RETURN(auto matcher, ParseFilter("listDatabases", cmd));
  HG_ASSIGN_OR_RETURN(bool name_only, GetBool("listDatabases", cmd, "nameOnly", false));
  // With --auth, a user without the listDatabases action sees the databases it holds privileges
  // on (authorizedDatabases: true, the default for such a user), as in MongoDB.
  HG_ASSIGN_OR_RETURN(bool authorized, GetBool("listDatabases", cmd, "authorizedDatabases", false));
  const bool may_list_all =
      !ctx.service.options.auth ||
      ctx.client.auth.Allows(auth::ResourceTarget::Cluster(), auth::ActionType::kListDatabases);
  const bool given = !cmd["authorizedDatabases"].eoo();
  if (given && !authorized && !may_list_all) {
    return Status(ErrorCode::kUnauthorized,
                  "not authorized on admin to execute command " + cmd.ToJson());
  }
  const bool only_authorized = ctx.service.options.auth && (given ? authorized : !may_list_all);

  catalog::Catalog& catalog = *ctx.service.catalog;
  int64_t total_size = 0;
  BsonArrayBuilder databases;
  for (const std::string& db : catalog.ListDatabases()) {
    if (only_authorized && !ctx.client.auth.privileges().HasAnyOnDatabase(db)) continue;
    int64_t size = 0;
    bool empty = true;
    for (const auto& c : catalog.ListCollections(db)) {
      empty = false;
      size += CollectionStorageSize(ctx, *c);
      for (const auto& idx : c->entry().indexes) size += IndexStorageSize(ctx, idx);
    }
    BsonBuilder b;
    b.AppendString("name", db);
    if (!name_only) {
      b.AppendInt64("sizeOnDisk", size);
      b.AppendBool("empty", empty);
    }
    BsonObj entry = b.Obj();
    if (matcher && !matcher->Matches(entry)) continue;
    total_size += size;
    databases.AppendObject(entry);
  }
  reply.AppendArray("databases", databases.Obj());
  if (!name_only) {
    reply.AppendInt64("totalSize", total_size);
    reply.AppendInt64("totalSizeMb", total_size / (1024 * 1024));
  }
  return Status::OK();
}

Status RunListIndexes(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(
      CheckKnownFields(cmd, {"cursor", "includeBuildUUIDs", "includeIndexBuildInfo"}));
  HG_ASSIGN_OR_RETURN(auto nss, CommandNamespace(ctx, cmd));
  HG_ASSIGN_OR_RETURN(bool build_uuids, GetBool("listIndexes", cmd, "includeBuildUUIDs", false));
  HG_ASSIGN_OR_RETURN(bool build_info, GetBool("listIndexes", cmd, "includeIndexBuildInfo", false));
  if (build_uuids && build_info) {
    return Status(ErrorCode::kInvalidOptions,
                  "The includeBuildUUIDs flag and includeIndexBuildInfo flag cannot both be set "
                  "to true");
  }
  HG_ASSIGN_OR_RETURN(int64_t batch_size, ParseCursorBatchSize("listIndexes", cmd));
  HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(ctx.service.Read(), nss));
  const std::shared_ptr<catalog::Collection>& coll = resolved.collection;
  if (!coll) {
    return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
  }
  if (coll->entry().type == "view") {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Namespace " + nss.ns() + " is a view, not a collection");
  }
  std::vector<BsonObj> docs;
  std::vector<catalog::IndexEntry> indexes = coll->entry().indexes;
  // Indexes still being built are not listed (MongoDB lists them only with includeBuildUUIDs).
  std::erase_if(indexes, [](const catalog::IndexEntry& idx) { return !idx.ready; });
  if (coll->entry().type == "timeseries") {
    // The view shows its bucket collection's indexes in the user's terms (spec 7.2).
    indexes.clear();
    HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
    for (auto& [user, idx] : UserViewOfIndexes(*resolved.timeseries)) {
      indexes.push_back({user, idx->ident});
    }
  }
  if (const auto& clustered = coll->ClusteredIndexSpec()) {
    // The `_id_` index that holds a clustered collection's order is its clustered index.
    for (auto& idx : indexes) {
      if (idx.name() == "_id_") idx.spec = *clustered;
    }
  }
  {
    for (const auto& idx : indexes) {
      if (build_info) {
        // Ready indexes are reported as {spec: {...}} under includeIndexBuildInfo.
        BsonBuilder b;
        b.AppendObject("spec", idx.spec);
        docs.push_back(b.Obj());
      } else {
        docs.push_back(idx.spec);
      }
    }
  }
  return ReplyWithDocuments(ctx, nss.ns(), std::move(docs), batch_size, reply);
}

}  // namespace

std::unique_ptr<Command> MakeListCollectionsCommand() {
  return std::make_unique<DdlCommand>("listCollections", false,
                                      "lists the collections and views of a database",
                                      RunListCollections);
}

std::unique_ptr<Command> MakeListDatabasesCommand() {
  return std::make_unique<DdlCommand>("listDatabases", true, "lists the databases",
                                      RunListDatabases);
}

std::unique_ptr<Command> MakeListIndexesCommand() {
  return std::make_unique<DdlCommand>("listIndexes", false, "lists the indexes of a collection",
                                      RunListIndexes);
}

}  // namespace hourglass::commands
