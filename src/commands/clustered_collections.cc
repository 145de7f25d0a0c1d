#include "commands/clustered_collections.h"

#include <string>
#include <string_view>

#include "commands/command_util.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

bool IsIdKeyPattern(const BsonObj& key) {
  return key.NumFields() == 1 && key.FirstElement().FieldName() == "_id" &&
         key.FirstElement().IsNumber() && key.FirstElement().NumberDouble() == 1.0;
}

StatusWith<BsonObj> ParseClusteredIndexOption(const BsonElement& option) {
  if (option.type() == BsonType::kBool) {
    // (false is no option at all: the caller does not ask.)
    return Status(ErrorCode::kLocation5979703,
                  "The 'clusteredIndex' legacy format {clusteredIndex: <bool>} is only supported "
                  "for specific internal collections and vice versa");
  }
  if (option.type() != BsonType::kObject) {
    return bson::WrongVariantType("create.clusteredIndex", option, "[bool, object]");
  }
  constexpr std::string_view kContext = "create.clusteredIndex";
  const BsonObj spec = option.Obj();
  for (BsonElement f : spec) {
    std::string_view n = f.FieldName();
    if (n != "v" && n != "key" && n != "name" && n != "unique") return UnknownField(kContext, n);
  }
  HG_ASSIGN_OR_RETURN(auto v, GetInt64(kContext, spec, "v"));
  HG_ASSIGN_OR_RETURN(auto key, GetObject(kContext, spec, "key"));
  HG_ASSIGN_OR_RETURN(auto name, GetString(kContext, spec, "name"));
  if (!key) return MissingField(kContext, "key");
  if (spec["unique"].eoo() || spec["unique"].type() == BsonType::kNull) {
    return MissingField(kContext, "unique");
  }
  HG_ASSIGN_OR_RETURN(bool unique, GetBool(kContext, spec, "unique", false));
  if (!unique) {
    return Status(ErrorCode::kLocation5979700,
                  "The clusteredIndex option requires unique: true to be specified");
  }
  if (!IsIdKeyPattern(*key)) {
    return Status(ErrorCode::kInvalidIndexSpecificationOption,
                  "The clusteredIndex option is only supported for key: {_id: 1}");
  }
  if (v && *v != 2) {
    return Status(ErrorCode::kLocation5979704,
                  "Invalid clusteredIndex specification " + spec.ToJson() +
                      "; cannot create a clusteredIndex with v=" + std::to_string(*v));
  }
  BsonBuilder out;
  out.AppendInt32("v", 2);
  out.AppendObject("key", *key);
  out.AppendString("name", name.value_or("_id_"));
  out.AppendBool("unique", true);
  return out.Obj();
}

StatusWith<bool> NamesClusteredIndex(const catalog::Collection* coll, const BsonElement& spec) {
  if (spec.type() != BsonType::kObject) return false;  // NormalizeSpec reports it
  const BsonObj s = spec.Obj();
  const bool key_ok = s["key"].type() == BsonType::kObject;
  const bool cluster_key = key_ok && IsIdKeyPattern(s["key"].Obj());
  const std::optional<BsonObj>* clustered = coll ? &coll->ClusteredIndexSpec() : nullptr;
  const bool is_clustered = clustered && clustered->has_value();
  BsonElement option = s["clustered"];
  if (!option.eoo()) {
    if (!option.Truthy()) {
      const std::string shown = option.type() == BsonType::kBool ? "false"
                                : option.IsNumber()              ? "0"
                                                                 : "null";
      return Status(ErrorCode::kLocation6492800,
                    "Value '" + shown + "' for field 'clustered' is invalid");
    }
    if (!s["unique"].Truthy()) {
      return Status(ErrorCode::kCannotCreateIndex,
                    "The 'unique' field is required when 'clustered' is specified");
    }
    for (BsonElement f : s) {
      std::string_view n = f.FieldName();
      if (n != "name" && n != "unique" && n != "v" && n != "key" && n != "clustered") {
        return Status(
            ErrorCode::kInvalidIndexSpecificationOption,
            "The field '" + std::string(n) +
                "' is not valid for a clustered index specification. Specification: " + s.ToJson());
      }
    }
    if (coll == nullptr) {
      return Status(ErrorCode::kLocation6100900,
                    "Cannot implicitly create a new collection with createIndex 'clustered' "
                    "option");
    }
    if (!is_clustered || !cluster_key) {
      return Status(ErrorCode::kLocation6243700,
                    "Cannot create index with option 'clustered' that does not match an existing "
                    "clustered index");
    }
    return true;
  }
  if (!is_clustered) return false;
  const BsonObj& cspec = **clustered;
  if (!cluster_key) {
    if (s["name"].type() == BsonType::kString && s["name"].Str() == cspec["name"].Str()) {
      return Status(ErrorCode::kLocation6100906,
                    "Cannot create an index with the same name as the clusteredIndex but a "
                    "different key. Spec: " +
                        s.ToJson() + ", clusteredIndex: " + cspec.ToJson());
    }
    return false;
  }
  if (!s["unique"].eoo() && !s["unique"].Truthy()) {
    return Status(
        ErrorCode::kLocation6100909,
        "Cannot create an index on the clusteredIndex key with unique: false. Spec: " + s.ToJson());
  }
  return true;
}

Status CannotDropClusteredIndex() {
  return Status(ErrorCode::kLocation5979800, "It is illegal to drop the clusteredIndex");
}

StatusWith<BsonObj> CollModClusteredExpiry(const catalog::Collection& coll,
                                           const BsonElement& value) {
  if (!coll.ClusteredIndexSpec()) {
    return Status(ErrorCode::kInvalidOptions,
                  "'expireAfterSeconds' option is only supported on collections clustered by _id");
  }
  HG_ASSIGN_OR_RETURN(std::optional<int64_t> seconds,
                      timeseries::ParseCollModExpireAfterSeconds(value));
  BsonBuilder out;
  for (BsonElement e : coll.entry().options) {
    if (e.FieldName() != "expireAfterSeconds") out.AppendElement(e);
  }
  if (seconds) out.AppendInt64("expireAfterSeconds", *seconds);
  return out.Obj();
}

}  // namespace hourglass::commands
