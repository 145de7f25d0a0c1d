#include <cstdlib>
#include <memory>

#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/ddl_commands.h"
#include "pipeline/pipeline.h"
#include "storage/kv_engine.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

void AppendNumber(BsonBuilder& b, std::string_view name, int64_t n) {
  constexpr int64_t kMaxInt = int64_t{1} << 30;
  if (n > -kMaxInt && n < kMaxInt) {
    b.AppendInt32(name, static_cast<int32_t>(n));
  } else {
    b.AppendInt64(name, n);
  }
}

StatusWith<catalog::NamespaceString> CommandNamespace(const CommandContext& ctx,
                                                      const BsonObj& cmd) {
  HG_ASSIGN_OR_RETURN(std::string coll, GetCollectionName(cmd, ctx.db));
  catalog::NamespaceString nss{ctx.db, std::move(coll)};
  HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
  return nss;
}

StatusWith<int64_t> ParseCursorBatchSize(std::string_view cmd_name, const BsonObj& cmd) {
  HG_ASSIGN_OR_RETURN(auto cursor, GetObject(cmd_name, cmd, "cursor"));
  if (!cursor) return int64_t{-1};
  std::string nested = std::string(cmd_name) + ".cursor";
  for (BsonElement e : *cursor) {
    if (e.FieldName() != "batchSize") return UnknownField(nested, e.FieldName());
  }
  HG_ASSIGN_OR_RETURN(auto batch_size, GetInt64(nested, *cursor, "batchSize"));
  if (!batch_size) return int64_t{-1};
  if (*batch_size < 0) {
    return Status(ErrorCode::kBadValue, "BatchSize value must be non-negative, but received: " +
                                            std::to_string(*batch_size));
  }
  return *batch_size;
}

Status ReplyWithDocuments(CommandContext& ctx, const std::string& ns, std::vector<BsonObj> docs,
                          int64_t batch_size, BsonBuilder& reply) {
  auto stream = std::make_unique<pipeline::VectorDocumentStream>(std::move(docs));
  // Without a cursor manager (tests of single commands) nothing can wait for a getMore.
  bool single_batch = batch_size < 0 || ctx.service.cursors == nullptr;
  return ReplyWithCursor(ctx, ns, std::move(stream), single_batch ? 0 : batch_size, single_batch,
                         reply);
}

int64_t CollectionStorageSize(const CommandContext& ctx, const catalog::Collection& c) {
  if (c.ident().empty() || ctx.service.engine == nullptr) return 0;
  return ctx.service.engine->TableSizeBytes(c.ident());
}

int64_t IndexStorageSize(const CommandContext& ctx, const catalog::IndexEntry& index) {
  if (index.ident.empty() || ctx.service.engine == nullptr) return 0;
  return ctx.service.engine->TableSizeBytes(index.ident);
}

}  // namespace hourglass::commands
