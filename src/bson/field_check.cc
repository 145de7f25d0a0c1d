#include "bson/field_check.h"

#include <cmath>
#include <cstdio>

namespace hourglass::bson {

Status WrongTypeAtPath(std::string_view path, const BsonElement& e, std::string_view expected) {
  return Status(ErrorCode::kTypeMismatch, "BSON field '" + std::string(path) +
                                              "' is the wrong type '" +
                                              std::string(TypeName(e.type())) +
                                              "', expected type '" + std::string(expected) + "'");
}

Status WrongType(std::string_view context, const BsonElement& e, std::string_view expected) {
  return WrongTypeAtPath(std::string(context) + "." + std::string(e.FieldName()), e, expected);
}

Status WrongVariantType(std::string_view path, const BsonElement& e, std::string_view expected) {
  if (!expected.starts_with('[')) return WrongTypeAtPath(path, e, expected);
  return Status(ErrorCode::kTypeMismatch,
                "BSON field '" + std::string(path) + "' is the wrong type '" +
                    std::string(TypeName(e.type())) + "', expected types '" +
                    std::string(expected.substr(0, expected.size() - 1)) + "']");
}

Status UnknownField(std::string_view context, std::string_view field) {
  return Status(ErrorCode::kLocation40415, "BSON field '" + std::string(context) + "." +
                                               std::string(field) + "' is an unknown field.");
}

Status MissingField(std::string_view context, std::string_view field) {
  return Status(ErrorCode::kLocation40414, "BSON field '" + std::string(context) + "." +
                                               std::string(field) +
                                               "' is missing but a required field");
}

namespace {
// The object or array field `field` of `doc` (`type` named `type_name` in errors).
StatusWith<std::optional<BsonObj>> GetNested(std::string_view context, const BsonObj& doc,
                                             std::string_view field, BsonType type,
                                             std::string_view type_name) {
  BsonElement e = doc.GetField(field);
  if (e.eoo()) return std::optional<BsonObj>();
  if (e.type() != type) return WrongType(context, e, type_name);
  return std::optional<BsonObj>(e.Obj());
}
}  // namespace

StatusWith<std::optional<BsonObj>> GetObject(std::string_view context, const BsonObj& doc,
                                             std::string_view field) {
  return GetNested(context, doc, field, BsonType::kObject, "object");
}

StatusWith<std::optional<BsonObj>> GetArray(std::string_view context, const BsonObj& doc,
                                            std::string_view field) {
  return GetNested(context, doc, field, BsonType::kArray, "array");
}

StatusWith<std::optional<std::string>> GetString(std::string_view context, const BsonObj& doc,
                                                 std::string_view field) {
  BsonElement e = doc.GetField(field);
  if (e.eoo()) return std::optional<std::string>();
  if (e.type() != BsonType::kString) return WrongType(context, e, "string");
  return std::optional<std::string>(std::string(e.Str()));
}

StatusWith<bool> GetBool(std::string_view context, const BsonObj& doc, std::string_view field,
                         bool default_value) {
  BsonElement e = doc.GetField(field);
  if (e.eoo() || e.type() == BsonType::kNull) return default_value;
  if (e.type() == BsonType::kBool || e.IsNumber()) return e.Truthy();
  return WrongType(context, e, "bool");
}

StatusWith<std::optional<int64_t>> GetInt64(std::string_view context, const BsonObj& doc,
                                            std::string_view field) {
  BsonElement e = doc.GetField(field);
  if (e.eoo()) return std::optional<int64_t>();
  if (!e.IsNumber()) return WrongType(context, e, "[long, int, decimal, double]");
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

StatusWith<int64_t> ExtractIntegerField(const BsonObj& doc, std::string_view field) {
  BsonElement e = doc.GetField(field);
  std::string name(field);
  if (e.eoo()) return Status(ErrorCode::kNoSuchKey, "Missing expected field \"" + name + "\"");
  if (!e.IsNumber()) {
    return Status(ErrorCode::kTypeMismatch, "Expected field \"" + name +
                                                "\" to have numeric type, but found " +
                                                std::string(TypeName(e.type())));
  }
  if (e.type() == BsonType::kInt32 || e.type() == BsonType::kInt64) return e.NumberLong();
  double d = e.NumberDouble();
  // 2^63 itself is out of range: the largest double below it is the last whole one that fits.
  if (std::floor(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
    return static_cast<int64_t>(d);
  }
  std::string value;
  if (e.type() == BsonType::kDecimal128) {
    value = "NumberDecimal(\"" + e.Decimal().ToString() + "\")";
  } else {
    // MongoDB prints the element's double with %.16g, marking whole-looking ones with ".0".
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.16g", d);
    value = buf;
    if (value.find_first_of(".EN") == std::string::npos) value += ".0";
  }
  return Status(ErrorCode::kBadValue,
                "Expected field \"" + name +
                    "\" to have a value exactly representable as a 64-bit integer, but found " +
                    name + ": " + value);
}

}  // namespace hourglass::bson
