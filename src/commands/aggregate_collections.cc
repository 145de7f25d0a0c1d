#include "commands/aggregate_collections.h"

#include <atomic>
#include <set>

#include "collation/collator.h"
#include "commands/crud_util.h"
#include "commands/ddl_commands.h"
#include "commands/rollups.h"
#include "commands/timeseries_util.h"
#include "commands/timeseries_write.h"
#include "exec/collection_scan.h"
#include "storage/write_conflict.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// Documents per transaction when $out fills its temporary collection.
constexpr size_t kOutBatch = 500;

class CatalogCollectionAccess : public pipeline::CollectionAccess {
 public:
  explicit CatalogCollectionAccess(ServiceContext& service) : service_(service) {}

  StatusWith<std::unique_ptr<pipeline::DocumentStream>> Read(
      const std::string& db, const std::string& coll, const BsonObj& filter,
      const query::ExpressionContext& expr_ctx) override {
    catalog::NamespaceString nss{db, coll};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_ASSIGN_OR_RETURN(auto view, exec::ResolveView(*service_.catalog, nss));
    if (view) return ReadView(nss, *view, filter, expr_ctx);
    exec::ReadPlan plan;
    plan.expr_ctx = expr_ctx;
    if (!filter.IsEmpty()) {
      HG_ASSIGN_OR_RETURN(plan.filter, query::Matcher::Parse(filter, expr_ctx));
      plan.filter_spec = filter;
    }
    const exec::ReadContext rctx = service_.Read();
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace ns, exec::Resolve(rctx, nss));
    return exec::BuildReadStream(rctx, ns, std::move(plan));
  }

  // A view read from another pipeline ($lookup, $graphLookup, $unionWith): its pipeline over
  // what it is defined on (with the time-series rewrites there), then the filter. As in MongoDB
  // the view's collation must be the operation's (OptionNotSupportedOnView, 167, otherwise): the
  // whole read then compares under it.
  StatusWith<std::unique_ptr<pipeline::DocumentStream>> ReadView(
      const catalog::NamespaceString& nss, const exec::ResolvedView& view, const BsonObj& filter,
      const query::ExpressionContext& expr_ctx) {
    std::shared_ptr<const collation::Collator> view_collator;
    if (!view.collation.IsEmpty()) {
      HG_ASSIGN_OR_RETURN(view_collator, collation::Collator::Make(view.collation));
    }
    if (!collation::SameCollation(view_collator.get(), expr_ctx.collator.get())) {
      return Status(ErrorCode::kOptionNotSupportedOnView,
                    "The collation of view " + nss.ns() +
                        " does not match the collation of the operation reading it");
    }
    bson::BsonArrayBuilder stages;
    for (const BsonObj& stage : view.pipeline) stages.AppendObject(stage);
    if (!filter.IsEmpty()) {
      bson::BsonBuilder match;
      match.AppendObject("$match", filter);
      stages.AppendObject(match.Obj());
    }
    pipeline::PipelineContext pctx;
    pctx.db = view.base.db;
    pctx.collections = MakeCollectionAccess(service_);
    pctx.now_millis = expr_ctx.now_millis;
    pctx.let = expr_ctx.let;
    pctx.collator = view_collator;
    const exec::ReadContext rctx = service_.Read();
    exec::ApplyDiskUse(rctx, std::nullopt, &pctx);
    BsonObj stage_docs = stages.Obj();
    if (view_collator) HG_RETURN_IF_ERROR(CheckStagesUnderCollation(stage_docs));
    HG_ASSIGN_OR_RETURN(auto pipe, pipeline::Pipeline::Parse(stage_docs, pctx));
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace base, exec::Resolve(rctx, view.base));
    return BuildPipelineRead(rctx, std::move(base), std::move(pipe), BsonObj());
  }

  StatusWith<std::unique_ptr<pipeline::DocumentStream>> ReadNear(
      const std::string& db, const std::string& coll, const pipeline::GeoNearSpec& spec,
      const pipeline::PipelineContext& ctx) override {
    catalog::NamespaceString nss{db, coll};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_ASSIGN_OR_RETURN(auto view, exec::ResolveView(*service_.catalog, nss));
    if (view) return pipeline::GeoNearNotFirst();
    const exec::ReadContext rctx = service_.Read();
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace ns, exec::Resolve(rctx, nss));
    HG_ASSIGN_OR_RETURN(auto rest, pipeline::Pipeline::Parse(BsonObj(), ctx));
    return BuildGeoNearRead(rctx, std::move(ns), std::move(rest), spec, BsonObj());
  }

  Status ReplaceCollection(const std::string& db, const std::string& coll,
                           const BsonObj& timeseries, pipeline::DocumentStream& docs) override {
    catalog::NamespaceString nss{db, coll};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_RETURN_IF_ERROR(RefuseRollupWrite(*service_.catalog, nss));
    auto existing = service_.catalog->Lookup(nss);
    const bool existing_ts = existing && existing->entry().type == "timeseries";
    if (existing && existing->IsView() && !existing_ts) {
      return Status(ErrorCode::kCommandNotSupportedOnView,
                    "Namespace " + nss.ns() + " is a view, not a collection");
    }
    if (!timeseries.IsEmpty()) return ReplaceTimeseries(nss, timeseries, docs);
    if (existing_ts) {
      // Without `timeseries`, $out into a time-series collection keeps its options.
      return ReplaceTimeseries(nss, BsonObj(), docs);
    }
    // Fill a temporary collection, then rename it over the target: readers see the old or the
    // new contents, never a mix, and a failure leaves the target as it was.
    static std::atomic<int64_t> counter{0};
    catalog::NamespaceString tmp{
        db, "tmp.agg_out." + bson::ObjectId::Generate().ToHex() + std::to_string(counter++)};
    HG_ASSIGN_OR_RETURN(auto tmp_coll, service_.catalog->CreateCollection(tmp, BsonObj()));
    Status st = FillCollection(*tmp_coll, docs);
    if (st.ok()) st = service_.catalog->RenameCollection(tmp, nss, /*drop_target=*/true);
    if (!st.ok()) {
      (void)service_.catalog->DropCollection(tmp);
      return st;
    }
    return Status::OK();
  }

  // The `on` fields need a unique index on exactly those fields (the _id index for _id) whose
  // collation is the aggregate's, as in MongoDB: it is what tells one target document per key.
  Status CheckMergeTarget(const std::string& db, const std::string& coll,
                          const std::vector<std::string>& on,
                          const bson::StringComparator* strings) override {
    catalog::NamespaceString nss{db, coll};
    HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
    HG_RETURN_IF_ERROR(RefuseRollupWrite(*service_.catalog, nss));
    auto existing = service_.catalog->Lookup(nss);
    // MongoDB does not merge into time-series collections either: they are views there.
    if (existing && existing->IsView()) {
      return Status(ErrorCode::kCommandNotSupportedOnView,
                    "Namespace " + nss.ns() + " is a view, not a collection");
    }
    const bool on_id = on.size() == 1 && on[0] == "_id";
    if (!existing) {
      if (on_id) return Status::OK();  // created by the merge, with the simple collation
    } else if (on_id) {
      // The _id index (none when clustered by _id: simple).
      const catalog::SecondaryIndex* id_index = existing->IdIndex();
      if (collation::SameCollation(id_index ? id_index->desc.collator.get() : nullptr, strings)) {
        return Status::OK();
      }
    } else {
      std::set<std::string> wanted(on.begin(), on.end());
      for (const auto& idx : existing->Indexes()) {
        if (!idx.desc.unique || !collation::SameCollation(idx.desc.collator.get(), strings)) {
          continue;
        }
        std::set<std::string> fields;
        for (const BsonElement& k : idx.desc.key) fields.insert(std::string(k.FieldName()));
        if (fields == wanted) return Status::OK();
      }
    }
    return Status(ErrorCode::kLocation51183,
                  "Cannot find index to verify that join fields will be unique");
  }

  StatusWith<std::optional<BsonObj>> FindOne(
      const std::string& db, const std::string& coll, const BsonObj& filter,
      const std::shared_ptr<const bson::StringComparator>& strings) override {
    auto c = service_.catalog->Lookup({db, coll});
    if (!c || c->ident().empty()) return std::optional<BsonObj>();
    BsonElement id_cond = filter["_id"];
    const catalog::SecondaryIndex* id_index = c->IdIndex();
    const bool id_lookup =
        c->IsClustered() ? strings == nullptr
                         : id_index != nullptr && collation::SameCollation(
                                                      id_index->desc.collator.get(), strings.get());
    if (filter.NumFields() == 1 && id_cond.type() == BsonType::kObject && id_lookup) {
      // The usual `on: "_id"`: a point read on the _id index (of the merge's collation).
      auto session = service_.engine->NewSession();
      HG_ASSIGN_OR_RETURN(auto rec, c->FindById(*session, id_cond.Obj()["$eq"]));
      if (!rec) return std::optional<BsonObj>();
      return std::optional<BsonObj>(rec->doc);
    }
    query::ExpressionContext ectx;
    ectx.collator = strings;
    HG_ASSIGN_OR_RETURN(auto matcher, query::Matcher::Parse(filter, ectx));
    exec::CollectionScan scan(c, service_.engine, std::move(matcher));
    return scan.Next();
  }

  Status Insert(const std::string& db, const std::string& coll, const BsonObj& doc) override {
    catalog::NamespaceString nss{db, coll};
    HG_ASSIGN_OR_RETURN(auto c, service_.catalog->GetOrCreateCollection(nss));
    HG_ASSIGN_OR_RETURN(BsonObj prepared, PrepareInsertDocument(doc));
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
      auto session = service_.engine->NewSession();
      storage::WriteUnit wu(*session);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_RETURN_IF_ERROR(c->Insert(*session, prepared).status());
      return wu.Commit();
    }));
    c->AdjustCounts(1, prepared.size());
    return Status::OK();
  }

  Status Replace(const std::string& db, const std::string& coll, const BsonObj& old_doc,
                 const BsonObj& new_doc) override {
    auto c = service_.catalog->Lookup({db, coll});
    if (!c) return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + db + "." + coll);
    HG_RETURN_IF_ERROR(CheckUpdatedDocument(new_doc));
    int64_t delta = 0;
    HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
      auto session = service_.engine->NewSession();
      storage::WriteUnit wu(*session);
      HG_RETURN_IF_ERROR(wu.begin_status());
      HG_ASSIGN_OR_RETURN(auto rec, c->FindById(*session, old_doc["_id"]));
      if (!rec) return wu.Commit();  // removed meanwhile: nothing to replace
      HG_RETURN_IF_ERROR(c->Update(*session, rec->id, rec->doc, new_doc));
      delta = static_cast<int64_t>(new_doc.size()) - rec->doc.size();
      return wu.Commit();
    }));
    c->AdjustCounts(0, delta);
    return Status::OK();
  }

 private:
  CommandContext Context(const std::string& db) { return CommandContext{service_, client_, db}; }

  Status FillCollection(catalog::Collection& coll, pipeline::DocumentStream& docs) {
    std::vector<BsonObj> batch;
    bool more = true;
    while (more) {
      batch.clear();
      while (batch.size() < kOutBatch) {
        HG_ASSIGN_OR_RETURN(auto d, docs.Next());
        if (!d) {
          more = false;
          break;
        }
        HG_ASSIGN_OR_RETURN(BsonObj prepared, PrepareInsertDocument(*d));
        batch.push_back(std::move(prepared));
      }
      if (batch.empty()) break;
      int64_t bytes = 0;
      HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&]() -> Status {
        bytes = 0;
        auto session = service_.engine->NewSession();
        storage::WriteUnit wu(*session);
        HG_RETURN_IF_ERROR(wu.begin_status());
        for (const auto& d : batch) {
          HG_RETURN_IF_ERROR(coll.Insert(*session, d).status());
          bytes += d.size();
        }
        return wu.Commit();
      }));
      coll.AdjustCounts(static_cast<int64_t>(batch.size()), bytes);
    }
    return Status::OK();
  }

  // $out to a time-series collection: creates the target with `options` (or checks that the
  // existing one has the same options; empty `options`: keep the existing ones), then replaces
  // its measurements. Every document is checked before the old ones go, but the replacement is
  // not atomic.
  Status ReplaceTimeseries(const catalog::NamespaceString& nss, const BsonObj& options,
                           pipeline::DocumentStream& docs) {
    auto existing = service_.catalog->Lookup(nss);
    if (existing && existing->entry().type != "timeseries") {
      return Status(ErrorCode::kLocation7268700,
                    "Cannot create a time-series collection from a non time-series collection.");
    }
    CommandContext ctx = Context(nss.db);
    if (existing && !options.IsEmpty()) {
      // The existing collection's options must match (MongoDB compares the bucketing options
      // only, not the TTL).
      BsonBuilder wrap;
      wrap.AppendObject("timeseries", options);
      BsonObj wrapped = wrap.Obj();
      HG_ASSIGN_OR_RETURN(auto wanted,
                          timeseries::ParseTimeseriesOptions(wrapped.FirstElement(), nss.ns()));
      auto current = timeseries::TimeseriesOptionsOf(*existing);
      if (!current.ok() || !timeseries::EquivalentForCreate(*current.value(), wanted)) {
        return Status(ErrorCode::kLocation7406103,
                      "Time-series options inputted must match the existing time-series "
                      "collection. Received: " +
                          options.ToJson() +
                          " Found: " + existing->entry().options["timeseries"].Obj().ToJson());
      }
    } else if (!existing) {
      BsonBuilder create;
      create.AppendString("create", nss.coll);
      create.AppendObject("timeseries", options);
      HG_RETURN_IF_ERROR(CreateTimeseriesCollection(ctx, nss, create.Obj()));
    }
    // Resolved again: the collection may have just been created.
    HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(service_.Read(), nss));
    HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
    std::optional<timeseries::TimeseriesCollection>& ts = resolved.timeseries;
    if (!ts) return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
    BsonArrayBuilder all;
    const std::string& time_field = ts->options.time_field;
    while (true) {
      HG_ASSIGN_OR_RETURN(auto d, docs.Next());
      if (!d) break;
      if ((*d)[time_field].type() != BsonType::kDate) {
        return Status(
            ErrorCode::kBadValue,
            "'" + time_field + "' must be present and contain a valid BSON UTC datetime value");
      }
      all.AppendObject(*d);
    }
    BsonObj array = all.Obj();
    HG_RETURN_IF_ERROR(
        DeleteMeasurements(ctx, *ts, BsonObj(), /*multi=*/true, query::ExpressionContext{})
            .status());
    if (array.IsEmpty()) return Status::OK();
    HG_ASSIGN_OR_RETURN(InsertOutcome outcome,
                        InsertMeasurements(ctx, *ts, DocumentArray(array), /*ordered=*/true));
    if (!outcome.errors.empty()) return outcome.errors.front().second;
    return Status::OK();
  }

  ServiceContext& service_;
  ClientState client_;
};

}  // namespace

std::shared_ptr<pipeline::CollectionAccess> MakeCollectionAccess(ServiceContext& service) {
  return std::make_shared<CatalogCollectionAccess>(service);
}

bool PipelineWritesOutput(const BsonObj& stages) {
  BsonElement last;
  for (const BsonElement& st : stages) last = st;
  if (last.type() != BsonType::kObject || last.Obj().IsEmpty()) return false;
  std::string_view name = last.Obj().FirstElement().FieldName();
  return name == "$out" || name == "$merge";
}

}  // namespace hourglass::commands
