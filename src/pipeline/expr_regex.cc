// $regexMatch, $regexFind, $regexFindAll: query::Regex (PCRE2, UTF mode) with the options i, m,
// s, x, u. A constant regex is compiled once at parse time; others per evaluation.
#include <memory>
#include <optional>

#include "pipeline/expression_internal.h"
#include "query/query_errors.h"
#include "query/regex.h"

namespace hourglass::pipeline::internal {

namespace {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

using CodePtr = std::optional<query::Regex>;  // empty for a null regex

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
    return Run(in.Str(), *code);
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
    StatusWith<query::Regex> compiled = query::Regex::Compile(pattern, flags);
    if (!compiled.ok()) {
      if (compiled.status().code() == query::kBadRegexOptionCode) {
        return PipelineError(51108, std::string(op) + " " + compiled.status().reason());
      }
      std::string_view why = compiled.status().reason();
      constexpr std::string_view kPrefix = "Regular expression is invalid: ";
      if (why.substr(0, kPrefix.size()) == kPrefix) why.remove_prefix(kPrefix.size());
      return PipelineError(51111, "Invalid Regex in " + std::string(op) + ": " + std::string(why));
    }
    return CodePtr(std::move(compiled).value());
  }

 private:
  Value NoMatch() const {
    if (op == "$regexMatch") return Value::Bool(false);
    if (op == "$regexFind") return Value::Null();
    return Value::Array({});
  }

  StatusWith<Value> Run(std::string_view s, const query::Regex& regex) const {
    if (op == "$regexMatch") return Value::Bool(regex.Matches(s));
    std::vector<Value> all;
    size_t start = 0;
    while (start <= s.size()) {
      int error = 0;
      std::optional<query::Regex::Match> m = regex.Find(s, start, &error);
      if (error != 0) {
        return PipelineError(51156, "Error occurred while executing the regular expression in " +
                                        std::string(op) +
                                        ". Result code: " + std::to_string(error));
      }
      if (!m) break;
      const auto [begin, end] = m->groups[0];
      bson::BsonBuilder b;
      b.AppendString("match", s.substr(begin, end - begin));
      b.AppendInt32("idx", static_cast<int32_t>(CodePoints(s.substr(0, begin))));
      size_t arr = b.OpenArray("captures");
      for (size_t g = 1; g < m->groups.size(); ++g) {
        std::string key = std::to_string(g - 1);
        const auto [gb, ge] = m->groups[g];
        if (gb != std::string_view::npos) {
          b.AppendString(key, s.substr(gb, ge - gb));
        } else {
          b.AppendNull(key);
        }
      }
      b.Close(arr);
      Value found = Value::Object(b.Obj());
      if (op == "$regexFind") return found;
      all.push_back(std::move(found));
      if (end > begin) {
        start = end;
      } else {
        // Empty match: step over one code point.
        start = end + 1;
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
