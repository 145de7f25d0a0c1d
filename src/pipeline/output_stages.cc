// Stages that write other collections: $out and $merge. Both must be the pipeline's last stage
// (Pipeline::Parse checks, 40601); they consume their whole input on the first Next() and then
// report the end of the stream, so the aggregate's reply has an empty first batch.
#include <set>

#include "bson/bson_compare.h"
#include "bson/field_check.h"
#include "pipeline/stage.h"
#include "query/path.h"

namespace hourglass::pipeline {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using OptDoc = std::optional<BsonObj>;

namespace {

Status CheckTargetName(std::string_view stage, const std::string& db, const std::string& coll) {
  if (db.empty() || coll.empty() || coll.find('$') != std::string::npos || coll[0] == '.' ||
      db.find_first_of("/\\. \"$") != std::string::npos) {
    return Status(ErrorCode::kInvalidNamespace,
                  "Invalid " + std::string(stage) + " target namespace, " + db + "." + coll);
  }
  // MongoDB words and numbers these differently for the two stages.
  const bool out = stage == "$out";
  if (coll.rfind("system.", 0) == 0) {
    return PipelineError(out ? 17385 : 31319, std::string(out ? "Can't " : "Cannot ") +
                                                  std::string(stage) +
                                                  " to special collection: " + coll);
  }
  if (db == "admin" || db == "config" || db == "local") {
    return PipelineError(out ? 31321 : 31320, std::string(out ? "Can't " : "Cannot ") +
                                                  std::string(stage) +
                                                  " to internal database: " + db);
  }
  return Status::OK();
}

// ---- $out ----

class OutStage : public Stage {
 public:
  PipelineContext ctx;
  std::string db, coll;
  BsonObj timeseries;

  std::string_view name() const override { return "$out"; }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const OutStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (!done_) {
          done_ = true;
          HG_RETURN_IF_ERROR(
              s_->ctx.collections->ReplaceCollection(s_->db, s_->coll, s_->timeseries, *in_));
        }
        return OptDoc();
      }

     private:
      std::shared_ptr<const OutStage> s_;
      std::unique_ptr<DocumentStream> in_;
      bool done_ = false;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

// ---- $merge ----

enum class WhenMatched { kReplace, kKeepExisting, kMerge, kFail, kPipeline };
enum class WhenNotMatched { kInsert, kDiscard, kFail };

std::string_view WhenMatchedName(WhenMatched m) {
  switch (m) {
    case WhenMatched::kReplace:
      return "replace";
    case WhenMatched::kKeepExisting:
      return "keepExisting";
    case WhenMatched::kMerge:
      return "merge";
    case WhenMatched::kFail:
      return "fail";
    case WhenMatched::kPipeline:
      break;
  }
  return "pipeline";
}

std::string_view WhenNotMatchedName(WhenNotMatched m) {
  switch (m) {
    case WhenNotMatched::kInsert:
      return "insert";
    case WhenNotMatched::kDiscard:
      return "discard";
    case WhenNotMatched::kFail:
      break;
  }
  return "fail";
}

class MergeStage : public Stage {
 public:
  PipelineContext ctx;
  std::string db, coll;
  std::vector<std::string> on = {"_id"};
  WhenMatched when_matched = WhenMatched::kMerge;
  WhenNotMatched when_not_matched = WhenNotMatched::kInsert;
  BsonObj update_pipeline;
  // whenMatched as a pipeline: parsed once with `let` (default {new: "$$ROOT"}), whose values
  // are set from each source document before the pipeline runs over the target.
  std::shared_ptr<const StageLet> let;
  std::unique_ptr<Pipeline> update;

  std::string_view name() const override { return "$merge"; }

  // The document with an _id (generated first when missing).
  static BsonObj WithId(const BsonObj& doc) {
    if (doc.HasField("_id")) return doc;
    BsonBuilder b;
    b.AppendObjectId("_id", bson::ObjectId::Generate());
    b.AppendElementsOf(doc);
    return b.Obj();
  }

  // {on1: {$eq: v1}, ...} for `doc`; 51132 when an `on` value is missing, null or an array.
  StatusWith<BsonObj> OnFilter(const BsonObj& doc) const {
    BsonBuilder b;
    for (const auto& f : on) {
      BsonElement v = doc.GetPath(f);
      if (v.eoo() || v.type() == BsonType::kNull || v.type() == BsonType::kUndefined ||
          v.type() == BsonType::kArray) {
        return PipelineError(51132,
                             "$merge write error: 'on' field cannot be missing, null, "
                             "undefined or an array");
      }
      size_t t = b.OpenObject(f);
      b.AppendElementAs(v, "$eq");
      b.Close(t);
    }
    return b.Obj();
  }

  // The target document after merging `source` into `target` by the whenMatched mode.
  StatusWith<BsonObj> Merged(const BsonObj& target, const BsonObj& source) const {
    BsonElement target_id = target["_id"];
    switch (when_matched) {
      case WhenMatched::kReplace: {
        if (source.HasField("_id")) return source;
        BsonBuilder b;
        b.AppendElement(target_id);
        b.AppendElementsOf(source);
        return b.Obj();
      }
      case WhenMatched::kMerge: {
        BsonObj out = target;
        for (const BsonElement& e : source) {
          out = SetPathValue(out, {std::string(e.FieldName())}, Value::FromElement(e));
        }
        return out;
      }
      case WhenMatched::kPipeline: {
        HG_RETURN_IF_ERROR(let->Bind(source, ctx.now_millis));
        HG_ASSIGN_OR_RETURN(auto docs, update->RunOver({target}));
        if (docs.size() != 1) {
          return Status(ErrorCode::kBadValue,
                        "$merge's whenMatched pipeline must produce exactly one document");
        }
        if (!docs[0].HasField("_id")) {
          BsonBuilder b;
          b.AppendElement(target_id);
          b.AppendElementsOf(docs[0]);
          return b.Obj();
        }
        return docs[0];
      }
      case WhenMatched::kKeepExisting:
      case WhenMatched::kFail:
        break;
    }
    return target;
  }

  Status MergeOne(const BsonObj& input) const {
    CollectionAccess& access = *ctx.collections;
    BsonObj doc = input;
    if (on.size() == 1 && on[0] == "_id") doc = WithId(doc);
    HG_ASSIGN_OR_RETURN(BsonObj filter, OnFilter(doc));
    HG_ASSIGN_OR_RETURN(std::optional<BsonObj> target,
                        access.FindOne(db, coll, filter, ctx.collator));
    if (!target) {
      switch (when_not_matched) {
        case WhenNotMatched::kInsert:
          return access.Insert(db, coll, WithId(doc));
        case WhenNotMatched::kDiscard:
          return Status::OK();
        case WhenNotMatched::kFail:
          return PipelineError(13113,
                               "$merge could not find a matching document in the target "
                               "collection for at least one document in the source collection");
      }
    }
    if (when_matched == WhenMatched::kKeepExisting) return Status::OK();
    if (when_matched == WhenMatched::kFail) {
      return Status(ErrorCode::kDuplicateKey,
                    "$merge with whenMatched: fail found an existing document with the same "
                    "values for the 'on' fields");
    }
    HG_ASSIGN_OR_RETURN(BsonObj merged, Merged(*target, doc));
    if (!bson::ElementValuesEqual(merged["_id"], (*target)["_id"])) {
      return Status(ErrorCode::kImmutableField,
                    "$merge failed to update the matching document, did you attempt to modify "
                    "the _id or the shard key? :: caused by :: Performing an update on the path "
                    "'_id' would modify the immutable field '_id'");
    }
    return access.Replace(db, coll, *target, merged);
  }

  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> input) const override {
    class Stream : public DocumentStream {
     public:
      Stream(std::shared_ptr<const MergeStage> s, std::unique_ptr<DocumentStream> in)
          : s_(std::move(s)), in_(std::move(in)) {}
      StatusWith<OptDoc> Next() override {
        if (done_) return OptDoc();
        done_ = true;
        HG_RETURN_IF_ERROR(s_->ctx.collections->CheckMergeTarget(s_->db, s_->coll, s_->on,
                                                                 s_->ctx.collator.get()));
        while (true) {
          HG_ASSIGN_OR_RETURN(OptDoc d, in_->Next());
          if (!d) break;
          HG_RETURN_IF_ERROR(s_->MergeOne(*d));
        }
        return OptDoc();
      }

     private:
      std::shared_ptr<const MergeStage> s_;
      std::unique_ptr<DocumentStream> in_;
      bool done_ = false;
    };
    return std::make_unique<Stream>(Self(this), std::move(input));
  }
};

// `into`/`$out` targets: "coll" or {db, coll}.
Status ParseTarget(std::string_view stage, const BsonElement& e, const std::string& default_db,
                   std::string* db, std::string* coll, BsonObj* timeseries) {
  *db = default_db;
  if (e.type() == BsonType::kString) {
    *coll = std::string(e.Str());
    return Status::OK();
  }
  for (const BsonElement& f : e.Obj()) {
    std::string_view n = f.FieldName();
    if ((n == "db" || n == "coll") && f.type() != BsonType::kString) {
      return bson::WrongType(stage, f, "string");
    }
    if (n == "db") {
      *db = std::string(f.Str());
    } else if (n == "coll") {
      *coll = std::string(f.Str());
    } else if (n == "timeseries" && timeseries != nullptr) {
      if (f.type() != BsonType::kObject) {
        return bson::WrongType(stage, f, "object");
      }
      *timeseries = f.Obj().Owned();
    } else {
      return bson::UnknownField(stage, n);
    }
  }
  // $out's object form requires both names ($merge's `into` defaults the database).
  if (timeseries != nullptr && !e.Obj().HasField("db")) {
    return bson::MissingField(stage, "db");
  }
  if (coll->empty()) {
    return bson::MissingField(stage, "coll");
  }
  return Status::OK();
}

}  // namespace

Status ParseOutStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kString && spec.type() != BsonType::kObject) {
    return PipelineError(16990, "$out only supports a string or object argument, but found " +
                                    std::string(bson::TypeName(spec.type())));
  }
  auto s = std::make_shared<OutStage>();
  s->ctx = ctx;
  HG_RETURN_IF_ERROR(ParseTarget("$out", spec, ctx.db, &s->db, &s->coll, &s->timeseries));
  if (!ctx.collections) {
    return Status(ErrorCode::kCommandNotSupported,
                  "$out is not supported without a collection context");
  }
  HG_RETURN_IF_ERROR(CheckTargetName("$out", s->db, s->coll));
  out->push_back(std::move(s));
  return Status::OK();
}

Status ParseMergeStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  auto s = std::make_shared<MergeStage>();
  s->ctx = ctx;
  if (spec.type() == BsonType::kString) {
    s->db = ctx.db;
    s->coll = std::string(spec.Str());
  } else if (spec.type() == BsonType::kObject) {
    bool have_into = false;
    std::optional<BsonObj> let_spec;
    for (const BsonElement& e : spec.Obj()) {
      std::string_view f = e.FieldName();
      if (f == "into") {
        if (e.type() != BsonType::kString && e.type() != BsonType::kObject) {
          return PipelineError(51178,
                               "$merge 'into' field  must be either a string or an object, but "
                               "found " +
                                   std::string(bson::TypeName(e.type())));
        }
        if (e.type() == BsonType::kString && e.Str().empty()) {
          return PipelineError(5786800, "$merge 'into' field cannot be an empty string");
        }
        if (e.type() == BsonType::kObject) {
          BsonElement c = e.Obj()["coll"];
          if (c.type() != BsonType::kString || c.Str().empty()) {
            return PipelineError(5786801,
                                 "$merge 'into' field must specify a 'coll' that is not empty, "
                                 "null or undefined");
          }
        }
        HG_RETURN_IF_ERROR(ParseTarget("into", e, ctx.db, &s->db, &s->coll, nullptr));
        have_into = true;
      } else if (f == "on") {
        s->on.clear();
        if (e.type() == BsonType::kArray) {
          std::set<std::string_view> seen;
          for (const BsonElement& x : e.Obj()) {
            if (x.type() == BsonType::kString && !seen.insert(x.Str()).second) {
              return PipelineError(31465, "Found a duplicate field '" + std::string(x.Str()) + "'");
            }
          }
        }
        if (e.type() == BsonType::kString) {
          s->on.push_back(std::string(e.Str()));
        } else if (e.type() == BsonType::kArray) {
          for (const BsonElement& x : e.Obj()) {
            if (x.type() != BsonType::kString) {
              return PipelineError(51134, "$merge 'on' array elements must be strings, but found " +
                                              std::string(bson::TypeName(x.type())));
            }
            s->on.push_back(std::string(x.Str()));
          }
          if (s->on.empty()) {
            return PipelineError(51187,
                                 "If explicitly specifying $merge 'on', must include at least "
                                 "one field");
          }
        } else {
          return PipelineError(51186,
                               "$merge 'on' field  must be either a string or an array of "
                               "strings, but found " +
                                   std::string(bson::TypeName(e.type())));
        }
      } else if (f == "whenMatched") {
        if (e.type() == BsonType::kArray) {
          s->when_matched = WhenMatched::kPipeline;
          s->update_pipeline = e.Obj().Owned();
        } else if (e.type() == BsonType::kString) {
          std::string_view m = e.Str();
          if (m == "replace") {
            s->when_matched = WhenMatched::kReplace;
          } else if (m == "keepExisting") {
            s->when_matched = WhenMatched::kKeepExisting;
          } else if (m == "merge") {
            s->when_matched = WhenMatched::kMerge;
          } else if (m == "fail") {
            s->when_matched = WhenMatched::kFail;
          } else {
            return Status(ErrorCode::kBadValue, "Enumeration value '" + std::string(m) +
                                                    "' for field '$merge.whenMatched' is not a "
                                                    "valid value.");
          }
        } else {
          return PipelineError(51191,
                               "$merge 'whenMatched' field must be either a string or "
                               "an array, but found " +
                                   std::string(bson::TypeName(e.type())));
        }
      } else if (f == "whenNotMatched") {
        if (e.type() != BsonType::kString) {
          return bson::WrongType("$merge", e, "string");
        }
        std::string_view m = e.Str();
        if (m == "insert") {
          s->when_not_matched = WhenNotMatched::kInsert;
        } else if (m == "discard") {
          s->when_not_matched = WhenNotMatched::kDiscard;
        } else if (m == "fail") {
          s->when_not_matched = WhenNotMatched::kFail;
        } else {
          return Status(ErrorCode::kBadValue, "Enumeration value '" + std::string(m) +
                                                  "' for field '$merge.whenNotMatched' is not a "
                                                  "valid value.");
        }
      } else if (f == "let") {
        if (e.type() != BsonType::kObject) {
          return bson::WrongType("$merge", e, "object");
        }
        let_spec = e.Obj();
      } else {
        return bson::UnknownField("$merge", f);
      }
    }
    if (!have_into) {
      return bson::MissingField("$merge", "into");
    }
    // The modes MongoDB accepts together: keepExisting and fail only with insert.
    const bool insert_only =
        s->when_matched == WhenMatched::kKeepExisting || s->when_matched == WhenMatched::kFail;
    if (insert_only && s->when_not_matched != WhenNotMatched::kInsert) {
      return PipelineError(
          51181, "Combination of $merge modes 'whenMatched: " +
                     std::string(WhenMatchedName(s->when_matched)) + "' and 'whenNotMatched: " +
                     std::string(WhenNotMatchedName(s->when_not_matched)) + "' is not supported");
    }
    if (let_spec) {
      if (s->when_matched != WhenMatched::kPipeline) {
        return PipelineError(51199, "Cannot use 'let' variables with 'whenMatched: " +
                                        std::string(WhenMatchedName(s->when_matched)) + "' mode");
      }
      BsonElement new_elem = (*let_spec)["new"];
      if (!new_elem.eoo() && (new_elem.type() != BsonType::kString || new_elem.Str() != "$$ROOT")) {
        return PipelineError(51273,
                             "'let' may not define a value for the reserved 'new' variable other "
                             "than '$$ROOT'");
      }
    }
    if (s->when_matched == WhenMatched::kPipeline) {
      BsonBuilder let;
      if (let_spec) let.AppendElementsOf(*let_spec);
      if (!let_spec || (*let_spec)["new"].eoo()) let.AppendString("new", "$$ROOT");
      HG_ASSIGN_OR_RETURN(s->let, StageLet::Parse(let.Obj(), ctx));
      HG_ASSIGN_OR_RETURN(s->update, Pipeline::Parse(s->update_pipeline, s->let->SubContext(ctx)));
    }
  } else {
    return Status(ErrorCode::kTypeMismatch,
                  "$merge requires a string or object argument, but found " +
                      std::string(bson::TypeName(spec.type())));
  }
  if (!ctx.collections) {
    return Status(ErrorCode::kCommandNotSupported,
                  "$merge is not supported without a collection context");
  }
  HG_RETURN_IF_ERROR(CheckTargetName("$merge", s->db, s->coll));
  out->push_back(std::move(s));
  return Status::OK();
}

}  // namespace hourglass::pipeline
