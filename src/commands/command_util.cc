#include "commands/command_util.h"

#include <unistd.h>

#include <cmath>
#include <string>
#include <utility>

namespace hourglass::commands {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

Status WrongType(std::string_view cmd, const BsonElement& e, std::string_view expected) {
  return Status(ErrorCode::kTypeMismatch, "BSON field '" + std::string(cmd) + "." +
                                              std::string(e.FieldName()) + "' is the wrong type '" +
                                              std::string(bson::TypeName(e.type())) +
                                              "', expected type '" + std::string(expected) + "'");
}

Status UnknownField(std::string_view cmd, std::string_view field) {
  return Status(ErrorCode::kLocation40415, "BSON field '" + std::string(cmd) + "." +
                                               std::string(field) + "' is an unknown field.");
}

Status MissingField(std::string_view cmd, std::string_view field) {
  return Status(ErrorCode::kLocation40414, "BSON field '" + std::string(cmd) + "." +
                                               std::string(field) +
                                               "' is missing but a required field");
}

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

Status CheckHintAndCollation(std::string_view cmd, const BsonObj& doc) {
  BsonElement hint = doc["hint"];
  if (!hint.eoo() && hint.type() != BsonType::kString && hint.type() != BsonType::kObject) {
    return WrongType(cmd, hint, "[string, object]");
  }
  BsonElement collation = doc["collation"];
  if (!collation.eoo()) {
    if (collation.type() != BsonType::kObject) return WrongType(cmd, collation, "object");
    BsonObj c = collation.Obj();
    if (!c.IsEmpty() && !(c.NumFields() == 1 && c["locale"].Str() == "simple")) {
      return Status(ErrorCode::kCommandNotSupported,
                    "collations other than {locale: \"simple\"} are not supported yet");
    }
  }
  return Status::OK();
}

StatusWith<std::optional<BsonObj>> GetObject(std::string_view cmd, const BsonObj& doc,
                                             std::string_view field) {
  BsonElement e = doc.GetField(field);
  if (e.eoo()) return std::optional<BsonObj>();
  if (e.type() != BsonType::kObject) return WrongType(cmd, e, "object");
  return std::optional<BsonObj>(e.Obj());
}

StatusWith<std::optional<BsonObj>> GetArray(std::string_view cmd, const BsonObj& doc,
                                            std::string_view field) {
  BsonElement e = doc.GetField(field);
  if (e.eoo()) return std::optional<BsonObj>();
  if (e.type() != BsonType::kArray) return WrongType(cmd, e, "array");
  return std::optional<BsonObj>(e.Obj());
}

StatusWith<std::optional<std::string>> GetString(std::string_view cmd, const BsonObj& doc,
                                                 std::string_view field) {
  BsonElement e = doc.GetField(field);
  if (e.eoo()) return std::optional<std::string>();
  if (e.type() != BsonType::kString) return WrongType(cmd, e, "string");
  return std::optional<std::string>(std::string(e.Str()));
}

StatusWith<bool> GetBool(std::string_view cmd, const BsonObj& doc, std::string_view field,
                         bool default_value) {
  BsonElement e = doc.GetField(field);
  if (e.eoo() || e.type() == BsonType::kNull) return default_value;
  if (e.type() == BsonType::kBool || e.IsNumber()) return e.Truthy();
  return WrongType(cmd, e, "bool");
}

StatusWith<std::optional<int64_t>> GetInt64(std::string_view cmd, const BsonObj& doc,
                                            std::string_view field) {
  BsonElement e = doc.GetField(field);
  if (e.eoo()) return std::optional<int64_t>();
  if (!e.IsNumber()) return WrongType(cmd, e, "[long, int, decimal, double]");
  if (e.type() == BsonType::kDouble || e.type() == BsonType::kDecimal128) {
    double d = e.NumberDouble();
    if (std::isnan(d) || std::floor(d) != d || std::fabs(d) > 9.2e18) {
      return Status(ErrorCode::kFailedToParse, "Expected field " + std::string(field) +
                                                   " to have a value exactly "
                                                   "representable as a 64-bit integer, but found " +
                                                   std::to_string(d));
    }
  }
  return std::optional<int64_t>(e.NumberLong());
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
