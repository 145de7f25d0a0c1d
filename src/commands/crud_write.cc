// insert, update, delete, findAndModify.
#include <limits>
#include <unordered_set>

#include "base/interrupt.h"
#include "catalog/record_store.h"
#include "commands/command.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/crud_util.h"
#include "commands/retryable_write.h"
#include "commands/rollups.h"
#include "commands/timeseries_util.h"
#include "commands/timeseries_write.h"
#include "commands/write_requests.h"
#include "exec/index_scan.h"
#include "exec/plan_summary.h"
#include "exec/timeseries_read.h"
#include "pipeline/pipeline.h"
#include "query/sort.h"
#include "query/update.h"
#include "storage/write_conflict.h"
#include "timeseries/bucket_validator.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// Inserts go in transactions of up to this many documents; a failing group is retried one
// document at a time so each error gets its own writeErrors entry.
constexpr size_t kInsertGroup = 500;

struct WriteError {
  int index;
  Status status;
};

void AppendWriteErrors(BsonBuilder& reply, const std::vector<WriteError>& errors) {
  if (errors.empty()) return;
  size_t arr = reply.OpenArray("writeErrors");
  int i = 0;
  for (const auto& e : errors) {
    size_t o = reply.OpenObject(std::to_string(i++));
    reply.AppendInt32("index", e.index);
    reply.AppendInt32("code", e.status.code_number());
    if (!e.status.extra_info().empty()) {
      reply.AppendElementsOf(BsonObj(e.status.extra_info().data()));
    }
    reply.AppendString("errmsg", e.status.reason());
    reply.Close(o);
  }
  reply.Close(arr);
}

// Refuses writes to views and (for now) updates and deletes of time-series collections. A direct
// write to a bucket collection makes the bucket catalog forget what it knew of its buckets.
Status CheckWriteTarget(CommandContext& ctx, const catalog::Collection& coll) {
  if (coll.entry().type == "timeseries") {
    return Status(ErrorCode::kCommandNotSupported,
                  "updates and deletes on time-series collections are not supported yet");
  }
  if (coll.IsView()) {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Namespace " + coll.ns() + " is a view, not a collection");
  }
  if (coll.nss().IsTimeseriesBuckets() && ctx.service.bucket_catalog) {
    ctx.service.bucket_catalog->ClearCollection(coll.entry().uuid);
  }
  return Status::OK();
}

// The collection a write names, resolved as reads resolve it. A rollup (and its buckets) takes
// writes only from the server's maintenance.
StatusWith<exec::ResolvedNamespace> ResolveWriteTarget(CommandContext& ctx,
                                                       const catalog::NamespaceString& nss) {
  if (!ctx.client.internal) HG_RETURN_IF_ERROR(RefuseRollupWrite(*ctx.service.catalog, nss));
  return exec::Resolve(ctx.service.Read(), nss);
}

// Documents written directly into a bucket collection must be buckets (its validator).
Status ValidateDocument(const catalog::Collection& coll, const BsonObj& doc) {
  if (!coll.nss().IsTimeseriesBuckets()) return Status::OK();
  BsonElement tf = coll.entry().options["timeseries"].Obj()["timeField"];
  if (tf.type() != BsonType::kString) return Status::OK();
  BsonElement validator = coll.entry().options["validator"];
  const int schema =
      validator.type() == BsonType::kObject ? timeseries::BucketSchemaVersion(validator.Obj()) : 1;
  return timeseries::ValidateBucketDocument(doc, tf.Str(), schema);
}

StatusWith<std::shared_ptr<catalog::Collection>> WritableCollection(
    CommandContext& ctx, const catalog::NamespaceString& nss) {
  HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
  if (ctx.client.internal) {
    // The server's own writes (rollup maintenance) go to collections that exist: one dropped
    // meanwhile is not created again as a plain collection.
    auto coll = ctx.service.catalog->Lookup(nss);
    if (!coll) return Status(ErrorCode::kNamespaceNotFound, nss.ns() + " does not exist");
    HG_RETURN_IF_ERROR(CheckWriteTarget(ctx, *coll));
    return coll;
  }
  HG_ASSIGN_OR_RETURN(auto coll, ctx.service.catalog->GetOrCreateCollection(nss));
  HG_RETURN_IF_ERROR(CheckWriteTarget(ctx, *coll));
  return coll;
}

// insert, update and delete take their statements as a document sequence, read in place
// (write_requests.h): the dispatcher calls RunRequest; Run serves a command whose sequences are
// already merged into `cmd`.
class WriteCommand : public Command {
 public:
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const final {
    return RunRequest(ctx, CommandRequest{cmd, {}}, reply);
  }
};

// Inserts docs[begin, end) in one transaction; a retryable write records their statements
// (`statements[i]`: the statement index of docs[i]) in it.
Status InsertGroup(CommandContext& ctx, catalog::Collection& coll, const std::vector<BsonObj>& docs,
                   size_t begin, size_t end, const RetryableWrite* retry,
                   const std::vector<int>& statements) {
  int64_t bytes = 0;
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    bytes = 0;
    auto guard = coll.WriteGuard();  // until the commit (index builds wait for it)
    auto session = ctx.service.engine->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    for (size_t i = begin; i < end; ++i) {
      auto rid = coll.Insert(*session, docs[i]);
      if (!rid.ok()) return rid.status();
      bytes += docs[i].size();
    }
    if (retry) {
      HG_RETURN_IF_ERROR(retry->Record(
          *session, std::vector<int>(statements.begin() + static_cast<std::ptrdiff_t>(begin),
                                     statements.begin() + static_cast<std::ptrdiff_t>(end))));
    }
    return wu.Commit();
  }));
  coll.AdjustCounts(static_cast<int64_t>(end - begin), bytes);
  return Status::OK();
}

class InsertCommand : public WriteCommand {
 public:
  std::string_view Name() const override { return "insert"; }
  OpCounter Counter() const override { return OpCounter::kNone; }
  Status RunRequest(CommandContext& ctx, const CommandRequest& request,
                    BsonBuilder& reply) const override {
    HG_ASSIGN_OR_RETURN(InsertRequest req, ParseInsertRequest(request, ctx.db));
    const bool ordered = req.ordered;
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, ResolveWriteTarget(ctx, req.nss));
    HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
    HG_ASSIGN_OR_RETURN(auto retry, RetryableWrite::Begin(ctx, req.cmd));
    if (resolved.timeseries) {
      MeasurementStatements statements{[&](int i) { return retry->Retried(i).has_value(); },
                                       [&](int i) { return retry->RecordOf({i}); }};
      HG_ASSIGN_OR_RETURN(InsertOutcome outcome,
                          InsertMeasurements(ctx, *resolved.timeseries, req.statements, ordered,
                                             retry ? &statements : nullptr));
      ctx.service.counters.op_insert += outcome.n + static_cast<int64_t>(outcome.errors.size());
      std::vector<WriteError> errors;
      for (auto& [i, st] : outcome.errors) errors.push_back({i, st});
      reply.AppendInt32("n", static_cast<int32_t>(outcome.n));
      AppendWriteErrors(reply, errors);
      return Status::OK();
    }
    HG_ASSIGN_OR_RETURN(auto coll, WritableCollection(ctx, req.nss));

    std::vector<BsonObj> docs;
    std::vector<WriteError> errors;
    std::vector<int> original_index;
    int index = 0;
    int64_t n = 0;
    for (DocumentArray::Entry e : req.statements) {
      HG_ASSIGN_OR_RETURN(BsonObj doc, e.Document("insert"));
      if (retry && retry->Retried(index)) {
        ++n;  // inserted by an earlier attempt of this write
        ++index;
        continue;
      }
      auto prepared = PrepareInsertDocument(doc);
      if (prepared.ok()) {
        Status valid = ValidateDocument(*coll, prepared.value());
        if (!valid.ok()) prepared = valid;
      }
      if (!prepared.ok()) {
        errors.push_back({index, prepared.status()});
        if (ordered) break;
      } else {
        docs.push_back(std::move(prepared).value());
        original_index.push_back(index);
      }
      ++index;
    }
    // With ordered inserts, documents after the first invalid one are not attempted.
    size_t limit = docs.size();
    if (ordered && !errors.empty()) {
      limit = 0;
      while (limit < docs.size() && original_index[limit] < errors.front().index) ++limit;
    }
    size_t i = 0;
    bool stop = false;
    while (i < limit && !stop) {
      // Stopped between groups, the command fails whole (what was inserted stays), as MongoDB's.
      HG_RETURN_IF_ERROR(CheckForInterrupt());
      size_t end = std::min(limit, i + kInsertGroup);
      Status st = InsertGroup(ctx, *coll, docs, i, end, retry.get(), original_index);
      if (st.ok()) {
        n += static_cast<int64_t>(end - i);
        i = end;
        continue;
      }
      for (; i < end; ++i) {
        HG_RETURN_IF_ERROR(CheckForInterrupt());
        Status one = InsertGroup(ctx, *coll, docs, i, i + 1, retry.get(), original_index);
        if (one.ok()) {
          ++n;
          continue;
        }
        errors.push_back({original_index[i], one});
        if (ordered) {
          stop = true;
          break;
        }
      }
    }
    std::sort(errors.begin(), errors.end(),
              [](const WriteError& a, const WriteError& b) { return a.index < b.index; });
    if (ordered && errors.size() > 1) errors.erase(errors.begin() + 1, errors.end());
    ctx.service.counters.op_insert += n + static_cast<int64_t>(errors.size());
    reply.AppendInt32("n", static_cast<int32_t>(n));
    if (retry) retry->AppendRetriedStmtIds(reply);
    AppendWriteErrors(reply, errors);
    return Status::OK();
  }
};

// Records of `coll` matching `matcher` (parsed from `q`), read inside `session`'s transaction
// through the plan the planner picks for `q`, `sort` and `hint` (hint: EOO for none) under
// `collator` (the write's collation; null: simple).
// Several candidate plans run their multi-planner trial in their own sessions first (the
// trial only chooses; the winner is then read inside the write's transaction).
StatusWith<std::vector<catalog::Record>> MatchingRecords(
    storage::KvEngine* engine, storage::Session& session, catalog::Collection& coll,
    const BsonObj& q, const query::Matcher& matcher, bool first_only, const BsonObj& sort,
    const BsonElement& hint, const bson::StringComparator* collator) {
  std::vector<catalog::Record> out;
  HG_ASSIGN_OR_RETURN(exec::PlanChoice choice, exec::PlanQuery(coll, q, sort, hint, collator));
  if (!choice.rejected.empty()) {
    // A non-owning handle: `coll` outlives the trial.
    std::shared_ptr<catalog::Collection> borrowed(std::shared_ptr<void>(), &coll);
    HG_RETURN_IF_ERROR(
        exec::RunTrial(borrowed, engine, &choice, matcher, sort, first_only ? 1 : 101).status());
  }
  exec::RecordIndexUse(choice.winner);
  exec::RecordPlanSummary(choice.winner.Summary());
  if (!choice.winner.IsCollScan()) {
    int64_t keys = 0;
    std::unordered_set<int64_t> seen;
    const bool dedupe = choice.winner.multikey || choice.winner.IsOr();
    for (const exec::QueryPlan* scan : choice.winner.Scans()) {
      if (first_only && !out.empty()) break;
      exec::IndexScanPosition pos;
      HG_RETURN_IF_ERROR(exec::ScanIndexEntries(
          session, *scan, pos, std::numeric_limits<int64_t>::max(),
          [&](int64_t rid, bool* stop) -> Status {
            if (dedupe && !seen.insert(rid).second) return Status::OK();
            HG_ASSIGN_OR_RETURN(auto rec, coll.FindRecord(session, rid));
            if (rec && matcher.Matches(rec->doc)) {
              out.push_back(std::move(*rec));
              *stop = first_only;
            }
            return Status::OK();
          },
          &keys));
    }
    return out;
  }
  HG_ASSIGN_OR_RETURN(auto cursor, catalog::NaturalCursor::Open(session, coll, true));
  HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
  while (more) {
    HG_RETURN_IF_ERROR(CheckForInterrupt());
    BsonObj doc = cursor.doc();
    HG_ASSIGN_OR_RETURN(bool matches, matcher.Evaluate(doc));  // $expr errors fail the write
    if (matches) {
      out.push_back({cursor.id(), doc.Owned()});
      if (first_only) break;
    }
    HG_ASSIGN_OR_RETURN(more, cursor.Next());
  }
  return out;
}

// Sorts `records` by `sort` (findAndModify's sort picks which document is modified).
Status SortRecords(std::vector<catalog::Record>& records, const BsonObj& sort,
                   const std::shared_ptr<const bson::StringComparator>& collator) {
  if (sort.IsEmpty()) return Status::OK();
  HG_ASSIGN_OR_RETURN(auto pattern, query::SortPattern::Parse(sort));
  pattern.SetCollator(collator);
  std::stable_sort(records.begin(), records.end(),
                   [&](const catalog::Record& a, const catalog::Record& b) {
                     return pattern.Compare(a.doc, b.doc) < 0;
                   });
  return Status::OK();
}

struct UpdateResult {
  int64_t matched = 0;
  int64_t modified = 0;
  std::optional<BsonObj> upserted_id;  // {"": _id}
  BsonObj before;                      // findAndModify: the original document
  BsonObj after;                       // findAndModify: the new document
};

Status CheckIdUnchanged(const BsonObj& before, const BsonObj& after) {
  BsonElement a = before["_id"], b = after["_id"];
  if (a.eoo() || b.eoo() || a.type() != b.type() || a.ValueSize() != b.ValueSize() ||
      std::memcmp(a.value(), b.value(), a.ValueSize()) != 0) {
    return Status(ErrorCode::kImmutableField,
                  "Performing an update on the path '_id' would modify the immutable field '_id'");
  }
  return Status::OK();
}

// A write statement's collation: its own, else its collection's default (MongoDB's rule).
template <typename Statement>
std::shared_ptr<const collation::Collator> StatementCollator(const Statement& stmt,
                                                             const catalog::Collection* coll) {
  return stmt.has_collation ? stmt.collator : DefaultCollation(coll);
}

// Called in a write's transaction before it commits, when it wrote: a retryable write records
// its statement there.
template <typename Result>
using BeforeCommit = std::function<Status(storage::Session&, const Result&)>;

// Runs one update statement. `sort` is used by findAndModify only.
StatusWith<UpdateResult> RunUpdate(CommandContext& ctx, catalog::Collection& coll, const BsonObj& q,
                                   const query::UpdateDriver& driver, bool multi, bool upsert,
                                   const BsonObj& sort, const query::ExpressionContext& ectx,
                                   const BsonElement& hint = BsonElement(),
                                   const BeforeCommit<UpdateResult>& before_commit = nullptr) {
  HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(q, ectx));
  // Before the transaction starts: its snapshot must hold every acknowledged measurement.
  HG_RETURN_IF_ERROR(coll.read_barrier().Run());
  UpdateResult result;
  int64_t bytes_delta = 0, records_delta = 0;
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
    result = UpdateResult();
    bytes_delta = records_delta = 0;
    auto guard = coll.WriteGuard();
    auto session = ctx.service.engine->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_ASSIGN_OR_RETURN(auto records,
                        MatchingRecords(ctx.service.engine, *session, coll, q, matcher,
                                        !multi && sort.IsEmpty(), sort, hint, ectx.collator.get()));
    HG_RETURN_IF_ERROR(SortRecords(records, sort, ectx.collator));
    if (!multi && records.size() > 1) records.resize(1);
    for (const auto& rec : records) {
      HG_RETURN_IF_ERROR(CheckForInterrupt());  // rolls the statement back
      bool modified = false;
      HG_ASSIGN_OR_RETURN(BsonObj updated, driver.Apply(rec.doc, false, &modified, &matcher));
      ++result.matched;
      result.before = rec.doc;
      result.after = updated;
      if (!modified) continue;
      HG_RETURN_IF_ERROR(CheckIdUnchanged(rec.doc, updated));
      HG_RETURN_IF_ERROR(CheckUpdatedDocument(updated));
      HG_RETURN_IF_ERROR(ValidateDocument(coll, updated));
      HG_RETURN_IF_ERROR(coll.Update(*session, rec.id, rec.doc, updated));
      bytes_delta += updated.size() - rec.doc.size();
      ++result.modified;
    }
    if (records.empty() && upsert) {
      HG_ASSIGN_OR_RETURN(BsonObj seed, query::ExtractEqualityDocument(q));
      BsonObj base = driver.IsReplacement() ? BsonObj() : seed;
      bool modified = false;
      HG_ASSIGN_OR_RETURN(BsonObj doc, driver.Apply(base, true, &modified));
      if (driver.IsReplacement() && doc["_id"].eoo() && !seed["_id"].eoo()) {
        BsonBuilder with_id;
        with_id.AppendElement(seed["_id"]);
        with_id.AppendElementsOf(doc);
        doc = with_id.Obj();
      }
      HG_ASSIGN_OR_RETURN(doc, PrepareInsertDocument(doc));
      HG_RETURN_IF_ERROR(ValidateDocument(coll, doc));
      HG_ASSIGN_OR_RETURN(int64_t rid, coll.Insert(*session, doc));
      (void)rid;
      BsonBuilder id;
      id.AppendElementAs(doc["_id"], "");
      result.upserted_id = id.Obj();
      result.after = doc;
      ++records_delta;
      bytes_delta += doc.size();
    }
    if (before_commit && (result.modified > 0 || result.upserted_id)) {
      HG_RETURN_IF_ERROR(before_commit(*session, result));
    }
    return wu.Commit();
  }));
  coll.AdjustCounts(records_delta, bytes_delta);
  return result;
}

// The upserted entries of an update reply: {index, _id} of each statement that inserted.
void AppendUpserted(BsonBuilder& reply, const std::vector<std::pair<int, BsonObj>>& upserted) {
  if (upserted.empty()) return;
  size_t arr = reply.OpenArray("upserted");
  int i = 0;
  for (const auto& [idx, id] : upserted) {
    size_t o = reply.OpenObject(std::to_string(i++));
    reply.AppendInt32("index", idx);
    reply.AppendElementAs(id.FirstElement(), "_id");
    reply.Close(o);
  }
  reply.Close(arr);
}

// A time-series write statement's hint as ModifyOptions take it.
ModifyOptions WithHint(const BsonElement& hint) {
  ModifyOptions options;
  if (!hint.eoo()) {
    BsonBuilder b;
    b.AppendElementAs(hint, "hint");
    options.hint = b.Obj();
  }
  return options;
}

// A retryable write's statement `index` of an update or delete: what it answered when it ran
// before; InvalidOptions when it is `multi` (`spelled`: how the command says so), as mongod.
StatusWith<std::optional<BsonObj>> RanBefore(RetryableWrite* retry, int index, bool multi,
                                             std::string_view spelled) {
  if (retry == nullptr) return std::optional<BsonObj>();
  if (std::optional<BsonObj> answer = retry->Retried(index)) return answer;
  if (multi) {
    return Status(ErrorCode::kInvalidOptions,
                  "Cannot use (or request) retryable writes with " + std::string(spelled));
  }
  return std::optional<BsonObj>();
}

// What an update statement did, as its reply counts it and a retry of it answers again:
// {n, nModified, [upserted]}.
BsonObj UpdateAnswer(int64_t matched, int64_t modified, const std::optional<BsonObj>& upserted_id) {
  BsonBuilder a;
  a.AppendInt64("n", matched + (upserted_id ? 1 : 0));
  a.AppendInt64("nModified", modified);
  if (upserted_id) a.AppendElementAs(upserted_id->FirstElement(), "upserted");
  return a.Obj();
}

class UpdateCommand : public WriteCommand {
 public:
  std::string_view Name() const override { return "update"; }
  OpCounter Counter() const override { return OpCounter::kNone; }
  Status RunRequest(CommandContext& ctx, const CommandRequest& request,
                    BsonBuilder& reply) const override {
    HG_ASSIGN_OR_RETURN(UpdateRequest req, ParseUpdateRequest(request, ctx.db));
    const query::ExpressionContext& ectx = req.expr_ctx;
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, ResolveWriteTarget(ctx, req.nss));
    HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
    const timeseries::TimeseriesCollection* ts =
        resolved.timeseries ? &*resolved.timeseries : nullptr;
    std::shared_ptr<catalog::Collection> coll;
    if (ts == nullptr) {
      HG_ASSIGN_OR_RETURN(coll, WritableCollection(ctx, req.nss));
    }
    HG_ASSIGN_OR_RETURN(auto retry, RetryableWrite::Begin(ctx, req.cmd));
    int64_t n = 0, n_modified = 0;
    std::vector<WriteError> errors;
    std::vector<std::pair<int, BsonObj>> upserted;
    int index = 0;
    for (const UpdateStatement& stmt : req.updates) {
      HG_RETURN_IF_ERROR(CheckForInterrupt());
      ++ctx.service.counters.op_update;
      Status st = [&]() -> Status {
        HG_ASSIGN_OR_RETURN(std::optional<BsonObj> answer,
                            RanBefore(retry.get(), index, stmt.multi, "multi=true"));
        auto record = [&](storage::Session& s, const BsonObj& a) {
          return retry->Record(s, {index}, a);
        };
        query::ExpressionContext sectx = ectx;
        if (answer) {
          // Answered as it was the first time.
        } else if (ts != nullptr) {
          // update on a time-series collection (timeseries_write.h).
          sectx.collator = StatementCollator(stmt, ts->buckets.get());
          ModifyOptions options = WithHint(stmt.hint);
          if (retry) {
            options.before_commit = [&](storage::Session& s, int64_t matched, int64_t modified) {
              return record(s, UpdateAnswer(matched, modified, std::nullopt));
            };
            options.upsert_statement = [&](const BsonObj& id) {
              return retry->RecordOf({index}, UpdateAnswer(0, 0, id));
            };
          }
          HG_ASSIGN_OR_RETURN(UpdateOutcome r,
                              UpdateMeasurements(ctx, *ts, stmt.q, stmt.u, stmt.array_filters,
                                                 stmt.multi, stmt.upsert, sectx, options));
          answer = UpdateAnswer(r.matched, r.modified, r.upserted_id);
        } else {
          sectx.collator = StatementCollator(stmt, coll.get());
          BeforeCommit<UpdateResult> before_commit;
          if (retry) {
            before_commit = [&](storage::Session& s, const UpdateResult& r) {
              return record(s, UpdateAnswer(r.matched, r.modified, r.upserted_id));
            };
          }
          HG_ASSIGN_OR_RETURN(auto driver,
                              ParseUpdate(stmt.u, stmt.array_filters, sectx, stmt.multi));
          HG_ASSIGN_OR_RETURN(auto r, RunUpdate(ctx, *coll, stmt.q, driver, stmt.multi, stmt.upsert,
                                                BsonObj(), sectx, stmt.hint, before_commit));
          answer = UpdateAnswer(r.matched, r.modified, r.upserted_id);
        }
        n += (*answer)["n"].NumberLong();
        n_modified += (*answer)["nModified"].NumberLong();
        if (BsonElement id = (*answer)["upserted"]; !id.eoo()) {
          BsonBuilder b;
          b.AppendElementAs(id, "");
          upserted.emplace_back(index, b.Obj());
        }
        return Status::OK();
      }();
      if (!st.ok()) {
        if (IsInterruption(st.code())) return st;  // fails the whole command
        errors.push_back({index, st});
        if (req.ordered) break;
      }
      ++index;
    }
    reply.AppendInt32("n", static_cast<int32_t>(n));
    reply.AppendInt32("nModified", static_cast<int32_t>(n_modified));
    AppendUpserted(reply, upserted);
    if (retry) retry->AppendRetriedStmtIds(reply);
    AppendWriteErrors(reply, errors);
    return Status::OK();
  }
};

// Deletes the records matching `q` (at most one if !multi); returns them.
StatusWith<std::vector<catalog::Record>> RunDelete(
    CommandContext& ctx, catalog::Collection& coll, const BsonObj& q, bool multi,
    const BsonObj& sort, const query::ExpressionContext& ectx,
    const BsonElement& hint = BsonElement(),
    const BeforeCommit<std::vector<catalog::Record>>& before_commit = nullptr) {
  HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(q, ectx));
  HG_RETURN_IF_ERROR(coll.read_barrier().Run());  // before the transaction (RunUpdate)
  std::vector<catalog::Record> deleted;
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
    deleted.clear();
    auto guard = coll.WriteGuard();
    auto session = ctx.service.engine->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_ASSIGN_OR_RETURN(auto records,
                        MatchingRecords(ctx.service.engine, *session, coll, q, matcher,
                                        !multi && sort.IsEmpty(), sort, hint, ectx.collator.get()));
    HG_RETURN_IF_ERROR(SortRecords(records, sort, ectx.collator));
    if (!multi && records.size() > 1) records.resize(1);
    for (auto& rec : records) {
      HG_RETURN_IF_ERROR(CheckForInterrupt());  // rolls the statement back
      HG_RETURN_IF_ERROR(coll.Remove(*session, rec.id, rec.doc));
      deleted.push_back(std::move(rec));
    }
    if (before_commit && !deleted.empty()) HG_RETURN_IF_ERROR(before_commit(*session, deleted));
    return wu.Commit();
  }));
  int64_t bytes = 0;
  for (const auto& r : deleted) bytes += r.doc.size();
  coll.AdjustCounts(-static_cast<int64_t>(deleted.size()), -bytes);
  return deleted;
}

class DeleteCommand : public WriteCommand {
 public:
  std::string_view Name() const override { return "delete"; }
  OpCounter Counter() const override { return OpCounter::kNone; }
  Status RunRequest(CommandContext& ctx, const CommandRequest& request,
                    BsonBuilder& reply) const override {
    std::shared_ptr<catalog::Collection> coll;
    std::optional<timeseries::TimeseriesCollection> ts;
    auto check_target = [&](const catalog::NamespaceString& nss) -> Status {
      HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, ResolveWriteTarget(ctx, nss));
      coll = std::move(resolved.collection);
      if (resolved.buckets_missing) {
        coll.reset();  // buckets dropped: nothing to delete
      } else if (resolved.timeseries) {
        ts = std::move(resolved.timeseries);
      } else if (coll) {
        HG_RETURN_IF_ERROR(CheckWriteTarget(ctx, *coll));
      }
      return Status::OK();
    };
    HG_ASSIGN_OR_RETURN(DeleteRequest req, ParseDeleteRequest(request, ctx.db, check_target));
    const query::ExpressionContext& ectx = req.expr_ctx;
    HG_ASSIGN_OR_RETURN(auto retry, RetryableWrite::Begin(ctx, req.cmd));
    int64_t n = 0;
    std::vector<WriteError> errors;
    int index = 0;
    for (const DeleteStatement& stmt : req.deletes) {
      HG_RETURN_IF_ERROR(CheckForInterrupt());
      ++ctx.service.counters.op_delete;
      Status st = [&]() -> Status {
        HG_ASSIGN_OR_RETURN(std::optional<BsonObj> answer,
                            RanBefore(retry.get(), index, stmt.multi, "limit=0"));
        if (answer) {
          n += (*answer)["n"].NumberLong();
          return Status::OK();
        }
        // What the statement deleted, as a retry of it answers again: {n}.
        auto record = [&](storage::Session& s, int64_t deleted) {
          BsonBuilder a;
          a.AppendInt64("n", deleted);
          return retry->Record(s, {index}, a.Obj());
        };
        query::ExpressionContext sectx = ectx;
        sectx.collator = StatementCollator(stmt, coll.get());
        if (ts) {
          ModifyOptions options = WithHint(stmt.hint);
          if (retry) {
            options.before_commit = [&](storage::Session& s, int64_t deleted, int64_t) {
              return record(s, deleted);
            };
          }
          HG_ASSIGN_OR_RETURN(int64_t k,
                              DeleteMeasurements(ctx, *ts, stmt.q, stmt.multi, sectx, options));
          n += k;
          return Status::OK();
        }
        BeforeCommit<std::vector<catalog::Record>> before_commit;
        if (retry) {
          before_commit = [&](storage::Session& s, const std::vector<catalog::Record>& deleted) {
            return record(s, static_cast<int64_t>(deleted.size()));
          };
        }
        if (!coll || coll->ident().empty()) return query::Matcher::Parse(stmt.q, sectx).status();
        HG_ASSIGN_OR_RETURN(auto deleted, RunDelete(ctx, *coll, stmt.q, stmt.multi, BsonObj(),
                                                    sectx, stmt.hint, before_commit));
        n += static_cast<int64_t>(deleted.size());
        return Status::OK();
      }();
      if (!st.ok()) {
        if (IsInterruption(st.code())) return st;  // fails the whole command
        errors.push_back({index, st});
        if (req.ordered) break;
      }
      ++index;
    }
    reply.AppendInt32("n", static_cast<int32_t>(n));
    if (retry) retry->AppendRetriedStmtIds(reply);
    AppendWriteErrors(reply, errors);
    return Status::OK();
  }
};

class FindAndModifyCommand : public Command {
 public:
  std::string_view Name() const override { return "findAndModify"; }
  std::vector<std::string_view> Aliases() const override { return {"findandmodify"}; }
  OpCounter Counter() const override { return OpCounter::kCommand; }
  Status Run(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) const override {
    HG_RETURN_IF_ERROR(CheckKnownFields(
        cmd, {"query", "sort", "remove", "update", "new", "fields", "upsert",
              "bypassDocumentValidation", "arrayFilters", "hint", "collation", "let", "stmtId"}));
    HG_ASSIGN_OR_RETURN(std::string coll_name, GetCollectionName(cmd, ctx.db));
    HG_ASSIGN_OR_RETURN(auto collator,
                        CheckHintAndGetCollation("findAndModify", cmd, ctx.service,
                                                 catalog::NamespaceString{ctx.db, coll_name}));
    HG_ASSIGN_OR_RETURN(auto q, GetObject("findAndModify", cmd, "query"));
    HG_ASSIGN_OR_RETURN(auto sort, GetObject("findAndModify", cmd, "sort"));
    HG_ASSIGN_OR_RETURN(auto fields, GetObject("findAndModify", cmd, "fields"));
    HG_ASSIGN_OR_RETURN(bool remove, GetBool("findAndModify", cmd, "remove", false));
    HG_ASSIGN_OR_RETURN(bool return_new, GetBool("findAndModify", cmd, "new", false));
    HG_ASSIGN_OR_RETURN(bool upsert, GetBool("findAndModify", cmd, "upsert", false));
    HG_ASSIGN_OR_RETURN(auto af, GetArray("findAndModify", cmd, "arrayFilters"));
    HG_ASSIGN_OR_RETURN(query::ExpressionContext ectx, CommandExpressionContext(cmd));
    ectx.collator = collator;
    BsonElement u = cmd["update"];
    if (remove && !u.eoo()) {
      return Status(ErrorCode::kFailedToParse, "Cannot specify both an update and remove=true");
    }
    if (!remove && u.eoo()) {
      return Status(ErrorCode::kFailedToParse, "Either an update or remove=true must be specified");
    }
    if (remove && (upsert || return_new)) {
      return Status(ErrorCode::kFailedToParse,
                    upsert ? "Cannot specify both upsert=true and remove=true"
                           : "Cannot specify both new=true and remove=true; 'remove' always "
                             "returns the deleted document");
    }
    std::optional<query::Projection> proj;
    if (fields && !fields->IsEmpty()) {
      HG_ASSIGN_OR_RETURN(proj, query::Projection::Parse(*fields, q.value_or(BsonObj()), ectx));
    }
    HG_ASSIGN_OR_RETURN(std::string name, GetCollectionName(cmd, ctx.db));
    const catalog::NamespaceString nss{ctx.db, name};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, ResolveWriteTarget(ctx, nss));
    HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
    BsonObj query_doc = q.value_or(BsonObj());
    BsonObj sort_doc = sort.value_or(BsonObj());
    auto append_value = [&](const BsonObj& d) -> Status {
      if (!proj) {
        reply.AppendObject("value", d);
        return Status::OK();
      }
      HG_ASSIGN_OR_RETURN(BsonObj shaped, proj->Apply(d));
      reply.AppendObject("value", shaped);
      return Status::OK();
    };
    size_t leo = 0;
    if (resolved.timeseries) {
      // MongoDB 8.0's findAndModify of one measurement (timeseries_write.h).
      const timeseries::TimeseriesCollection& ts = *resolved.timeseries;
      std::optional<BsonObj> first_in_order;
      if (!sort_doc.IsEmpty()) {
        // The write takes a measurement equal to the pick in every field (any such one is the
        // same to a reader).
        HG_ASSIGN_OR_RETURN(first_in_order, FirstMeasurementInOrder(ctx, ts, query_doc, sort_doc,
                                                                    HintOf(cmd), ectx));
      }
      std::optional<BsonObj> value;
      bool updated_existing = false;
      std::optional<BsonObj> upserted_id;
      int64_t n = 0;
      if (remove) {
        ++ctx.service.counters.op_delete;
        ModifyOptions options = WithHint(cmd["hint"]);
        options.first_deleted = &value;
        if (first_in_order) options.only = &*first_in_order;
        HG_ASSIGN_OR_RETURN(n, DeleteMeasurements(ctx, ts, query_doc, false, ectx, options));
      } else {
        ++ctx.service.counters.op_update;
        ModifyOptions options = WithHint(cmd["hint"]);
        if (first_in_order) options.only = &*first_in_order;
        HG_ASSIGN_OR_RETURN(UpdateOutcome r,
                            UpdateMeasurements(ctx, ts, query_doc, u, af.value_or(BsonObj()), false,
                                               upsert, ectx, options));
        n = r.matched > 0 || r.upserted_id ? 1 : 0;
        updated_existing = r.matched > 0;
        upserted_id = r.upserted_id;
        // The new measurement: as the update left it (the one matched when it changed nothing).
        value = return_new ? (r.after ? r.after : r.before) : r.before;
      }
      leo = reply.OpenObject("lastErrorObject");
      reply.AppendInt32("n", static_cast<int32_t>(n));
      if (!remove) reply.AppendBool("updatedExisting", updated_existing);
      if (upserted_id) reply.AppendElementAs(upserted_id->FirstElement(), "upserted");
      reply.Close(leo);
      if (!value) {
        reply.AppendNull("value");
        return Status::OK();
      }
      return append_value(*value);
    }
    HG_ASSIGN_OR_RETURN(auto coll, WritableCollection(ctx, nss));
    HG_ASSIGN_OR_RETURN(auto retry, RetryableWrite::Begin(ctx, cmd));
    // `a`: {lastErrorObject, value} before the projection, what a retry answers again.
    auto answer = [&](const BsonObj& a) -> Status {
      reply.AppendObject("lastErrorObject", a["lastErrorObject"].Obj());
      if (a["value"].type() == BsonType::kObject) {
        HG_RETURN_IF_ERROR(append_value(a["value"].Obj()));
      } else {
        reply.AppendNull("value");
      }
      if (retry && !retry->retried().empty()) {
        reply.AppendInt32("retriedStmtId", retry->retried().front());
      }
      return Status::OK();
    };
    if (retry) {
      if (std::optional<BsonObj> before = retry->Retried(0)) return answer(*before);
    }
    if (remove) {
      ++ctx.service.counters.op_delete;
      auto removed = [](const std::vector<catalog::Record>& deleted) {
        BsonBuilder a;
        size_t leo = a.OpenObject("lastErrorObject");
        a.AppendInt32("n", static_cast<int32_t>(deleted.size()));
        a.Close(leo);
        if (deleted.empty()) {
          a.AppendNull("value");
        } else {
          a.AppendObject("value", deleted.front().doc);
        }
        return a.Obj();
      };
      BeforeCommit<std::vector<catalog::Record>> record;
      if (retry) {
        record = [&](storage::Session& s, const std::vector<catalog::Record>& deleted) {
          return retry->Record(s, {0}, removed(deleted));
        };
      }
      HG_ASSIGN_OR_RETURN(auto deleted, RunDelete(ctx, *coll, query_doc, false, sort_doc, ectx,
                                                  cmd["hint"], record));
      return answer(removed(deleted));
    }
    ++ctx.service.counters.op_update;
    auto updated = [&](const UpdateResult& r) {
      BsonBuilder a;
      size_t leo = a.OpenObject("lastErrorObject");
      a.AppendInt32("n", r.matched > 0 || r.upserted_id ? 1 : 0);
      a.AppendBool("updatedExisting", r.matched > 0);
      if (r.upserted_id) a.AppendElementAs(r.upserted_id->FirstElement(), "upserted");
      a.Close(leo);
      if (return_new && (r.matched > 0 || r.upserted_id)) {
        a.AppendObject("value", r.after);
      } else if (!return_new && r.matched > 0) {
        a.AppendObject("value", r.before);
      } else {
        a.AppendNull("value");
      }
      return a.Obj();
    };
    BeforeCommit<UpdateResult> record;
    if (retry) {
      record = [&](storage::Session& s, const UpdateResult& r) {
        return retry->Record(s, {0}, updated(r));
      };
    }
    HG_ASSIGN_OR_RETURN(auto driver, ParseUpdate(u, af.value_or(BsonObj()), ectx));
    HG_ASSIGN_OR_RETURN(auto r, RunUpdate(ctx, *coll, query_doc, driver, false, upsert, sort_doc,
                                          ectx, cmd["hint"], record));
    return answer(updated(r));
  }
};

}  // namespace

std::unique_ptr<Command> MakeDeleteCommand() { return std::make_unique<DeleteCommand>(); }

std::unique_ptr<Command> MakeFindAndModifyCommand() {
  return std::make_unique<FindAndModifyCommand>();
}

std::unique_ptr<Command> MakeInsertCommand() { return std::make_unique<InsertCommand>(); }

std::unique_ptr<Command> MakeUpdateCommand() { return std::make_unique<UpdateCommand>(); }

}  // namespace hourglass::commands
