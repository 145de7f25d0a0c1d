// Stages that read other collections: $lookup (equality, pipeline and combined forms),
// $graphLookup and $unionWith. They read through PipelineContext::collections; each stream reads
// the foreign collection once, on its first Next(), and keeps its documents in memory.
#include <map>
#include <set>

#include "bson/bson_compare.h"
#include "bson/field_check.h"
#include "pipeline/stage.h"
#include "query/matcher.h"
#include "query/path.h"

namespace hourglass::pipeline {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using OptDoc = std::optional<BsonObj>;

namespace {

Status NoCollectionAccess(std::string_view stage) {
  return Status(ErrorCode::kCommandNotSupported,
                std::string(stage) + " is not supported without a collection context");
}

// Keys of a document at a dotted path, for equality joins with query semantics: a missing value
// is null (or skipped when !missing_as_null), an array at the end of the path contributes its
// elements and (when `whole_arrays`) itself.
void CollectKeys(const BsonObj& doc, const query::FieldPath& path, bool whole_arrays,
                 std::vector<Value>* out, bool missing_as_null = true) {
  query::WalkPath(doc, path, true, [&](const query::PathValue& pv) {
    if (pv.whole_array && !whole_arrays) return false;
    if (pv.element.eoo() || pv.element.type() == BsonType::kUndefined) {
      if (missing_as_null || !pv.element.eoo()) out->push_back(Value::Null());
    } else {
      out->push_back(Value::FromElement(pv.element));
    }
    return false;
  });
}

// Foreign documents indexed by the key values at one path, strings under `strings` (the
// pipeline's collation; null: simple).
class KeyIndex {
 public:
  explicit KeyIndex(const bson::StringComparator* strings) : index_(ValueLess{strings}) {}
  void Build(const std::vector<BsonObj>& docs, const query::FieldPath& path) {
    for (size_t i = 0; i < docs.size(); ++i) {
      std::vector<Value> keys;
      CollectKeys(docs[i], path, true, &keys);
      for (auto& k : keys) index_[k].push_back(i);
    }
  }
  // Positions of the documents whose key equals one of `keys`, ascending, without repeats.
  std::vector<size_t> Find(const std::vector<Value>& keys) const {
    std::set<size_t> hits;
    for (const auto& k : keys) {
      auto it = index_.find(k);
      if (it != index_.end()) hits.insert(it->second.begin(), it->second.end());
    }
    return {hits.begin(), hits.end()};
  }

 private:
  std::map<Value, std::vector<size_t>, ValueLess> index_;
};

// What a filter read on behalf of a stage may use: the pipeline's $$NOW and variables.
query::ExpressionContext ExprContext(const PipelineContext& ctx) {
  return query::ExpressionContext{ctx.now_millis, ctx.let, ctx.collator};
}

Status ReadAll(CollectionAccess& access, const std::string& db, const std::string& coll,
               const BsonObj& filter, const query::ExpressionContext& expr_ctx,
               std::vector<BsonObj>* out) {
  HG_ASSIGN_OR_RETURN(auto stream, access.Read(db, coll, filter, expr_ctx));
  HG_ASSIGN_OR_RETURN(*out, DrainStream(*stream));
  return Status::OK();
}

// `docs` as an array Value (what $lookup and $graphLookup write under `as`).
Value ArrayOf(const std::vector<BsonObj>& docs) {
  BsonBuilder holder;
  size_t t = holder.OpenArray("");
  for (size_t i = 0; i < docs.size(); ++i) holder.AppendObject(std::to_string(i), docs[i]);
  holder.Close(t);
  BsonObj h = holder.Obj();
  return Value::FromElement(h.FirstElement());
}

// Rejects stages a sub-pipeline may not hold.
Status CheckSubPipeline(const BsonObj& stages, std::string_view owner, int code) {
  for (const BsonElement& st : stages) {
    if (st.type() != BsonType::kObject || st.Obj().IsEmpty()) continue;
    std::string_view n = st.Obj().FirstElement().FieldName();
    if (n == "$out" || n == "$merge") {
      return PipelineError(code, std::string(n) + " is not allowed within a " + std::string(owner) +
                                     "'s sub-pipeline");
    }
  }
  return Status::OK();
}

// ---- $lookup ----

struct ExprEquality {
  std::string field;  // a top-level field (no dots: its expression value is the field's value)
  size_t var_index;   // position of the variable in the `let` list
};

// The {$eq: ["$field", "$$var"]} (either order) in `e`, directly or as a conjunct of $and.
std::optional<ExprEquality> FindEquality(const BsonElement& e,
                                         const std::vector<std::string>& let) {
  if (e.type() != BsonType::kObject || e.Obj().NumFields() != 1) return std::nullopt;
  BsonElement op = e.Obj().FirstElement();
  if (op.FieldName() == "$and" && op.type() == BsonType::kArray) {
    for (const BsonElement& c : op.Obj()) {
      if (auto found = FindEquality(c, let)) return found;
    }
    return std::nullopt;
  }
  if (op.FieldName() != "$eq" || op.type() != BsonType::kArray || op.Obj().NumFields() != 2) {
    return std::nullopt;
  }
  std::string_view field, var;
  for (const BsonElement& arg : op.Obj()) {
    if (arg.type() != BsonType::kString) return std::nullopt;
    std::string_view str = arg.Str();
    if (str.substr(0, 2) == "$$") {
      var = str.substr(2);
    } else if (str.substr(0, 1) == "$") {
      field = str.substr(1);
    }
  }
  if (field.empty() || var.empty() || field.find('.') != std::string_view::npos) {
    return std::nullopt;
  }
  for (size_t i = 0; i < let.size(); ++i) {
    if (let[i] == var) return ExprEquality{std::string(field), i};
  }
  return std::nullopt;
}

// The equality a correlated sub-pipeline's first stage requires, if it has a usable one.
std::optional<ExprEquality> FindExprEquality(const BsonObj& stages,
                                             const std::vector<std::string>& let) {
  if (stages.IsEmpty()) return std::nullopt;
  BsonElement first = stages.FirstElement();
  if (first.type() != BsonType::kObject) return std::nullopt;
  BsonElement match = first.Obj()["$match"];
  if (match.type() != BsonType::kObject) return std::nullopt;
  return FindEquality(match.Obj()["$expr"], let);
}

// 16 MB plus MongoDB's 16 KB allowance for internal documents.
constexpr int64_t kMaxJoinedBytes = 16 * 1024 * 1024 + 16 * 1024;

class LookupStage : public Stage {
 public:
  PipelineContext ctx;
  std::string from;
  std::string as;
  std::optional<query::FieldPath> local_field, foreign_field;
  std::shared_ptr<const StageLet> let;  // null without `let`
  std::optional<BsonObj> sub_pipeline;
  // The sub-pipeline, parsed once (with `let`'s variables when there is one).
  std::unique_ptr<Pipeline> sub;
  // Its leading $match, read by the foreign scan itself (so a time-series read prunes buckets).
  BsonObj foreign_filter;
  // A correlated sub-pipeline starting with $match {$expr: {$eq: ["$field", "$$var"]}}: the
  // foreign documents are indexed by `field` once and only those that can match are run.
  std::optional<ExprEquality> expr_eq;
  // The sub-pipeline's leading $geoNear, which reads `from` by distance for each input document
  // (its point may be a `let` variable); `sub` is the rest.
  std::optional<GeoNearSpec> geo_near;

  std::string_view name() const override { return "$lookup"; }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const LookupStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)),
            in_(std::move(in)),
            index_(s_->ctx.collator.get()),
            expr_index_(s_->ctx.collator.get()) {}
      StatusWith<OptDoc> Next() override {
        HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
        if (!d) return d;
        std::vector<BsonObj> joined;
        if (s_->geo_near) {
          HG_ASSIGN_OR_RETURN(joined, NearJoined(*d));
        } else {
          if (!loaded_) {
            HG_RETURN_IF_ERROR(Load());
            loaded_ = true;
          }
          if (s_->local_field) {
            for (size_t i : index_.Find(LocalKeys(*d))) joined.push_back(foreign_[i]);
          } else {
            joined = foreign_;
          }
        }
        if (s_->sub && !s_->geo_near) {
          if (!s_->let && !s_->local_field) {
            // MongoDB too runs a sub-pipeline that depends on nothing of the input only once.
            if (!cached_) {
              HG_ASSIGN_OR_RETURN(cached_, s_->sub->RunOver(foreign_));
            }
            joined = *cached_;
          } else {
            if (s_->let) {
              // The sub-pipeline's variables take this document's values for the run below.
              HG_RETURN_IF_ERROR(s_->let->Bind(*d, s_->ctx.now_millis));
            }
            if (s_->expr_eq) {
              // Only the documents whose field can equal the variable reach the sub-pipeline
              // (whose $match still decides).
              Value v = s_->let->value(s_->expr_eq->var_index);
              joined.clear();
              for (size_t i : expr_index_.Find({v.nullish() ? Value::Null() : v})) {
                joined.push_back(foreign_[i]);
              }
            }
            HG_ASSIGN_OR_RETURN(joined, s_->sub->RunOver(std::move(joined)));
          }
        }
        // MongoDB's limit on what one input document may collect (its internal BSON maximum).
        int64_t bytes = 0;
        for (const auto& j : joined) bytes += j.size();
        if (bytes > kMaxJoinedBytes) {
          return PipelineError(4568, "Total size of documents in " + s_->from +
                                         " matching pipeline's $lookup stage exceeds " +
                                         std::to_string(kMaxJoinedBytes) + " bytes");
        }
        return OptDoc(SetPathValue(*d, query::SplitPath(s_->as), ArrayOf(joined)));
      }

     private:
      // localField's values in `d`. Like MongoDB, a local value with no elements (an empty
      // array) matches null/missing.
      std::vector<Value> LocalKeys(const BsonObj& d) const {
        std::vector<Value> keys;
        CollectKeys(d, *s_->local_field, false, &keys);
        if (keys.empty()) keys.push_back(Value::Null());
        return keys;
      }

      // A sub-pipeline starting with $geoNear: `from`'s documents by distance from the point
      // `d` binds (or the constant one: then read once), those whose foreignField matches
      // `d`'s localField when given, through the rest of the sub-pipeline.
      StatusWith<std::vector<BsonObj>> NearJoined(const BsonObj& d) {
        const bool constant = !s_->let && !s_->local_field;
        if (constant && cached_) return *cached_;
        if (s_->let) HG_RETURN_IF_ERROR(s_->let->Bind(d, s_->ctx.now_millis));
        HG_ASSIGN_OR_RETURN(
            auto stream,
            s_->ctx.collections->ReadNear(s_->ctx.db, s_->from, *s_->geo_near, s_->sub->context()));
        HG_ASSIGN_OR_RETURN(std::vector<BsonObj> near, DrainStream(*stream));
        if (s_->local_field) {
          KeyIndex by_foreign(s_->ctx.collator.get());
          by_foreign.Build(near, *s_->foreign_field);
          std::vector<BsonObj> kept;
          for (size_t i : by_foreign.Find(LocalKeys(d))) kept.push_back(std::move(near[i]));
          near = std::move(kept);
        }
        HG_ASSIGN_OR_RETURN(near, s_->sub->RunOver(std::move(near)));
        if (constant) cached_ = near;
        return near;
      }

      Status Load() {
        // Without `from` the sub-pipeline starts with $documents and needs no collection.
        if (!s_->from.empty()) {
          HG_RETURN_IF_ERROR(ReadAll(*s_->ctx.collections, s_->ctx.db, s_->from, s_->foreign_filter,
                                     ExprContext(s_->ctx), &foreign_));
        }
        if (s_->foreign_field) index_.Build(foreign_, *s_->foreign_field);
        if (s_->expr_eq) expr_index_.Build(foreign_, {s_->expr_eq->field});
        return Status::OK();
      }
      std::shared_ptr<const LookupStage> s_;
      std::unique_ptr<DocumentStream> in_;
      std::vector<BsonObj> foreign_;
      KeyIndex index_;
      KeyIndex expr_index_;  // by the field of `expr_eq`
      std::optional<std::vector<BsonObj>> cached_;
      bool loaded_ = false;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

StatusWith<std::string> StringArg(std::string_view stage, const BsonElement& e) {
  if (e.type() != BsonType::kString) {
    return Status(ErrorCode::kFailedToParse,
                  std::string(stage) + " argument '" + std::string(e.FieldName()) +
                      "' must be a string, is type " + std::string(bson::TypeName(e.type())));
  }
  return std::string(e.Str());
}

}  // namespace

StatusWith<std::shared_ptr<const StageLet>> StageLet::Parse(const BsonObj& let,
                                                            const PipelineContext& outer) {
  auto out = std::make_shared<StageLet>();
  out->outer_ = outer.let;
  std::vector<std::string> names = out->outer_ ? out->outer_->names() : std::vector<std::string>{};
  for (const BsonElement& v : let) {
    HG_RETURN_IF_ERROR(ValidateVariableName(v.FieldName()));
    HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(v, outer.Expressions()));
    out->exprs_.emplace_back(std::string(v.FieldName()), std::move(e));
    names.emplace_back(v.FieldName());
  }
  out->vars_ = std::make_shared<query::LetVariables>(std::move(names), std::vector<BsonObj>{});
  return std::shared_ptr<const StageLet>(std::move(out));
}

PipelineContext StageLet::SubContext(const PipelineContext& outer) const {
  PipelineContext sub = outer;
  sub.let = vars_;
  return sub;
}

Status StageLet::Bind(const BsonObj& doc, int64_t now_millis) const {
  std::vector<Value> own;
  Variables v(now_millis);
  for (const auto& [name, e] : exprs_) {
    HG_ASSIGN_OR_RETURN(Value val, e->Evaluate(doc, v));
    own.push_back(std::move(val));
  }
  std::vector<BsonObj> values = outer_ ? outer_->values() : std::vector<BsonObj>{};
  for (BsonObj& d : LetValueDocuments(own)) values.push_back(std::move(d));
  vars_->SetValues(std::move(values));
  return Status::OK();
}

std::vector<std::string> StageLet::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : exprs_) out.push_back(name);
  return out;
}

Value StageLet::value(size_t i) const {
  const size_t outer = outer_ ? outer_->names().size() : 0;
  return Value::FromHolder(vars_->holder(static_cast<int>(outer + i)));
}

Status ParseLookupStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse,
                  "the $lookup stage specification must be an object, but found " +
                      std::string(bson::TypeName(spec.type())));
  }
  auto s = std::make_shared<LookupStage>();
  s->ctx = ctx;
  bool have_from = false, have_as = false;
  std::optional<BsonObj> let_spec;
  for (const BsonElement& e : spec.Obj()) {
    std::string_view f = e.FieldName();
    if (f == "from") {
      if (e.type() == BsonType::kObject) {
        // MongoDB allows {db, coll} only for a few internal namespaces.
        return Status(
            ErrorCode::kFailedToParse,
            "$lookup with syntax {from: {db:<>, coll:<>},..} is not supported for db: " +
                std::string(e.Obj()["db"].type() == BsonType::kString ? e.Obj()["db"].Str() : "") +
                " and coll: " +
                std::string(e.Obj()["coll"].type() == BsonType::kString ? e.Obj()["coll"].Str()
                                                                        : ""));
      }
      HG_ASSIGN_OR_RETURN(s->from, StringArg("$lookup", e));
      if (s->from.empty() || s->from.find('$') != std::string::npos) {
        return Status(ErrorCode::kInvalidNamespace, "invalid $lookup namespace: " + s->from);
      }
      have_from = true;
    } else if (f == "as") {
      HG_ASSIGN_OR_RETURN(s->as, StringArg("$lookup", e));
      have_as = true;
    } else if (f == "localField") {
      HG_ASSIGN_OR_RETURN(std::string p, StringArg("$lookup", e));
      s->local_field = query::SplitPath(p);
    } else if (f == "foreignField") {
      HG_ASSIGN_OR_RETURN(std::string p, StringArg("$lookup", e));
      s->foreign_field = query::SplitPath(p);
    } else if (f == "let") {
      if (e.type() != BsonType::kObject) {
        return Status(ErrorCode::kFailedToParse,
                      "$lookup argument 'let' must be an object, is type " +
                          std::string(bson::TypeName(e.type())));
      }
      let_spec = e.Obj();
    } else if (f == "pipeline") {
      if (e.type() != BsonType::kArray) {
        return Status(ErrorCode::kTypeMismatch, "'pipeline' option must be specified as an array");
      }
      s->sub_pipeline = e.Obj().Owned();
    } else {
      return Status(ErrorCode::kFailedToParse, "unknown argument to $lookup: " + std::string(f));
    }
  }
  if (!have_as) return Status(ErrorCode::kFailedToParse, "must specify 'as' field for a $lookup");
  if (s->as.empty() || s->as[0] == '$') {
    return PipelineError(16410, "FieldPath field names may not start with '$'.");
  }
  if (s->local_field.has_value() != s->foreign_field.has_value()) {
    return Status(ErrorCode::kFailedToParse,
                  "$lookup requires both or neither of 'localField' and 'foreignField' to be "
                  "specified");
  }
  if (!s->local_field && !s->sub_pipeline) {
    return Status(ErrorCode::kFailedToParse,
                  "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' "
                  "to be specified");
  }
  if (let_spec && !s->sub_pipeline) {
    return Status(ErrorCode::kFailedToParse, "$lookup with 'let' must also specify 'pipeline'");
  }
  const bool starts_with_documents =
      s->sub_pipeline && !s->sub_pipeline->IsEmpty() &&
      s->sub_pipeline->FirstElement().type() == BsonType::kObject &&
      s->sub_pipeline->FirstElement().Obj().FirstElement().FieldName() == "$documents";
  if (!have_from && !starts_with_documents) {
    return Status(ErrorCode::kFailedToParse, "must specify 'from' field for a $lookup");
  }
  if (let_spec && !let_spec->IsEmpty()) {
    HG_ASSIGN_OR_RETURN(s->let, StageLet::Parse(*let_spec, ctx));
  }
  if (s->sub_pipeline) {
    HG_RETURN_IF_ERROR(CheckSubPipeline(*s->sub_pipeline, "$lookup", 51047));
    HG_ASSIGN_OR_RETURN(s->sub,
                        Pipeline::Parse(*s->sub_pipeline, s->let ? s->let->SubContext(ctx) : ctx));
    s->geo_near = s->sub->PopLeadingGeoNear();
    if (s->geo_near) {
      // The near read takes the place of the foreign scan; a $match after it stays in `sub`.
    } else if (!s->let) {
      // Nothing in it depends on the input document: its leading $match goes to the read.
      if (auto leading = s->sub->PopLeadingMatch()) s->foreign_filter = leading->filter.Owned();
    } else if (!s->local_field) {
      s->expr_eq = FindExprEquality(*s->sub_pipeline, s->let->names());
    }
  }
  if (!ctx.collections) return NoCollectionAccess("$lookup");
  out->push_back(std::move(s));
  return Status::OK();
}

// ---- $unionWith ----

namespace {

class UnionWithStage : public Stage {
 public:
  PipelineContext ctx;
  std::string coll;
  std::unique_ptr<Pipeline> sub;        // may be null: no pipeline
  BsonObj filter;                       // the sub-pipeline's leading $match, run by the scan
  std::optional<GeoNearSpec> geo_near;  // its leading $geoNear, which reads `coll` instead

  std::string_view name() const override { return "$unionWith"; }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const UnionWithStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (in_) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (d) return d;
          in_.reset();
          if (s_->coll.empty()) {
            // No collection: the sub-pipeline starts with $documents.
            other_ = std::make_unique<VectorDocumentStream>(std::vector<BsonObj>{});
          } else if (s_->geo_near) {
            HG_ASSIGN_OR_RETURN(other_,
                                s_->ctx.collections->ReadNear(s_->ctx.db, s_->coll, *s_->geo_near,
                                                              s_->sub->context()));
          } else {
            HG_ASSIGN_OR_RETURN(other_, s_->ctx.collections->Read(s_->ctx.db, s_->coll, s_->filter,
                                                                  ExprContext(s_->ctx)));
          }
          if (s_->sub) other_ = s_->sub->Bind(std::move(other_));
        }
        return other_->Next();
      }

     private:
      std::shared_ptr<const UnionWithStage> s_;
      std::unique_ptr<DocumentStream> in_;
      std::unique_ptr<DocumentStream> other_;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

}  // namespace

Status ParseUnionWithStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  auto s = std::make_shared<UnionWithStage>();
  s->ctx = ctx;
  if (spec.type() == BsonType::kString) {
    s->coll = std::string(spec.Str());
  } else if (spec.type() == BsonType::kObject) {
    bool have_coll = false, starts_with_documents = false;
    for (const BsonElement& e : spec.Obj()) {
      std::string_view f = e.FieldName();
      if (f == "coll") {
        if (e.type() != BsonType::kString) {
          return bson::WrongType("$unionWith", e, "string");
        }
        s->coll = std::string(e.Str());
        have_coll = true;
      } else if (f == "pipeline") {
        if (e.type() != BsonType::kArray) {
          return bson::WrongType("$unionWith", e, "array");
        }
        HG_RETURN_IF_ERROR(CheckSubPipeline(e.Obj(), "$unionWith", 31441));
        HG_ASSIGN_OR_RETURN(s->sub, Pipeline::Parse(e.Obj(), ctx));
        s->geo_near = s->sub->PopLeadingGeoNear();
        if (!s->geo_near) {
          if (auto leading = s->sub->PopLeadingMatch()) s->filter = leading->filter.Owned();
        }
        starts_with_documents =
            !e.Obj().IsEmpty() && e.Obj().FirstElement().type() == BsonType::kObject &&
            e.Obj().FirstElement().Obj().FirstElement().FieldName() == "$documents";
      } else {
        return bson::UnknownField("$unionWith", f);
      }
    }
    if (!have_coll && !starts_with_documents) {
      return Status(ErrorCode::kFailedToParse,
                    "$unionWith stage without explicit collection must have a pipeline with "
                    "$documents as first stage");
    }
  } else {
    return Status(ErrorCode::kFailedToParse,
                  "the $unionWith stage specification must be an object or string, but found " +
                      std::string(bson::TypeName(spec.type())));
  }
  if ((s->coll.empty() && !s->sub) || s->coll.find('$') != std::string::npos) {
    return Status(ErrorCode::kInvalidNamespace, "Invalid $unionWith namespace: " + s->coll);
  }
  if (!ctx.collections) return NoCollectionAccess("$unionWith");
  out->push_back(std::move(s));
  return Status::OK();
}

// ---- $graphLookup ----

namespace {

class GraphLookupStage : public Stage {
 public:
  PipelineContext ctx;
  std::string from, as;
  ExpressionPtr start_with;
  query::FieldPath connect_from, connect_to;
  std::optional<int64_t> max_depth;
  std::optional<std::string> depth_field;
  BsonObj restrict;

  std::string_view name() const override { return "$graphLookup"; }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const GraphLookupStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)), index_(s_->ctx.collator.get()) {}
      StatusWith<OptDoc> Next() override {
        HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
        if (!d) return d;
        if (!loaded_) {
          HG_RETURN_IF_ERROR(s_->ctx.collections
                                 ? ReadAll(*s_->ctx.collections, s_->ctx.db, s_->from, s_->restrict,
                                           ExprContext(s_->ctx), &foreign_)
                                 : NoCollectionAccess("$graphLookup"));
          index_.Build(foreign_, s_->connect_to);
          loaded_ = true;
        }
        Variables vars(s_->ctx.now_millis);
        HG_ASSIGN_OR_RETURN(Value start, s_->start_with->Evaluate(*d, vars));
        std::vector<Value> frontier;
        if (start.IsArray()) {
          frontier = start.ArrayValues();
        } else {
          frontier.push_back(start.missing() ? Value::Null() : start);
        }
        // Breadth-first: each document once (by _id), at the depth it was first reached.
        std::map<Value, int64_t, ValueLess> depth_by_id;
        std::vector<std::pair<size_t, int64_t>> found;
        std::set<Value, ValueLess> seen_keys(ValueLess{s_->ctx.collator.get()});
        for (int64_t depth = 0; !frontier.empty(); ++depth) {
          if (s_->max_depth && depth > *s_->max_depth) break;
          std::vector<Value> keys;
          for (auto& k : frontier) {
            if (seen_keys.insert(k).second) keys.push_back(k);
          }
          frontier.clear();
          for (size_t i : index_.Find(keys)) {
            Value id = Value::FromElement(foreign_[i]["_id"]);
            if (!depth_by_id.emplace(id, depth).second) continue;
            found.emplace_back(i, depth);
            CollectKeys(foreign_[i], s_->connect_from, false, &frontier, false);
          }
        }
        std::vector<BsonObj> results;
        for (const auto& [i, depth] : found) {
          results.push_back(s_->depth_field
                                ? SetPathValue(foreign_[i], query::SplitPath(*s_->depth_field),
                                               Value::Long(depth))
                                : foreign_[i]);
        }
        return OptDoc(SetPathValue(*d, query::SplitPath(s_->as), ArrayOf(results)));
      }

     private:
      std::shared_ptr<const GraphLookupStage> s_;
      std::unique_ptr<DocumentStream> in_;
      std::vector<BsonObj> foreign_;
      KeyIndex index_;
      bool loaded_ = false;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

}  // namespace

Status ParseGraphLookupStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  // MongoDB checks the spec's type and `from` first (its "lite parse"), with FailedToParse.
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse,
                  "the $graphLookup stage specification must be an object, but found " +
                      std::string(bson::TypeName(spec.type())));
  }
  BsonElement from = spec.Obj()["from"];
  if (from.eoo()) {
    return Status(
        ErrorCode::kFailedToParse,
        "missing 'from' option to $graphLookup stage specification: " + spec.Obj().ToJson());
  }
  if (from.type() != BsonType::kString) {
    return Status(ErrorCode::kFailedToParse,
                  "$graphLookup 'from' field must be a string, but found " +
                      std::string(bson::TypeName(from.type())));
  }
  auto s = std::make_shared<GraphLookupStage>();
  s->ctx = ctx;
  bool have_from = false, have_as = false, have_cf = false, have_ct = false;
  for (const BsonElement& e : spec.Obj()) {
    std::string_view f = e.FieldName();
    auto str = [&](std::string* dst) -> Status {
      if (e.type() != BsonType::kString) {
        return PipelineError(40103, "expected string as argument for " + std::string(f) +
                                        ", found: " + Value::FromElement(e).ToString());
      }
      *dst = std::string(e.Str());
      return Status::OK();
    };
    if (f == "from") {
      HG_RETURN_IF_ERROR(str(&s->from));
      have_from = true;
    } else if (f == "as") {
      HG_RETURN_IF_ERROR(str(&s->as));
      have_as = true;
    } else if (f == "connectFromField") {
      std::string p;
      HG_RETURN_IF_ERROR(str(&p));
      s->connect_from = query::SplitPath(p);
      have_cf = true;
    } else if (f == "connectToField") {
      std::string p;
      HG_RETURN_IF_ERROR(str(&p));
      s->connect_to = query::SplitPath(p);
      have_ct = true;
    } else if (f == "depthField") {
      std::string p;
      HG_RETURN_IF_ERROR(str(&p));
      s->depth_field = p;
    } else if (f == "startWith") {
      HG_ASSIGN_OR_RETURN(s->start_with, Expression::ParseExpression(e, ctx.Expressions()));
    } else if (f == "maxDepth") {
      if (!e.IsNumber()) {
        return PipelineError(40100, "maxDepth must be numeric, found type: " +
                                        std::string(bson::TypeName(e.type())));
      }
      double v = e.NumberDouble();
      if (v < 0) {
        return PipelineError(40101, "maxDepth requires a nonnegative argument, found: " +
                                        Value::FromElement(e).ToString());
      }
      if (v != static_cast<double>(static_cast<int64_t>(v))) {
        return PipelineError(40102, "maxDepth could not be represented as a long long: " +
                                        Value::FromElement(e).ToString());
      }
      s->max_depth = static_cast<int64_t>(v);
    } else if (f == "restrictSearchWithMatch") {
      if (e.type() != BsonType::kObject) {
        return PipelineError(40185, "restrictSearchWithMatch must be an object, found " +
                                        std::string(bson::TypeName(e.type())));
      }
      s->restrict = e.Obj().Owned();
      HG_RETURN_IF_ERROR(query::Matcher::Parse(s->restrict, ExprContext(ctx)).status());
    } else {
      return PipelineError(40104, "Unknown argument to $graphLookup: " + std::string(f));
    }
  }
  if (!have_from || !have_as || !s->start_with || !have_cf || !have_ct) {
    return PipelineError(40105,
                         "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', "
                         "and 'connectToField' to be specified.");
  }
  if (!ctx.collections) return NoCollectionAccess("$graphLookup");
  out->push_back(std::move(s));
  return Status::OK();
}

}  // namespace hourglass::pipeline
