// Pieces shared by the CRUD and aggregation commands: building the read stream of a find
// (scan → sort → skip → limit → projection), answering with a cursor, preparing documents for
// insertion (MongoDB's checks, generated _id), and honouring write concern.
#pragma once

#include <memory>
#include <optional>

#include "catalog/catalog.h"
#include "commands/command.h"
#include "exec/multi_planner.h"
#include "exec/query_planner.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"
#include "query/projection.h"

namespace hourglass::exec {
class CollectionScan;
class IndexScan;
}  // namespace hourglass::exec

namespace hourglass::commands {

struct ReadPlan {
  std::optional<query::Matcher> filter;
  bson::BsonObj filter_spec;  // the filter document `filter` was parsed from`
  bson::BsonObj sort;
  int64_t skip = 0;
  int64_t limit = 0;  // 0 = none
  std::optional<query::Projection> projection;
  bson::BsonObj hint;                  // {hint: <name or key pattern>}, or empty
  std::optional<bool> allow_disk_use;  // the command's allowDiskUse, for the sort
  bool count_index_use = true;         // $indexStats: false for explain
  // The projection as given (time-series reads decode only the columns it needs; covered plans,
  // query_planner.h CoveredFields), and whether only the number of matches matters (count: then
  // an exact index scan fetches nothing).
  bson::BsonObj projection_spec;
  bool count_only = false;
  // find's min/max (index key bounds of the hinted index), returnKey and showRecordId.
  bson::BsonObj min, max;
  bool return_key = false;
  bool show_record_id = false;
  // What `filter` may read besides the documents ($$NOW, the command's `let`); a time-series
  // read parses filter_spec again with it.
  query::ExpressionContext expr_ctx = query::ExpressionContext::Now();
};

// The expression context of a command that takes a `let` option (find, aggregate, update,
// delete, findAndModify): $$NOW is the current time, and the variables are the command's `let`
// evaluated once (pipeline::ParseCommandLet: TypeMismatch 14, FailedToParse 9, 4738901,
// 4890500, or the expression's own error).
StatusWith<query::ExpressionContext> CommandExpressionContext(const bson::BsonObj& cmd);

// What BuildReadStream chose, for explain. The scan pointers borrow the returned stream.
struct ReadExecInfo {
  std::optional<exec::PlanChoice> choice;  // unset for time-series and missing collections
  const exec::CollectionScan* collection_scan = nullptr;
  const exec::IndexScan* index_scan = nullptr;
  // With several candidate plans, the multi-planner's trials (multi_planner.h): the winner's
  // first, then those of choice->rejected in order.
  std::vector<exec::TrialStats> trials;
  bool blocking_sort = false;  // a SORT stage runs after the scan
  int64_t scan_returned = 0;   // documents the scan passed on (counted as they are read)
};

// The documents of `nss` that the plan selects, in order. A missing collection yields an empty
// stream.
// A regular collection's scan is chosen by the planner (query_planner.h); `info`, when given,
// receives the choice. Errors: the planner's (bad hint: BadValue 2).
StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildReadStream(
    CommandContext& ctx, const catalog::NamespaceString& nss, ReadPlan plan,
    ReadExecInfo* info = nullptr);

// Sets pctx's allow_disk_use (the command's allowDiskUse, else the allowDiskUseByDefault
// parameter), memory limits (server parameters) and spill directory (<dbpath>/_tmp).
void ApplyDiskUse(const CommandContext& ctx, std::optional<bool> allow_disk_use,
                  pipeline::PipelineContext* pctx);
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

void RegisterFindCommands(CommandRegistry& r);
void RegisterPlanCacheCommands(CommandRegistry& r);  // plan_cache_commands.cc
void RegisterWriteCommands(CommandRegistry& r);

}  // namespace hourglass::commands
