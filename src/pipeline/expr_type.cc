// Type inspection and conversion ($type, $convert and the $toX shorthands) and object operators
// ($mergeObjects, $getField, $objectToArray, $arrayToObject).
#include <charconv>
#include <cmath>

#include "bson/decimal128.h"
#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

}  // namespace

StatusWith<std::string> CoerceToString(std::string_view op, const Value& v) {
  switch (v.type()) {
    case BsonType::kEOO:
    case BsonType::kNull:
    case BsonType::kUndefined:
      return std::string();
    case BsonType::kString:
    case BsonType::kSymbol:
    case BsonType::kCode:
      return std::string(v.Str());
    case BsonType::kInt32:
    case BsonType::kInt64:
      return std::to_string(v.NumberLong());
    case BsonType::kDouble:
      return FormatDouble(v.NumberDouble());
    case BsonType::kDecimal128:
      return v.element().Decimal().ToString();
    case BsonType::kDate:
      return FormatIsoDate(v.DateMillis());
    default:
      return PipelineError(
          16007, std::string(op) + " can't convert from BSON type " + TypeNameOf(v) + " to String");
  }
}

namespace {

// The $convert target types.
enum class Target { kDouble, kString, kObjectId, kBool, kDate, kInt, kLong, kDecimal };

bool TargetFromName(std::string_view s, Target* t) {
  static const std::pair<std::string_view, Target> kNames[] = {
      {"double", Target::kDouble}, {"string", Target::kString},  {"objectId", Target::kObjectId},
      {"bool", Target::kBool},     {"date", Target::kDate},      {"int", Target::kInt},
      {"long", Target::kLong},     {"decimal", Target::kDecimal}};
  for (const auto& [n, v] : kNames) {
    if (n == s) {
      *t = v;
      return true;
    }
  }
  return false;
}

bool TargetFromCode(int64_t c, Target* t) {
  switch (c) {
    case 1:
      *t = Target::kDouble;
      return true;
    case 2:
      *t = Target::kString;
      return true;
    case 7:
      *t = Target::kObjectId;
      return true;
    case 8:
      *t = Target::kBool;
      return true;
    case 9:
      *t = Target::kDate;
      return true;
    case 16:
      *t = Target::kInt;
      return true;
    case 18:
      *t = Target::kLong;
      return true;
    case 19:
      *t = Target::kDecimal;
      return true;
    default:
      return false;
  }
}

std::string_view TargetName(Target t) {
  switch (t) {
    case Target::kDouble:
      return "double";
    case Target::kString:
      return "string";
    case Target::kObjectId:
      return "objectId";
    case Target::kBool:
      return "bool";
    case Target::kDate:
      return "date";
    case Target::kInt:
      return "int";
    case Target::kLong:
      return "long";
    case Target::kDecimal:
      return "decimal";
  }
  return "";
}

constexpr int kConversionFailure = 241;

Status ConversionError(std::string msg) {
  return PipelineError(kConversionFailure, msg + " in $convert with no onError value");
}

Status Unsupported(const Value& v, Target t) {
  return ConversionError("Unsupported conversion from " + TypeNameOf(v) + " to " +
                         std::string(TargetName(t)));
}

StatusWith<double> ParseDouble(std::string_view s) {
  double d = 0;
  if (s == "NaN") return std::nan("");
  if (s == "Infinity" || s == "inf") return HUGE_VAL;
  if (s == "-Infinity" || s == "-inf") return -HUGE_VAL;
  auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    return ConversionError("Failed to parse number '" + std::string(s) + "'");
  }
  return d;
}

StatusWith<int64_t> ParseInteger(std::string_view s, Target t) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    return ConversionError("Failed to parse number '" + std::string(s) + "'");
  }
  if (t == Target::kInt && (v < INT32_MIN || v > INT32_MAX)) {
    return ConversionError("Failed to parse number '" + std::string(s) + "': Overflow");
  }
  return v;
}

StatusWith<Value> DoubleToIntegral(double d, Target t, const Value& orig) {
  const double lo = t == Target::kInt ? -2147483648.0 : -9223372036854775808.0;
  const double hi = t == Target::kInt ? 2147483648.0 : 9223372036854775808.0;
  if (std::isnan(d) || std::isinf(d) || std::trunc(d) < lo || std::trunc(d) >= hi) {
    return ConversionError("Conversion would overflow target type: " + orig.ToString());
  }
  int64_t v = static_cast<int64_t>(std::trunc(d));
  return t == Target::kInt ? Value::Int(static_cast<int32_t>(v)) : Value::Long(v);
}

StatusWith<Value> ConvertValue(const Value& v, Target t) {
  const BsonType ty = v.type();
  switch (t) {
    case Target::kDouble:
      if (ty == BsonType::kDecimal128) {
        bool out_of_range = false;
        double d = bson::decimal::ToDouble(v.element().Decimal(), &out_of_range);
        if (out_of_range) {
          return ConversionError("Conversion would overflow target type: " + v.ToString());
        }
        return Value::Double(d);
      }
      if (v.numeric()) return Value::Double(v.NumberDouble());
      if (ty == BsonType::kBool) return Value::Double(v.Truthy() ? 1 : 0);
      if (ty == BsonType::kDate) return Value::Double(static_cast<double>(v.DateMillis()));
      if (ty == BsonType::kString) {
        HG_ASSIGN_OR_RETURN(double d, ParseDouble(v.Str()));
        return Value::Double(d);
      }
      return Unsupported(v, t);
    case Target::kInt:
    case Target::kLong:
      if (ty == BsonType::kInt32) {
        return t == Target::kInt ? v : Value::Long(v.NumberLong());
      }
      if (ty == BsonType::kInt64) {
        if (t == Target::kLong) return v;
        if (v.NumberLong() < INT32_MIN || v.NumberLong() > INT32_MAX) {
          return ConversionError("Conversion would overflow target type: " + v.ToString());
        }
        return Value::Int(static_cast<int32_t>(v.NumberLong()));
      }
      if (ty == BsonType::kDecimal128) {
        // Toward zero, exactly (a double would round integers above 2^53).
        bson::Decimal128 d = v.element().Decimal();
        if (bson::decimal::IsNaN(d)) {
          return ConversionError("Attempt to convert NaN value to integer type");
        }
        if (bson::decimal::IsInfinite(d)) {
          return ConversionError("Attempt to convert infinity value to integer type");
        }
        int64_t n = 0;
        if (!bson::decimal::ToInt64(d, bson::decimal::Round::kTowardZero, &n) ||
            (t == Target::kInt && (n < INT32_MIN || n > INT32_MAX))) {
          return ConversionError("Conversion would overflow target type: " + v.ToString());
        }
        return t == Target::kInt ? Value::Int(static_cast<int32_t>(n)) : Value::Long(n);
      }
      if (ty == BsonType::kDouble) return DoubleToIntegral(v.NumberDouble(), t, v);
      if (ty == BsonType::kBool) {
        return t == Target::kInt ? Value::Int(v.Truthy()) : Value::Long(v.Truthy());
      }
      if (ty == BsonType::kDate && t == Target::kLong) return Value::Long(v.DateMillis());
      if (ty == BsonType::kString) {
        HG_ASSIGN_OR_RETURN(int64_t n, ParseInteger(v.Str(), t));
        return t == Target::kInt ? Value::Int(static_cast<int32_t>(n)) : Value::Long(n);
      }
      return Unsupported(v, t);
    case Target::kDecimal: {
      if (ty == BsonType::kDecimal128) return v;
      if (ty == BsonType::kInt32 || ty == BsonType::kInt64 || ty == BsonType::kDouble) {
        return Value::Decimal(ToDecimal(v));
      }
      if (ty == BsonType::kBool) return Value::Decimal(bson::decimal::FromInt64(v.Truthy()));
      if (ty == BsonType::kDate) return Value::Decimal(bson::decimal::FromInt64(v.DateMillis()));
      if (ty == BsonType::kString) {
        bson::Decimal128 d{};
        if (!bson::decimal::ParseRounded(v.Str(), &d)) {
          return ConversionError("Failed to parse number '" + std::string(v.Str()) + "'");
        }
        return Value::Decimal(d);
      }
      return Unsupported(v, t);
    }
    case Target::kBool:
      if (v.numeric() || ty == BsonType::kBool) return Value::Bool(v.Truthy());
      if (ty == BsonType::kString || ty == BsonType::kDate || ty == BsonType::kObjectId ||
          ty == BsonType::kObject || ty == BsonType::kArray || ty == BsonType::kBinData ||
          ty == BsonType::kRegex || ty == BsonType::kTimestamp || ty == BsonType::kMinKey ||
          ty == BsonType::kMaxKey || ty == BsonType::kCode) {
        return Value::Bool(true);
      }
      return Unsupported(v, t);
    case Target::kString: {
      if (ty == BsonType::kBool) return Value::String(v.Truthy() ? "true" : "false");
      if (ty == BsonType::kObjectId) return Value::String(v.element().Oid().ToHex());
      if (v.numeric() || ty == BsonType::kString || ty == BsonType::kDate) {
        HG_ASSIGN_OR_RETURN(std::string s, CoerceToString("$convert", v));
        return Value::String(s);
      }
      return Unsupported(v, t);
    }
    case Target::kDate:
      if (ty == BsonType::kDate) return v;
      if (ty == BsonType::kInt64) return Value::Date(v.NumberLong());
      if (ty == BsonType::kDecimal128) {
        // Milliseconds toward zero, exactly, as $toLong converts.
        HG_ASSIGN_OR_RETURN(Value ms, ConvertValue(v, Target::kLong));
        return Value::Date(ms.NumberLong());
      }
      if (ty == BsonType::kDouble) {
        double d = v.NumberDouble();
        if (std::isnan(d) || std::isinf(d) || d < -9.2e18 || d > 9.2e18) {
          return ConversionError("Conversion would overflow target type: " + v.ToString());
        }
        return Value::Date(static_cast<int64_t>(d));
      }
      if (ty == BsonType::kObjectId) {
        return Value::Date(int64_t{v.element().Oid().Timestamp()} * 1000);
      }
      if (ty == BsonType::kTimestamp) {
        return Value::Date(static_cast<int64_t>(v.element().TimestampValue() >> 32) * 1000);
      }
      if (ty == BsonType::kString) {
        int64_t ms;
        if (!ParseIsoDate(v.Str(), &ms)) {
          return ConversionError("Error parsing date string '" + std::string(v.Str()) + "'");
        }
        return Value::Date(ms);
      }
      return Unsupported(v, t);
    case Target::kObjectId: {
      if (ty == BsonType::kObjectId) return v;
      if (ty != BsonType::kString) return Unsupported(v, t);
      std::string_view s = v.Str();
      bson::ObjectId oid{};
      bool ok = s.size() == 24;
      for (size_t i = 0; ok && i < 12; ++i) {
        auto r = std::from_chars(s.data() + 2 * i, s.data() + 2 * i + 2, oid.bytes[i], 16);
        ok = r.ec == std::errc() && r.ptr == s.data() + 2 * i + 2;
      }
      if (!ok) {
        return ConversionError("Failed to parse objectId '" + std::string(s) + "'");
      }
      return Value::Oid(oid);
    }
  }
  return Unsupported(v, t);
}

class ConvertExpression : public Expression {
 public:
  ExpressionPtr input, to, on_error, on_null;
  // Set for the $toX shorthands: a fixed target and no onError/onNull.
  bool fixed = false;
  Target fixed_target = Target::kDouble;

  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value in, input->Evaluate(root, vars));
    Target t = fixed_target;
    if (!fixed) {
      HG_ASSIGN_OR_RETURN(Value to_v, to->Evaluate(root, vars));
      if (to_v.nullish()) return Value::Null();
      bool ok = to_v.IsString() ? TargetFromName(to_v.Str(), &t)
                                : (to_v.numeric() && TargetFromCode(to_v.NumberLong(), &t));
      if (!ok) {
        return Status(ErrorCode::kBadValue, "Unknown type name: " + to_v.ToString());
      }
    }
    if (in.nullish()) {
      if (on_null) return on_null->Evaluate(root, vars);
      return Value::Null();
    }
    auto r = ConvertValue(in, t);
    if (!r.ok() && on_error) return on_error->Evaluate(root, vars);
    return r;
  }
};

StatusWith<ExpressionPtr> ParseConvert(std::string_view, const BsonElement& operand,
                                       const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return Status(ErrorCode::kFailedToParse,
                  "$convert expects an object of named arguments but found: " +
                      std::string(bson::TypeName(operand.type())));
  }
  auto c = std::make_unique<ConvertExpression>();
  for (const auto& f : operand.Obj()) {
    HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(f, ctx));
    std::string_view n = f.FieldName();
    if (n == "input") {
      c->input = std::move(e);
    } else if (n == "to") {
      c->to = std::move(e);
    } else if (n == "onError") {
      c->on_error = std::move(e);
    } else if (n == "onNull") {
      c->on_null = std::move(e);
    } else {
      return Status(ErrorCode::kFailedToParse,
                    "$convert found an unknown argument: " + std::string(n));
    }
  }
  if (!c->input) return Status(ErrorCode::kFailedToParse, "Missing 'input' parameter to $convert");
  if (!c->to) return Status(ErrorCode::kFailedToParse, "Missing 'to' parameter to $convert");
  return ExpressionPtr(std::move(c));
}

StatusWith<ExpressionPtr> ParseToShorthand(std::string_view op, const BsonElement& operand,
                                           const ParseContext& ctx) {
  HG_ASSIGN_OR_RETURN(auto args, ParseArguments(operand, ctx));
  HG_RETURN_IF_ERROR(CheckArity(op, args.size(), 1, 1));
  auto c = std::make_unique<ConvertExpression>();
  c->input = std::move(args[0]);
  c->fixed = true;
  std::string name(op.substr(3));  // "$toInt" -> "Int"
  name[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[0])));
  invariant(TargetFromName(name, &c->fixed_target));
  return ExpressionPtr(std::move(c));
}

StatusWith<Value> TypeOf(std::string_view, const std::vector<Value>& args) {
  return Value::String(TypeNameOf(args[0]));
}

StatusWith<Value> IsNumber(std::string_view, const std::vector<Value>& args) {
  return Value::Bool(args[0].numeric());
}

// Sets or replaces `name` in an ordered field list, keeping the first position.
void SetField(std::vector<std::pair<std::string, Value>>& fields, std::string_view name, Value v) {
  for (auto& [n, old] : fields) {
    if (n == name) {
      old = std::move(v);
      return;
    }
  }
  fields.emplace_back(std::string(name), std::move(v));
}

Value FieldsToObject(const std::vector<std::pair<std::string, Value>>& fields) {
  bson::BsonBuilder b;
  for (const auto& [n, v] : fields) v.AppendTo(b, n);
  return Value::Object(b.Obj());
}

StatusWith<Value> MergeObjects(std::string_view, const std::vector<Value>& args) {
  std::vector<std::pair<std::string, Value>> fields;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& a = args[i];
    if (a.nullish()) continue;
    if (!a.IsObject()) {
      return PipelineError(40400, "$mergeObjects requires object inputs, but input " +
                                      a.ToString() + " is of type " + TypeNameOf(a));
    }
    for (const auto& e : a.Obj()) SetField(fields, e.FieldName(), Value::FromElement(e));
  }
  return FieldsToObject(fields);
}

StatusWith<Value> ObjectToArray(std::string_view, const std::vector<Value>& args) {
  if (args[0].nullish()) return Value::Null();
  if (!args[0].IsObject()) {
    return PipelineError(40390,
                         "$objectToArray requires a document input, found: " + TypeNameOf(args[0]));
  }
  std::vector<Value> out;
  for (const auto& e : args[0].Obj()) {
    bson::BsonBuilder b;
    b.AppendString("k", e.FieldName());
    b.AppendElementAs(e, "v");
    out.push_back(Value::Object(b.Obj()));
  }
  return Value::Array(out);
}

StatusWith<Value> ArrayToObject(std::string_view, const std::vector<Value>& args) {
  if (args[0].nullish()) return Value::Null();
  if (!args[0].IsArray()) {
    return PipelineError(40386,
                         "$arrayToObject requires an array input, found: " + TypeNameOf(args[0]));
  }
  std::vector<std::pair<std::string, Value>> fields;
  for (const auto& m : args[0].ArrayValues()) {
    Value k, v;
    if (m.IsArray()) {
      auto kv = m.ArrayValues();
      if (kv.size() != 2) {
        return PipelineError(40397,
                             "$arrayToObject requires an array of size 2 arrays,found "
                             "array of size: " +
                                 std::to_string(kv.size()));
      }
      k = kv[0];
      v = kv[1];
    } else if (m.IsObject()) {
      BsonObj o = m.Obj();
      if (o.NumFields() != 2 || !o.HasField("k") || !o.HasField("v")) {
        return PipelineError(40392,
                             "$arrayToObject requires an object keys of 'k' and 'v'. "
                             "Found incorrect number of keys:" +
                                 std::to_string(o.NumFields()));
      }
      k = Value::FromElement(o["k"]);
      v = Value::FromElement(o["v"]);
    } else {
      return PipelineError(40398,
                           "Unrecognised input type format for $arrayToObject: " + TypeNameOf(m));
    }
    if (!k.IsString()) {
      return PipelineError(40395,
                           "$arrayToObject requires an object with keys 'k' and 'v', "
                           "where the value of 'k' must be of type string. Found type: " +
                               TypeNameOf(k));
    }
    SetField(fields, k.Str(), v);
  }
  return FieldsToObject(fields);
}

// $getField: {field: <string>, input: <expr>} or the shorthand {$getField: "<name>"}.
class GetFieldExpression : public Expression {
 public:
  std::string field;
  ExpressionPtr input;  // null means $$CURRENT
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    Value in = Value::Object(root);
    if (input) {
      HG_ASSIGN_OR_RETURN(in, input->Evaluate(root, vars));
    }
    if (in.missing()) return Value::Missing();
    if (!in.IsObject()) return Value::Null();
    return Value::FromElement(in.Obj().GetField(field));
  }
};

StatusWith<ExpressionPtr> ParseGetField(std::string_view, const BsonElement& operand,
                                        const ParseContext& ctx) {
  auto g = std::make_unique<GetFieldExpression>();
  if (operand.type() == BsonType::kString) {
    g->field = std::string(operand.Str());
    return ExpressionPtr(std::move(g));
  }
  if (operand.type() != BsonType::kObject) {
    return PipelineError(3041704, "$getField requires 'field' to evaluate to type String");
  }
  bool have_field = false;
  for (const auto& f : operand.Obj()) {
    if (f.FieldName() == "field") {
      BsonElement fe = f;
      std::string_view first =
          fe.type() == BsonType::kObject ? fe.Obj().FirstElement().FieldName() : "";
      if (first == "$literal" || first == "$const") {
        fe = fe.Obj().FirstElement();
      }
      if (fe.type() != BsonType::kString) {
        return PipelineError(5654602,
                             "$getField requires 'field' to evaluate to a constant "
                             "string");
      }
      g->field = std::string(fe.Str());
      have_field = true;
    } else if (f.FieldName() == "input") {
      HG_ASSIGN_OR_RETURN(g->input, Expression::ParseExpression(f, ctx));
    } else {
      return PipelineError(3041701,
                           "$getField found an unknown argument: " + std::string(f.FieldName()));
    }
  }
  if (!have_field) return PipelineError(3041702, "$getField requires 'field' to be specified");
  return ExpressionPtr(std::move(g));
}

// $setField {field, input, value} and $unsetField {field, input}: `input` with `field` (a
// constant name, may contain '.' or start with '$' only via $literal) set, or removed when the
// value is missing ($$REMOVE, and always for $unsetField).
class SetFieldExpression : public Expression {
 public:
  std::string field;
  ExpressionPtr input, value;  // value null for $unsetField
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value in, input->Evaluate(root, vars));
    if (in.nullish()) return Value::Null();
    if (!in.IsObject()) {
      return PipelineError(4161105, std::string(value ? "$setField" : "$unsetField") +
                                        " requires 'input' to evaluate to type Object");
    }
    Value v;
    if (value) {
      HG_ASSIGN_OR_RETURN(v, value->Evaluate(root, vars));
    }
    std::vector<std::pair<std::string, Value>> fields;
    for (const auto& e : in.Obj())
      fields.emplace_back(std::string(e.FieldName()), Value::FromElement(e));
    SetField(fields, field, std::move(v));
    return FieldsToObject(fields);
  }
};

StatusWith<ExpressionPtr> ParseSetField(std::string_view op, const BsonElement& operand,
                                        const ParseContext& ctx) {
  const bool unset = op == "$unsetField";
  if (operand.type() != BsonType::kObject) {
    return PipelineError(4161100, std::string(op) + " only supports an object as its argument");
  }
  auto e = std::make_unique<SetFieldExpression>();
  bool have_field = false, have_value = false;
  for (const auto& f : operand.Obj()) {
    if (f.FieldName() == "field") {
      if (f.type() == BsonType::kString && f.Str().substr(0, 1) == "$") {
        return PipelineError(4161108, "'" + std::string(f.Str()) +
                                          "' is a field path reference which is not allowed in "
                                          "this context. Did you mean {$literal: '" +
                                          std::string(f.Str()) + "'}?");
      }
      HG_ASSIGN_OR_RETURN(ExpressionPtr fe, Expression::ParseExpression(f, ctx));
      const Value* c = fe->ConstantValue();
      if (c == nullptr) {
        return PipelineError(4161106,
                             "$setField requires 'field' to evaluate to a constant, but "
                             "got a non-constant argument");
      }
      if (!c->IsString()) {
        return PipelineError(
            4161107,
            "$setField requires 'field' to evaluate to type String, but got " + TypeNameOf(*c));
      }
      e->field = std::string(c->Str());
      have_field = true;
    } else if (f.FieldName() == "input") {
      HG_ASSIGN_OR_RETURN(e->input, Expression::ParseExpression(f, ctx));
    } else if (f.FieldName() == "value" && !unset) {
      HG_ASSIGN_OR_RETURN(e->value, Expression::ParseExpression(f, ctx));
      have_value = true;
    } else {
      return PipelineError(
          4161101, std::string(op) + " found an unknown argument: " + std::string(f.FieldName()));
    }
  }
  if (!have_field)
    return PipelineError(4161102, std::string(op) + " requires 'field' to be specified");
  if (!e->input)
    return PipelineError(4161109, std::string(op) + " requires 'input' to be specified");
  if (!unset && !have_value) {
    return PipelineError(4161103, "$setField requires 'value' to be specified");
  }
  return ExpressionPtr(std::move(e));
}

}  // namespace

void AddTypeOperators(std::vector<OperatorDef>& out) {
  out.push_back({"$setField", 0, 0, nullptr, &ParseSetField});
  out.push_back({"$unsetField", 0, 0, nullptr, &ParseSetField});
  out.push_back({"$type", 1, 1, &TypeOf, nullptr});
  out.push_back({"$isNumber", 1, 1, &IsNumber, nullptr});
  out.push_back({"$convert", 0, 0, nullptr, &ParseConvert});
  for (std::string_view op : {"$toDouble", "$toString", "$toObjectId", "$toBool", "$toDate",
                              "$toInt", "$toLong", "$toDecimal"}) {
    out.push_back({op, 0, 0, nullptr, &ParseToShorthand});
  }
  out.push_back({"$mergeObjects", 0, kVariadic, &MergeObjects, nullptr});
  out.push_back({"$objectToArray", 1, 1, &ObjectToArray, nullptr});
  out.push_back({"$arrayToObject", 1, 1, &ArrayToObject, nullptr});
  out.push_back({"$getField", 0, 0, nullptr, &ParseGetField});
}

}  // namespace hourglass::pipeline::internal
