// createIndexes and dropIndexes. Only the `_id` index exists until secondary indexes are
// implemented: createIndexes accepts re-creating it (as MongoDB does, with "all indexes already
// exist"), and every other index fails with CommandNotSupported.
#include "commands/command_util.h"
#include "commands/ddl_commands.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

bool IsIdKeyPattern(const BsonObj& key) {
  return key.NumFields() == 1 && key.FirstElement().FieldName() == "_id" &&
         key.FirstElement().IsNumber() && key.FirstElement().NumberDouble() == 1.0;
}

// Checks one createIndexes spec; true if it describes the existing `_id` index.
StatusWith<bool> IsIdIndexSpec(const BsonElement& e, int position) {
  if (e.type() != BsonType::kObject) {
    return Status(ErrorCode::kTypeMismatch, "BSON field 'createIndexes.indexes." +
                                                std::to_string(position) + "' is the wrong type '" +
                                                std::string(bson::TypeName(e.type())) +
                                                "', expected type 'object'");
  }
  BsonObj spec = e.Obj();
  BsonElement key = spec["key"];
  if (key.eoo()) {
    return Status(ErrorCode::kFailedToParse,
                  "The 'key' field is a required property of an index specification");
  }
  if (key.type() != BsonType::kObject || key.Obj().IsEmpty()) {
    return Status(ErrorCode::kCannotCreateIndex, "Index keys cannot be an empty field.");
  }
  BsonElement name = spec["name"];
  if (!name.eoo() && name.type() != BsonType::kString) {
    return Status(ErrorCode::kTypeMismatch, "The field 'name' must be a string, but got " +
                                                std::string(bson::TypeName(name.type())));
  }
  if (!IsIdKeyPattern(key.Obj())) return false;
  if (!name.eoo() && name.Str() != "_id_") return false;
  // Options beyond the version would describe a different index (unique, collation, ...).
  for (BsonElement f : spec) {
    std::string_view n = f.FieldName();
    if (n != "key" && n != "name" && n != "v") return false;
  }
  return true;
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
  int position = 0;
  for (BsonElement e : *indexes) {
    HG_ASSIGN_OR_RETURN(bool is_id, IsIdIndexSpec(e, position++));
    if (!is_id) {
      return Status(ErrorCode::kCommandNotSupported, "secondary indexes are not supported yet");
    }
  }
  catalog::Catalog& catalog = *ctx.service.catalog;
  bool created = false;
  auto coll = catalog.Lookup(nss);
  if (!coll) {
    HG_ASSIGN_OR_RETURN(coll, catalog.GetOrCreateCollection(nss));
    created = true;
  }
  if (coll->entry().type == "view") {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Cannot create indexes on a view: " + nss.ns());
  }
  if (coll->entry().type != "collection") {
    return Status(ErrorCode::kCommandNotSupported, "secondary indexes are not supported yet");
  }
  auto n = static_cast<int32_t>(coll->entry().indexes.size());
  reply.AppendInt32("numIndexesBefore", n);
  reply.AppendInt32("numIndexesAfter", n);
  reply.AppendBool("createdCollectionAutomatically", created);
  reply.AppendString("note", "all indexes already exist");
  return Status::OK();
}

Status CannotDropId() { return Status(ErrorCode::kInvalidOptions, "cannot drop _id index"); }

// Checks that the index named `name` can be dropped; only `_id_` exists and it cannot be.
Status CheckDropByName(const catalog::Collection& coll, std::string_view name) {
  for (const auto& idx : coll.entry().indexes) {
    if (idx.name() == name) {
      if (name == "_id_") return CannotDropId();
      return Status(ErrorCode::kCommandNotSupported, "secondary indexes are not supported yet");
    }
  }
  return Status(ErrorCode::kIndexNotFound, "index not found with name [" + std::string(name) + "]");
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
  auto coll = ctx.service.catalog->Lookup(nss);
  if (!coll) return Status(ErrorCode::kNamespaceNotFound, "ns not found " + nss.ns());
  if (coll->entry().type == "view") {
    return Status(ErrorCode::kCommandNotSupportedOnView,
                  "Cannot drop indexes on a view: " + nss.ns());
  }
  auto was = static_cast<int32_t>(coll->entry().indexes.size());
  if (index.type() == BsonType::kString && index.Str() == "*") {
    reply.AppendInt32("nIndexesWas", was);
    reply.AppendString("msg", "non-_id indexes dropped for collection");
    return Status::OK();
  }
  if (index.type() == BsonType::kString) {
    HG_RETURN_IF_ERROR(CheckDropByName(*coll, index.Str()));
  } else if (index.type() == BsonType::kObject) {
    if (IsIdKeyPattern(index.Obj())) return CannotDropId();
    return Status(ErrorCode::kIndexNotFound, "can't find index with key: " + index.Obj().ToJson());
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
      HG_RETURN_IF_ERROR(CheckDropByName(*coll, name.Str()));
    }
  }
  reply.AppendInt32("nIndexesWas", was);
  return Status::OK();
}

}  // namespace

void RegisterDdlIndexCommands(CommandRegistry& r) {
  r.Add(std::make_unique<DdlCommand>("createIndexes", false, "creates indexes on a collection",
                                     RunCreateIndexes));
  r.Add(std::make_unique<DdlCommand>("dropIndexes", false, "drops indexes of a collection",
                                     RunDropIndexes,
                                     std::vector<std::string_view>{"deleteIndexes"}));
}

}  // namespace hourglass::commands
