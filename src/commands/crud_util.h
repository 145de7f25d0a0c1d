// Pieces shared by the CRUD and aggregation commands: the expression context of `let`, the
// allowDiskUse and hint options, answering with a cursor, preparing documents for insertion
// (MongoDB's checks, generated _id), and honouring write concern. The read itself is built by
// exec/read_stream.h.
#pragma once

#include <memory>
#include <optional>

#include "catalog/catalog.h"
#include "commands/command.h"
#include "exec/read_stream.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"
#include "query/projection.h"

namespace hourglass::commands {

// The expression context of a command that takes a `let` option (find, aggregate, update,
// delete, findAndModify): $$NOW is the current time, and the variables are the command's `let`
// evaluated once (pipeline::ParseCommandLet: TypeMismatch 14, FailedToParse 9, 4738901,
// 4890500, or the expression's own error).
StatusWith<query::ExpressionContext> CommandExpressionContext(const bson::BsonObj& cmd);

// The command's allowDiskUse option, if given (TypeMismatch when not a boolean or number).
StatusWith<std::optional<bool>> GetAllowDiskUse(std::string_view cmd_name,
                                                const bson::BsonObj& cmd);

// {hint: <value>} when `cmd` (or a write statement) has a hint, else the empty document.
bson::BsonObj HintOf(const bson::BsonObj& cmd);

// Sends the first batch and, unless the stream is exhausted or single_batch, registers a cursor.
Status ReplyWithCursor(CommandContext& ctx, const std::string& ns,
                       std::unique_ptr<pipeline::DocumentStream> stream, int64_t first_batch,
                       bool single_batch, bson::BsonBuilder& reply, bool no_timeout = false);

// Checks a document for insertion (size, `_id` type, top-level `$` names) and returns it with an
// `_id` first (generated as an ObjectId when absent).
StatusWith<bson::BsonObj> PrepareInsertDocument(const bson::BsonObj& doc);

// After a successful write: honours writeConcern.j by waiting for the journal. BadValue for a
// malformed writeConcern.
Status WaitForWriteConcern(CommandContext& ctx, const bson::BsonObj& cmd);

}  // namespace hourglass::commands
