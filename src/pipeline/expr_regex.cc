// $regexMatch, $regexFind, $regexFindAll: PCRE2 (UTF mode) with the options i, m, s, x, u.
// A constant regex is compiled once at parse time; others per evaluation.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>

#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
using CodePtr = std::shared_ptr<pcre2_code>;

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

class RegexExpression : public Expression {
 public:
  std::string_view op;
  ExpressionPtr input, regex, options;
  CodePtr constant_code;  // set when regex and options are constants

  StatusWith<Value> Evaluate(const BsonObj& root, Variables& vars) const override {
    HG_ASSIGN_OR_RETURN(Value in, input->Evaluate(root, vars));
    CodePtr code = constant_code;
    bool null_regex = false;
    if (!code) {
      HG_ASSIGN_OR_RETURN(Value re, regex->Evaluate(root, vars));
      Value opts;
      if (options) {
        HG_ASSIGN_OR_RETURN(opts, options->Evaluate(root, vars));
      }
      HG_ASSIGN_OR_RETURN(code, Compile(op, re, opts, &null_regex));
    }
    if (!in.nullish() && !in.IsString()) {
      return PipelineError(51104, std::string(op) + " needs 'input' to be of type string");
    }
    if (in.nullish() || null_regex) return NoMatch();
    return Run(in.Str(), code.get());
  }

  // Compiles a regex/options pair. *null_regex is set (and no code returned) for a null regex.
  static StatusWith<CodePtr> Compile(std::string_view op, const Value& re, const Value& opts,
                                     bool* null_regex) {
    std::string pattern, flags;
    if (!opts.nullish()) {
      if (!opts.IsString()) {
        return PipelineError(51106, std::string(op) + " needs 'options' to be of type string");
      }
      flags = std::string(opts.Str());
    }
    if (re.type() == BsonType::kRegex) {
      pattern = std::string(re.element().RegexPattern());
      std::string_view embedded = re.element().RegexOptions();
      if (!embedded.empty() && !flags.empty()) {
        return PipelineError(51107, std::string(op) +
                                        " found regex option(s) specified in both 'regex' and "
                                        "'option' fields");
      }
      if (!embedded.empty()) flags = std::string(embedded);
    } else if (re.IsString()) {
      pattern = std::string(re.Str());
    } else if (re.nullish()) {
      *null_regex = true;
      return CodePtr();
    } else {
      return PipelineError(51105, std::string(op) + " needs 'regex' to be of type string or regex");
    }
    if (pattern.find('\0') != std::string::npos) {
      return PipelineError(
          51109, std::string(op) + ": regular expression cannot contain an embedded null byte");
    }
    uint32_t f = PCRE2_UTF;
    for (char c : flags) {
      switch (c) {
        case 'i':
          f |= PCRE2_CASELESS;
          break;
        case 'm':
          f |= PCRE2_MULTILINE;
          break;
        case 's':
          f |= PCRE2_DOTALL;
          break;
        case 'x':
          f |= PCRE2_EXTENDED;
          break;
        case 'u':
          break;
        default:
          return PipelineError(51108, std::string(op) + " invalid flag in regex options: " + c);
      }
    }
    int err = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     f, &err, &offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(err, buf, sizeof buf);
      return PipelineError(
          51111, "Invalid Regex in " + std::string(op) + ": " + reinterpret_cast<const char*>(buf));
    }
    return CodePtr(code, CodeDeleter());
  }

 private:
  Value NoMatch() const {
    if (op == "$regexMatch") return Value::Bool(false);
    if (op == "$regexFind") return Value::Null();
    return Value::Array({});
  }

  StatusWith<Value> Run(std::string_view s, pcre2_code* code) const {
    std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
        pcre2_match_data_create_from_pattern(code, nullptr));
    std::vector<Value> all;
    size_t start = 0;
    while (start <= s.size()) {
      int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), start, 0,
                           md.get(), nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        return PipelineError(51156, "Error occurred while executing the regular expression in " +
                                        std::string(op) + ". Result code: " + std::to_string(rc));
      }
      if (op == "$regexMatch") return Value::Bool(true);
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
      uint32_t groups = 0;
      pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &groups);
      bson::BsonBuilder b;
      b.AppendString("match", s.substr(ov[0], ov[1] - ov[0]));
      b.AppendInt32("idx", static_cast<int32_t>(CodePoints(s.substr(0, ov[0]))));
      size_t arr = b.OpenArray("captures");
      for (uint32_t g = 1; g <= groups; ++g) {
        std::string key = std::to_string(g - 1);
        if (static_cast<int>(g) < rc && ov[2 * g] != PCRE2_UNSET) {
          b.AppendString(key, s.substr(ov[2 * g], ov[2 * g + 1] - ov[2 * g]));
        } else {
          b.AppendNull(key);
        }
      }
      b.Close(arr);
      Value m = Value::Object(b.Obj());
      if (op == "$regexFind") return m;
      all.push_back(std::move(m));
      if (ov[1] > ov[0]) {
        start = ov[1];
      } else {
        // Empty match: step over one code point.
        start = ov[1] + 1;
        while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
      }
    }
    return NoMatch().IsArray() && !all.empty() ? Value::Array(all) : NoMatch();
  }
};

StatusWith<ExpressionPtr> ParseRegex(std::string_view op, const BsonElement& operand,
                                     const ParseContext& ctx) {
  if (operand.type() != BsonType::kObject) {
    return PipelineError(51103, std::string(op) +
                                    " expects an object of named arguments but found: " +
                                    std::string(bson::TypeName(operand.type())));
  }
  auto e = std::make_unique<RegexExpression>();
  e->op = op;
  for (const auto& f : operand.Obj()) {
    ExpressionPtr* slot = f.FieldName() == "input"     ? &e->input
                          : f.FieldName() == "regex"   ? &e->regex
                          : f.FieldName() == "options" ? &e->options
                                                       : nullptr;
    if (slot == nullptr) {
      return PipelineError(
          31024, std::string(op) + " found an unknown argument: " + std::string(f.FieldName()));
    }
    HG_ASSIGN_OR_RETURN(*slot, Expression::ParseExpression(f, ctx));
  }
  if (!e->input) return PipelineError(31022, std::string(op) + " requires 'input' parameter");
  if (!e->regex) return PipelineError(31023, std::string(op) + " requires 'regex' parameter");
  const Value* re = e->regex->ConstantValue();
  const Value* opts = e->options ? e->options->ConstantValue() : nullptr;
  if (re != nullptr && (!e->options || opts != nullptr)) {
    bool null_regex = false;
    HG_ASSIGN_OR_RETURN(CodePtr code, RegexExpression::Compile(
                                          op, *re, opts ? *opts : Value::Missing(), &null_regex));
    if (!null_regex) e->constant_code = std::move(code);
  }
  return ExpressionPtr(std::move(e));
}

}  // namespace

void AddRegexOperators(std::vector<OperatorDef>& out) {
  for (std::string_view op : {"$regexMatch", "$regexFind", "$regexFindAll"}) {
    out.push_back({op, 0, 0, nullptr, &ParseRegex});
  }
}

}  // namespace hourglass::pipeline::internal
