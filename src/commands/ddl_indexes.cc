// createIndexes and dropIndexes. Secondary indexes exist on regular collections (single-field,
// compound, ascending/descending, hashed, wildcard with wildcardProjection; unique, sparse,
// partialFilterExpression, hidden, expireAfterSeconds, collation, 2dsphere, 2d); text and compound
// wildcard indexes fail with CommandNotSupported (115). On a time-series collection X the
// user's specs are converted to bucket specs (timeseries/index_conversion.h) and built on
// system.buckets.X; conflicts and dropping by key are judged in the user's terms.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#include "catalog/index_keys.h"
#include "collation/collator.h"
#include "commands/clustered_collections.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/ddl_commands.h"
#include "commands/timeseries_util.h"
#include "geo/flat_index.h"
#include "geo/sphere_index.h"
#include "query/matcher.h"
#include "query/path.h"
#include "timeseries/index_conversion.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr int kMaxIndexes = 64;

Status CannotCreate(std::string reason) {
  return Status(ErrorCode::kCannotCreateIndex, std::move(reason));
}

// The index type of a key pattern as MongoDB names it: the string value of a field if any
// ("hashed", "text"...), "wildcard" if a field is "$**" or ends in ".$**", else "" (btree).
std::string IndexPlugin(const BsonObj& key) {
  for (BsonElement f : key) {
    if (f.type() == BsonType::kString) return std::string(f.Str());
  }
  for (BsonElement f : key) {
    if (catalog::IsWildcardFieldName(f.FieldName())) return "wildcard";
  }
  return "";
}

// A wildcard key pattern's own rules: one wildcard field, and no other field inside its subtree.
Status ValidateWildcardKeyPattern(const BsonObj& key) {
  std::string_view wildcard;
  for (BsonElement f : key) {
    if (!catalog::IsWildcardFieldName(f.FieldName())) continue;
    if (!wildcard.empty()) {
      return Status(ErrorCode::kLocation7246201,
                    "Index Key can contain only one wildcard index field");
    }
    wildcard = f.FieldName();
  }
  std::string_view root = wildcard.substr(0, wildcard.size() - 3);  // keeps the trailing '.'
  if (root.empty()) return Status::OK();
  for (BsonElement f : key) {
    std::string_view name = f.FieldName();
    if (name == wildcard) continue;
    if (name.starts_with(root) || name == root.substr(0, root.size() - 1)) {
      return Status(ErrorCode::kLocation7246204,
                    "A wildcard index field should not overlap with and index key fields if "
                    "wildcard projection is empty, however '" +
                        std::string(name) + "' is overlapping with the wildcard index field.");
    }
  }
  return Status::OK();
}

// Checks a key pattern ({a: 1, b: -1, c: "hashed"}, {"$**": 1}).
Status ValidateKeyPattern(const BsonObj& key) {
  const std::string plugin = IndexPlugin(key);
  if (plugin == "wildcard") HG_RETURN_IF_ERROR(ValidateWildcardKeyPattern(key));
  int hashed = 0, flat_fields = 0;
  std::string_view plugin_seen;
  for (BsonElement f : key) {
    std::string_view name = f.FieldName();
    if (name.empty()) return CannotCreate("Index keys cannot be an empty field.");
    if (f.type() == BsonType::kString) {
      std::string_view kind = f.Str();
      if (!plugin_seen.empty() && plugin_seen != kind &&
          (kind == "hashed" || kind == "2dsphere" || kind == "2d" || kind == "text")) {
        return CannotCreate("Can't use more than one index plugin for a single index.");
      }
      plugin_seen = kind;
      if (kind == "hashed") {
        ++hashed;
      } else if (kind == "2dsphere") {
        // S2 cells (catalog/index_keys.h); several 2dsphere fields may share an index.
      } else if (kind == "2dsphere_bucket") {
        // A time-series measurement's 2dsphere index on its bucket collection
        // (timeseries/index_conversion.h): the cells of the bucket's points.
      } else if (kind == "2d") {
        // Geohashes of point locations (catalog/index_keys.h): one 2d field, first.
        if (flat_fields++ > 0) {
          return Status(ErrorCode::kLocation16800, "can't have 2 geo fields");
        }
        if (name != key.FirstElement().FieldName()) {
          return Status(ErrorCode::kLocation16801, "2d has to be first in index");
        }
      } else if (kind == "text" || kind == "geoHaystack") {
        return Status(ErrorCode::kCommandNotSupported,
                      std::string(kind) + " indexes are not supported yet");
      } else {
        return CannotCreate("Unknown index plugin '" + std::string(kind) + "'");
      }
    } else if (!f.IsNumber()) {
      return CannotCreate("Values in v:2 index key pattern cannot be of type " +
                          std::string(bson::TypeName(f.type())) +
                          ". Only numbers > 0, numbers < 0, and strings are allowed.");
    } else if (f.NumberDouble() == 0 || std::isnan(f.NumberDouble())) {
      return CannotCreate("Values in the index key pattern can't be 0.");
    }
    if (name.find("..") != std::string_view::npos || name.back() == '.' || name.front() == '.') {
      return CannotCreate("Index keys cannot contain an empty field name");
    }
    // A '$' component is only the final "$**" of a wildcard field, or a DBRef field.
    size_t start = 0;
    for (size_t i = 0; start <= name.size(); ++i) {
      size_t dot = name.find('.', start);
      std::string_view part =
          name.substr(start, dot == std::string_view::npos ? name.npos : dot - start);
      const bool last = dot == std::string_view::npos;
      if (!part.empty() && part.front() == '$') {
        const bool db_ref = i > 0 && (part == "$id" || part == "$ref" || part == "$db");
        const bool wildcard = last && part == "$**" && plugin == "wildcard";
        if (!db_ref && !wildcard) {
          return CannotCreate(
              "Index key contains an illegal field name: field name starts with '$'.");
        }
      }
      if (last) break;
      start = dot + 1;
    }
  }
  if (hashed > 1) return CannotCreate("A maximum of one index field is allowed to be hashed");
  return Status::OK();
}

// Checks a wildcardProjection option against its key pattern (before the projection is parsed).
Status ValidateWildcardProjection(const BsonObj& key, const BsonElement& f) {
  if (IndexPlugin(key) != "wildcard") {
    return Status(ErrorCode::kBadValue,
                  "The field 'wildcardProjection' is only allowed in 'wildcard' indexes");
  }
  if (f.type() != BsonType::kObject) {
    return Status(ErrorCode::kTypeMismatch,
                  "The field 'wildcardProjection' must be a non-empty object, but got " +
                      std::string(bson::TypeName(f.type())));
  }
  if (!key.HasField("$**")) {
    return Status(ErrorCode::kFailedToParse,
                  "The field 'wildcardProjection' is only allowed when 'key' is {\"$**\": ±1}");
  }
  if (f.Obj().IsEmpty()) {
    return Status(ErrorCode::kFailedToParse,
                  "The 'wildcardProjection' field can't be an empty object");
  }
  return Status::OK();
}

// The rules of a wildcard index spec once its options are read: no sparse, unique or TTL; a
// compound "$**" needs a wildcardProjection; compound wildcard indexes are not built yet.
Status ValidateWildcardSpec(const BsonObj& key, const BsonObj& spec) {
  if (key.NumFields() > 1 && key.HasField("$**") && !spec.HasField("wildcardProjection")) {
    return CannotCreate(
        "Compound wildcard indexes on all fields must also specify 'wildcardProjection' option");
  }
  for (std::string_view opt : {"sparse", "unique"}) {
    if (spec[opt].Truthy()) {
      return CannotCreate("Index type 'wildcard' does not support the '" + std::string(opt) +
                          "' option");
    }
  }
  if (spec.HasField("expireAfterSeconds")) {
    return CannotCreate(
        "cannot make a TTL index :: caused by :: Index type 'wildcard' does not support the "
        "'expireAfterSeconds' option");
  }
  if (key.NumFields() > 1) {
    return Status(ErrorCode::kCommandNotSupported,
                  "compound wildcard indexes are not supported yet");
  }
  BsonElement projection = spec["wildcardProjection"];
  auto parsed = catalog::WildcardIndex::Parse(key.FirstElement(), projection);
  if (!parsed.ok()) {
    return Status(parsed.status().code(),
                  "Failed to parse projection: wildcardProjection :: caused by :: " +
                      parsed.status().reason());
  }
  return Status::OK();
}

// Validates one createIndexes spec and returns it as stored and listed: {v: 2, key, name, then
// the options in the order given}. `default_collation`: the collection's (empty: simple).
StatusWith<BsonObj> NormalizeSpec(const BsonElement& e, int position,
                                  const BsonObj& default_collation) {
  if (e.type() != BsonType::kObject) {
    return WrongTypeAtPath("createIndexes.indexes." + std::to_string(position), e, "object");
  }
  BsonObj spec = e.Obj();
  BsonElement key = spec["key"];
  if (key.eoo()) {
    return Status(ErrorCode::kFailedToParse,
                  "The 'key' field is a required property of an index specification");
  }
  if (key.type() != BsonType::kObject || key.Obj().IsEmpty()) {
    return CannotCreate("Index keys cannot be an empty field.");
  }
  HG_RETURN_IF_ERROR(ValidateKeyPattern(key.Obj()));
  BsonElement name = spec["name"];
  if (!name.eoo() && name.type() != BsonType::kString) {
    return Status(ErrorCode::kTypeMismatch, "The field 'name' must be a string, but got " +
                                                std::string(bson::TypeName(name.type())));
  }
  if (!name.eoo() && name.Str().empty()) return CannotCreate("index name cannot be empty");
  std::string index_name =
      name.eoo() ? catalog::DefaultIndexName(key.Obj()) : std::string(name.Str());
  bool is_id = IsIdKeyPattern(key.Obj());
  bool hashed = false, sphere = false;
  for (BsonElement f : key.Obj()) {
    if (catalog::IsHashedKey(f)) hashed = true;
    if (catalog::IsSphereKey(f)) sphere = true;
  }
  BsonBuilder out;
  out.AppendInt32("v", 2);
  out.AppendObject("key", key.Obj());
  out.AppendString("name", index_name);
  bool sparse = false, partial = false, unique = false, has_collation = false;
  bool has_sphere_version = false;
  for (BsonElement f : spec) {
    std::string_view n = f.FieldName();
    if (n == "key" || n == "name") continue;
    if (n == "v") {
      if (!f.IsNumber() || f.NumberLong() != 2) {
        if (f.IsNumber() && f.NumberLong() == 1) continue;  // accepted, stored as v: 2
        return CannotCreate("Invalid index specification " + spec.ToJson() +
                            "; only index version 2 is supported");
      }
      continue;
    }
    if (n == "unique" || n == "sparse" || n == "hidden" || n == "background") {
      if (!f.IsNumber() && f.type() != BsonType::kBool) {
        return Status(ErrorCode::kTypeMismatch, "The field '" + std::string(n) +
                                                    "' must be a bool, but got " +
                                                    std::string(bson::TypeName(f.type())));
      }
      if (n == "unique") unique = f.Truthy();
      if (n == "sparse") sparse = f.Truthy();
      if (n == "hidden" && f.Truthy() && is_id) {
        return Status(ErrorCode::kBadValue, "can't hide _id index");
      }
      out.AppendBool(n, f.Truthy());
      continue;
    }
    if (n == "partialFilterExpression") {
      if (f.type() != BsonType::kObject) {
        return Status(ErrorCode::kTypeMismatch,
                      "The field 'partialFilterExpression' must be an object, but got " +
                          std::string(bson::TypeName(f.type())));
      }
      HG_RETURN_IF_ERROR(query::Matcher::Parse(f.Obj()).status());
      partial = true;
      out.AppendElement(f);
      continue;
    }
    if (n == "expireAfterSeconds") {
      if (!f.IsNumber()) {
        return Status(ErrorCode::kTypeMismatch,
                      "TTL index 'expireAfterSeconds' option must be numeric, but received a "
                      "type of '" +
                          std::string(bson::TypeName(f.type())) + "'");
      }
      double v = f.NumberDouble();
      if (std::isnan(v) || v < 0 || v > 2147483647.0) {
        return Status(ErrorCode::kInvalidOptions,
                      "TTL index 'expireAfterSeconds' option must be within an acceptable range, "
                      "try a lower number");
      }
      if (key.Obj().NumFields() != 1) {
        return CannotCreate(
            "TTL indexes are single-field indexes, compound indexes do not "
            "support TTL");
      }
      out.AppendElement(f);
      continue;
    }
    if (n == "collation") {
      if (f.type() != BsonType::kObject) return WrongType("createIndexes", f, "object");
      // Normalized (every field, MongoDB's order); the simple collation is not stored.
      HG_ASSIGN_OR_RETURN(auto collator, collation::Collator::Make(f.Obj()));
      if (collator) out.AppendObject("collation", collator->spec().ToBson());
      has_collation = true;
      continue;
    }
    if (n == "wildcardProjection") {
      HG_RETURN_IF_ERROR(ValidateWildcardProjection(key.Obj(), f));
      out.AppendElement(f);
      continue;
    }
    if (n == "2dsphereIndexVersion") {
      if (!f.IsNumber()) {
        return Status(ErrorCode::kTypeMismatch,
                      "The field '2dsphereIndexVersion' must be a number, but got " +
                          std::string(bson::TypeName(f.type())));
      }
      const double v = f.NumberDouble();
      if (v != 1 && v != 2 && v != 3) {
        BsonBuilder shown;
        shown.AppendElement(f);
        return CannotCreate("unsupported geo index version " + shown.Obj().ToJson() +
                            ", only versions: [1,2,3] are supported");
      }
      has_sphere_version = true;
      out.AppendElement(f);
      continue;
    }
    if (n == "coarsestIndexedLevel" || n == "finestIndexedLevel") {
      // Read as MongoDB reads them (a whole number), checked below for a 2dsphere index.
      if (!f.IsNumber()) {
        return Status(ErrorCode::kTypeMismatch, "Expected field \"" + std::string(n) +
                                                    "\" to have numeric type, but found " +
                                                    std::string(bson::TypeName(f.type())));
      }
      if (!f.WholeNumber()) {
        return Status(ErrorCode::kBadValue,
                      "Expected field \"" + std::string(n) +
                          "\" to have a value exactly representable as a 64-bit integer");
      }
      out.AppendElement(f);
      continue;
    }
    if (n == "bits" || n == "min" || n == "max") {
      if (!f.IsNumber()) {
        return Status(ErrorCode::kTypeMismatch, "The field '" + std::string(n) +
                                                    "' must be a number, but got " +
                                                    std::string(bson::TypeName(f.type())));
      }
      out.AppendElement(f);
      continue;
    }
    if (n == "weights" || n == "default_language" || n == "language_override" ||
        n == "textIndexVersion" || n == "storageEngine" || n == "clustered" ||
        n == "prepareUnique" || n == "columnstoreProjection") {
      return Status(ErrorCode::kCommandNotSupported,
                    "index option '" + std::string(n) + "' is not supported yet");
    }
    return Status(ErrorCode::kInvalidIndexSpecificationOption,
                  "The field '" + std::string(n) + "' is not valid for an index specification. " +
                      "Specification: " + spec.ToJson());
  }
  if (sphere && !has_sphere_version) out.AppendInt32("2dsphereIndexVersion", 3);
  if (sphere) HG_RETURN_IF_ERROR(geo::SphereIndexParams::FromSpec(spec).status());
  // An index created without a collation takes the collection's default, as in MongoDB.
  if (!has_collation && !default_collation.IsEmpty()) {
    out.AppendObject("collation", default_collation);
  }
  BsonObj built = out.Obj();
  if (IndexPlugin(key.Obj()) == "2d") {
    HG_RETURN_IF_ERROR(geo::FlatIndexParams::FromSpec(built).status());
    if (built.HasField("collation")) {
      return CannotCreate("Index type '2d' does not support collation: " + built.ToJson());
    }
  }
  if (IndexPlugin(key.Obj()) == "wildcard") {
    HG_RETURN_IF_ERROR(ValidateWildcardSpec(key.Obj(), built));
  }
  if (sparse && partial) {
    return CannotCreate("cannot mix \"partialFilterExpression\" and \"sparse\" options");
  }
  if (hashed && unique) {
    return CannotCreate(
        "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.");
  }
  if (is_id && (sparse || partial || unique || index_name != "_id_")) {
    if (index_name != "_id_") return Status(ErrorCode::kBadValue, "_id index must be named _id_");
    return CannotCreate("The field '" +
                        std::string(sparse    ? "sparse"
                                    : partial ? "partialFilterExpression"
                                              : "unique") +
                        "' is not valid for an _id index specification.");
  }
  return built;
}

// The options that make two indexes on one key pattern different.
bool SameOptions(const BsonObj& a, const BsonObj& b) {
  for (std::string_view opt : {"unique", "sparse"}) {
    if (a[opt].Truthy() != b[opt].Truthy()) return false;
  }
  for (std::string_view opt :
       {"partialFilterExpression", "expireAfterSeconds", "wildcardProjection"}) {
    BsonElement x = a[opt], y = b[opt];
    if (x.eoo() != y.eoo()) return false;
    if (x.eoo()) continue;
    if (x.IsNumber() && y.IsNumber()) {
      if (x.NumberDouble() != y.NumberDouble()) return false;
    } else if (x.type() != y.type() || x.ValueSize() != y.ValueSize() ||
               std::memcmp(x.value(), y.value(), x.ValueSize()) != 0) {
      return false;
    }
  }
  return true;
}

// Whether two stored `collation` fields (normalized; missing: simple) are the same collation.
bool SameCollationSpec(const BsonElement& a, const BsonElement& b) {
  if (a.eoo() || b.eoo()) return a.eoo() == b.eoo();
  return a.Obj().BinaryEqual(b.Obj());
}

// Checks `spec` against the existing indexes: true if an identical index exists; conflicts fail
// with IndexOptionsConflict (85) or IndexKeySpecsConflict (86).
StatusWith<bool> AlreadyExists(const std::vector<BsonObj>& existing, const BsonObj& spec) {
  BsonObj key = spec["key"].Obj();
  std::string_view name = spec["name"].Str();
  for (const BsonObj& cur : existing) {
    bool same_name = cur["name"].Str() == name;
    // An index is its key pattern and its collation: two collations make two indexes.
    bool same_key = catalog::SameKeyPattern(cur["key"].Obj(), key) &&
                    SameCollationSpec(cur["collation"], spec["collation"]);
    if (same_name && same_key) {
      if (SameOptions(cur, spec)) return true;
      return Status(ErrorCode::kIndexOptionsConflict,
                    "An existing index has the same name as the requested index but different "
                    "options. Requested index: " +
                        spec.ToJson() + ", existing index: " + cur.ToJson());
    }
    if (same_name) {
      return Status(ErrorCode::kIndexKeySpecsConflict,
                    "An existing index has the same name as the requested index. When index "
                    "names are not specified, they are auto generated and can cause conflicts. "
                    "Requested index: " +
                        spec.ToJson() + ", existing index: " + cur.ToJson());
    }
    if (same_key && SameOptions(cur, spec)) {
      return Status(
          ErrorCode::kIndexOptionsConflict,
          "Index already exists with a different name: " + std::string(cur["name"].Str()));
    }
  }
  return false;
}

// createIndexes reports the conversion's BadValue as CannotCreateIndex (spec §7.1).
Status AsCannotCreate(Status st) {
  if (st.code() == ErrorCode::kBadValue) return CannotCreate(st.reason());
  return st;
}

// Wildcard keys on a time-series collection. A measurement wildcard converts (as any measurement
// field does) into a control.min and a control.max field, two wildcard fields: MongoDB then fails
// with Location7246201. A wildcard on the metaField's subtree converts to a bucket index on
// "meta.<path>.$**" like any metaField index.
Status CheckTimeseriesWildcard(const BsonObj& spec, const timeseries::TimeseriesOptions& o) {
  BsonElement key = spec["key"];
  if (key.type() != BsonType::kObject) return Status::OK();
  for (BsonElement f : key.Obj()) {
    std::string_view name = f.FieldName();
    if (!catalog::IsWildcardFieldName(name) || !f.IsNumber()) continue;
    if (o.meta_field && query::PathIsBelow(name, *o.meta_field)) continue;
    return Status(ErrorCode::kLocation7246201,
                  "Index Key can contain only one wildcard index field");
  }
  return Status::OK();
}

// createIndexes on a time-series collection: specs checked and compared in the user's terms,
// built on the bucket collection in bucket terms.
Status CreateTimeseriesIndexes(CommandContext& ctx, const timeseries::TimeseriesCollection& ts,
                               const BsonObj& indexes, BsonBuilder& reply) {
  std::vector<BsonObj> user_specs, bucket_specs;
  int position = 0;
  const BsonObj default_collation = catalog::CollationOption(ts.buckets->entry().options);
  for (BsonElement e : indexes) {
    if (e.type() == BsonType::kObject) {
      HG_RETURN_IF_ERROR(CheckTimeseriesWildcard(e.Obj(), ts.options));
      HG_RETURN_IF_ERROR(AsCannotCreate(timeseries::CheckUserIndexSpec(e.Obj(), ts.options)));
    }
    // Without a collation of its own an index takes the collection's, as in MongoDB.
    HG_ASSIGN_OR_RETURN(BsonObj spec, NormalizeSpec(e, position++, default_collation));
    auto bucket_spec = timeseries::BucketIndexSpecFromUserSpec(spec, ts.options);
    if (!bucket_spec.ok()) return AsCannotCreate(bucket_spec.status());
    HG_RETURN_IF_ERROR(ValidateKeyPattern(bucket_spec.value()["key"].Obj()));
    user_specs.push_back(std::move(spec));
    bucket_specs.push_back(std::move(bucket_spec).value());
  }
  std::vector<BsonObj> existing;
  for (auto& [user, idx] : UserViewOfIndexes(ts)) existing.push_back(user);
  std::vector<BsonObj> to_build;
  for (size_t i = 0; i < user_specs.size(); ++i) {
    HG_ASSIGN_OR_RETURN(bool exists, AlreadyExists(existing, user_specs[i]));
    if (exists) continue;
    existing.push_back(user_specs[i]);
    to_build.push_back(bucket_specs[i]);
  }
  auto before = static_cast<int32_t>(ts.buckets->entry().indexes.size());
  if (before + static_cast<int32_t>(to_build.size()) > kMaxIndexes) {
    return CannotCreate("add index fails, too many indexes for " + ts.buckets->ns() +
                        " key:" + to_build.back()["key"].Obj().ToJson());
  }
  if (!to_build.empty()) {
    HG_RETURN_IF_ERROR(ctx.service.catalog->CreateIndexes(ts.buckets->nss(), to_build));
  }
  reply.AppendBool("createdCollectionAutomatically", false);
  reply.AppendInt32("numIndexesBefore", before);
  reply.AppendInt32("numIndexesAfter", before + static_cast<int32_t>(to_build.size()));
  if (to_build.empty()) reply.AppendString("note", "all indexes already exist");
  return Status::OK();
}

// An index specification whose key is {_id: 1}.
bool IsAscendingIdKey(const BsonElement& spec) {
  if (spec.type() != BsonType::kObject || spec.Obj()["key"].type() != BsonType::kObject) {
    return false;
  }
  BsonObj key = spec.Obj()["key"].Obj();
  return key.NumFields() == 1 && key.FirstElement().FieldName() == "_id" &&
         key.FirstElement().IsNumber() && key.FirstElement().NumberDouble() == 1;
}

Status RunCreateIndexes(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"indexes", "commitQuorum", "ignoreUnknownIndexOptions",
                                            "isTimeseriesNamespace", "collectionUUID"}));
  HG_ASSIGN_OR_RETURN(auto nss, CommandNamespace(ctx, cmd));
  HG_ASSIGN_OR_RETURN(auto indexes, GetArray("createIndexes", cmd, "indexes"));
  if (!indexes) {
    return MissingField("createIndexes", "indexes");
  }
  if (indexes->IsEmpty()) {
    return Status(ErrorCode::kBadValue, "Must specify at least one index to create");
  }
  catalog::Catalog& catalog = *ctx.service.catalog;
  HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(ctx.service.Read(), nss));
  HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
  if (resolved.timeseries) {
    return CreateTimeseriesIndexes(ctx, *resolved.timeseries, *indexes, reply);
  }
  std::shared_ptr<catalog::Collection> coll = resolved.collection;
  const BsonObj default_collation =
      coll ? catalog::CollationOption(coll->entry().options) : BsonObj();
  std::vector<BsonObj> specs;
  int position = 0;
  for (BsonElement e : *indexes) {
    if (coll && coll->IsClustered() && IsAscendingIdKey(e)) {
      // The clustered index is the collection itself: {_id: 1} exists (MongoDB: a no-op).
      ++position;
      continue;
    }
    HG_ASSIGN_OR_RETURN(bool clustered_index, NamesClusteredIndex(coll.get(), e));
    if (clustered_index) {
      ++position;
      continue;
    }
    HG_ASSIGN_OR_RETURN(BsonObj spec, NormalizeSpec(e, position++, default_collation));
    specs.push_back(std::move(spec));
  }
  if (coll && coll->entry().type == "view") {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Cannot create indexes on a view: " + nss.ns());
  }
  bool created = false;
  if (!coll) {
    HG_ASSIGN_OR_RETURN(coll, catalog.GetOrCreateCollection(nss));
    created = true;
  }
  std::vector<BsonObj> existing;
  for (const auto& idx : coll->entry().indexes) existing.push_back(idx.spec);
  std::vector<BsonObj> to_build;
  for (const BsonObj& spec : specs) {
    HG_ASSIGN_OR_RETURN(bool exists, AlreadyExists(existing, spec));
    if (exists) continue;
    existing.push_back(spec);
    to_build.push_back(spec);
  }
  // The clustered index of a collection clustered by _id is not counted, as in MongoDB (whose
  // index catalog does not hold it).
  auto before =
      static_cast<int32_t>(coll->entry().indexes.size()) - (coll->ClusteredIndexSpec() ? 1 : 0);
  if (before + static_cast<int32_t>(to_build.size()) > kMaxIndexes) {
    return CannotCreate("add index fails, too many indexes for " + nss.ns() +
                        " key:" + to_build.back()["key"].Obj().ToJson());
  }
  if (!to_build.empty()) HG_RETURN_IF_ERROR(catalog.CreateIndexes(nss, to_build));
  reply.AppendBool("createdCollectionAutomatically", created);
  reply.AppendInt32("numIndexesBefore", before);
  reply.AppendInt32("numIndexesAfter", before + static_cast<int32_t>(to_build.size()));
  if (to_build.empty()) reply.AppendString("note", "all indexes already exist");
  return Status::OK();
}

Status CannotDropId() { return Status(ErrorCode::kInvalidOptions, "cannot drop _id index"); }

Status NoIndexNamed(std::string_view name) {
  return Status(ErrorCode::kIndexNotFound, "index not found with name [" + std::string(name) + "]");
}

Status NoIndexWithKey(const BsonObj& key) {
  return Status(ErrorCode::kIndexNotFound, "can't find index with key: " + key.ToJson());
}

// What dropIndexes resolves its `index` argument against: a regular collection's indexes, or a
// time-series collection's bucket indexes in the user's terms (spec §7.2).
struct DropTarget {
  catalog::NamespaceString nss;  // where the indexes are
  int32_t was = 0;               // nIndexesWas
  std::vector<std::string> all;  // what "*" drops
  std::function<StatusWith<std::string>(std::string_view)> by_name;
  std::function<StatusWith<std::string>(const BsonObj&)> by_key;
};

DropTarget RegularDropTarget(const catalog::Collection& coll) {
  DropTarget t{coll.nss(),
               static_cast<int32_t>(coll.entry().indexes.size()) -
                   (coll.ClusteredIndexSpec() ? 1 : 0),  // as createIndexes counts
               {},
               {},
               {}};
  for (const auto& idx : coll.Indexes()) t.all.push_back(idx.desc.name);
  const std::optional<BsonObj>& clustered = coll.ClusteredIndexSpec();
  t.by_name = [&coll, &clustered](std::string_view name) -> StatusWith<std::string> {
    if (clustered && name == (*clustered)["name"].Str()) return CannotDropClusteredIndex();
    for (const auto& idx : coll.entry().indexes) {
      if (idx.name() != name) continue;
      if (name == "_id_") return clustered ? NoIndexNamed(name) : CannotDropId();
      return std::string(name);
    }
    return NoIndexNamed(name);
  };
  t.by_key = [&coll, &clustered](const BsonObj& key) -> StatusWith<std::string> {
    if (IsIdKeyPattern(key)) return clustered ? CannotDropClusteredIndex() : CannotDropId();
    std::vector<std::string> found;  // several: wildcard indexes with different projections
    for (const auto& idx : coll.Indexes()) {
      if (catalog::SameKeyPattern(idx.desc.key, key) && idx.desc.key.NumFields() > 0) {
        found.push_back(idx.desc.name);
      }
    }
    if (found.empty()) return NoIndexWithKey(key);
    if (found.size() > 1) {
      return Status(ErrorCode::kAmbiguousIndexKeyPattern,
                    std::to_string(found.size()) + " indexes found for key: " + key.ToJson() +
                        ", identify by name instead.");
    }
    return found.front();
  };
  return t;
}

DropTarget TimeseriesDropTarget(const timeseries::TimeseriesCollection& ts) {
  DropTarget t{
      ts.buckets->nss(), static_cast<int32_t>(ts.buckets->entry().indexes.size()), {}, {}, {}};
  for (const auto& idx : ts.buckets->entry().indexes) t.all.push_back(idx.name());
  auto listed = std::make_shared<std::vector<std::pair<BsonObj, const catalog::IndexEntry*>>>(
      UserViewOfIndexes(ts));
  t.by_name = [listed](std::string_view name) -> StatusWith<std::string> {
    for (const auto& [user, idx] : *listed) {
      if (idx->name() == name) return std::string(name);
    }
    return NoIndexNamed(name);
  };
  t.by_key = [listed](const BsonObj& key) -> StatusWith<std::string> {
    for (const auto& [user, idx] : *listed) {
      if (catalog::SameKeyPattern(user["key"].Obj(), key)) return idx->name();
    }
    return NoIndexWithKey(key);
  };
  return t;
}

Status RunDropIndexes(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"index", "collectionUUID"}));
  HG_ASSIGN_OR_RETURN(auto nss, CommandNamespace(ctx, cmd));
  BsonElement index = cmd["index"];
  if (index.eoo()) {
    return MissingField("dropIndexes", "index");
  }
  if (index.type() != BsonType::kString && index.type() != BsonType::kObject &&
      index.type() != BsonType::kArray) {
    return WrongType("dropIndexes", index, "[string, object, array]");
  }
  HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(ctx.service.Read(), nss));
  const std::shared_ptr<catalog::Collection>& coll = resolved.collection;
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "ns not found " + nss.ns());
  if (coll->entry().type == "view") {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Cannot drop indexes on a view: " + nss.ns());
  }
  HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
  DropTarget target =
      resolved.timeseries ? TimeseriesDropTarget(*resolved.timeseries) : RegularDropTarget(*coll);
  const bool star = index.type() == BsonType::kString && index.Str() == "*";
  std::vector<std::string> names;
  if (star) {
    names = target.all;
  } else if (index.type() == BsonType::kString) {
    HG_ASSIGN_OR_RETURN(std::string name, target.by_name(index.Str()));
    names.push_back(std::move(name));
  } else if (index.type() == BsonType::kObject) {
    HG_ASSIGN_OR_RETURN(std::string name, target.by_key(index.Obj()));
    names.push_back(std::move(name));
  } else {
    for (BsonElement name : index.Obj()) {
      if (name.type() != BsonType::kString) {
        return Status(ErrorCode::kTypeMismatch, "dropIndexes index names must be strings, found " +
                                                    std::string(bson::TypeName(name.type())));
      }
      if (name.Str() == "*") {
        return Status(ErrorCode::kBadValue,
                      "'*' is not allowed in an index list, use '*' as the value of 'index'");
      }
      HG_ASSIGN_OR_RETURN(std::string n, target.by_name(name.Str()));
      names.push_back(std::move(n));
    }
  }
  if (!names.empty()) HG_RETURN_IF_ERROR(ctx.service.catalog->DropIndexes(target.nss, names));
  reply.AppendInt32("nIndexesWas", target.was);
  if (star) reply.AppendString("msg", "non-_id indexes dropped for collection");
  return Status::OK();
}

// reIndex (deprecated in MongoDB, still served by a standalone mongod): rebuilds the collection's
// secondary indexes from its documents. The `_id` index and a bucket collection's series index
// are maintained in step with the records and are left as they are. Views, time-series
// collections included, are refused as MongoDB refuses them.
Status RunReIndex(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(auto nss, CommandNamespace(ctx, cmd));
  auto coll = ctx.service.catalog->Lookup(nss);
  if (coll && coll->IsView()) {
    return Status(ErrorCode::kCommandNotSupportedOnView, "can't re-index a view");
  }
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "collection " + nss.ns() + " not found");
  auto was = static_cast<int32_t>(coll->entry().indexes.size());
  std::vector<std::string> names;
  std::vector<BsonObj> specs;
  for (const auto& idx : coll->Indexes()) {
    names.push_back(idx.desc.name);
    specs.push_back(idx.entry->spec);
  }
  if (!names.empty()) {
    HG_RETURN_IF_ERROR(ctx.service.catalog->DropIndexes(nss, names));
    HG_RETURN_IF_ERROR(ctx.service.catalog->CreateIndexes(nss, specs));
    coll = ctx.service.catalog->Lookup(nss);
    if (!coll)
      return Status(ErrorCode::kNamespaceNotFound, "collection " + nss.ns() + " not found");
  }
  reply.AppendInt32("nIndexesWas", was);
  reply.AppendInt32("nIndexes", static_cast<int32_t>(coll->entry().indexes.size()));
  size_t arr = reply.OpenArray("indexes");
  int i = 0;
  for (const auto& idx : coll->entry().indexes) reply.AppendObject(std::to_string(i++), idx.spec);
  reply.Close(arr);
  return Status::OK();
}

// collMod `index` on a time-series collection: the index named by its user name or key, only
// `hidden` changes (in the bucket spec and in its originalSpec).
Status CollModTimeseriesIndex(CommandContext& ctx, const timeseries::TimeseriesCollection& ts,
                              const BsonObj& spec, BsonBuilder& reply) {
  for (std::string_view f : {"unique", "prepareUnique", "forceNonUnique", "expireAfterSeconds"}) {
    if (spec.HasField(f)) {
      return Status(ErrorCode::kInvalidOptions, "collMod index option '" + std::string(f) +
                                                    "' is not supported on time-series "
                                                    "collections");
    }
  }
  BsonElement name = spec["name"], key = spec["keyPattern"], hidden = spec["hidden"];
  if (name.eoo() == key.eoo()) {
    return Status(ErrorCode::kInvalidOptions,
                  "Must specify exactly one of 'name' or 'keyPattern' in the collMod index spec");
  }
  const catalog::IndexEntry* found = nullptr;
  for (const auto& [user, idx] : UserViewOfIndexes(ts)) {
    if ((name.type() == BsonType::kString && idx->name() == name.Str()) ||
        (key.type() == BsonType::kObject &&
         catalog::SameKeyPattern(user["key"].Obj(), key.Obj()))) {
      found = idx;
      break;
    }
  }
  if (!found) {
    return Status(ErrorCode::kIndexNotFound,
                  "cannot find index " +
                      (name.eoo() ? key.Obj().ToJson() : std::string(name.Str())) + " for ns " +
                      ts.buckets->ns());
  }
  if (hidden.eoo())
    return Status(ErrorCode::kInvalidOptions, "no expireAfterSeconds or hidden field");
  if (hidden.type() != BsonType::kBool) return WrongType("collMod.index", hidden, "bool");
  auto with_hidden = [&](const BsonObj& old) {
    BsonBuilder out;
    for (BsonElement e : old) {
      if (e.FieldName() == "hidden") continue;
      if (e.FieldName() == "originalSpec" && e.type() == BsonType::kObject) {
        BsonBuilder orig;
        for (BsonElement o : e.Obj()) {
          if (o.FieldName() != "hidden") orig.AppendElement(o);
        }
        if (hidden.Bool()) orig.AppendBool("hidden", true);
        out.AppendObject("originalSpec", orig.Obj());
        continue;
      }
      out.AppendElement(e);
    }
    if (hidden.Bool()) out.AppendBool("hidden", true);
    return out.Obj();
  };
  BsonObj old_spec = found->spec;
  HG_RETURN_IF_ERROR(
      ctx.service.catalog->ReplaceIndexSpecs(ts.buckets->nss(), {with_hidden(old_spec)}));
  reply.AppendBool("hidden_old", old_spec["hidden"].Truthy());
  reply.AppendBool("hidden_new", hidden.Bool());
  return Status::OK();
}

}  // namespace

Status CollModIndex(CommandContext& ctx, const catalog::NamespaceString& nss,
                    const BsonElement& index, BsonBuilder& reply) {
  if (index.type() != BsonType::kObject) return WrongType("collMod", index, "object");
  BsonObj spec = index.Obj();
  HG_RETURN_IF_ERROR(CheckKnownSubFields("collMod.index", spec,
                                         {"name", "keyPattern", "hidden", "expireAfterSeconds",
                                          "unique", "prepareUnique", "forceNonUnique"}));
  HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(ctx.service.Read(), nss));
  HG_RETURN_IF_ERROR(exec::RequireBuckets(resolved));
  if (resolved.timeseries) return CollModTimeseriesIndex(ctx, *resolved.timeseries, spec, reply);
  const std::shared_ptr<catalog::Collection>& coll = resolved.collection;
  for (std::string_view f : {"unique", "prepareUnique", "forceNonUnique"}) {
    if (spec.HasField(f)) {
      return Status(ErrorCode::kCommandNotSupported,
                    "collMod index option '" + std::string(f) + "' is not supported yet");
    }
  }
  BsonElement name = spec["name"], key = spec["keyPattern"];
  if (name.eoo() == key.eoo()) {
    return Status(ErrorCode::kInvalidOptions,
                  "Must specify exactly one of 'name' or 'keyPattern' in the collMod index spec");
  }
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
  if (const auto& clustered = coll->ClusteredIndexSpec()) {
    const bool names_it =
        (name.type() == BsonType::kString && name.Str() == (*clustered)["name"].Str()) ||
        (key.type() == BsonType::kObject && IsIdKeyPattern(key.Obj()));
    if (names_it && !spec["hidden"].eoo()) {
      return Status(ErrorCode::kLocation6011800,
                    "The 'hidden' option is not supported for a clusteredIndex");
    }
    if (names_it) {
      return Status(ErrorCode::kInvalidOptions,
                    "the clusteredIndex cannot be a TTL index: its collection's "
                    "expireAfterSeconds expires documents by _id");
    }
  }
  const catalog::IndexEntry* found = nullptr;
  for (const auto& idx : coll->entry().indexes) {
    if ((!name.eoo() && name.type() == BsonType::kString && idx.name() == name.Str()) ||
        (!key.eoo() && key.type() == BsonType::kObject &&
         catalog::SameKeyPattern(idx.key(), key.Obj()))) {
      found = &idx;
      break;
    }
  }
  if (!found) {
    return Status(ErrorCode::kIndexNotFound,
                  "cannot find index " +
                      (name.eoo() ? key.Obj().ToJson() : std::string(name.Str())) + " for ns " +
                      nss.ns());
  }
  BsonElement hidden = spec["hidden"], ttl = spec["expireAfterSeconds"];
  if (hidden.eoo() && ttl.eoo()) {
    return Status(ErrorCode::kInvalidOptions, "no expireAfterSeconds or hidden field");
  }
  if (found->name() == "_id_") {
    if (!hidden.eoo()) return Status(ErrorCode::kBadValue, "can't hide _id index");
    return Status(ErrorCode::kInvalidOptions, "the _id index cannot be a TTL index");
  }
  BsonObj old_spec = found->spec;
  BsonBuilder out;
  bool wrote_hidden = false, wrote_ttl = false;
  if (!ttl.eoo()) {
    if (!ttl.IsNumber() || std::isnan(ttl.NumberDouble()) || ttl.NumberDouble() < 0 ||
        ttl.NumberDouble() > 2147483647.0) {
      return Status(ErrorCode::kInvalidOptions,
                    "TTL index 'expireAfterSeconds' option must be within an acceptable range");
    }
    if (found->key().NumFields() != 1) {
      return Status(ErrorCode::kInvalidOptions, "TTL indexes are single-field indexes");
    }
  }
  if (!hidden.eoo() && hidden.type() != BsonType::kBool) {
    return WrongType("collMod.index", hidden, "bool");
  }
  for (BsonElement e : old_spec) {
    if (e.FieldName() == "hidden") {
      if (!hidden.eoo()) {
        wrote_hidden = true;
        if (hidden.Bool()) out.AppendBool("hidden", true);
        continue;
      }
    } else if (e.FieldName() == "expireAfterSeconds" && !ttl.eoo()) {
      wrote_ttl = true;
      out.AppendInt64("expireAfterSeconds", ttl.NumberLong());
      continue;
    }
    out.AppendElement(e);
  }
  if (!hidden.eoo() && !wrote_hidden && hidden.Bool()) out.AppendBool("hidden", true);
  if (!ttl.eoo() && !wrote_ttl) out.AppendInt64("expireAfterSeconds", ttl.NumberLong());
  HG_RETURN_IF_ERROR(ctx.service.catalog->ReplaceIndexSpecs(nss, {out.Obj()}));
  if (!hidden.eoo()) {
    reply.AppendBool("hidden_old", old_spec["hidden"].Truthy());
    reply.AppendBool("hidden_new", hidden.Bool());
  }
  if (!ttl.eoo()) {
    BsonElement old_ttl = old_spec["expireAfterSeconds"];
    if (!old_ttl.eoo()) reply.AppendElementAs(old_ttl, "expireAfterSeconds_old");
    reply.AppendInt64("expireAfterSeconds_new", ttl.NumberLong());
  }
  return Status::OK();
}

std::unique_ptr<Command> MakeCreateIndexesCommand() {
  return std::make_unique<DdlCommand>("createIndexes", false, "creates indexes on a collection",
                                      RunCreateIndexes);
}

std::unique_ptr<Command> MakeDropIndexesCommand() {
  return std::make_unique<DdlCommand>("dropIndexes", false, "drops indexes of a collection",
                                      RunDropIndexes,
                                      std::vector<std::string_view>{"deleteIndexes"});
}

std::unique_ptr<Command> MakeReIndexCommand() {
  return std::make_unique<DdlCommand>("reIndex", false, "rebuilds the indexes of a collection",
                                      RunReIndex);
}

}  // namespace hourglass::commands
