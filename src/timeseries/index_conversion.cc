#include "timeseries/index_conversion.h"

#include <string>
#include <vector>

#include "query/matcher.h"
#include "query/path.h"
#include "timeseries/bucket_filter.h"

namespace hourglass::timeseries {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr std::string_view kMin = "control.min.";
constexpr std::string_view kMax = "control.max.";

// "M" -> "", "M.a.b" -> ".a.b"; nullopt if `field` is not the meta field or below it.
std::optional<std::string_view> MetaSuffix(std::string_view field, const TimeseriesOptions& o) {
  if (!o.meta_field) return std::nullopt;
  const std::string& m = *o.meta_field;
  if (field == m) return std::string_view();
  if (query::PathIsBelow(field, m)) {
    return field.substr(m.size());
  }
  return std::nullopt;
}

bool IsTimeOrMeta(std::string_view field, const TimeseriesOptions& o) {
  return field == o.time_field || MetaSuffix(field, o).has_value();
}

Status BadKey(const BsonObj& user_key, std::string_view what) {
  return Status(ErrorCode::kBadValue, "Invalid index spec for time-series collection: " +
                                          user_key.ToJson() + ". " + std::string(what));
}

// The numeric value of a key component as a bucket key stores it (the user's element, renamed).
void AppendPair(BsonBuilder& b, const BsonElement& e, std::string_view field) {
  bool descending = e.NumberDouble() < 0;
  b.AppendElementAs(e, std::string(descending ? kMax : kMin) + std::string(field));
  b.AppendElementAs(e, std::string(descending ? kMin : kMax) + std::string(field));
}

bool SameNumber(const BsonElement& a, const BsonElement& b) {
  return a.IsNumber() && b.IsNumber() && a.NumberDouble() == b.NumberDouble();
}

// For partial filters: whether MongoDB's pushdown (spec §6.2) could translate the conjunct
// `field: value` on a measurement to a bucket-level predicate.
bool PushableMeasurementPredicate(const BsonElement& value) {
  if (value.type() != BsonType::kObject || value.Obj().IsEmpty() ||
      !value.Obj().FirstElement().FieldName().starts_with("$")) {
    return query::IsEqualityScalar(value);
  }
  for (BsonElement op : value.Obj()) {
    std::string_view n = op.FieldName();
    if (n == "$eq" || n == "$gt" || n == "$gte" || n == "$lt" || n == "$lte") {
      if (!query::IsEqualityScalar(op)) return false;
    } else if (n == "$in") {
      if (op.type() != BsonType::kArray) return false;
      for (BsonElement v : op.Obj()) {
        if (!query::IsEqualityScalar(v)) return false;
      }
    } else if (n != "$exists") {
      return false;
    }
  }
  return true;
}

// Translates a partial filter to bucket terms (see the header). `$and` conjuncts are flattened.
StatusWith<BsonObj> TranslatePartialFilter(const BsonObj& filter, const TimeseriesOptions& o) {
  // Evaluated on buckets by the index, under the collection's collation, which computed them.
  HG_ASSIGN_OR_RETURN(auto bf, BucketFilter::Make(filter, BucketFilterSpec::Of(o, {}, nullptr)));
  if (bf.meta_only()) return bf.meta_filter().Owned();
  std::vector<BsonElement> conjuncts;
  std::vector<BsonObj> holders;
  std::vector<BsonObj> pending{filter};
  bool pushable = true;
  while (!pending.empty()) {
    BsonObj cur = pending.back();
    pending.pop_back();
    for (BsonElement e : cur) {
      std::string_view f = e.FieldName();
      if (f == "$and" && e.type() == BsonType::kArray) {
        for (BsonElement c : e.Obj()) {
          if (c.type() == BsonType::kObject) pending.push_back(c.Obj());
        }
        continue;
      }
      if (MetaSuffix(f, o)) continue;
      if (f.starts_with("$") || !PushableMeasurementPredicate(e)) pushable = false;
    }
  }
  if (!pushable) {
    return Status(ErrorCode::kLocation5916301,
                  "Error translating non-metadata time-series predicate to operate on buckets: " +
                      filter.ToJson());
  }
  // The loose bucket-level predicate: a bucket enters the index when it may hold a measurement
  // the filter selects, so a query implying the filter finds all of them through the index.
  return bf.ToBson().Owned();
}

}  // namespace

StatusWith<BsonObj> BucketKeyFromUserKey(const BsonObj& user_key, const TimeseriesOptions& o) {
  if (user_key.IsEmpty()) return BadKey(user_key, "The index key must not be empty");
  BsonBuilder b;
  for (BsonElement e : user_key) {
    std::string_view f = e.FieldName();
    if (f == o.time_field) {
      if (!e.IsNumber()) {
        return BadKey(user_key,
                      "Indexes on the time field must be ascending or descending (numbers only): " +
                          std::string(f));
      }
      AppendPair(b, e, f);
      continue;
    }
    if (auto suffix = MetaSuffix(f, o)) {
      b.AppendElementAs(e, "meta" + std::string(*suffix));
      continue;
    }
    if (e.type() == BsonType::kString && e.Str() == "2dsphere") {
      b.AppendString("data." + std::string(f), "2dsphere_bucket");
      continue;
    }
    if (!e.IsNumber()) {
      return BadKey(user_key,
                    "Indexes on measurement fields must be ascending or descending (numbers only), "
                    "or '2dsphere': " +
                        std::string(f));
    }
    AppendPair(b, e, f);
  }
  return b.Obj();
}

std::optional<BsonObj> UserKeyFromBucketKey(const BsonObj& bucket_key, const TimeseriesOptions& o) {
  std::vector<BsonElement> elems;
  for (BsonElement e : bucket_key) elems.push_back(e);
  if (elems.empty()) return std::nullopt;
  BsonBuilder b;
  for (size_t i = 0; i < elems.size(); ++i) {
    const BsonElement& e = elems[i];
    std::string_view f = e.FieldName();
    if (f == "meta" || f.starts_with("meta.")) {
      if (!o.meta_field) return std::nullopt;
      b.AppendElementAs(e, *o.meta_field + std::string(f.substr(4)));
      continue;
    }
    if (f.starts_with("data.") && e.type() == BsonType::kString && e.Str() == "2dsphere_bucket") {
      b.AppendString(f.substr(5), "2dsphere");
      continue;
    }
    bool is_min = f.starts_with(kMin), is_max = f.starts_with(kMax);
    if ((!is_min && !is_max) || !e.IsNumber()) return std::nullopt;
    std::string_view field = f.substr(kMin.size());
    bool descending = e.NumberDouble() < 0;
    // Ascending components come as min then max, descending ones as max then min.
    if (is_min == descending) return std::nullopt;
    std::string partner = std::string(is_min ? kMax : kMin) + std::string(field);
    bool paired =
        i + 1 < elems.size() && elems[i + 1].FieldName() == partner && SameNumber(e, elems[i + 1]);
    // The time field may stand alone (the series index {meta: 1, control.min.T: 1}).
    if (!paired && field != o.time_field) return std::nullopt;
    if (paired) ++i;
    b.AppendElementAs(e, field);
  }
  return b.Obj();
}

Status CheckUserIndexSpec(const BsonObj& raw_spec, const TimeseriesOptions& o) {
  if (raw_spec["unique"].Truthy()) {
    return Status(ErrorCode::kInvalidOptions,
                  "Unique indexes are not supported on time-series collections");
  }
  BsonElement key = raw_spec["key"];
  if (key.type() == BsonType::kObject) {
    for (BsonElement e : key.Obj()) {
      if (e.type() == BsonType::kString && e.Str() == "text") {
        return Status(ErrorCode::kInvalidOptions,
                      "Text indexes are not supported on time-series collections");
      }
    }
  }
  if (raw_spec.HasField("partialFilterExpression") && raw_spec.HasField("collation")) {
    return Status(ErrorCode::kIndexOptionsConflict,
                  "Partial indexes on time-series collections do not support the collation "
                  "option; the index uses the collation of the collection");
  }
  if (key.type() == BsonType::kObject) {
    HG_RETURN_IF_ERROR(BucketKeyFromUserKey(key.Obj(), o).status());
  }
  return Status::OK();
}

StatusWith<BsonObj> BucketIndexSpecFromUserSpec(const BsonObj& user_spec,
                                                const TimeseriesOptions& o) {
  BsonObj user_key = user_spec["key"].Obj();
  HG_ASSIGN_OR_RETURN(BsonObj bucket_key, BucketKeyFromUserKey(user_key, o));
  bool measurement = false;
  for (BsonElement e : user_key) {
    if (!IsTimeOrMeta(e.FieldName(), o)) measurement = true;
  }
  if (user_spec["sparse"].Truthy() && measurement) {
    return Status(ErrorCode::kInvalidOptions,
                  "Sparse indexes are not supported on time-series measurements");
  }
  BsonElement partial = user_spec["partialFilterExpression"];
  if (user_spec.HasField("expireAfterSeconds")) {
    if (user_key.NumFields() != 1 || user_key.FirstElement().FieldName() != o.time_field) {
      return Status(ErrorCode::kInvalidOptions,
                    "TTL indexes on non-time fields are not supported on time-series collections");
    }
    bool meta_only = partial.type() == BsonType::kObject && !partial.Obj().IsEmpty();
    if (meta_only) {
      for (BsonElement e : partial.Obj()) {
        if (!MetaSuffix(e.FieldName(), o)) meta_only = false;
      }
    }
    if (!meta_only) {
      return Status(ErrorCode::kInvalidOptions,
                    "TTL indexes on time-series collections require a partialFilterExpression on "
                    "the metaField");
    }
    // Indexed on the bucket start only: the TTL monitor expires a bucket once its whole span is
    // past the expiry (ttl_monitor.h).
    BsonBuilder k;
    k.AppendElementAs(user_key.FirstElement(), std::string(kMin) + o.time_field);
    bucket_key = k.Obj();
  }
  BsonObj translated;
  if (partial.type() == BsonType::kObject) {
    HG_ASSIGN_OR_RETURN(translated, TranslatePartialFilter(partial.Obj(), o));
  }
  BsonBuilder b;
  for (BsonElement e : user_spec) {
    std::string_view n = e.FieldName();
    if (n == "key") {
      b.AppendObject("key", bucket_key);
    } else if (n == "partialFilterExpression") {
      b.AppendObject(n, translated);
    } else {
      b.AppendElement(e);
    }
  }
  if (measurement || partial.type() == BsonType::kObject) {
    b.AppendObject("originalSpec", user_spec);
  }
  return b.Obj();
}

std::optional<BsonObj> UserIndexSpecFromBucketSpec(const BsonObj& bucket_spec,
                                                   const TimeseriesOptions& o) {
  BsonElement original = bucket_spec["originalSpec"];
  if (original.type() == BsonType::kObject) return original.Obj().Owned();
  BsonElement key = bucket_spec["key"];
  if (key.type() != BsonType::kObject) return std::nullopt;
  auto user_key = UserKeyFromBucketKey(key.Obj(), o);
  if (!user_key) return std::nullopt;
  BsonBuilder b;
  for (BsonElement e : bucket_spec) {
    if (e.FieldName() == "key") {
      b.AppendObject("key", *user_key);
    } else {
      b.AppendElement(e);
    }
  }
  return b.Obj();
}

}  // namespace hourglass::timeseries
