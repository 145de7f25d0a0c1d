#include "pipeline/value.h"

#include <limits>

#include "bson/bson_compare.h"

namespace hourglass::pipeline {

using bson::BsonBuilder;
using bson::BsonType;

#define HG_MAKE_VALUE(call) \
  BsonBuilder b;            \
  b.call;                   \
  return Value(b.Obj())

Value Value::FromElement(const bson::BsonElement& e) {
  if (e.eoo()) return Value();
  HG_MAKE_VALUE(AppendElementAs(e, ""));
}
Value Value::Int(int32_t v) { HG_MAKE_VALUE(AppendInt32("", v)); }
Value Value::Long(int64_t v) { HG_MAKE_VALUE(AppendInt64("", v)); }
Value Value::Double(double v) { HG_MAKE_VALUE(AppendDouble("", v)); }
Value Value::Decimal(const bson::Decimal128& v) { HG_MAKE_VALUE(AppendDecimal("", v)); }
Value Value::String(std::string_view v) { HG_MAKE_VALUE(AppendString("", v)); }
Value Value::Bool(bool v) { HG_MAKE_VALUE(AppendBool("", v)); }
Value Value::Null() { HG_MAKE_VALUE(AppendNull("")); }
Value Value::Undefined() { HG_MAKE_VALUE(AppendUndefined("")); }
Value Value::Date(int64_t millis) { HG_MAKE_VALUE(AppendDate("", millis)); }
Value Value::Oid(const bson::ObjectId& v) { HG_MAKE_VALUE(AppendObjectId("", v)); }
Value Value::Timestamp(uint64_t v) { HG_MAKE_VALUE(AppendTimestamp("", v)); }
Value Value::Object(const bson::BsonObj& v) { HG_MAKE_VALUE(AppendObject("", v)); }

#undef HG_MAKE_VALUE

Value Value::Array(const std::vector<Value>& v) {
  BsonBuilder b;
  size_t t = b.OpenArray("");
  for (size_t i = 0; i < v.size(); ++i) {
    std::string key = std::to_string(i);
    if (v[i].missing()) {
      b.AppendNull(key);
    } else {
      v[i].AppendTo(b, key);
    }
  }
  b.Close(t);
  return Value(b.Obj());
}

Value Value::IntOrLong(int64_t v) {
  if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
    return Int(static_cast<int32_t>(v));
  }
  return Long(v);
}

std::vector<Value> Value::ArrayValues() const {
  std::vector<Value> out;
  if (!IsArray()) return out;
  for (const auto& e : Obj()) out.push_back(FromElement(e));
  return out;
}

void Value::AppendTo(bson::BsonBuilder& b, std::string_view name) const {
  if (missing()) return;
  b.AppendElementAs(element(), name);
}

std::string Value::ToString() const {
  if (missing()) return "missing";
  // The holder prints as { "" : <value> }; keep only <value>.
  std::string json = holder_.ToJson();
  const std::string_view prefix = "{ \"\" : ";
  if (json.size() >= prefix.size() + 2 && json.compare(0, prefix.size(), prefix) == 0) {
    return json.substr(prefix.size(), json.size() - prefix.size() - 2);
  }
  return json;
}

int Compare(const Value& a, const Value& b, const bson::StringComparator* strings) {
  if (a.missing() || b.missing()) {
    return (a.missing() ? 0 : 1) - (b.missing() ? 0 : 1);
  }
  return bson::CompareElementValues(a.element(), b.element(), strings);
}

}  // namespace hourglass::pipeline
