#include "exec/near_read.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "pipeline/stage.h"
#include "query/path.h"

namespace hourglass::exec {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

bool IsNearOperator(std::string_view name) {
  return name == "$near" || name == "$nearSphere" || name == "$geoNear";
}

// Whether an operator object of a field ({$near: ...}) holds a near operator.
bool HasNearOperator(const BsonElement& value) {
  if (value.type() != BsonType::kObject) return false;
  for (BsonElement op : value.Obj()) {
    if (IsNearOperator(op.FieldName())) return true;
  }
  return false;
}

// Whether a near operator appears anywhere inside `e` (a clause below the top level).
bool ContainsNear(const BsonElement& e, int depth = 0) {
  if (depth > 100 || (e.type() != BsonType::kObject && e.type() != BsonType::kArray)) {
    return false;
  }
  for (BsonElement child : e.Obj()) {
    if (IsNearOperator(child.FieldName()) || ContainsNear(child, depth + 1)) return true;
  }
  return false;
}

Status NotTopLevel() { return Status(ErrorCode::kBadValue, "geoNear must be top-level expr"); }

}  // namespace

StatusWith<std::optional<NearRead>> ExtractNear(const BsonObj& filter, BsonObj* rest) {
  std::optional<NearRead> near;
  BsonBuilder kept;
  // The near clause of a field, when `value` is one; errors for nested ones.
  auto take = [&](const BsonElement& clause) -> StatusWith<bool> {
    if (!HasNearOperator(clause)) {
      if (ContainsNear(clause)) return NotTopLevel();
      return false;
    }
    if (near) return Status(ErrorCode::kBadValue, "Too many geoNear expressions");
    std::string_view op;
    for (BsonElement e : clause.Obj()) {
      if (IsNearOperator(e.FieldName())) op = e.FieldName();
    }
    // $geoNear is an old name of $near in a filter.
    BsonObj spec = clause.Obj();
    if (op == "$geoNear") {
      BsonBuilder b;
      for (BsonElement e : spec)
        b.AppendElementAs(e, e.FieldName() == op ? "$near" : e.FieldName());
      spec = b.Obj();
      op = "$near";
    }
    HG_ASSIGN_OR_RETURN(geo::NearQuery q, geo::NearQuery::ParseOperator(op, spec));
    near.emplace();
    near->field = std::string(clause.FieldName());
    near->query = std::move(q);
    return true;
  };
  for (BsonElement e : filter) {
    const std::string_view name = e.FieldName();
    if (name == "$and" && e.type() == BsonType::kArray) {
      BsonBuilder and_kept;
      size_t n = 0;
      for (BsonElement branch : e.Obj()) {
        bool taken_here = false;
        if (branch.type() == BsonType::kObject && branch.Obj().NumFields() == 1 &&
            !branch.Obj().FirstElement().FieldName().starts_with("$")) {
          HG_ASSIGN_OR_RETURN(taken_here, take(branch.Obj().FirstElement()));
        } else if (ContainsNear(branch)) {
          return NotTopLevel();
        }
        if (!taken_here) and_kept.AppendElementAs(branch, std::to_string(n++));
      }
      if (n > 0) kept.AppendArray("$and", and_kept.Obj());
      continue;
    }
    if (name.starts_with("$")) {
      if (ContainsNear(e)) return NotTopLevel();
      kept.AppendElement(e);
      continue;
    }
    HG_ASSIGN_OR_RETURN(bool taken, take(e));
    if (!taken) kept.AppendElement(e);
  }
  *rest = near ? kept.Obj() : filter;
  return near;
}

BsonObj NearPlanningFilter(const NearRead& near, const BsonObj& rest, std::optional<double> max) {
  BsonBuilder b;
  for (BsonElement e : rest) b.AppendElement(e);
  // On the plane a circle of the maximum distance (2d indexes), on the sphere a cap (2dsphere and
  // 2d indexes); without a maximum, one that holds everything.
  const bool flat = near.query.metric() == geo::NearQuery::Metric::kFlat;
  const size_t field = b.OpenObject(near.field);
  const size_t within = b.OpenObject("$geoWithin");
  const size_t cap = b.OpenArray(flat ? "$center" : "$centerSphere");
  const size_t center = b.OpenArray("0");
  b.AppendDouble("0", near.query.point().x);
  b.AppendDouble("1", near.query.point().y);
  b.Close(center);
  b.AppendDouble("1", flat ? max.value_or(near.query.MaxFlatDistance())
                           : (max ? near.query.ToRadians(*max) : near.query.MaxRadians()));
  b.Close(cap);
  b.Close(within);
  b.Close(field);
  return b.Obj();
}

namespace {
bool IndexServes(const catalog::SecondaryIndex& idx, const NearRead& near) {
  if (!idx.entry->ready || idx.desc.hidden) return false;
  const BsonElement f = idx.desc.key[near.field];
  if (f.type() != BsonType::kString) return false;
  // A 2dsphere index serves points on the sphere; a 2d index legacy points, on the plane or on
  // the sphere ($nearSphere); GeoJSON points need a 2dsphere index.
  if (catalog::IsSphereKey(f)) return near.query.metric() != geo::NearQuery::Metric::kFlat;
  return catalog::IsFlatKey(f) && !near.query.geojson();
}
}  // namespace

Status CheckNearIndex(const catalog::Collection& coll, const NearRead& near) {
  for (const auto& idx : coll.Indexes()) {
    if (IndexServes(idx, near)) return Status::OK();
  }
  return Status(
      ErrorCode::kNoQueryExecutionPlans,
      "error processing query: ns=" + coll.ns() +
          " planner returned error :: caused by :: unable to find index for $geoNear query");
}

StatusWith<std::string> GeoNearField(const catalog::Collection& coll) {
  // A 2d index comes first, as in MongoDB.
  std::string flat_field;
  int flat = 0;
  for (const auto& idx : coll.Indexes()) {
    if (!idx.entry->ready || !idx.desc.flat) continue;
    ++flat;
    flat_field = std::string(idx.desc.key.FirstElement().FieldName());  // 2d is first
  }
  if (flat > 1) {
    return Status(ErrorCode::kIndexNotFound, "There is more than one 2d index on " + coll.ns() +
                                                 "; unsure which to use for $geoNear");
  }
  if (flat == 1) return flat_field;
  std::string field;
  int found = 0;
  for (const auto& idx : coll.Indexes()) {
    if (!idx.entry->ready || !idx.desc.sphere) continue;
    ++found;
    for (BsonElement f : idx.desc.key) {
      if (catalog::IsSphereKey(f)) {
        field = std::string(f.FieldName());
        break;
      }
    }
  }
  if (found == 0) {
    return Status(ErrorCode::kIndexNotFound,
                  "$geoNear requires a 2d or 2dsphere index, but none were found");
  }
  if (found > 1) {
    return Status(ErrorCode::kIndexNotFound, "There is more than one 2dsphere index on " +
                                                 coll.ns() + "; unsure which to use for $geoNear");
  }
  return field;
}

namespace {

// Orders documents by distance: takes a stream's documents within a band of distances, then
// hands them out nearest first, with $geoNear's output fields.
class NearOrder {
 public:
  explicit NearOrder(NearRead near)
      : near_(std::move(near)),
        distance_path_(query::SplitPath(near_.distance_field)),
        locs_path_(query::SplitPath(near_.include_locs)) {}

  const NearRead& near() const { return near_; }

  // Takes `in`'s documents whose distance lies within the query's bounds and in the band
  // (above, at_most], ordered; replaces what was held.
  Status Load(pipeline::DocumentStream& in, double above, double at_most) {
    rows_.clear();
    next_ = 0;
    while (true) {
      HG_ASSIGN_OR_RETURN(auto doc, in.Next());
      if (!doc) break;
      std::optional<double> best;
      BsonElement best_value;
      for (const BsonElement& v : geo::GeoValuesAtPath(*doc, near_.field)) {
        const std::optional<double> d = near_.query.Distance(v);
        if (d && (!best || *d < *best)) {
          best = d;
          best_value = v;
        }
      }
      if (!best || !near_.query.InRange(*best) || !(*best > above) || *best > at_most) continue;
      Row row{*best, doc->Owned(), {}};
      if (!near_.include_locs.empty()) {
        BsonBuilder b;
        b.AppendElementAs(best_value, "");
        row.location = b.Obj();
      }
      rows_.push_back(std::move(row));
    }
    std::stable_sort(rows_.begin(), rows_.end(),
                     [](const Row& a, const Row& b) { return a.distance < b.distance; });
    return Status::OK();
  }

  bool Empty() const { return next_ == rows_.size(); }
  BsonObj Pop() { return Output(rows_[next_++]); }

 private:
  struct Row {
    double distance;
    BsonObj doc;
    BsonObj location;  // {"": <the value measured>} for includeLocs
  };

  BsonObj Output(const Row& row) const {
    if (near_.distance_field.empty() && near_.include_locs.empty()) return row.doc;
    BsonObj out = row.doc;
    if (!near_.distance_field.empty()) {
      out = pipeline::SetPathValue(out, distance_path_,
                                   pipeline::Value::Double(row.distance * near_.multiplier));
    }
    if (!near_.include_locs.empty()) {
      out = pipeline::SetPathValue(out, locs_path_,
                                   pipeline::Value::FromElement(row.location.FirstElement()));
    }
    return out;
  }

  NearRead near_;
  std::vector<std::string> distance_path_, locs_path_;
  std::vector<Row> rows_;
  size_t next_ = 0;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

class NearStream : public pipeline::DocumentStream {
 public:
  NearStream(std::unique_ptr<pipeline::DocumentStream> in, NearRead near)
      : in_(std::move(in)), order_(std::move(near)) {}

  StatusWith<std::optional<BsonObj>> Next() override {
    if (!loaded_) {
      loaded_ = true;
      HG_RETURN_IF_ERROR(order_.Load(*in_, -kInf, kInf));
    }
    if (order_.Empty()) return std::optional<BsonObj>();
    return std::optional<BsonObj>(order_.Pop());
  }

 private:
  std::unique_ptr<pipeline::DocumentStream> in_;
  NearOrder order_;
  bool loaded_ = false;
};

class RingNearStream : public pipeline::DocumentStream {
 public:
  RingNearStream(NearScan scan, NearRead near, RingBounds rings)
      : scan_(std::move(scan)), order_(std::move(near)), whole_(rings.last), radius_(rings.first) {}

  StatusWith<std::optional<BsonObj>> Next() override {
    while (order_.Empty() && above_ < whole_) {
      const double ring = std::min(radius_, whole_);
      HG_ASSIGN_OR_RETURN(auto in, scan_(ring));
      HG_RETURN_IF_ERROR(order_.Load(*in, above_, ring));
      above_ = ring;
      radius_ *= 2;
    }
    if (order_.Empty()) return std::optional<BsonObj>();
    return std::optional<BsonObj>(order_.Pop());
  }

 private:
  NearScan scan_;
  NearOrder order_;
  double whole_, radius_;
  double above_ = -kInf;  // the first ring starts at distance 0, inclusive
};

}  // namespace

std::unique_ptr<pipeline::DocumentStream> MakeNearStream(
    std::unique_ptr<pipeline::DocumentStream> in, NearRead near) {
  return std::make_unique<NearStream>(std::move(in), std::move(near));
}

std::optional<RingBounds> RingsOf(const catalog::Collection& coll, const NearRead& near) {
  const geo::NearQuery& q = near.query;
  if (q.metric() != geo::NearQuery::Metric::kFlat) {
    // About 20 km, a few index cells; doubling reaches the antipode in 10 rings.
    return RingBounds{q.FromRadians(M_PI / 1024), q.FromRadians(q.MaxRadians())};
  }
  for (const auto& idx : coll.Indexes()) {
    if (!idx.desc.flat || !IndexServes(idx, near)) continue;
    // Every indexed point lies within the plane: no farther than its farthest corner.
    const double lo = idx.desc.flat->min, hi = idx.desc.flat->max;
    const geo::FlatPoint p = q.point();
    const double far = std::hypot(std::max(std::fabs(p.x - lo), std::fabs(p.x - hi)),
                                  std::max(std::fabs(p.y - lo), std::fabs(p.y - hi)));
    return RingBounds{(hi - lo) / 1024, std::min(q.MaxFlatDistance(), far)};
  }
  return std::nullopt;
}

std::unique_ptr<pipeline::DocumentStream> MakeRingNearStream(NearScan scan, NearRead near,
                                                             RingBounds rings) {
  return std::make_unique<RingNearStream>(std::move(scan), std::move(near), rings);
}

}  // namespace hourglass::exec
