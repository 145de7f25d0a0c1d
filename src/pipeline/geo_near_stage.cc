// $geoNear: parsed here; run by the read of the collection it starts (exec/near_read.h), which
// takes it off the pipeline (Pipeline::PopLeadingGeoNear).
#include <cmath>
#include <limits>

#include "pipeline/stage.h"

namespace hourglass::pipeline {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// A stream that fails with `status` when read.
class ErrorStream final : public DocumentStream {
 public:
  explicit ErrorStream(Status status) : status_(std::move(status)) {}
  StatusWith<std::optional<BsonObj>> Next() override { return status_; }

 private:
  Status status_;
};

class GeoNearStage final : public Stage {
 public:
  explicit GeoNearStage(GeoNearSpec spec) : spec_(std::move(spec)) {}
  std::string_view name() const override { return "$geoNear"; }
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream>) const override {
    // Only a read of a collection runs it, from the front of its pipeline.
    return std::make_unique<ErrorStream>(
        Status(ErrorCode::kCommandNotSupported,
               "$geoNear is only supported as the first stage of an aggregate on a collection"));
  }
  const GeoNearSpec& spec() const { return spec_; }

 private:
  GeoNearSpec spec_;
};

// A distance option: a non-negative number.
Status ReadDistance(const BsonElement& e, std::string_view name, double* out) {
  if (!e.IsNumber()) {
    return Status(ErrorCode::kTypeMismatch, std::string(name) + " must be a number");
  }
  const double d = e.NumberDouble();
  if (!(d >= 0)) return Status(ErrorCode::kBadValue, std::string(name) + " must be nonnegative");
  *out = d;
  return Status::OK();
}

Status NotAPoint() {
  return PipelineError(5860401,
                       "$geoNear requires near argument to be a GeoJSON object or a legacy "
                       "point(array)");
}

// Whether `near` is an expression to evaluate ("$$pt", or a point built of variables) rather
// than a constant: it names a variable or a path, or uses an operator, somewhere.
bool ReadsVariables(const BsonElement& e) {
  if (e.type() == BsonType::kString) return !e.Str().empty() && e.Str()[0] == '$';
  if (e.type() != BsonType::kObject && e.type() != BsonType::kArray) return false;
  for (const BsonElement& c : e.Obj()) {
    if (e.type() == BsonType::kObject && !c.FieldName().empty() && c.FieldName()[0] == '$') {
      return true;
    }
    if (ReadsVariables(c)) return true;
  }
  return false;
}

}  // namespace

StatusWith<BsonObj> NearValue(const GeoNearSpec& spec, int64_t now_millis) {
  if (!spec.near_expr) return spec.near;
  // As in MongoDB, the point is the same for every document: evaluated without one.
  Variables vars(now_millis);
  HG_ASSIGN_OR_RETURN(Value v, spec.near_expr->Evaluate(BsonObj(), vars));
  bson::BsonBuilder b;
  v.AppendTo(b, "near");
  BsonObj near = b.Obj();
  const BsonType t = near.FirstElement().type();
  if (t != BsonType::kObject && t != BsonType::kArray) return NotAPoint();
  return near;
}

Status GeoNearNotFirst() {
  return PipelineError(40603,
                       "$geoNear was not the first stage in the pipeline after optimization. Is "
                       "optimization disabled or inhibited?");
}

Status ParseGeoNearStage(const BsonElement& spec, const PipelineContext& ctx, StageList* out) {
  if (spec.type() != BsonType::kObject) {
    return Status(ErrorCode::kTypeMismatch, "$geoNear must take a nested object");
  }
  GeoNearSpec s;
  s.min_distance = s.max_distance = std::numeric_limits<double>::quiet_NaN();
  for (BsonElement e : spec.Obj()) {
    const std::string_view n = e.FieldName();
    if (n == "near") {
      if (ReadsVariables(e)) {
        HG_ASSIGN_OR_RETURN(s.near_expr, Expression::ParseExpression(e, ctx.Expressions()));
        continue;
      }
      if (e.type() != BsonType::kObject && e.type() != BsonType::kArray) return NotAPoint();
      bson::BsonBuilder b;
      b.AppendElementAs(e, "near");
      s.near = b.Obj();
    } else if (n == "distanceField") {
      if (e.type() != BsonType::kString) {
        return PipelineError(16606, "$geoNear requires a 'distanceField' option as a String");
      }
      s.distance_field = std::string(e.Str());
    } else if (n == "spherical") {
      s.spherical = e.Truthy();
    } else if (n == "maxDistance") {
      HG_RETURN_IF_ERROR(ReadDistance(e, n, &s.max_distance));
    } else if (n == "minDistance") {
      HG_RETURN_IF_ERROR(ReadDistance(e, n, &s.min_distance));
    } else if (n == "distanceMultiplier") {
      HG_RETURN_IF_ERROR(ReadDistance(e, n, &s.multiplier));
    } else if (n == "query") {
      if (e.type() != BsonType::kObject) {
        return Status(ErrorCode::kTypeMismatch, "query must be an object");
      }
      s.query = e.Obj().Owned();
    } else if (n == "includeLocs") {
      if (e.type() != BsonType::kString) {
        return PipelineError(16607, "$geoNear requires that 'includeLocs' option is a String");
      }
      s.include_locs = std::string(e.Str());
    } else if (n == "key") {
      if (e.type() != BsonType::kString) {
        return Status(ErrorCode::kTypeMismatch,
                      "$geoNear parameter 'key' must be of type string but found type: " +
                          std::string(bson::TypeName(e.type())));
      }
      if (e.Str().empty()) {
        return Status(ErrorCode::kBadValue, "$geoNear parameter 'key' cannot be the empty string");
      }
      s.key = std::string(e.Str());
    } else if (n == "collation") {
      return PipelineError(40227,
                           "$geoNear does not accept the 'collation' parameter. Instead, specify "
                           "a collation for the entire aggregation command.");
    } else if (n == "limit") {
      return PipelineError(50858,
                           "$geoNear no longer supports the 'limit' parameter. Use a $limit stage "
                           "instead.");
    } else if (n == "num") {
      return PipelineError(50857,
                           "$geoNear no longer supports the 'num' parameter. Use a $limit stage "
                           "instead.");
    }
    // Other fields are ignored, as MongoDB ignores them.
  }
  if (s.near.IsEmpty() && !s.near_expr) {
    return PipelineError(5860400, "$geoNear requires a 'near' argument");
  }
  if (s.distance_field.empty()) {
    return PipelineError(16606, "$geoNear requires a 'distanceField' option as a String");
  }
  out->push_back(std::make_shared<GeoNearStage>(std::move(s)));
  return Status::OK();
}

std::optional<GeoNearSpec> Pipeline::PopLeadingGeoNear() {
  if (stages_.empty()) return std::nullopt;
  const auto* stage = dynamic_cast<const GeoNearStage*>(stages_.front().get());
  if (stage == nullptr) return std::nullopt;
  GeoNearSpec spec = stage->spec();
  if (sources_.empty()) {
    stages_.erase(stages_.begin());
  } else {
    DropLeadingSources(1);
  }
  return spec;
}

}  // namespace hourglass::pipeline
