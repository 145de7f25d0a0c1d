#include "commands/command_util.h"

#include <unistd.h>

#include <string>
#include <utility>

#include "catalog/catalog.h"

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {
bool IsKnown(std::string_view f, std::initializer_list<std::string_view> known) {
  for (auto k : known) {
    if (k == f) return true;
  }
  return false;
}
}  // namespace

Status CheckKnownFields(const BsonObj& cmd, std::initializer_list<std::string_view> known) {
  std::string_view name = cmd.FirstElement().FieldName();
  bool first = true;
  for (BsonElement e : cmd) {
    std::string_view f = e.FieldName();
    if (!std::exchange(first, false) && !IsGenericArgument(f) && !IsKnown(f, known)) {
      return UnknownField(name, f);
    }
  }
  return Status::OK();
}

Status CheckKnownSubFields(std::string_view context, const BsonObj& doc,
                           std::initializer_list<std::string_view> known) {
  for (BsonElement e : doc) {
    if (!IsKnown(e.FieldName(), known)) return UnknownField(context, e.FieldName());
  }
  return Status::OK();
}

StatusWith<std::shared_ptr<const collation::Collator>> CheckHintAndGetCollation(
    std::string_view cmd, const BsonObj& doc) {
  BsonElement hint = doc["hint"];
  if (!hint.eoo() && hint.type() != BsonType::kString && hint.type() != BsonType::kObject) {
    return WrongType(cmd, hint, "[string, object]");
  }
  BsonElement collation = doc["collation"];
  if (collation.eoo()) return std::shared_ptr<const collation::Collator>();
  if (collation.type() != BsonType::kObject) return WrongType(cmd, collation, "object");
  return collation::Collator::Make(collation.Obj());
}

StatusWith<std::shared_ptr<const collation::Collator>> CheckHintAndGetCollation(
    std::string_view cmd, const BsonObj& doc, const ServiceContext& service,
    const catalog::NamespaceString& nss) {
  HG_ASSIGN_OR_RETURN(auto collator, CheckHintAndGetCollation(cmd, doc));
  if (!doc["collation"].eoo()) return collator;
  return DefaultCollation(service.catalog->Lookup(nss).get());
}

std::shared_ptr<const collation::Collator> DefaultCollation(const catalog::Collection* coll) {
  if (coll == nullptr) return nullptr;
  if (coll->entry().type != "collection" && coll->entry().type != "timeseries") return nullptr;
  return coll->DefaultCollator();
}

StatusWith<std::string> GetCollectionName(const BsonObj& cmd, std::string_view db) {
  BsonElement e = cmd.FirstElement();
  if (e.type() != BsonType::kString) {
    return Status(ErrorCode::kInvalidNamespace,
                  "collection name has invalid type " + std::string(bson::TypeName(e.type())));
  }
  if (e.Str().empty()) {
    return Status(ErrorCode::kInvalidNamespace,
                  "Invalid namespace specified '" + std::string(db) + ".'");
  }
  return std::string(e.Str());
}

std::string HostAndPort(const ServiceContext& service) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return std::string(host) + ":" + std::to_string(service.options.port);
}

}  // namespace hourglass::commands
