#include "query/matcher.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "bson/bson_compare.h"
#include "geo/geo_query.h"
#include "query/match_expression.h"
#include "query/query_errors.h"
#include "query/regex.h"

namespace hourglass::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr int kMaxDepth = 100;

Status BadValue(std::string reason) { return Status(ErrorCode::kBadValue, std::move(reason)); }

const BsonElement& NullElement() {
  static const BsonObj* holder = new BsonObj(bson::BsonBuilder().AppendNull("").Obj());
  static const BsonElement e = holder->FirstElement();
  return e;
}

bool IsNaN(const BsonElement& e) {
  if (e.type() == BsonType::kDouble) return std::isnan(e.Double());
  if (e.type() == BsonType::kDecimal128) return e.Decimal().IsNaN();
  return false;
}

bool SameBracket(const BsonElement& a, const BsonElement& b) {
  return bson::CanonicalTypeRank(a.type()) == bson::CanonicalTypeRank(b.type());
}

bool IsNullish(const BsonElement& e) {
  return e.eoo() || e.type() == BsonType::kNull || e.type() == BsonType::kUndefined;
}

// The string order of the filter Matcher::Parse is parsing, for its duration: the predicates
// that compare values capture it when they are made (a filter's collation).
thread_local const bson::StringComparator* t_parse_strings = nullptr;

// Equality as filters define it: null matches null, undefined and missing (MongoDB 7.0), other
// values match within their type bracket (1 == 1.0 == NumberLong(1)); strings under `strings`.
bool FilterEquals(const BsonElement& e, const BsonElement& rhs,
                  const bson::StringComparator* strings) {
  if (rhs.type() == BsonType::kNull) return IsNullish(e);
  if (e.eoo() || !SameBracket(e, rhs)) return false;
  return bson::CompareElementValues(e, rhs, strings) == 0;
}

// ---- element predicates ----

// $geoWithin / $geoIntersects on the value (geo/geo_query.h).
class GeoPred final : public ElemPred {
 public:
  explicit GeoPred(geo::GeoQuery q) : q_(std::move(q)) {}
  bool Matches(const BsonElement& e) const override { return q_.Matches(e); }

 private:
  geo::GeoQuery q_;
};

class EqPred final : public ElemPred {
 public:
  explicit EqPred(BsonElement rhs) : rhs_(rhs), strings_(t_parse_strings) {}
  bool Matches(const BsonElement& e) const override { return FilterEquals(e, rhs_, strings_); }

 private:
  BsonElement rhs_;
  const bson::StringComparator* strings_;
};

enum class CmpOp { kLt, kLte, kGt, kGte };

class CmpPred final : public ElemPred {
 public:
  CmpPred(CmpOp op, BsonElement rhs) : op_(op), rhs_(rhs), strings_(t_parse_strings) {}
  bool Matches(const BsonElement& in) const override {
    BsonType rt = rhs_.type();
    // A date against a date (the usual time-range filter) and a double against a double (NaN
    // aside) compare as numbers: the answer of the general rules below, without their cost.
    if (in.type() == rt) {
      if (rt == BsonType::kDate) return Holds(Compare(in.DateMillis(), rhs_.DateMillis()));
      if (rt == BsonType::kDouble && !std::isnan(in.Double()) && !std::isnan(rhs_.Double())) {
        return Holds(Compare(in.Double(), rhs_.Double()));
      }
    }
    bool with_equal = op_ == CmpOp::kLte || op_ == CmpOp::kGte;
    bool any_type = rt == BsonType::kMinKey || rt == BsonType::kMaxKey;
    if (in.eoo() && !any_type) return with_equal && rt == BsonType::kNull;
    const BsonElement& e = in.eoo() ? NullElement() : in;
    if (!any_type && !SameBracket(e, rhs_)) return false;
    if (IsNaN(e) || IsNaN(rhs_)) return with_equal && IsNaN(e) && IsNaN(rhs_);
    return Holds(bson::CompareElementValues(e, rhs_, strings_));
  }

 private:
  template <typename T>
  static int Compare(T a, T b) {
    return a < b ? -1 : a > b ? 1 : 0;
  }
  // Whether the operator holds for a comparison result c (lhs <=> rhs).
  bool Holds(int c) const {
    switch (op_) {
      case CmpOp::kLt:
        return c < 0;
      case CmpOp::kLte:
        return c <= 0;
      case CmpOp::kGt:
        return c > 0;
      case CmpOp::kGte:
        return c >= 0;
    }
    return false;
  }

  CmpOp op_;
  BsonElement rhs_;
  const bson::StringComparator* strings_;
};

class RegexPred final : public ElemPred {
 public:
  RegexPred(std::string pattern, std::string options, Regex regex)
      : pattern_(std::move(pattern)), options_(std::move(options)), regex_(std::move(regex)) {}
  bool Matches(const BsonElement& e) const override {
    if (e.type() == BsonType::kRegex) {
      return e.RegexPattern() == pattern_ && e.RegexOptions() == options_;
    }
    if (e.type() != BsonType::kString && e.type() != BsonType::kSymbol) return false;
    return regex_.Matches(e.Str());
  }

 private:
  std::string pattern_;
  std::string options_;
  Regex regex_;
};

class InPred final : public ElemPred {
 public:
  InPred(std::vector<BsonElement> values, std::vector<ElemPredPtr> regexes)
      : values_(std::move(values)), regexes_(std::move(regexes)), strings_(t_parse_strings) {}
  bool Matches(const BsonElement& e) const override {
    for (const BsonElement& v : values_) {
      if (FilterEquals(e, v, strings_)) return true;
    }
    for (const ElemPredPtr& r : regexes_) {
      if (r->Matches(e)) return true;
    }
    return false;
  }

 private:
  std::vector<BsonElement> values_;
  std::vector<ElemPredPtr> regexes_;
  const bson::StringComparator* strings_;
};

class ExistsPred final : public ElemPred {
 public:
  bool Matches(const BsonElement& e) const override { return !e.eoo(); }
};

class ConstPred final : public ElemPred {
 public:
  explicit ConstPred(bool v) : v_(v) {}
  bool Matches(const BsonElement&) const override { return v_; }

 private:
  bool v_;
};

class TypePred final : public ElemPred {
 public:
  TypePred(std::vector<BsonType> types, bool any_number)
      : types_(std::move(types)), any_number_(any_number) {}
  bool Matches(const BsonElement& e) const override {
    if (e.eoo()) return false;
    if (any_number_ && e.IsNumber()) return true;
    return std::find(types_.begin(), types_.end(), e.type()) != types_.end();
  }

 private:
  std::vector<BsonType> types_;
  bool any_number_;
};

class ModPred final : public ElemPred {
 public:
  ModPred(int64_t divisor, int64_t remainder) : divisor_(divisor), remainder_(remainder) {}
  bool Matches(const BsonElement& e) const override {
    if (!e.IsNumber()) return false;
    double d = e.NumberDouble();
    if (std::isnan(d) || std::isinf(d)) return false;
    int64_t v = e.NumberLong();
    int64_t r = divisor_ == -1 ? 0 : v % divisor_;
    return r == remainder_;
  }

 private:
  int64_t divisor_;
  int64_t remainder_;
};

class SizePred final : public ElemPred {
 public:
  explicit SizePred(int64_t n) : n_(n) {}
  bool Matches(const BsonElement& e) const override {
    return e.type() == BsonType::kArray && e.Obj().NumFields() == n_;
  }
  bool ExpandLeafArrays() const override { return false; }

 private:
  int64_t n_;
};

enum class BitsOp { kAllSet, kAnySet, kAllClear, kAnyClear };

class BitsPred final : public ElemPred {
 public:
  BitsPred(BitsOp op, std::vector<uint32_t> positions)
      : op_(op), positions_(std::move(positions)) {}
  bool Matches(const BsonElement& e) const override {
    bool want_set = op_ == BitsOp::kAllSet || op_ == BitsOp::kAnySet;
    bool all = op_ == BitsOp::kAllSet || op_ == BitsOp::kAllClear;
    std::function<bool(uint32_t)> bit;
    int64_t v = 0;
    std::string_view bin;
    if (e.type() == BsonType::kBinData) {
      bin = e.BinData();
      bit = [&](uint32_t p) {
        return p / 8 < bin.size() && ((static_cast<uint8_t>(bin[p / 8]) >> (p % 8)) & 1) != 0;
      };
    } else if (e.IsNumber()) {
      double d = e.NumberDouble();
      if (e.type() == BsonType::kDouble || e.type() == BsonType::kDecimal128) {
        if (std::isnan(d) || d != std::trunc(d) || d < -9223372036854775808.0 ||
            d >= 9223372036854775808.0) {
          return false;
        }
        v = static_cast<int64_t>(d);
      } else {
        v = e.NumberLong();
      }
      bit = [&](uint32_t p) { return p >= 64 ? v < 0 : ((static_cast<uint64_t>(v) >> p) & 1); };
    } else {
      return false;
    }
    for (uint32_t p : positions_) {
      bool ok = bit(p) == want_set;
      if (all && !ok) return false;
      if (!all && ok) return true;
    }
    return all;
  }

 private:
  BitsOp op_;
  std::vector<uint32_t> positions_;
};

class ElemMatchObjectPred final : public ElemPred {
 public:
  explicit ElemMatchObjectPred(DocNodePtr sub) : sub_(std::move(sub)) {}
  bool Matches(const BsonElement& e) const override {
    if (e.type() != BsonType::kArray) return false;
    for (const BsonElement& item : e.Obj()) {
      if (item.IsObjectOrArray() && sub_->Matches(item.Obj())) return true;
    }
    return false;
  }
  bool ExpandLeafArrays() const override { return false; }
  bool MatchesArrayElement(const BsonElement& item) const override {
    return item.IsObjectOrArray() && sub_->Matches(item.Obj());
  }

 private:
  DocNodePtr sub_;
};

class ElemMatchValuePred final : public ElemPred {
 public:
  explicit ElemMatchValuePred(ElemPredPtr sub) : sub_(std::move(sub)) {}
  bool Matches(const BsonElement& e) const override {
    if (e.type() != BsonType::kArray) return false;
    for (const BsonElement& item : e.Obj()) {
      if (sub_->Matches(item)) return true;
    }
    return false;
  }
  bool ExpandLeafArrays() const override { return false; }
  bool MatchesArrayElement(const BsonElement& item) const override { return sub_->Matches(item); }

 private:
  ElemPredPtr sub_;
};

class AndPred final : public ElemPred {
 public:
  explicit AndPred(std::vector<ElemPredPtr> c) { children = std::move(c); }
  Kind kind() const override { return Kind::kAnd; }
  bool Matches(const BsonElement& e) const override {
    for (const ElemPredPtr& c : children) {
      if (!c->Matches(e)) return false;
    }
    return true;
  }
};

class NotPred final : public ElemPred {
 public:
  explicit NotPred(ElemPredPtr c) { children.push_back(std::move(c)); }
  Kind kind() const override { return Kind::kNot; }
  bool Matches(const BsonElement& e) const override { return !children[0]->Matches(e); }
};

// ---- document nodes ----

class PathNode final : public DocNode {
 public:
  PathNode(FieldPath path, ElemPredPtr pred) : path_(std::move(path)), pred_(std::move(pred)) {}
  std::optional<std::string_view> OnlyField() const override { return std::string_view(path_[0]); }
  bool MatchesFieldValue(const BsonElement& value) const override {
    if (path_.size() > 1) {  // a dotted path: walked in a document holding just the field
      bson::BsonBuilder b;
      if (!value.eoo()) b.AppendElementAs(value, path_[0]);
      return Matches(b.Obj());
    }
    // WalkPath's rule at the end of a path.
    if (value.type() != BsonType::kArray) return pred_->Matches(value);
    if (pred_->Matches(value)) return true;
    if (!pred_->ExpandLeafArrays()) return false;
    for (const BsonElement& item : value.Obj()) {
      if (pred_->Matches(item)) return true;
    }
    return false;
  }
  bool Matches(const BsonObj& doc) const override {
    return WalkPath(doc, path_, pred_->ExpandLeafArrays(),
                    [&](const PathValue& v) { return pred_->Matches(v.element); });
  }
  void FindArrayIndex(const BsonObj& doc, const FieldPath& array_path,
                      std::optional<size_t>* index) const override {
    if (path_.size() < array_path.size() ||
        !std::equal(array_path.begin(), array_path.end(), path_.begin())) {
      return;
    }
    // The array the positional path names, reached through objects (and numeric indexes).
    BsonElement cur;
    BsonObj obj = doc;
    for (const std::string& part : array_path) {
      cur = obj.GetField(part);
      if (!cur.IsObjectOrArray()) return;
      obj = cur.Obj();
    }
    if (cur.type() != BsonType::kArray) return;
    FieldPath rest(path_.begin() + static_cast<std::ptrdiff_t>(array_path.size()), path_.end());
    size_t i = 0;
    for (const BsonElement& item : cur.Obj()) {
      bool hit = false;
      if (rest.empty()) {
        hit = pred_->MatchesArrayElement(item);
      } else if (item.IsObjectOrArray()) {
        hit = WalkPath(item.Obj(), rest, pred_->ExpandLeafArrays(),
                       [&](const PathValue& v) { return pred_->Matches(v.element); });
      }
      if (hit) {
        *index = i;
        return;
      }
      ++i;
    }
  }

 private:
  FieldPath path_;
  ElemPredPtr pred_;
};

enum class LogicOp { kAnd, kOr, kNor };

class LogicNode final : public DocNode {
 public:
  LogicNode(LogicOp op, std::vector<DocNodePtr> children)
      : op_(op), children_(std::move(children)) {}
  LogicOp op() const { return op_; }
  const std::vector<DocNodePtr>& children() const { return children_; }
  std::optional<std::string_view> OnlyField() const override {
    std::optional<std::string_view> field;
    for (const DocNodePtr& c : children_) {
      std::optional<std::string_view> f = c->OnlyField();
      if (!f || (field && *field != *f)) return std::nullopt;
      field = f;
    }
    return field;
  }
  bool MatchesFieldValue(const BsonElement& value) const override {
    return Combine([&](const DocNode& c) { return c.MatchesFieldValue(value); });
  }
  bool Matches(const BsonObj& doc) const override {
    return Combine([&](const DocNode& c) { return c.Matches(doc); });
  }
  bool MatchesChecked(const BsonObj& doc, Status* error) const override {
    for (const DocNodePtr& c : children_) {
      bool m = c->MatchesChecked(doc, error);
      if (!error->ok()) return false;
      if (op_ == LogicOp::kAnd && !m) return false;
      if (op_ == LogicOp::kOr && m) return true;
      if (op_ == LogicOp::kNor && m) return false;
    }
    return op_ != LogicOp::kOr;
  }
  void FindArrayIndex(const BsonObj& doc, const FieldPath& array_path,
                      std::optional<size_t>* index) const override {
    if (op_ == LogicOp::kNor) return;
    for (const DocNodePtr& c : children_) {
      if (op_ == LogicOp::kOr) {
        if (c->Matches(doc)) {
          c->FindArrayIndex(doc, array_path, index);
          return;
        }
      } else {
        c->FindArrayIndex(doc, array_path, index);
      }
    }
  }

 private:
  // The children's answers (`matches` of each, in order, stopping once the answer is known)
  // combined by op_.
  template <typename F>
  bool Combine(const F& matches) const {
    for (const DocNodePtr& c : children_) {
      bool m = matches(*c);
      if (op_ == LogicOp::kAnd && !m) return false;
      if (op_ == LogicOp::kOr && m) return true;
      if (op_ == LogicOp::kNor && m) return false;
    }
    return op_ != LogicOp::kOr;
  }

  LogicOp op_;
  std::vector<DocNodePtr> children_;
};

class NotNode final : public DocNode {
 public:
  explicit NotNode(DocNodePtr child) : child_(std::move(child)) {}
  bool Matches(const BsonObj& doc) const override { return !child_->Matches(doc); }
  std::optional<std::string_view> OnlyField() const override { return child_->OnlyField(); }
  bool MatchesFieldValue(const BsonElement& value) const override {
    return !child_->MatchesFieldValue(value);
  }
  bool MatchesChecked(const BsonObj& doc, Status* error) const override {
    bool m = child_->MatchesChecked(doc, error);
    return error->ok() && !m;
  }

 private:
  DocNodePtr child_;
};

class ConstNode final : public DocNode {
 public:
  explicit ConstNode(bool v) : v_(v) {}
  bool Matches(const BsonObj&) const override { return v_; }

 private:
  bool v_;
};

// {path: {$_internalExprGt: v}} and its siblings: MongoDB's internal comparisons, which the
// time-series bucket-level predicates use on control.min/max (timeseries/bucket_filter.h).
// Canonical BSON order across types (no type bracketing); a path that meets an array matches
// (the comparison is left to the per-measurement filter); a missing path never matches.
class InternalExprNode final : public DocNode {
 public:
  enum class Op { kEq, kGt, kGte, kLt, kLte };
  InternalExprNode(FieldPath path, Op op, BsonElement value)
      : path_(std::move(path)), op_(op), value_(value) {}
  bool Matches(const BsonObj& doc) const override {
    BsonElement e = doc.GetField(path_[0]);
    for (size_t i = 1; i < path_.size(); ++i) {
      if (e.type() == BsonType::kArray) return true;
      if (e.type() != BsonType::kObject) return false;
      e = e.Obj().GetField(path_[i]);
    }
    if (e.eoo()) return false;
    if (e.type() == BsonType::kArray) return true;
    int c = bson::CompareElementValues(e, value_);
    switch (op_) {
      case Op::kEq:
        return c == 0;
      case Op::kGt:
        return c > 0;
      case Op::kGte:
        return c >= 0;
      case Op::kLt:
        return c < 0;
      case Op::kLte:
        return c <= 0;
    }
    return false;
  }

 private:
  FieldPath path_;
  Op op_;
  BsonElement value_;
};

bool IsInternalExprClause(const BsonElement& e) {
  return e.type() == BsonType::kObject && !e.Obj().IsEmpty() &&
         e.Obj().FirstElement().FieldName().starts_with("$_internalExpr");
}

StatusWith<DocNodePtr> ParseInternalExprClause(const BsonElement& e) {
  std::vector<DocNodePtr> kids;
  for (const BsonElement& op : e.Obj()) {
    std::string_view n = op.FieldName();
    using Op = InternalExprNode::Op;
    std::optional<Op> kind = n == "$_internalExprEq"    ? std::optional(Op::kEq)
                             : n == "$_internalExprGt"  ? std::optional(Op::kGt)
                             : n == "$_internalExprGte" ? std::optional(Op::kGte)
                             : n == "$_internalExprLt"  ? std::optional(Op::kLt)
                             : n == "$_internalExprLte" ? std::optional(Op::kLte)
                                                        : std::nullopt;
    if (!kind) return BadValue("unknown operator: " + std::string(n));
    if (op.type() == BsonType::kArray || op.type() == BsonType::kUndefined ||
        op.type() == BsonType::kRegex) {
      return BadValue(std::string(n) + " does not take an array, undefined or regex operand");
    }
    kids.push_back(std::make_shared<InternalExprNode>(SplitPath(e.FieldName()), *kind, op));
  }
  if (kids.size() == 1) return kids[0];
  return DocNodePtr(std::make_shared<LogicNode>(LogicOp::kAnd, std::move(kids)));
}

// {$expr: <aggregation expression>}, evaluated through the pipeline module's hook.
class ExprNode final : public DocNode {
 public:
  explicit ExprNode(CompiledExpressionPtr expr) : expr_(std::move(expr)) {}
  bool Matches(const BsonObj& doc) const override {
    StatusWith<bool> r = expr_->EvaluateTruthy(doc);
    return r.ok() && r.value();
  }
  bool MatchesChecked(const BsonObj& doc, Status* error) const override {
    StatusWith<bool> r = expr_->EvaluateTruthy(doc);
    if (!r.ok()) {
      *error = r.status();
      return false;
    }
    return r.value();
  }

 private:
  CompiledExpressionPtr expr_;
};

// Turns an operator tree for one path into document nodes: each leaf walks the path on its own,
// so {a: {$gt: 1, $lt: 5}} can be satisfied by different elements of an array `a`.
DocNodePtr Lower(const FieldPath& path, const ElemPredPtr& pred) {
  switch (pred->kind()) {
    case ElemPred::Kind::kLeaf:
      return std::make_shared<PathNode>(path, pred);
    case ElemPred::Kind::kNot:
      return std::make_shared<NotNode>(Lower(path, pred->children[0]));
    case ElemPred::Kind::kAnd: {
      if (pred->children.size() == 1) return Lower(path, pred->children[0]);
      std::vector<DocNodePtr> kids;
      for (const ElemPredPtr& c : pred->children) kids.push_back(Lower(path, c));
      return std::make_shared<LogicNode>(LogicOp::kAnd, std::move(kids));
    }
  }
  return nullptr;
}

// ---- parsing ----

}  // namespace

StatusWith<BsonType> TypeFromAlias(std::string_view s, bool* any_number) {
  static const std::pair<std::string_view, BsonType> kAliases[] = {
      {"double", BsonType::kDouble},
      {"string", BsonType::kString},
      {"object", BsonType::kObject},
      {"array", BsonType::kArray},
      {"binData", BsonType::kBinData},
      {"undefined", BsonType::kUndefined},
      {"objectId", BsonType::kObjectId},
      {"bool", BsonType::kBool},
      {"date", BsonType::kDate},
      {"null", BsonType::kNull},
      {"regex", BsonType::kRegex},
      {"dbPointer", BsonType::kDBPointer},
      {"javascript", BsonType::kCode},
      {"symbol", BsonType::kSymbol},
      {"javascriptWithScope", BsonType::kCodeWScope},
      {"int", BsonType::kInt32},
      {"timestamp", BsonType::kTimestamp},
      {"long", BsonType::kInt64},
      {"decimal", BsonType::kDecimal128},
      {"minKey", BsonType::kMinKey},
      {"maxKey", BsonType::kMaxKey},
  };
  if (s == "number") {
    *any_number = true;
    return BsonType::kEOO;
  }
  for (const auto& [name, t] : kAliases) {
    if (name == s) return t;
  }
  return BadValue("Unknown type name alias: " + std::string(s));
}

namespace {

Status AddTypeArg(const BsonElement& e, std::vector<BsonType>* types, bool* any_number) {
  if (e.type() == BsonType::kString) {
    HG_ASSIGN_OR_RETURN(BsonType t, TypeFromAlias(e.Str(), any_number));
    if (t != BsonType::kEOO) types->push_back(t);
    return Status::OK();
  }
  if (e.IsNumber()) {
    double d = e.NumberDouble();
    int64_t n = e.NumberLong();
    bool valid = d == static_cast<double>(n) && ((n >= 1 && n <= 19) || n == -1 || n == 127);
    if (!valid) return BadValue("Invalid numerical type code: " + std::to_string(d));
    types->push_back(static_cast<BsonType>(n));
    return Status::OK();
  }
  return BadValue("type must be represented as a number or a string");
}

StatusWith<ElemPredPtr> ParseType(const BsonElement& arg) {
  std::vector<BsonType> types;
  bool any_number = false;
  if (arg.type() == BsonType::kArray) {
    for (const BsonElement& e : arg.Obj()) HG_RETURN_IF_ERROR(AddTypeArg(e, &types, &any_number));
    if (types.empty() && !any_number) return BadValue("$type must match at least one type");
  } else {
    HG_RETURN_IF_ERROR(AddTypeArg(arg, &types, &any_number));
  }
  return ElemPredPtr(std::make_shared<TypePred>(std::move(types), any_number));
}

// A whole number that fits int64 (doubles and decimals must have no fractional part).
bool AsWholeNumber(const BsonElement& e, int64_t* out) {
  if (!e.IsNumber()) return false;
  double d = e.NumberDouble();
  if (std::isnan(d) || d != std::trunc(d) || d < -9223372036854775808.0 ||
      d >= 9223372036854775808.0) {
    return false;
  }
  *out = (e.type() == BsonType::kInt32 || e.type() == BsonType::kInt64) ? e.NumberLong()
                                                                        : static_cast<int64_t>(d);
  return true;
}

StatusWith<ElemPredPtr> ParseBits(std::string_view name, BitsOp op, const BsonElement& arg) {
  std::vector<uint32_t> positions;
  if (arg.IsNumber()) {
    int64_t mask;
    if (!AsWholeNumber(arg, &mask)) {
      return BadValue(std::string(name) + " takes an integral bitmask that fits in 64 bits");
    }
    if (mask < 0) return BadValue(std::string(name) + " takes a non-negative bitmask");
    for (uint32_t p = 0; p < 64; ++p) {
      if ((static_cast<uint64_t>(mask) >> p) & 1) positions.push_back(p);
    }
  } else if (arg.type() == BsonType::kArray) {
    for (const BsonElement& e : arg.Obj()) {
      int64_t p;
      if (!AsWholeNumber(e, &p) || p < 0 || p > INT32_MAX) {
        return BadValue(std::string(name) +
                        " bit positions must be non-negative integers that fit in 32 bits");
      }
      positions.push_back(static_cast<uint32_t>(p));
    }
  } else if (arg.type() == BsonType::kBinData) {
    std::string_view bin = arg.BinData();
    for (uint32_t p = 0; p < bin.size() * 8; ++p) {
      if ((static_cast<uint8_t>(bin[p / 8]) >> (p % 8)) & 1) positions.push_back(p);
    }
  } else {
    return BadValue(std::string(name) + " takes an Array, a number, or a BinData");
  }
  return ElemPredPtr(std::make_shared<BitsPred>(op, std::move(positions)));
}

StatusWith<ElemPredPtr> ParseMod(const BsonElement& arg) {
  if (arg.type() != BsonType::kArray) return BadValue("malformed mod, needs to be an array");
  std::vector<BsonElement> parts;
  for (const BsonElement& e : arg.Obj()) parts.push_back(e);
  if (parts.size() < 2) return BadValue("malformed mod, not enough elements");
  if (parts.size() > 2) return BadValue("malformed mod, too many elements");
  if (!parts[0].IsNumber()) return BadValue("malformed mod, divisor not a number");
  if (!parts[1].IsNumber()) return BadValue("malformed mod, remainder not a number");
  for (const BsonElement& p : parts) {
    double d = p.NumberDouble();
    if (std::isnan(d) || std::isinf(d)) return BadValue("malformed mod, value is not finite");
  }
  int64_t divisor = parts[0].NumberLong();
  if (divisor == 0) return BadValue("divisor cannot be 0");
  return ElemPredPtr(std::make_shared<ModPred>(divisor, parts[1].NumberLong()));
}

StatusWith<ElemPredPtr> ParseSize(const BsonElement& arg) {
  if (!arg.IsNumber()) return BadValue("$size needs a number");
  int64_t n;
  if (!AsWholeNumber(arg, &n) || n < 0) {
    return BadValue("$size must be a non-negative whole number");
  }
  return ElemPredPtr(std::make_shared<SizePred>(n));
}

bool IsRegexArg(const BsonElement& e) { return e.type() == BsonType::kRegex; }

StatusWith<ElemPredPtr> RegexFromElement(const BsonElement& e) {
  return MakeRegexPred(e.RegexPattern(), e.RegexOptions());
}

StatusWith<ElemPredPtr> ParseIn(const BsonElement& arg, std::string_view name) {
  if (arg.type() != BsonType::kArray) return BadValue(std::string(name) + " needs an array");
  std::vector<BsonElement> values;
  std::vector<ElemPredPtr> regexes;
  for (const BsonElement& e : arg.Obj()) {
    if (IsRegexArg(e)) {
      HG_ASSIGN_OR_RETURN(ElemPredPtr r, RegexFromElement(e));
      regexes.push_back(std::move(r));
      continue;
    }
    if (e.type() == BsonType::kObject && !e.Obj().IsEmpty() &&
        e.Obj().FirstElement().FieldName().starts_with("$")) {
      return BadValue("cannot nest $ under " + std::string(name));
    }
    values.push_back(e);
  }
  return ElemPredPtr(std::make_shared<InPred>(std::move(values), std::move(regexes)));
}

StatusWith<ElemPredPtr> ParseElemMatch(const BsonElement& arg, int depth) {
  if (arg.type() != BsonType::kObject) return BadValue("$elemMatch needs an Object");
  BsonObj sub = arg.Obj();
  if (IsValueCondition(sub)) {
    HG_ASSIGN_OR_RETURN(ElemPredPtr p, ParseOperatorObject(sub, depth + 1));
    return ElemPredPtr(std::make_shared<ElemMatchValuePred>(std::move(p)));
  }
  HG_ASSIGN_OR_RETURN(DocNodePtr node, ParseFilterNode(sub, depth + 1));
  return ElemPredPtr(std::make_shared<ElemMatchObjectPred>(std::move(node)));
}

StatusWith<ElemPredPtr> ParseAll(const BsonElement& arg, int depth) {
  if (arg.type() != BsonType::kArray) return BadValue("$all needs an array");
  std::vector<ElemPredPtr> parts;
  for (const BsonElement& e : arg.Obj()) {
    if (e.type() == BsonType::kObject && !e.Obj().IsEmpty() &&
        e.Obj().FirstElement().FieldName() == "$elemMatch") {
      HG_ASSIGN_OR_RETURN(ElemPredPtr p, ParseElemMatch(e.Obj().FirstElement(), depth));
      parts.push_back(std::move(p));
    } else if (e.type() == BsonType::kObject && !e.Obj().IsEmpty() &&
               e.Obj().FirstElement().FieldName().starts_with("$")) {
      return BadValue("no $ expressions in $all");
    } else if (IsRegexArg(e)) {
      HG_ASSIGN_OR_RETURN(ElemPredPtr p, RegexFromElement(e));
      parts.push_back(std::move(p));
    } else {
      parts.push_back(std::make_shared<EqPred>(e));
    }
  }
  // {$all: []} matches nothing.
  if (parts.empty()) return ElemPredPtr(std::make_shared<ConstPred>(false));
  return ElemPredPtr(std::make_shared<AndPred>(std::move(parts)));
}

StatusWith<ElemPredPtr> ParseNot(const BsonElement& arg, int depth) {
  if (IsRegexArg(arg)) {
    HG_ASSIGN_OR_RETURN(ElemPredPtr r, RegexFromElement(arg));
    return ElemPredPtr(std::make_shared<NotPred>(std::move(r)));
  }
  if (arg.type() != BsonType::kObject) return BadValue("$not needs a regex or a document");
  if (arg.Obj().IsEmpty()) return BadValue("$not cannot be empty");
  HG_ASSIGN_OR_RETURN(ElemPredPtr inner, ParseOperatorObject(arg.Obj(), depth + 1));
  return ElemPredPtr(std::make_shared<NotPred>(std::move(inner)));
}

bool IsTopLevelOperator(std::string_view name) {
  return name == "$and" || name == "$or" || name == "$nor" || name == "$where" || name == "$expr" ||
         name == "$comment" || name == "$jsonSchema" || name == "$text" || name == "$alwaysTrue" ||
         name == "$alwaysFalse";
}

bool IsDbRefField(std::string_view name) {
  return name == "$ref" || name == "$id" || name == "$db";
}

// Parses the value of a path clause: {path: value}, {path: /re/} or {path: {$op: ...}}.
StatusWith<ElemPredPtr> ParsePathValue(const BsonElement& e, int depth) {
  if (IsRegexArg(e)) return RegexFromElement(e);
  if (e.type() == BsonType::kObject && !e.Obj().IsEmpty()) {
    std::string_view first = e.Obj().FirstElement().FieldName();
    if (first.starts_with("$") && !IsDbRefField(first)) {
      return ParseOperatorObject(e.Obj(), depth + 1);
    }
  }
  return ElemPredPtr(std::make_shared<EqPred>(e));
}

StatusWith<DocNodePtr> ParseLogical(LogicOp op, const BsonElement& arg, int depth,
                                    const FilterScope& scope) {
  if (arg.type() != BsonType::kArray || arg.Obj().IsEmpty()) {
    return BadValue("$and/$or/$nor must be a nonempty array");
  }
  std::vector<DocNodePtr> kids;
  for (const BsonElement& e : arg.Obj()) {
    if (e.type() != BsonType::kObject)
      return BadValue("$or/$and/$nor entries need to be full objects");
    HG_ASSIGN_OR_RETURN(DocNodePtr k, ParseFilterNode(e.Obj(), depth + 1, scope));
    kids.push_back(std::move(k));
  }
  return DocNodePtr(std::make_shared<LogicNode>(op, std::move(kids)));
}

}  // namespace

StatusWith<ElemPredPtr> MakeRegexPred(std::string_view pattern, std::string_view options) {
  HG_ASSIGN_OR_RETURN(Regex regex, Regex::Compile(pattern, options));
  return ElemPredPtr(
      std::make_shared<RegexPred>(std::string(pattern), std::string(options), std::move(regex)));
}

bool IsValueCondition(const BsonObj& obj) {
  if (obj.IsEmpty()) return false;
  std::string_view first = obj.FirstElement().FieldName();
  return first.starts_with("$") && !IsTopLevelOperator(first) && !IsDbRefField(first);
}

StatusWith<ElemPredPtr> ParseOperatorObject(const BsonObj& ops, int depth) {
  if (depth > kMaxDepth) return BadValue("exceeded depth limit of 100 when parsing the filter");
  std::vector<ElemPredPtr> parts;
  BsonElement regex_arg, options_arg;
  for (const BsonElement& e : ops) {
    std::string_view op = e.FieldName();
    ElemPredPtr p;
    if (op == "$eq") {
      p = std::make_shared<EqPred>(e);
    } else if (op == "$ne") {
      if (IsRegexArg(e)) return BadValue("Can't have regex as arg to $ne.");
      p = std::make_shared<NotPred>(std::make_shared<EqPred>(e));
    } else if (op == "$gt" || op == "$gte" || op == "$lt" || op == "$lte") {
      if (IsRegexArg(e))
        return BadValue("Can't have RegEx as arg to predicate over " + std::string(op));
      if (e.type() == BsonType::kUndefined)
        return BadValue(std::string(op) + " cannot compare to undefined");
      CmpOp cmp = op == "$gt"    ? CmpOp::kGt
                  : op == "$gte" ? CmpOp::kGte
                  : op == "$lt"  ? CmpOp::kLt
                                 : CmpOp::kLte;
      p = std::make_shared<CmpPred>(cmp, e);
    } else if (op == "$in") {
      HG_ASSIGN_OR_RETURN(p, ParseIn(e, "$in"));
    } else if (op == "$nin") {
      HG_ASSIGN_OR_RETURN(ElemPredPtr in, ParseIn(e, "$nin"));
      p = std::make_shared<NotPred>(std::move(in));
    } else if (op == "$exists") {
      p = std::make_shared<ExistsPred>();
      if (!e.Truthy()) p = std::make_shared<NotPred>(std::move(p));
    } else if (op == "$type") {
      HG_ASSIGN_OR_RETURN(p, ParseType(e));
    } else if (op == "$regex") {
      if (e.type() != BsonType::kString && e.type() != BsonType::kRegex) {
        return BadValue("$regex has to be a string");
      }
      regex_arg = e;
      continue;
    } else if (op == "$options") {
      if (e.type() != BsonType::kString) return BadValue("$options has to be a string");
      options_arg = e;
      continue;
    } else if (op == "$mod") {
      HG_ASSIGN_OR_RETURN(p, ParseMod(e));
    } else if (op == "$size") {
      HG_ASSIGN_OR_RETURN(p, ParseSize(e));
    } else if (op == "$all") {
      HG_ASSIGN_OR_RETURN(p, ParseAll(e, depth));
    } else if (op == "$elemMatch") {
      HG_ASSIGN_OR_RETURN(p, ParseElemMatch(e, depth));
    } else if (op == "$not") {
      HG_ASSIGN_OR_RETURN(p, ParseNot(e, depth));
    } else if (op == "$bitsAllSet") {
      HG_ASSIGN_OR_RETURN(p, ParseBits(op, BitsOp::kAllSet, e));
    } else if (op == "$bitsAnySet") {
      HG_ASSIGN_OR_RETURN(p, ParseBits(op, BitsOp::kAnySet, e));
    } else if (op == "$bitsAllClear") {
      HG_ASSIGN_OR_RETURN(p, ParseBits(op, BitsOp::kAllClear, e));
    } else if (op == "$bitsAnyClear") {
      HG_ASSIGN_OR_RETURN(p, ParseBits(op, BitsOp::kAnyClear, e));
    } else if (op == "$geoWithin" || op == "$within" || op == "$geoIntersects") {
      auto q = op == "$geoIntersects" ? geo::GeoQuery::ParseIntersects(e)
                                      : geo::GeoQuery::ParseWithin(e);
      if (!q.ok()) return q.status();
      p = std::make_shared<GeoPred>(std::move(q).value());
    } else if (op == "$near" || op == "$nearSphere" || op == "$geoNear") {
      // Only find and count read by distance (exec/near_read.h takes the clause out first).
      return Status(ErrorCode::kLocation5626500,
                    "$geoNear, $near, and $nearSphere are not allowed in this context");
    } else if (op == "$maxDistance" || op == "$minDistance") {
      return BadValue(std::string(op) + " is only valid with $near or $nearSphere");
    } else {
      return BadValue("unknown operator: " + std::string(op));
    }
    parts.push_back(std::move(p));
  }
  if (!options_arg.eoo() && regex_arg.eoo()) return BadValue("$options needs a $regex");
  if (!regex_arg.eoo()) {
    std::string_view pattern, options;
    if (regex_arg.type() == BsonType::kRegex) {
      pattern = regex_arg.RegexPattern();
      options = regex_arg.RegexOptions();
      if (!options_arg.eoo() && !options.empty()) {
        return BadValue("options set in both $regex and $options");
      }
    } else {
      pattern = regex_arg.Str();
    }
    if (!options_arg.eoo()) options = options_arg.Str();
    HG_ASSIGN_OR_RETURN(ElemPredPtr r, MakeRegexPred(pattern, options));
    parts.push_back(std::move(r));
  }
  if (parts.size() == 1) return parts[0];
  return ElemPredPtr(std::make_shared<AndPred>(std::move(parts)));
}

namespace {

// The clauses of `filter`, one per top-level element except $comment, in order.
StatusWith<std::vector<DocNodePtr>> ParseFilterClauses(const BsonObj& filter, int depth,
                                                       const FilterScope& scope) {
  if (depth > kMaxDepth) return BadValue("exceeded depth limit of 100 when parsing the filter");
  std::vector<DocNodePtr> clauses;
  for (const BsonElement& e : filter) {
    std::string_view name = e.FieldName();
    if (name.starts_with("$")) {
      if (name == "$and" || name == "$or" || name == "$nor") {
        LogicOp op = name == "$and" ? LogicOp::kAnd : name == "$or" ? LogicOp::kOr : LogicOp::kNor;
        HG_ASSIGN_OR_RETURN(DocNodePtr n, ParseLogical(op, e, depth, scope));
        clauses.push_back(std::move(n));
      } else if (name == "$comment") {
        continue;
      } else if (name == "$alwaysTrue" || name == "$alwaysFalse") {
        clauses.push_back(std::make_shared<ConstNode>(name == "$alwaysTrue"));
      } else if (name == "$expr" || name == "$jsonSchema" || name == "$where") {
        if (!scope.top_level) {
          return BadValue(std::string(name) + " can only be applied to the top-level document");
        }
        if (name == "$where") {
          // What mongod started with --noscripting answers (BadValue).
          return BadValue(
              "no globalScriptEngine in $where parsing: $where needs server-side "
              "JavaScript, which this server does not have");
        }
        if (name == "$jsonSchema") {
          HG_ASSIGN_OR_RETURN(DocNodePtr n, ParseJsonSchema(e));
          clauses.push_back(std::move(n));
          continue;
        }
        const ExpressionHooks& hooks = GetExpressionHooks();
        if (hooks.parse_expression == nullptr) return MissingExpressionHook("$expr");
        HG_ASSIGN_OR_RETURN(CompiledExpressionPtr x, hooks.parse_expression(e, scope.expr_ctx));
        clauses.push_back(std::make_shared<ExprNode>(std::move(x)));
      } else if (name == "$text") {
        return BadValue("$text is not supported yet");
      } else {
        return BadValue("unknown top level operator: " + std::string(name));
      }
      continue;
    }
    if (IsInternalExprClause(e)) {
      HG_ASSIGN_OR_RETURN(DocNodePtr n, ParseInternalExprClause(e));
      clauses.push_back(std::move(n));
      continue;
    }
    HG_ASSIGN_OR_RETURN(ElemPredPtr pred, ParsePathValue(e, depth));
    clauses.push_back(Lower(SplitPath(name), pred));
  }
  return clauses;
}

// The AND of `clauses`.
DocNodePtr AndOf(std::vector<DocNodePtr> clauses) {
  if (clauses.size() == 1) return clauses[0];
  return std::make_shared<LogicNode>(LogicOp::kAnd, std::move(clauses));
}

}  // namespace

StatusWith<DocNodePtr> ParseFilterNode(const BsonObj& filter, int depth, const FilterScope& scope) {
  HG_ASSIGN_OR_RETURN(std::vector<DocNodePtr> clauses, ParseFilterClauses(filter, depth, scope));
  return AndOf(std::move(clauses));
}

// ---- Matcher / ElementMatcher ----

struct Matcher::State {
  BsonObj filter;                                          // owns the bytes the tree borrows
  std::shared_ptr<const bson::StringComparator> collator;  // the predicates borrow it
  DocNodePtr root;
  // The top-level clauses whose AND is `root`, one per element of `filter` except $comment.
  std::vector<DocNodePtr> clauses;
  bool everything = false;
};

StatusWith<Matcher> Matcher::Parse(const BsonObj& filter) {
  return Parse(filter, ExpressionContext::Now());
}

StatusWith<Matcher> Matcher::Parse(const BsonObj& filter, const ExpressionContext& ctx) {
  auto state = std::make_shared<State>();
  state->filter = filter.Owned();
  state->collator = ctx.collator;
  FilterScope scope;
  scope.top_level = true;
  scope.expr_ctx = ctx;
  const bson::StringComparator* outer = t_parse_strings;
  t_parse_strings = ctx.collator.get();
  auto clauses = ParseFilterClauses(state->filter, 0, scope);
  t_parse_strings = outer;
  HG_ASSIGN_OR_RETURN(state->clauses, std::move(clauses));
  state->root = AndOf(state->clauses);
  state->everything = state->clauses.empty();
  Matcher m;
  m.state_ = std::move(state);
  return m;
}

Matcher Matcher::Without(const std::function<bool(const BsonElement&)>& drop) const {
  auto state = std::make_shared<State>();
  state->filter = state_->filter;
  state->collator = state_->collator;
  size_t i = 0;
  for (const BsonElement& e : state_->filter) {
    if (e.FieldName() == "$comment") continue;
    if (!drop(e)) state->clauses.push_back(state_->clauses[i]);
    ++i;
  }
  state->root = AndOf(state->clauses);
  state->everything = state->clauses.empty();
  Matcher m;
  m.state_ = std::move(state);
  return m;
}

bool Matcher::Matches(const BsonObj& doc) const { return state_->root->Matches(doc); }

StatusWith<bool> Matcher::Evaluate(const BsonObj& doc) const {
  Status error = Status::OK();
  bool m = state_->root->MatchesChecked(doc, &error);
  if (!error.ok()) return error;
  return m;
}

std::optional<size_t> Matcher::MatchedArrayIndex(const BsonObj& doc,
                                                 const FieldPath& array_path) const {
  std::optional<size_t> index;
  state_->root->FindArrayIndex(doc, array_path, &index);
  return index;
}

bool Matcher::MatchesEverything() const { return state_->everything; }

namespace {

// Calls `add` on the conjuncts of `node`; false when one of them reads more than one top-level
// field (or a dotted path, or the whole document).
bool CollectFieldConjuncts(const DocNode& node, const std::function<void(DocNodePtr)>& add,
                           const DocNodePtr& self) {
  const auto* logic = dynamic_cast<const LogicNode*>(&node);
  if (logic != nullptr && logic->op() == LogicOp::kAnd) {
    for (const DocNodePtr& c : logic->children()) {
      if (!CollectFieldConjuncts(*c, add, c)) return false;
    }
    return true;
  }
  if (!node.OnlyField()) return false;
  add(self);
  return true;
}

}  // namespace

std::optional<std::vector<FieldPredicate>> Matcher::FieldConjuncts() const {
  std::vector<FieldPredicate> out;
  auto add = [&](DocNodePtr node) {
    FieldPredicate p;
    p.field_ = std::string(*node->OnlyField());
    p.node_ = std::move(node);
    p.owner_ = state_;
    out.push_back(std::move(p));
  };
  if (!CollectFieldConjuncts(*state_->root, add, state_->root)) return std::nullopt;
  return out;
}

bool FieldPredicate::Matches(const BsonElement& value) const {
  return node_->MatchesFieldValue(value);
}

struct ElementMatcher::State {
  BsonObj condition;
  std::shared_ptr<const bson::StringComparator> collator;  // the predicates borrow it
  ElemPredPtr value_pred;                                  // operator form
  DocNodePtr doc_pred;                                     // filter form
};

StatusWith<ElementMatcher> ElementMatcher::Parse(
    const BsonObj& condition, std::shared_ptr<const bson::StringComparator> collator) {
  auto state = std::make_shared<State>();
  state->condition = condition.Owned();
  state->collator = std::move(collator);
  const bson::StringComparator* outer = t_parse_strings;
  t_parse_strings = state->collator.get();
  Status st = Status::OK();
  if (IsValueCondition(state->condition)) {
    auto pred = ParseOperatorObject(state->condition, 0);
    if (pred.ok()) state->value_pred = std::move(pred).value();
    st = pred.status();
  } else {
    auto node = ParseFilterNode(state->condition, 0);
    if (node.ok()) state->doc_pred = std::move(node).value();
    st = node.status();
  }
  t_parse_strings = outer;
  HG_RETURN_IF_ERROR(st);
  ElementMatcher m;
  m.state_ = std::move(state);
  return m;
}

bool ElementMatcher::Matches(const BsonElement& value) const {
  if (state_->value_pred) return state_->value_pred->Matches(value);
  return value.IsObjectOrArray() && state_->doc_pred->Matches(value.Obj());
}

bool IsEqualityScalar(const bson::BsonElement& v) {
  switch (v.type()) {
    case bson::BsonType::kObject:
    case bson::BsonType::kArray:
    case bson::BsonType::kNull:
    case bson::BsonType::kUndefined:
    case bson::BsonType::kRegex:
    case bson::BsonType::kEOO:
      return false;
    default:
      return true;
  }
}

}  // namespace hourglass::query
