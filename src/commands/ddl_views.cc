// Views (read-only, non-materialized): create, collMod and the <db>.system.views definitions.
// A view is a catalog entry of type "view" with options {viewOn, pipeline}; reads resolve it
// (exec::ResolveView) and run its pipeline, then theirs, over what it is defined on.
#include <map>
#include <optional>
#include <set>

#include "commands/aggregate_collections.h"
#include "commands/command_util.h"
#include "commands/ddl_commands.h"
#include "exec/namespace_resolver.h"
#include "pipeline/pipeline.h"
#include "storage/kv_engine.h"
#include "storage/write_conflict.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr std::string_view kSystemViews = "system.views";

// The first option of `cmd` (after the command's own field) that a view does not take, if any:
// viewOn, pipeline and, on create, collation are a view's.
std::optional<std::string> OptionNotForViews(const BsonObj& cmd, bool create) {
  bool first = true;
  for (BsonElement e : cmd) {
    std::string_view f = e.FieldName();
    if (!first && !IsGenericArgument(f) && f != "viewOn" && f != "pipeline" &&
        !(create && f == "collation")) {
      return std::string(f);
    }
    first = false;
  }
  return std::nullopt;
}

// MongoDB's checks of a view's own pipeline: no stage that writes ($out, $merge: 167), no change
// stream (167), no stage that reads no collection ($documents: InvalidNamespace); then the
// stages must parse as an aggregate's would.
Status ValidateViewPipeline(ServiceContext& service, const catalog::NamespaceString& view,
                            const BsonObj& pipeline) {
  int index = 0;
  for (BsonElement stage : pipeline) {
    if (stage.type() == BsonType::kObject && !stage.Obj().IsEmpty()) {
      std::string_view name = stage.Obj().FirstElement().FieldName();
      if (name == "$out" || name == "$merge") {
        return Status(ErrorCode::kOptionNotSupportedOnView,
                      "The aggregation stage " + std::string(name) + " in location " +
                          std::to_string(index) + " of the pipeline cannot be used in the view " +
                          "definition of " + view.ns() + " because it writes to disk");
      }
      if (name == "$changeStream") {
        return Status(ErrorCode::kOptionNotSupportedOnView,
                      "$changeStream cannot be used in a view definition");
      }
      if (name == "$documents") {
        return Status(ErrorCode::kInvalidNamespace,
                      "'$documents' cannot be used in a view definition");
      }
    }
    ++index;
  }
  pipeline::PipelineContext pctx;
  pctx.db = view.db;
  pctx.collections = MakeCollectionAccess(service);  // ($lookup... parse; nothing is read)
  return pipeline::Pipeline::Parse(pipeline, pctx).status();
}

// Checks the views of `db` with `view` defined on `view_on` (new or changed): no view may reach
// itself (GraphContainsCycle, 5), and no chain of views may be longer than kMaxViewDepth
// (ViewDepthLimitExceeded, 149).
Status ValidateViewGraph(const catalog::Catalog& catalog, const catalog::NamespaceString& view,
                         const std::string& view_on) {
  std::map<std::string, std::string> on;  // view name → what it is defined on
  for (const auto& c : catalog.ListCollections(view.db)) {
    if (c->entry().type == "view") {
      on[c->entry().nss.coll] = std::string(c->entry().options["viewOn"].Str());
    }
  }
  on[view.coll] = view_on;
  for (const auto& [start, ignored] : on) {
    std::vector<std::string> path{start};
    std::set<std::string> seen{start};
    for (auto it = on.find(start); it != on.end(); it = on.find(path.back())) {
      if (seen.count(it->second) > 0) {
        std::string shown;
        for (const auto& p : path) shown += view.db + "." + p + " => ";
        return Status(ErrorCode::kGraphContainsCycle,
                      "View cycle detected: [" + shown + view.db + "." + it->second + "]");
      }
      path.push_back(it->second);
      seen.insert(it->second);
      // `path` holds the views walked and, last, what the last one is defined on.
      if (static_cast<int>(path.size()) - 1 > exec::kMaxViewDepth) {
        return Status(ErrorCode::kViewDepthLimitExceeded,
                      "View depth too deep or view cycle detected. Maximum depth is " +
                          std::to_string(exec::kMaxViewDepth));
      }
    }
  }
  return Status::OK();
}

// The view entry's options, in the order MongoDB lists them: {viewOn, pipeline}.
// A view's options (and its system.views document, after its _id): viewOn, pipeline and, when
// it has one, its collation's normalized spec.
BsonObj ViewOptions(const std::string& view_on, const BsonObj& pipeline, const BsonObj& collation) {
  BsonBuilder b;
  b.AppendString("viewOn", view_on);
  b.AppendArray("pipeline", pipeline);
  if (!collation.IsEmpty()) b.AppendObject("collation", collation);
  return b.Obj();
}

// Checks viewOn and pipeline (both already type-checked) for the view `nss`.
Status ValidateView(ServiceContext& service, const catalog::NamespaceString& nss,
                    const std::string& view_on, const BsonObj& pipeline) {
  const catalog::Catalog& catalog = *service.catalog;
  catalog::NamespaceString target{nss.db, view_on};
  if (view_on.empty() || !catalog::ValidateCollectionName(target).ok()) {
    return Status(ErrorCode::kInvalidNamespace, "invalid name for 'viewOn': " + view_on);
  }
  if (target.IsTimeseriesBuckets()) {
    return Status(ErrorCode::kInvalidNamespace,
                  "Invalid viewOn: a view cannot be created on a time-series bucket collection: " +
                      target.ns());
  }
  HG_RETURN_IF_ERROR(ValidateViewPipeline(service, nss, pipeline));
  return ValidateViewGraph(catalog, nss, view_on);
}

Status PutViewDocument(CommandContext& ctx, const catalog::NamespaceString& nss,
                       const BsonObj& options) {
  BsonBuilder b;
  b.AppendString("_id", nss.ns());
  b.AppendElementsOf(options);
  return PutViewDefinition(ctx, nss, b.Obj());
}

// The collections and views of its database a view reads: what it is defined on, and the `from`
// or `coll` of the $lookup, $graphLookup and $unionWith stages of its pipeline, at any depth.
void CollectViewReads(const BsonObj& stages, std::set<std::string>* out, int depth = 0) {
  for (BsonElement st : stages) {
    if (st.type() != BsonType::kObject || st.Obj().IsEmpty() || depth > 20) continue;
    const BsonElement spec = st.Obj().FirstElement();
    const std::string_view name = spec.FieldName();
    if (name == "$unionWith" && spec.type() == BsonType::kString) {
      out->insert(std::string(spec.Str()));
      continue;
    }
    if (spec.type() != BsonType::kObject) continue;
    for (BsonElement f : spec.Obj()) {
      const std::string_view field = f.FieldName();
      const bool names_source =
          ((name == "$lookup" || name == "$graphLookup") && field == "from") ||
          (name == "$unionWith" && field == "coll");
      if (names_source && f.type() == BsonType::kString) out->insert(std::string(f.Str()));
      if (f.type() == BsonType::kArray && (name == "$facet" || field == "pipeline")) {
        CollectViewReads(f.Obj(), out, depth + 1);
      }
    }
  }
}

// As in MongoDB (OptionNotSupportedOnView, 167): every view that the view `nss` (defined on
// `view_on` with `stages`) reads has its collation, and so has every view that reads it.
Status CheckViewCollations(const catalog::Catalog& catalog, const catalog::NamespaceString& nss,
                           const std::string& view_on, const BsonObj& stages,
                           const BsonObj& collation) {
  auto mismatch = [&](const std::string& reader, const std::string& read) {
    return Status(
        ErrorCode::kOptionNotSupportedOnView,
        "View " + reader + " has a collation that does not match the collation of view " + read);
  };
  std::set<std::string> reads{view_on};
  CollectViewReads(stages, &reads);
  for (const std::string& r : reads) {
    auto target = catalog.Lookup({nss.db, r});
    if (target && target->entry().type == "view" &&
        !catalog::CollationOption(target->entry().options).BinaryEqual(collation)) {
      return mismatch(nss.ns(), target->ns());
    }
  }
  for (const auto& other : catalog.ListCollections(nss.db)) {
    if (other->entry().type != "view" || other->nss().coll == nss.coll) continue;
    const BsonObj& o = other->entry().options;
    std::set<std::string> their_reads{std::string(o["viewOn"].Str())};
    CollectViewReads(o["pipeline"].Obj(), &their_reads);
    if (their_reads.count(nss.coll) > 0 &&
        !catalog::CollationOption(other->entry().options).BinaryEqual(collation)) {
      return mismatch(other->ns(), nss.ns());
    }
  }
  return Status::OK();
}

}  // namespace

Status PutViewDefinition(CommandContext& ctx, const catalog::NamespaceString& nss,
                         const BsonObj& doc) {
  HG_ASSIGN_OR_RETURN(
      auto views, ctx.service.catalog->GetOrCreateCollection({nss.db, std::string(kSystemViews)}));
  return storage::RetryOnWriteConflict([&] {
    auto session = ctx.service.engine->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_ASSIGN_OR_RETURN(auto existing, views->FindById(*session, doc["_id"]));
    if (existing) {
      HG_RETURN_IF_ERROR(views->Update(*session, existing->id, existing->doc, doc));
    } else {
      HG_RETURN_IF_ERROR(views->Insert(*session, doc).status());
    }
    HG_RETURN_IF_ERROR(wu.Commit());
    if (existing) {
      views->AdjustCounts(0, doc.size() - existing->doc.size());
    } else {
      views->AdjustCounts(1, doc.size());
    }
    return Status::OK();
  });
}

Status RemoveViewDefinition(CommandContext& ctx, const catalog::NamespaceString& nss) {
  auto views = ctx.service.catalog->Lookup({nss.db, std::string(kSystemViews)});
  if (!views || views->IsView()) return Status::OK();
  BsonBuilder id;
  id.AppendString("_id", nss.ns());
  BsonObj id_obj = id.Obj();
  return storage::RetryOnWriteConflict([&] {
    auto session = ctx.service.engine->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_ASSIGN_OR_RETURN(auto existing, views->FindById(*session, id_obj["_id"]));
    if (!existing) return Status::OK();
    HG_RETURN_IF_ERROR(views->Remove(*session, existing->id, existing->doc));
    HG_RETURN_IF_ERROR(wu.Commit());
    views->AdjustCounts(-1, -existing->doc.size());
    return Status::OK();
  });
}

Status CreateView(CommandContext& ctx, const catalog::NamespaceString& nss, const BsonObj& cmd) {
  if (auto option = OptionNotForViews(cmd, true)) {
    return Status(ErrorCode::kInvalidOptions,
                  "option '" + *option + "' is not supported for views");
  }
  HG_ASSIGN_OR_RETURN(auto view_on, GetString("create", cmd, "viewOn"));
  HG_ASSIGN_OR_RETURN(auto pipeline, GetArray("create", cmd, "pipeline"));
  HG_ASSIGN_OR_RETURN(auto collator, CheckHintAndGetCollation("create", cmd));
  const BsonObj collation = collator ? collator->spec().ToBson() : BsonObj();
  if (nss.IsSystem()) {
    return Status(ErrorCode::kInvalidNamespace,
                  "Cannot create a view called '" + nss.coll + "': system namespaces are reserved");
  }
  const BsonObj stages = pipeline.value_or(BsonObj());
  catalog::Catalog& catalog = *ctx.service.catalog;
  const BsonObj options = ViewOptions(*view_on, stages, collation);
  auto same_view = [&](const catalog::Collection& existing) {
    if (existing.entry().type == "view" && existing.entry().options.BinaryEqual(options)) {
      return Status::OK();  // MongoDB 7.0: re-creating an identical view succeeds
    }
    return Status(ErrorCode::kNamespaceExists, "Namespace " + existing.ns() + " already exists");
  };
  if (auto existing = catalog.Lookup(nss)) return same_view(*existing);
  HG_RETURN_IF_ERROR(ValidateView(ctx.service, nss, *view_on, stages));
  HG_RETURN_IF_ERROR(CheckViewCollations(catalog, nss, *view_on, stages, collation));
  auto created = catalog.CreateCollection(nss, options, "view");
  if (created.status().code() == ErrorCode::kNamespaceExists) {
    if (auto existing = catalog.Lookup(nss)) return same_view(*existing);
  }
  HG_RETURN_IF_ERROR(created.status());
  return PutViewDocument(ctx, nss, options);
}

Status CollModView(CommandContext& ctx, const catalog::Collection& view, const BsonObj& cmd) {
  if (auto option = OptionNotForViews(cmd, false)) {
    return Status(ErrorCode::kInvalidOptions, "option not supported on a view: " + *option);
  }
  HG_ASSIGN_OR_RETURN(auto view_on, GetString("collMod", cmd, "viewOn"));
  HG_ASSIGN_OR_RETURN(auto pipeline, GetArray("collMod", cmd, "pipeline"));
  // What is not given stays as it was.
  const BsonObj& current = view.entry().options;
  const std::string on = view_on ? *view_on : std::string(current["viewOn"].Str());
  const BsonObj stages = pipeline ? *pipeline : current["pipeline"].Obj();
  HG_RETURN_IF_ERROR(ValidateView(ctx.service, view.nss(), on, stages));
  // The collation stays the view's.
  const BsonObj collation = catalog::CollationOption(current).Owned();
  HG_RETURN_IF_ERROR(CheckViewCollations(*ctx.service.catalog, view.nss(), on, stages, collation));
  const BsonObj options = ViewOptions(on, stages, collation);
  HG_RETURN_IF_ERROR(ctx.service.catalog->SetOptions({{view.nss(), options}}));
  return PutViewDocument(ctx, view.nss(), options);
}

}  // namespace hourglass::commands
