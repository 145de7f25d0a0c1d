// create and collMod.
#include <array>

#include "commands/clustered_collections.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/ddl_commands.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status NotSupported(std::string message) {
  return Status(ErrorCode::kCommandNotSupported, std::move(message));
}

// MongoDB's NamespaceString::isLegalClientSystemNS: the system collections clients may create.
bool IsLegalClientSystemNamespace(const catalog::NamespaceString& nss) {
  const std::string& c = nss.coll;
  if (c == "system.js" || c == "system.views" || c == "system.profile") return true;
  if (nss.IsTimeseriesBuckets()) return true;
  if (nss.db == "admin") {
    static constexpr std::array<std::string_view, 5> kAdmin = {"system.users", "system.roles",
                                                               "system.version", "system.new_users",
                                                               "system.backup_users"};
    for (auto a : kAdmin) {
      if (c == a) return true;
    }
  }
  return nss.db == "config" && c == "system.sessions";
}

// Checks an IDL enum-valued string option.
StatusWith<std::optional<std::string>> GetEnum(const BsonObj& cmd, std::string_view field,
                                               std::initializer_list<std::string_view> values) {
  HG_ASSIGN_OR_RETURN(auto v, GetString("create", cmd, field));
  if (!v) return v;
  for (auto allowed : values) {
    if (*v == allowed) return v;
  }
  return Status(ErrorCode::kBadValue, "Enumeration value '" + *v + "' for field '" +
                                          std::string(field) + "' is not a valid value.");
}

const std::initializer_list<std::string_view> kCreateFields = {"capped",
                                                               "autoIndexId",
                                                               "idIndex",
                                                               "size",
                                                               "max",
                                                               "storageEngine",
                                                               "validator",
                                                               "validationLevel",
                                                               "validationAction",
                                                               "indexOptionDefaults",
                                                               "viewOn",
                                                               "pipeline",
                                                               "collation",
                                                               "changeStreamPreAndPostImages",
                                                               "timeseries",
                                                               "clusteredIndex",
                                                               "expireAfterSeconds",
                                                               "encryptedFields",
                                                               "rollupOf",
                                                               "temp",
                                                               "flags"};

// Checks the create options and returns the ones the catalog stores, in a fixed order so that
// two equivalent requests produce byte-identical options (the idempotency check compares them).
StatusWith<BsonObj> ParseCreateOptions(const catalog::NamespaceString& nss, const BsonObj& cmd) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, kCreateFields));
  HG_ASSIGN_OR_RETURN(bool capped, GetBool("create", cmd, "capped", false));
  HG_ASSIGN_OR_RETURN(bool auto_index_id, GetBool("create", cmd, "autoIndexId", true));
  HG_ASSIGN_OR_RETURN(auto id_index, GetObject("create", cmd, "idIndex"));
  HG_ASSIGN_OR_RETURN(auto size, GetInt64("create", cmd, "size"));
  HG_ASSIGN_OR_RETURN(auto max, GetInt64("create", cmd, "max"));
  HG_ASSIGN_OR_RETURN(auto storage_engine, GetObject("create", cmd, "storageEngine"));
  HG_ASSIGN_OR_RETURN(auto validator, GetObject("create", cmd, "validator"));
  HG_ASSIGN_OR_RETURN(auto validation_level,
                      GetEnum(cmd, "validationLevel", {"off", "strict", "moderate"}));
  HG_ASSIGN_OR_RETURN(auto validation_action, GetEnum(cmd, "validationAction", {"error", "warn"}));
  HG_ASSIGN_OR_RETURN(auto index_defaults, GetObject("create", cmd, "indexOptionDefaults"));
  HG_ASSIGN_OR_RETURN(auto view_on, GetString("create", cmd, "viewOn"));
  HG_ASSIGN_OR_RETURN(auto pipeline, GetArray("create", cmd, "pipeline"));
  HG_ASSIGN_OR_RETURN(auto collation, GetObject("create", cmd, "collation"));
  HG_ASSIGN_OR_RETURN(auto pre_post, GetObject("create", cmd, "changeStreamPreAndPostImages"));
  HG_ASSIGN_OR_RETURN(auto timeseries, GetObject("create", cmd, "timeseries"));
  HG_ASSIGN_OR_RETURN(auto encrypted, GetObject("create", cmd, "encryptedFields"));
  HG_ASSIGN_OR_RETURN(bool temp, GetBool("create", cmd, "temp", false));
  BsonElement clustered = cmd["clusteredIndex"];
  if (!clustered.eoo() && clustered.type() != BsonType::kBool &&
      clustered.type() != BsonType::kObject) {
    return WrongType("create", clustered, "[bool, object]");
  }
  (void)size;
  (void)max;

  if (!cmd["rollupOf"].eoo()) {
    return Status(ErrorCode::kInvalidOptions, "'rollupOf' requires 'timeseries'");
  }
  if (pipeline && !view_on) {
    return Status(ErrorCode::kInvalidOptions, "'pipeline' requires 'viewOn' to also be specified");
  }
  // (create with viewOn goes to CreateView)
  if (nss.IsTimeseriesBuckets()) {
    // (with `timeseries`, RunCreate has gone to CreateTimeseriesCollection: the restore path)
    return Status(ErrorCode::kIllegalOperation,
                  "A time-series bucket collection " + nss.ns() +
                      " can only be created with the 'timeseries' option");
  }
  std::optional<BsonObj> clustered_index;
  if (clustered.type() == BsonType::kObject || clustered.Bool()) {
    HG_ASSIGN_OR_RETURN(clustered_index, ParseClusteredIndexOption(clustered));
    if (!auto_index_id) {
      return Status(ErrorCode::kLocation6026501,
                    "The 'clusteredIndex' option does not support {autoIndexId: false}");
    }
    if (id_index) {
      return Status(ErrorCode::kInvalidOptions,
                    "The 'clusteredIndex' option is not supported with the 'idIndex' option");
    }
  }
  if (capped) return NotSupported("capped collections are not supported");
  std::optional<int64_t> expire;
  if (BsonElement e = cmd["expireAfterSeconds"]; !e.eoo() && e.type() != BsonType::kNull) {
    if (!clustered_index) {
      // Neither time-series (CreateTimeseriesCollection) nor clustered: MongoDB's rule.
      return Status(ErrorCode::kInvalidOptions,
                    clustered.eoo() ? "'expireAfterSeconds' is only supported on time-series "
                                      "collections or when the 'clusteredIndex' option is "
                                      "specified"
                                    : "'expireAfterSeconds' requires clustering to be enabled");
    }
    HG_ASSIGN_OR_RETURN(expire, timeseries::ParseExpireAfterSeconds(e));
  }
  if (validator && !validator->IsEmpty()) {
    return NotSupported("document validation is not supported yet");
  }
  // The default collation, normalized as listCollections shows it; the simple one is not kept.
  std::shared_ptr<const collation::Collator> collator;
  if (collation) {
    HG_ASSIGN_OR_RETURN(collator, collation::Collator::Make(*collation));
  }
  if (pre_post && pre_post->GetField("enabled").Truthy()) {
    return NotSupported("changeStreamPreAndPostImages is not supported");
  }
  if (encrypted) return NotSupported("queryable encryption is not supported");
  if (temp) return NotSupported("temporary collections are not supported");
  if (!auto_index_id) return NotSupported("collections without an _id index are not supported");
  if (id_index) {
    BsonObj key = id_index->GetField("key").Obj();
    if (key.NumFields() != 1 || key.FirstElement().FieldName() != "_id" ||
        key.FirstElement().NumberDouble() != 1.0) {
      return Status(ErrorCode::kBadValue,
                    "The _id index must have a key pattern of {_id: 1}, found " + key.ToJson());
    }
  }

  // What MongoDB's CollectionOptions::toBSON keeps of these: non-empty documents and the
  // validation settings given explicitly.
  BsonBuilder options;
  if (storage_engine && !storage_engine->IsEmpty()) {
    options.AppendObject("storageEngine", *storage_engine);
  }
  if (validation_level) options.AppendString("validationLevel", *validation_level);
  if (validation_action) options.AppendString("validationAction", *validation_action);
  if (index_defaults && !index_defaults->IsEmpty()) {
    options.AppendObject("indexOptionDefaults", *index_defaults);
  }
  if (collator) options.AppendObject("collation", collator->spec().ToBson());
  if (clustered_index) options.AppendObject("clusteredIndex", *clustered_index);
  if (expire) options.AppendInt64("expireAfterSeconds", *expire);
  return options.Obj();
}

// An existing namespace satisfies a create when it is a collection with the same options
// (MongoDB 7.0 answers ok then); anything else is NamespaceExists.
Status CheckExisting(const catalog::Collection& existing, const BsonObj& options) {
  if (existing.entry().type == "collection" && existing.entry().options.BinaryEqual(options)) {
    return Status::OK();
  }
  return Status(ErrorCode::kNamespaceExists, "Collection " + existing.ns() + " already exists.");
}

Status RunCreate(CommandContext& ctx, const BsonObj& cmd, BsonBuilder&) {
  HG_ASSIGN_OR_RETURN(auto nss, CommandNamespace(ctx, cmd));
  if (nss.IsSystem() && !IsLegalClientSystemNamespace(nss)) {
    return Status(ErrorCode::kInvalidNamespace, "Invalid system namespace: " + nss.ns());
  }
  catalog::Catalog& catalog = *ctx.service.catalog;
  if (!cmd["timeseries"].eoo() && cmd["timeseries"].type() != BsonType::kNull) {
    HG_RETURN_IF_ERROR(CheckKnownFields(cmd, kCreateFields));
    return CreateTimeseriesCollection(ctx, nss, cmd);
  }
  if (!cmd["viewOn"].eoo()) {
    if (BsonElement c = cmd["clusteredIndex"]; c.type() == BsonType::kObject || c.Bool()) {
      return Status(ErrorCode::kLocation6026500,
                    "The 'clusteredIndex' option is not supported with views");
    }
    return CreateView(ctx, nss, cmd);
  }
  auto options = ParseCreateOptions(nss, cmd);
  if (!options.ok()) {
    // Options this server cannot create can never match an existing namespace: MongoDB answers
    // NamespaceExists for them (e.g. timeseries options on an existing plain collection).
    if (options.status().code() == ErrorCode::kCommandNotSupported) {
      if (auto existing = catalog.Lookup(nss)) {
        return Status(ErrorCode::kNamespaceExists,
                      "Collection " + existing->ns() + " already exists.");
      }
    }
    return options.status();
  }
  if (auto existing = catalog.Lookup(nss)) return CheckExisting(*existing, options.value());
  auto created = catalog.CreateCollection(nss, options.value());
  if (created.status().code() == ErrorCode::kNamespaceExists) {
    // Lost a race with another create of the same name.
    if (auto existing = catalog.Lookup(nss)) return CheckExisting(*existing, options.value());
  }
  return created.status();
}

Status RunCollMod(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(
      cmd, {"validator", "validationLevel", "validationAction", "index", "viewOn", "pipeline",
            "expireAfterSeconds", "timeseries", "changeStreamPreAndPostImages", "clusteredIndex",
            "dryRun", "cappedSize", "cappedMax", "recordPreImages",
            "timeseriesBucketsMayHaveMixedSchemaData"}));
  HG_ASSIGN_OR_RETURN(auto nss, CommandNamespace(ctx, cmd));
  auto coll = ctx.service.catalog->Lookup(nss);
  if (!coll) {
    return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
  }
  if (coll->entry().type == "timeseries") return CollModTimeseries(ctx, nss, cmd, reply);
  if (coll->entry().type == "view") return CollModView(ctx, *coll, cmd);
  if (nss.IsTimeseriesBuckets()) {
    return Status(ErrorCode::kInvalidNamespace,
                  "collMod on a time-series bucket collection is not allowed: " + nss.ns());
  }
  bool first = true;
  for (BsonElement e : cmd) {
    if (first) {
      first = false;
      continue;
    }
    if (IsGenericArgument(e.FieldName())) continue;
    if (e.FieldName() == "index") {
      HG_RETURN_IF_ERROR(CollModIndex(ctx, nss, e, reply));
      continue;
    }
    if (e.FieldName() == "viewOn" || e.FieldName() == "pipeline") {
      return Status(ErrorCode::kInvalidOptions,
                    "option only supported on a view: " + std::string(e.FieldName()));
    }
    if (e.FieldName() == "expireAfterSeconds") {
      HG_ASSIGN_OR_RETURN(BsonObj options, CollModClusteredExpiry(*coll, e));
      HG_RETURN_IF_ERROR(ctx.service.catalog->SetOptions({{nss, options}}));
      continue;
    }
    return NotSupported("collMod option '" + std::string(e.FieldName()) + "' is not supported yet");
  }
  return Status::OK();
}

}  // namespace

std::unique_ptr<Command> MakeCreateCommand() {
  return std::make_unique<DdlCommand>("create", false, "create a collection explicitly", RunCreate);
}

std::unique_ptr<Command> MakeCollModCommand() {
  return std::make_unique<DdlCommand>("collMod", false, "sets collection options", RunCollMod);
}

}  // namespace hourglass::commands
