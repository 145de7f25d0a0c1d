// String operators. Code-point operators ($substrCP, $strLenCP) count UTF-8 code points.
#include <algorithm>
#include <cctype>

#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {

// Defined in expr_type.cc: MongoDB's string coercion used by $toUpper/$toLower/$substr.
StatusWith<std::string> CoerceToString(std::string_view op, const Value& v);

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

size_t CodePointCount(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += IsContinuation(c) ? 0 : 1;
  return n;
}

// Byte offset of code point `cp` (clamped to the end).
size_t ByteOffsetOfCodePoint(std::string_view s, int64_t cp) {
  size_t i = 0;
  while (i < s.size() && cp > 0) {
    ++i;
    while (i < s.size() && IsContinuation(s[i])) ++i;
    --cp;
  }
  return i;
}

StatusWith<Value> Concat(std::string_view, const std::vector<Value>& args) {
  std::string out;
  for (const auto& v : args) {
    if (v.nullish()) return Value::Null();
    if (!v.IsString()) {
      return PipelineError(16702, "$concat only supports strings, not " + TypeNameOf(v));
    }
    out.append(v.Str());
  }
  return Value::String(out);
}

StatusWith<Value> ChangeCase(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(std::string s, CoerceToString(op, args[0]));
  const bool upper = op == "$toUpper";
  for (char& c : s) {
    c = upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
              : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return Value::String(s);
}

StatusWith<Value> StrLenCP(std::string_view, const std::vector<Value>& args) {
  if (!args[0].IsString()) {
    return PipelineError(34471,
                         "$strLenCP requires a string argument, found: " + TypeNameOf(args[0]));
  }
  return Value::IntOrLong(static_cast<int64_t>(CodePointCount(args[0].Str())));
}

StatusWith<Value> StrLenBytes(std::string_view, const std::vector<Value>& args) {
  if (!args[0].IsString()) {
    return PipelineError(34473,
                         "$strLenBytes requires a string argument, found: " + TypeNameOf(args[0]));
  }
  return Value::IntOrLong(static_cast<int64_t>(args[0].Str().size()));
}

bool IsIntegral(const Value& v) {
  return v.numeric() && v.NumberDouble() == static_cast<double>(v.NumberLong());
}

StatusWith<Value> SubstrCP(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(std::string s, CoerceToString(op, args[0]));
  if (!args[1].numeric()) {
    return PipelineError(34450, "$substrCP: starting index must be a numeric type (is BSON type " +
                                    TypeNameOf(args[1]) + ")");
  }
  if (!args[2].numeric()) {
    return PipelineError(34452, "$substrCP: length must be a numeric type (is BSON type " +
                                    TypeNameOf(args[2]) + ")");
  }
  if (!IsIntegral(args[1])) {
    return PipelineError(34451,
                         "$substrCP: starting index cannot be represented as a 32-bit "
                         "integral value");
  }
  if (!IsIntegral(args[2])) {
    return PipelineError(34453,
                         "$substrCP: length cannot be represented as a 32-bit integral "
                         "value");
  }
  int64_t start = args[1].NumberLong();
  int64_t len = args[2].NumberLong();
  if (start < 0)
    return PipelineError(34455, "$substrCP: the starting index must be nonnegative integer.");
  if (len < 0) return PipelineError(34454, "$substrCP: length must be a nonnegative integer.");
  size_t b = ByteOffsetOfCodePoint(s, start);
  size_t e = b + ByteOffsetOfCodePoint(std::string_view(s).substr(b), len);
  return Value::String(std::string_view(s).substr(b, e - b));
}

StatusWith<Value> SubstrBytes(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(std::string s, CoerceToString(op, args[0]));
  if (!args[1].numeric() || !args[2].numeric()) {
    return PipelineError(16034, std::string(op) + ": starting index and length must be numeric");
  }
  int64_t start = args[1].NumberLong();
  int64_t len = args[2].NumberLong();
  if (start < 0) start = 0;
  if (static_cast<size_t>(start) >= s.size()) return Value::String("");
  if (start > 0 && IsContinuation(s[start])) {
    return PipelineError(28656, std::string(op) +
                                    ":  Invalid range, starting index is a UTF-8 continuation "
                                    "byte.");
  }
  size_t n = len < 0 ? std::string::npos : static_cast<size_t>(len);
  std::string out = s.substr(start, n);
  if (start + out.size() < s.size() && IsContinuation(s[start + out.size()])) {
    return PipelineError(28657, std::string(op) +
                                    ":  Invalid range, ending index is in the middle of a UTF-8 "
                                    "character.");
  }
  return Value::String(out);
}

StatusWith<Value> Split(std::string_view, const std::vector<Value>& args) {
  if (args[0].nullish()) return Value::Null();
  if (!args[0].IsString()) {
    return PipelineError(40085,
                         "$split requires an expression that evaluates to a string as a first "
                         "argument, found: " +
                             TypeNameOf(args[0]));
  }
  if (!args[1].IsString()) {
    return PipelineError(40086,
                         "$split requires an expression that evaluates to a string as a second "
                         "argument, found: " +
                             TypeNameOf(args[1]));
  }
  std::string_view s = args[0].Str();
  std::string_view d = args[1].Str();
  if (d.empty()) return PipelineError(40087, "$split requires a non-empty separator");
  std::vector<Value> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(d, start);
    if (pos == std::string_view::npos) {
      parts.push_back(Value::String(s.substr(start)));
      break;
    }
    parts.push_back(Value::String(s.substr(start, pos - start)));
    start = pos + d.size();
  }
  return Value::Array(parts);
}

StatusWith<Value> StrCaseCmp(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(std::string a, CoerceToString(op, args[0]));
  HG_ASSIGN_OR_RETURN(std::string b, CoerceToString(op, args[1]));
  for (auto* s : {&a, &b}) {
    for (char& c : *s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  int c = a.compare(b);
  return Value::Int(c < 0 ? -1 : (c > 0 ? 1 : 0));
}

StatusWith<Value> IndexOfCP(std::string_view, const std::vector<Value>& args) {
  if (args[0].nullish()) return Value::Null();
  if (!args[0].IsString()) {
    return PipelineError(
        40093, "$indexOfCP requires a string as the first argument, found: " + TypeNameOf(args[0]));
  }
  if (!args[1].IsString()) {
    return PipelineError(40094, "$indexOfCP requires a string as the second argument, found: " +
                                    TypeNameOf(args[1]));
  }
  std::string_view s = args[0].Str();
  int64_t start = args.size() > 2 ? args[2].NumberLong() : 0;
  size_t from = ByteOffsetOfCodePoint(s, start);
  if (args.size() > 3) {
    size_t to = ByteOffsetOfCodePoint(s, args[3].NumberLong());
    if (to < from) return Value::Int(-1);
    s = s.substr(0, to);
  }
  size_t pos = s.find(args[1].Str(), from);
  if (pos == std::string_view::npos || from > s.size()) return Value::Int(-1);
  return Value::IntOrLong(static_cast<int64_t>(CodePointCount(s.substr(0, pos))));
}

// $trim / $ltrim / $rtrim: {input, chars}. Without chars, whitespace (incl. NUL) is trimmed.
class TrimExpression : public Expression {
 public:
  std::string_view op;
  ExpressionPtr input, chars;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value in, input->Evaluate(root, vars));
    if (in.nullish()) return Value::Null();
    if (!in.IsString()) {
      return PipelineError(50699, std::string(op) + " requires its input to be a string, got " +
                                      in.ToString() + " (of type " + TypeNameOf(in) + ") instead.");
    }
    std::string set = std::string(" \t\n\v\f\r\0", 7);
    if (chars) {
      HG_ASSIGN_OR_RETURN(Value c, chars->Evaluate(root, vars));
      if (c.nullish()) return Value::Null();
      if (!c.IsString()) {
        return PipelineError(50700, std::string(op) + " requires 'chars' to be a string, got " +
                                        c.ToString() + " (of type " + TypeNameOf(c) + ") instead.");
      }
      set = std::string(c.Str());
    }
    std::string_view s = in.Str();
    size_t b = 0, e = s.size();
    if (op != "$rtrim") {
      while (b < e && set.find(s[b]) != std::string::npos) ++b;
    }
    if (op != "$ltrim") {
      while (e > b && set.find(s[e - 1]) != std::string::npos) --e;
    }
    return Value::String(s.substr(b, e - b));
  }
};

StatusWith<ExpressionPtr> ParseTrim(std::string_view op, const BsonElement& operand,
                                    const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(50696, std::string(op) +
                                    " only supports an object as an argument, found: " +
                                    std::string(bson::TypeName(operand.type())));
  }
  auto t = std::make_unique<TrimExpression>();
  t->op = op;
  for (const auto& f : operand.Obj()) {
    HG_ASSIGN_OR_RETURN(auto e, Expression::ParseExpression(f, ctx));
    if (f.FieldName() == "input") {
      t->input = std::move(e);
    } else if (f.FieldName() == "chars") {
      t->chars = std::move(e);
    } else {
      return PipelineError(
          50694, std::string(op) + " found an unknown argument: " + std::string(f.FieldName()));
    }
  }
  if (!t->input) return PipelineError(50695, std::string(op) + " requires an 'input' field");
  return ExpressionPtr(std::move(t));
}

StatusWith<Value> IndexOfBytes(std::string_view, const std::vector<Value>& args) {
  if (args[0].nullish()) return Value::Null();
  if (!args[0].IsString()) {
    return PipelineError(40091, "$indexOfBytes requires a string as the first argument, found: " +
                                    TypeNameOf(args[0]));
  }
  if (!args[1].IsString()) {
    return PipelineError(40092, "$indexOfBytes requires a string as the second argument, found: " +
                                    TypeNameOf(args[1]));
  }
  std::string_view s = args[0].Str();
  int64_t start = 0;
  int64_t end = static_cast<int64_t>(s.size());
  for (size_t i = 2; i < args.size(); ++i) {
    const Value& v = args[i];
    const char* which = i == 2 ? "starting" : "ending";
    if (!v.numeric() || static_cast<double>(v.NumberLong()) != v.NumberDouble()) {
      return PipelineError(40096, std::string("$indexOfBytes requires an integral ") + which +
                                      " index, found a value of type: " + TypeNameOf(v) +
                                      ", with value: " + v.ToString());
    }
    if (v.NumberLong() < 0) {
      return PipelineError(40097, std::string("$indexOfBytes requires a nonnegative ") + which +
                                      " index, found: " + v.ToString());
    }
    (i == 2 ? start : end) = v.NumberLong();
  }
  end = std::min<int64_t>(end, static_cast<int64_t>(s.size()));
  if (start > end) return Value::Int(-1);
  size_t pos = s.substr(0, static_cast<size_t>(end)).find(args[1].Str(), start);
  if (pos == std::string_view::npos) return Value::Int(-1);
  return Value::IntOrLong(static_cast<int64_t>(pos));
}

// $replaceOne / $replaceAll: {input, find, replacement}, plain string matching.
class ReplaceExpression : public Expression {
 public:
  std::string_view op;
  ExpressionPtr input, find, replacement;
  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value in, input->Evaluate(root, vars));
    HG_ASSIGN_OR_RETURN(Value f, find->Evaluate(root, vars));
    HG_ASSIGN_OR_RETURN(Value r, replacement->Evaluate(root, vars));
    const std::pair<const Value*, std::pair<int, const char*>> checks[] = {
        {&in, {51746, "input"}}, {&f, {51745, "find"}}, {&r, {51744, "replacement"}}};
    for (const auto& [v, info] : checks) {
      if (!v->IsString() && !v->nullish()) {
        return PipelineError(info.first, std::string(op) + " requires that '" + info.second +
                                             "' be a string, found: " + v->ToString());
      }
    }
    if (in.nullish() || f.nullish() || r.nullish()) return Value::Null();
    std::string_view s = in.Str(), needle = f.Str(), with = r.Str();
    std::string out(with);
    if (needle.empty()) {
      // An empty `find` matches before the string; $replaceAll also matches after every
      // character.
      if (op == "$replaceOne") return Value::String(out.append(s));
      for (size_t i = 0; i < s.size(); ++i) {
        out.push_back(s[i]);
        if (i + 1 == s.size() || !IsContinuation(s[i + 1])) out.append(with);
      }
      return Value::String(out);
    }
    out.clear();
    size_t pos = 0;
    for (size_t hit = s.find(needle); hit != std::string_view::npos; hit = s.find(needle, pos)) {
      out.append(s.substr(pos, hit - pos)).append(with);
      pos = hit + needle.size();
      if (op == "$replaceOne") break;
    }
    out.append(s.substr(pos));
    return Value::String(out);
  }
};

StatusWith<ExpressionPtr> ParseReplace(std::string_view op, const BsonElement& operand,
                                       const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(51751, std::string(op) + " requires an object as an argument, found: " +
                                    std::string(bson::TypeName(operand.type())));
  }
  auto e = std::make_unique<ReplaceExpression>();
  e->op = op;
  for (const auto& f : operand.Obj()) {
    ExpressionPtr* slot = f.FieldName() == "input"         ? &e->input
                          : f.FieldName() == "find"        ? &e->find
                          : f.FieldName() == "replacement" ? &e->replacement
                                                           : nullptr;
    if (slot == nullptr) {
      return PipelineError(
          51750, std::string(op) + " found an unknown argument: " + std::string(f.FieldName()));
    }
    HG_ASSIGN_OR_RETURN(*slot, Expression::ParseExpression(f, ctx));
  }
  if (!e->input) return PipelineError(51749, std::string(op) + " requires 'input' to be specified");
  if (!e->find) return PipelineError(51748, std::string(op) + " requires 'find' to be specified");
  if (!e->replacement) {
    return PipelineError(51747, std::string(op) + " requires 'replacement' to be specified");
  }
  return ExpressionPtr(std::move(e));
}

}  // namespace

void AddStringOperators(std::vector<OperatorDef>& out) {
  out.push_back({"$indexOfBytes", 2, 4, &IndexOfBytes, nullptr});
  out.push_back({"$replaceOne", 0, 0, nullptr, &ParseReplace});
  out.push_back({"$replaceAll", 0, 0, nullptr, &ParseReplace});
  out.push_back({"$concat", 0, kVariadic, &Concat, nullptr});
  out.push_back({"$toUpper", 1, 1, &ChangeCase, nullptr});
  out.push_back({"$toLower", 1, 1, &ChangeCase, nullptr});
  out.push_back({"$strLenCP", 1, 1, &StrLenCP, nullptr});
  out.push_back({"$strLenBytes", 1, 1, &StrLenBytes, nullptr});
  out.push_back({"$substrCP", 3, 3, &SubstrCP, nullptr});
  out.push_back({"$substrBytes", 3, 3, &SubstrBytes, nullptr});
  out.push_back({"$substr", 3, 3, &SubstrBytes, nullptr});
  out.push_back({"$split", 2, 2, &Split, nullptr});
  out.push_back({"$strcasecmp", 2, 2, &StrCaseCmp, nullptr});
  out.push_back({"$indexOfCP", 2, 4, &IndexOfCP, nullptr});
  out.push_back({"$trim", 0, 0, nullptr, &ParseTrim});
  out.push_back({"$ltrim", 0, 0, nullptr, &ParseTrim});
  out.push_back({"$rtrim", 0, 0, nullptr, &ParseTrim});
}

}  // namespace hourglass::pipeline::internal
