#include "commands/write_requests.h"

#include <initializer_list>

#include "commands/command_util.h"
#include "commands/crud_util.h"

namespace hourglass::commands {

using bson::BsonObj;

namespace {

// MongoDB's limit on the statements of one insert/update/delete (maxWriteBatchSize).
Status CheckWriteBatchSize(int n) {
  if (n < 1 || n > 100000) {
    return Status(ErrorCode::kInvalidLength,
                  "Write batch sizes must be between 1 and 100000. Got " + std::to_string(n) +
                      " operations.");
  }
  return Status::OK();
}

// The fields of every write command, in the order they have always been checked: the command's
// own fields (`known`, besides the generic ones), the statement array `field`, `ordered`, the
// batch size. The collection name is left to the caller: each command reads it at its own point.
Status ParseWriteCommandBase(const CommandRequest& request, std::string_view command,
                             std::string_view field, std::initializer_list<std::string_view> known,
                             WriteCommandBase* out) {
  // ParseOpMsg has checked this for every request off the wire; requests built otherwise get the
  // same error rather than a merged document with duplicate fields.
  HG_RETURN_IF_ERROR(wire::CheckSequenceIdentifiers(request.body, request.sequences));
  out->cmd = request.Merged(field);
  HG_RETURN_IF_ERROR(CheckKnownFields(out->cmd, known));
  HG_ASSIGN_OR_RETURN(auto statements, DocumentArray::Find(request, command, field));
  if (!statements) return MissingField(command, field);
  out->statements = *statements;
  HG_ASSIGN_OR_RETURN(out->ordered, GetBool(command, out->cmd, "ordered", true));
  return CheckWriteBatchSize(out->statements.size());
}

Status ParseCollectionName(std::string_view db, WriteCommandBase* out) {
  HG_ASSIGN_OR_RETURN(std::string name, GetCollectionName(out->cmd, db));
  out->nss = catalog::NamespaceString{std::string(db), std::move(name)};
  return Status::OK();
}

}  // namespace

StatusWith<UpdateStatement> ParseUpdateStatement(const DocumentArray::Entry& entry) {
  HG_ASSIGN_OR_RETURN(BsonObj doc, entry.Document("update.updates"));
  HG_RETURN_IF_ERROR(CheckKnownSubFields(
      "update.updates", doc,
      {"q", "u", "upsert", "multi", "arrayFilters", "hint", "collation", "c", "upsertSupplied"}));
  UpdateStatement stmt;
  HG_ASSIGN_OR_RETURN(stmt.collator, CheckHintAndGetCollation("update.updates", doc));
  HG_ASSIGN_OR_RETURN(auto q, GetObject("update.updates", doc, "q"));
  if (!q) return MissingField("update.updates", "q");
  stmt.q = *q;
  stmt.u = doc["u"];
  if (stmt.u.eoo()) return MissingField("update.updates", "u");
  HG_ASSIGN_OR_RETURN(stmt.multi, GetBool("update.updates", doc, "multi", false));
  HG_ASSIGN_OR_RETURN(stmt.upsert, GetBool("update.updates", doc, "upsert", false));
  HG_ASSIGN_OR_RETURN(auto af, GetArray("update.updates", doc, "arrayFilters"));
  stmt.array_filters = af.value_or(BsonObj());
  stmt.hint = doc["hint"];
  stmt.has_collation = doc.HasField("collation");
  return stmt;
}

StatusWith<DeleteStatement> ParseDeleteStatement(const DocumentArray::Entry& entry) {
  HG_ASSIGN_OR_RETURN(BsonObj doc, entry.Document("delete.deletes"));
  HG_RETURN_IF_ERROR(
      CheckKnownSubFields("delete.deletes", doc, {"q", "limit", "hint", "collation"}));
  HG_ASSIGN_OR_RETURN(auto collator, CheckHintAndGetCollation("delete.deletes", doc));
  HG_ASSIGN_OR_RETURN(auto q, GetObject("delete.deletes", doc, "q"));
  if (!q) return MissingField("delete.deletes", "q");
  HG_ASSIGN_OR_RETURN(auto limit, GetInt64("delete.deletes", doc, "limit"));
  if (!limit) return MissingField("delete.deletes", "limit");
  if (*limit != 0 && *limit != 1) {
    return Status(
        ErrorCode::kFailedToParse,
        "The limit field in delete objects must be 0 or 1. Got " + std::to_string(*limit));
  }
  return DeleteStatement{*q, *limit == 0, doc["hint"], std::move(collator),
                         doc.HasField("collation")};
}

StatusWith<InsertRequest> ParseInsertRequest(const CommandRequest& request, std::string_view db) {
  InsertRequest r;
  HG_RETURN_IF_ERROR(ParseWriteCommandBase(
      request, "insert", "documents",
      {"documents", "ordered", "bypassDocumentValidation", "stmtId", "stmtIds"}, &r));
  HG_RETURN_IF_ERROR(ParseCollectionName(db, &r));
  return r;
}

StatusWith<UpdateRequest> ParseUpdateRequest(const CommandRequest& request, std::string_view db) {
  UpdateRequest r;
  HG_RETURN_IF_ERROR(ParseWriteCommandBase(
      request, "update", "updates",
      {"updates", "ordered", "bypassDocumentValidation", "let", "stmtId", "stmtIds"}, &r));
  HG_ASSIGN_OR_RETURN(r.expr_ctx, CommandExpressionContext(r.cmd));
  // Every statement is parsed before anything runs, as MongoDB's IDL does: a malformed statement
  // fails the command; only execution errors become writeErrors.
  r.updates.reserve(static_cast<size_t>(r.statements.size()));
  for (DocumentArray::Entry e : r.statements) {
    HG_ASSIGN_OR_RETURN(UpdateStatement stmt, ParseUpdateStatement(e));
    r.updates.push_back(std::move(stmt));
  }
  HG_RETURN_IF_ERROR(ParseCollectionName(db, &r));
  return r;
}

StatusWith<DeleteRequest> ParseDeleteRequest(
    const CommandRequest& request, std::string_view db,
    const std::function<Status(const catalog::NamespaceString&)>& check_target) {
  DeleteRequest r;
  HG_RETURN_IF_ERROR(ParseWriteCommandBase(request, "delete", "deletes",
                                           {"deletes", "ordered", "let", "stmtId", "stmtIds"}, &r));
  HG_ASSIGN_OR_RETURN(r.expr_ctx, CommandExpressionContext(r.cmd));
  HG_RETURN_IF_ERROR(ParseCollectionName(db, &r));
  HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(r.nss));
  if (check_target) HG_RETURN_IF_ERROR(check_target(r.nss));
  r.deletes.reserve(static_cast<size_t>(r.statements.size()));
  for (DocumentArray::Entry e : r.statements) {
    HG_ASSIGN_OR_RETURN(DeleteStatement stmt, ParseDeleteStatement(e));
    r.deletes.push_back(std::move(stmt));
  }
  return r;
}

}  // namespace hourglass::commands
