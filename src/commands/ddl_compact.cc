// compact: gives the free space of a collection's files (its records and its indexes) back to the
// file system, as mongod's compact does with WiredTiger's, online. A time-series collection
// compacts its bucket collection.
#include "base/interrupt.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "exec/namespace_resolver.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

namespace {

Status RunCompact(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"force", "freeSpaceTargetMB", "dryRun", "paddingFactor",
                                            "paddingBytes", "preservePadding"}));
  HG_ASSIGN_OR_RETURN(bool force, GetBool("compact", cmd, "force", false));
  (void)force;  // standalone servers compact whatever their state, as mongod 7.0
  BsonElement target = cmd.FirstElement();
  if (target.type() != bson::BsonType::kString) return WrongType("compact", target, "string");
  if (cmd["dryRun"].Truthy()) {
    return Status(ErrorCode::kCommandNotSupported, "compact's dryRun is not supported yet");
  }
  catalog::NamespaceString nss{ctx.db, std::string(target.Str())};
  HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
  HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(ctx.service.Read(), nss));
  std::shared_ptr<catalog::Collection> coll = resolved.collection;
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "collection does not exist");
  if (coll->entry().type == "view") {
    return Status(ErrorCode::kCommandNotSupportedOnView, "can't compact a view");
  }
  if (resolved.timeseries) coll = resolved.timeseries->buckets;
  if (coll->IsView()) return Status(ErrorCode::kNamespaceNotFound, "collection does not exist");
  int64_t freed = 0;
  std::vector<std::string> idents = {coll->ident()};
  for (const catalog::IndexEntry& index : coll->entry().indexes) idents.push_back(index.ident);
  for (const std::string& ident : idents) {
    HG_RETURN_IF_ERROR(CheckForInterrupt());
    HG_ASSIGN_OR_RETURN(int64_t bytes, ctx.service.engine->CompactTable(ident));
    freed += bytes;
  }
  reply.AppendInt64("bytesFreed", freed);
  return Status::OK();
}

}  // namespace

std::unique_ptr<Command> MakeCompactCommand() {
  return std::make_unique<FnCommand>(
      "compact", FnCommand::Options{.help = "compact a collection's files"}, RunCompact);
}

}  // namespace hourglass::commands
