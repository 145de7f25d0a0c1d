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
#include "query/update.h"

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

// `pipe` over the resolved namespace: its leading $match becomes the read's filter (index
// bounds, bucket filters), and over a time-series collection the read and the stages are
// planned together (the rewrites). `hint`: {hint: ...} or empty.
StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildPipelineRead(
    const exec::ReadContext& rctx, exec::ResolvedNamespace resolved,
    std::unique_ptr<pipeline::Pipeline> pipe, const bson::BsonObj& hint);

// A pipeline whose $geoNear (`spec`) came off its front: the read of the collection by
// distance (291 without the geo index it needs; a time-series collection's rules), then `pipe`.
StatusWith<std::unique_ptr<pipeline::DocumentStream>> BuildGeoNearRead(
    const exec::ReadContext& rctx, exec::ResolvedNamespace resolved,
    std::unique_ptr<pipeline::Pipeline> pipe, const pipeline::GeoNearSpec& spec,
    const bson::BsonObj& hint);

// Sends the first batch and, unless the stream is exhausted or single_batch, registers a cursor.
Status ReplyWithCursor(CommandContext& ctx, const std::string& ns,
                       std::unique_ptr<pipeline::DocumentStream> stream, int64_t first_batch,
                       bool single_batch, bson::BsonBuilder& reply, bool no_timeout = false);

// The aggregate command (aggregate.cc), also what find, count and distinct on a view become: on a
// view it runs the view's pipeline, then `cmd`'s, over what the view is defined on, and answers
// with the view's namespace. single_batch: find's singleBatch (with limit 1), no cursor is kept.
Status RunAggregate(CommandContext& ctx, const bson::BsonObj& cmd, bool single_batch,
                    bson::BsonBuilder& reply);

// CommandNotSupported (115) if a stage of `stages` (or of their sub-pipelines) would compare
// strings without the aggregate's non-simple collation (aggregate.cc).
Status CheckStagesUnderCollation(const bson::BsonObj& stages, int depth = 0);

// A find MongoDB runs as an aggregate (on a view, or a time-series collection, which is one in
// MongoDB): InvalidPipelineOperator (168) for the options aggregation cannot honour (min, max,
// returnKey, showRecordId, tailable, noCursorTimeout, allowPartialResults, readOnce, a $natural
// sort).
Status CheckFindRunsAsAggregate(const bson::BsonObj& cmd);

// find as the equivalent aggregate ($match, $sort, $skip, $limit, $project; crud_find.cc), as
// MongoDB runs a find on a view; CheckFindRunsAsAggregate's errors.
StatusWith<bson::BsonObj> FindAsAggregate(const bson::BsonObj& cmd);

// The stages that count and distinct become on a view, as MongoDB builds them:
// [$match, $skip, $limit, {$count: "n"}] and [$match, $unwind the key (keeping documents without
// it), {$group: {_id: null, values: {$addToSet: key}}}].
bson::BsonObj CountOverViewStages(const bson::BsonObj& query, int64_t skip, int64_t limit);
bson::BsonObj DistinctOverViewStages(std::string_view key, const bson::BsonObj& query);

// The read command `cmd` (find, aggregate, count, distinct) as the aggregate it is over what its
// view is defined on, the view's pipeline first (nullopt if `cmd` does not name a view): what
// explain shows for a view. Writes name a view: CommandNotSupportedOnView (166).
StatusWith<std::optional<bson::BsonObj>> ReadOverView(CommandContext& ctx,
                                                      const bson::BsonObj& cmd);

// The aggregate `cmd` over a time-series collection as the aggregate over one of its rollups that
// answers it (commands/rollups.h, AnswerFrom), with what explain says of it ({rollup, source,
// pendingRanges}); nullopt when no rollup answers it, or when it names a hint or a collation or
// either collection has a default one.
struct OverRollup {
  bson::BsonObj cmd;
  bson::BsonObj note;
};
StatusWith<std::optional<OverRollup>> AggregateOverRollup(CommandContext& ctx,
                                                          const bson::BsonObj& cmd);

// An update statement's `u` (an operator or replacement document, or a pipeline) parsed with its
// arrayFilters; FailedToParse (9) for any other type, and for a replacement when `multi`.
StatusWith<query::UpdateDriver> ParseUpdate(const bson::BsonElement& u,
                                            const bson::BsonObj& array_filters,
                                            const query::ExpressionContext& ectx,
                                            bool multi = false);

// Checks a document for insertion (size, `_id` type, top-level `$` names) and returns it with an
// `_id` (generated as an ObjectId, first, when absent). A given `_id` is moved first unless
// !id_first: a time-series measurement keeps its fields where the client put them, as in MongoDB.
StatusWith<bson::BsonObj> PrepareInsertDocument(const bson::BsonObj& doc, bool id_first = true);

// The nesting MongoDB stores: at most 100 levels (bson::NestsDeeperThan).
constexpr size_t kMaxStorageNesting = 100;

// Checks the result of an update before it is stored: BSONObjectTooLarge (10334) past 16 MB,
// Overflow (15) past kMaxStorageNesting levels, with mongod's messages.
Status CheckUpdatedDocument(const bson::BsonObj& updated);

}  // namespace hourglass::commands
