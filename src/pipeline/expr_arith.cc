// Arithmetic operators. Numeric promotion follows MongoDB: int op int stays int unless the
// result overflows (then long), long overflow falls back to double, any double makes a double,
// any decimal makes a decimal, computed in decimal128 (bson/decimal128.h) with the other operands
// coerced as MongoDB does (ints exactly, doubles to 15 digits). Null or missing operands give
// null.
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "bson/decimal128.h"
#include "pipeline/expression_internal.h"

namespace hourglass::pipeline::internal {
namespace {

using bson::BsonType;
using bson::Decimal128;
namespace dec = bson::decimal;

std::string NumStr(const Value& v) { return v.ToString(); }

// Sums or multiplies numbers with MongoDB's promotion rules.
class NumberAccumulator {
 public:
  void Add(const Value& v, bool multiply) {
    NumKind k = KindOf(v);
    if (k == NumKind::kDecimal && kind_ != NumKind::kDecimal) {
      // From the first decimal on, the total is a decimal: what came before converts (an exact
      // integer total exactly, a double total to 15 digits).
      dec_ = exact_ && kind_ <= NumKind::kLong ? dec::FromInt64(lng_) : dec::FromDouble(dbl_);
    }
    if (k > kind_) kind_ = k;
    if (kind_ == NumKind::kDecimal) {
      dec_ = multiply ? dec::Multiply(dec_, ToDecimal(v)) : dec::Add(dec_, ToDecimal(v));
      return;
    }
    double d = v.NumberDouble();
    dbl_ = multiply ? dbl_ * d : dbl_ + d;
    if (exact_ && (k == NumKind::kInt || k == NumKind::kLong)) {
      int64_t x = v.NumberLong();
      int64_t r;
      bool overflow =
          multiply ? __builtin_mul_overflow(lng_, x, &r) : __builtin_add_overflow(lng_, x, &r);
      if (overflow) {
        exact_ = false;
      } else {
        lng_ = r;
      }
    } else {
      exact_ = false;
    }
  }
  void Init(bool multiply) {
    dbl_ = multiply ? 1 : 0;
    lng_ = multiply ? 1 : 0;
  }
  Value Result() const {
    if (kind_ == NumKind::kDecimal) return Value::Decimal(dec_);
    if (kind_ == NumKind::kDouble) return Value::Double(dbl_);
    if (!exact_) return Value::Double(dbl_);
    if (kind_ == NumKind::kInt) return Value::IntOrLong(lng_);
    return Value::Long(lng_);
  }
  double dbl() const { return dbl_; }

 private:
  NumKind kind_ = NumKind::kInt;
  bool exact_ = true;
  int64_t lng_ = 0;
  double dbl_ = 0;
  Decimal128 dec_{};
};

StatusWith<Value> Add(std::string_view, const std::vector<Value>& args) {
  NumberAccumulator acc;
  acc.Init(false);
  bool have_date = false;
  int64_t date_millis = 0;
  for (const auto& v : args) {
    if (v.nullish()) return Value::Null();
    if (v.numeric()) {
      acc.Add(v, false);
    } else if (v.IsDate()) {
      if (have_date) return PipelineError(16612, "only one date allowed in an $add expression");
      have_date = true;
      date_millis = v.DateMillis();
    } else {
      return PipelineError(16554, "$add only supports numeric or date types, not " + TypeNameOf(v));
    }
  }
  if (have_date) {
    Value n = acc.Result();
    const Status overflow(ErrorCode::kOverflow, "date overflow in $add");
    int64_t delta = 0;
    if (n.type() == BsonType::kDouble) {
      const double d = std::round(n.NumberDouble());
      // Outside [-2^63, 2^63) (or NaN) the millisecond count is not a 64-bit integer.
      if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return overflow;
      delta = static_cast<int64_t>(d);
    } else if (n.type() == BsonType::kDecimal128) {
      if (!dec::ToInt64(n.element().Decimal(), dec::Round::kHalfEven, &delta)) return overflow;
    } else {
      delta = n.NumberLong();
    }
    int64_t sum = 0;
    if (__builtin_add_overflow(date_millis, delta, &sum)) return overflow;
    return Value::Date(sum);
  }
  return acc.Result();
}

StatusWith<Value> Multiply(std::string_view, const std::vector<Value>& args) {
  NumberAccumulator acc;
  acc.Init(true);
  for (const auto& v : args) {
    if (v.nullish()) return Value::Null();
    if (!v.numeric()) {
      return PipelineError(16555, "$multiply only supports numeric types, not " + TypeNameOf(v));
    }
    acc.Add(v, true);
  }
  return acc.Result();
}

StatusWith<Value> Subtract(std::string_view, const std::vector<Value>& args) {
  const Value& a = args[0];
  const Value& b = args[1];
  if (a.nullish() || b.nullish()) return Value::Null();
  if (a.numeric() && b.numeric()) {
    NumKind k = std::max(KindOf(a), KindOf(b));
    if (k <= NumKind::kLong) {
      int64_t r;
      if (!__builtin_sub_overflow(a.NumberLong(), b.NumberLong(), &r)) {
        return k == NumKind::kInt ? Value::IntOrLong(r) : Value::Long(r);
      }
      return Value::Double(a.NumberDouble() - b.NumberDouble());
    }
    if (k == NumKind::kDecimal) return Value::Decimal(dec::Subtract(ToDecimal(a), ToDecimal(b)));
    return Value::Double(a.NumberDouble() - b.NumberDouble());
  }
  if (a.IsDate() && b.IsDate()) {
    // Two's complement, as 64-bit millisecond counts subtract: no overflow trap.
    return Value::Long(static_cast<int64_t>(static_cast<uint64_t>(a.DateMillis()) -
                                            static_cast<uint64_t>(b.DateMillis())));
  }
  if (a.IsDate() && b.numeric()) {
    const Status overflow(ErrorCode::kOverflow, "date overflow in $subtract");
    int64_t delta = 0;
    if (KindOf(b) <= NumKind::kLong) {
      delta = b.NumberLong();
    } else {
      const double d = std::round(b.NumberDouble());
      if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return overflow;
      delta = static_cast<int64_t>(d);
    }
    int64_t r = 0;
    if (__builtin_sub_overflow(a.DateMillis(), delta, &r)) return overflow;
    return Value::Date(r);
  }
  return PipelineError(16556, "cant $subtract a " + TypeNameOf(b) + " from a " + TypeNameOf(a));
}

StatusWith<Value> Divide(std::string_view, const std::vector<Value>& args) {
  const Value& a = args[0];
  const Value& b = args[1];
  if (a.nullish() || b.nullish()) return Value::Null();
  if (!a.numeric() || !b.numeric()) {
    return PipelineError(16609, "$divide only supports numeric types, not " + TypeNameOf(a) +
                                    " and " + TypeNameOf(b));
  }
  if (KindOf(a) == NumKind::kDecimal || KindOf(b) == NumKind::kDecimal) {
    Decimal128 divisor = ToDecimal(b);
    if (dec::IsZero(divisor)) return PipelineError(16608, "can't $divide by zero");
    return Value::Decimal(dec::Divide(ToDecimal(a), divisor));
  }
  if (b.NumberDouble() == 0) return PipelineError(16608, "can't $divide by zero");
  return Value::Double(a.NumberDouble() / b.NumberDouble());
}

StatusWith<Value> Mod(std::string_view, const std::vector<Value>& args) {
  const Value& a = args[0];
  const Value& b = args[1];
  if (a.nullish() || b.nullish()) return Value::Null();
  if (!a.numeric() || !b.numeric()) {
    return PipelineError(
        16611, "$mod only supports numeric types, not " + TypeNameOf(a) + " and " + TypeNameOf(b));
  }
  NumKind k = std::max(KindOf(a), KindOf(b));
  if (k <= NumKind::kLong) {
    int64_t y = b.NumberLong();
    if (y == 0) return PipelineError(16610, "can't $mod by zero");
    int64_t x = a.NumberLong();
    int64_t r = (y == -1) ? 0 : x % y;
    return k == NumKind::kInt ? Value::Int(static_cast<int32_t>(r)) : Value::Long(r);
  }
  if (k == NumKind::kDecimal) {
    Decimal128 divisor = ToDecimal(b);
    if (dec::IsZero(divisor)) return PipelineError(16610, "can't $mod by zero");
    return Value::Decimal(dec::Modulo(ToDecimal(a), divisor));
  }
  if (b.NumberDouble() == 0) return PipelineError(16610, "can't $mod by zero");
  return Value::Double(std::fmod(a.NumberDouble(), b.NumberDouble()));
}

// Shared checks for the one-argument math operators: null passes through as null.
StatusWith<Value> UnaryNumeric(std::string_view op, const Value& v) {
  if (v.nullish()) return Value::Null();
  if (!v.numeric()) {
    return PipelineError(28765,
                         std::string(op) + " only supports numeric types, not " + TypeNameOf(v));
  }
  return v;
}

StatusWith<Value> Abs(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(Value v, UnaryNumeric(op, args[0]));
  if (v.nullish()) return v;
  switch (KindOf(v)) {
    case NumKind::kInt:
      return Value::IntOrLong(std::llabs(v.NumberLong()));
    case NumKind::kLong:
      if (v.NumberLong() == std::numeric_limits<int64_t>::min()) {
        return PipelineError(28680, "can't take $abs of long long min");
      }
      return Value::Long(std::llabs(v.NumberLong()));
    case NumKind::kDecimal:
      return Value::Decimal(dec::Abs(v.element().Decimal()));
    default:
      return Value::Double(std::fabs(v.NumberDouble()));
  }
}

template <double (*F)(double), dec::Round kMode>
StatusWith<Value> Rounding(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(Value v, UnaryNumeric(op, args[0]));
  if (v.nullish() || KindOf(v) <= NumKind::kLong) return v;
  if (KindOf(v) == NumKind::kDecimal) {
    return Value::Decimal(dec::RoundToPlace(v.element().Decimal(), 0, kMode));
  }
  return Value::Double(F(v.NumberDouble()));
}

// A decimal argument is computed in decimal when it is in the function's domain (NaN included);
// out of the domain it fails with the double's error.
template <double (*F)(double), Decimal128 (*G)(const Decimal128&)>
StatusWith<Value> DoubleMath(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(Value v, UnaryNumeric(op, args[0]));
  if (v.nullish()) return v;
  if (KindOf(v) == NumKind::kDecimal) {
    Decimal128 d = v.element().Decimal();
    const bool positive = !dec::IsNegative(d) && !dec::IsZero(d);
    const bool in_domain = dec::IsNaN(d) || op == "$exp" ||
                           (op == "$sqrt" ? !dec::IsNegative(d) || dec::IsZero(d) : positive);
    if (in_domain) return Value::Decimal(G(d));
  }
  double x = v.NumberDouble();
  if (op == "$sqrt" && x < 0) {
    return PipelineError(28714, "$sqrt's argument must be greater than or equal to 0");
  }
  if (op == "$ln" && !(x > 0)) {
    return PipelineError(28766, "$ln's argument must be a positive number, but is " + NumStr(v));
  }
  if (op == "$log10" && !(x > 0)) {
    return PipelineError(28761, "$log10's argument must be a positive number, but is " + NumStr(v));
  }
  return Value::Double(F(x));
}

StatusWith<Value> Log(std::string_view, const std::vector<Value>& args) {
  const Value& x = args[0];
  const Value& base = args[1];
  if (x.nullish() || base.nullish()) return Value::Null();
  if (!x.numeric()) {
    return PipelineError(28756, "$log's argument must be numeric, not " + TypeNameOf(x));
  }
  if (!base.numeric()) {
    return PipelineError(28757, "$log's base must be numeric, not " + TypeNameOf(base));
  }
  if (KindOf(x) == NumKind::kDecimal || KindOf(base) == NumKind::kDecimal) {
    Decimal128 dx = ToDecimal(x), db = ToDecimal(base);
    const bool x_ok = dec::IsNaN(dx) || (!dec::IsNegative(dx) && !dec::IsZero(dx));
    const bool base_ok = dec::IsNaN(db) || (!dec::IsNegative(db) && !dec::IsZero(db) &&
                                            !(dec::IsInteger(db) && db.ToDouble() == 1));
    if (x_ok && base_ok) return Value::Decimal(dec::Log(dx, db));
  }
  if (!(x.NumberDouble() > 0)) {
    return PipelineError(28758, "$log's argument must be a positive number, but is " + NumStr(x));
  }
  if (!(base.NumberDouble() > 0) || base.NumberDouble() == 1) {
    return PipelineError(
        28759, "$log's base must be a positive number not equal to 1, but is " + NumStr(base));
  }
  return Value::Double(std::log(x.NumberDouble()) / std::log(base.NumberDouble()));
}

StatusWith<Value> Pow(std::string_view, const std::vector<Value>& args) {
  const Value& b = args[0];
  const Value& e = args[1];
  if (b.nullish() || e.nullish()) return Value::Null();
  if (!b.numeric())
    return PipelineError(28762, "$pow's base must be numeric, not " + TypeNameOf(b));
  if (!e.numeric()) {
    return PipelineError(28763, "$pow's exponent must be numeric, not " + TypeNameOf(e));
  }
  if (b.NumberDouble() == 0 && e.NumberDouble() < 0) {
    return PipelineError(28764, "$pow cannot take a base of 0 and a negative exponent");
  }
  NumKind k = std::max(KindOf(b), KindOf(e));
  if (k <= NumKind::kLong) {
    int64_t base = b.NumberLong();
    int64_t exp = e.NumberLong();
    if (exp < 0) {
      if (base == 1) return k == NumKind::kInt ? Value::Int(1) : Value::Long(1);
      if (base == -1) {
        int64_t r = (exp % 2 == 0) ? 1 : -1;
        return k == NumKind::kInt ? Value::IntOrLong(r) : Value::Long(r);
      }
      return Value::Double(std::pow(static_cast<double>(base), static_cast<double>(exp)));
    }
    int64_t r = 1;
    bool overflow = false;
    for (int64_t i = 0; i < exp && !overflow; ++i) {
      overflow = __builtin_mul_overflow(r, base, &r);
      if (r == 0 || r == 1) break;  // 0^n and 1^n: no need to keep multiplying
    }
    if (base == -1) r = (exp % 2 == 0) ? 1 : -1;
    if (!overflow) return k == NumKind::kInt ? Value::IntOrLong(r) : Value::Long(r);
    return Value::Double(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  if (k == NumKind::kDecimal) return Value::Decimal(dec::Pow(ToDecimal(b), ToDecimal(e)));
  return Value::Double(std::pow(b.NumberDouble(), e.NumberDouble()));
}

// $round (half to even, as MongoDB does) and $trunc with an optional place in [-20, 100].
StatusWith<Value> RoundOrTrunc(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(Value v, UnaryNumeric(op, args[0]));
  int64_t place = 0;
  if (args.size() > 1) {
    const Value& p = args[1];
    if (p.nullish()) return Value::Null();
    if (!p.numeric() || p.NumberDouble() != std::trunc(p.NumberDouble()) ||
        p.NumberDouble() < -20 || p.NumberDouble() > 100) {
      return PipelineError(51083, "cannot apply " + std::string(op) + " with precision value " +
                                      p.ToString() + " value must be in [-20, 100]");
    }
    place = p.NumberLong();
  }
  if (v.nullish()) return v;
  const bool round = op == "$round";
  NumKind k = KindOf(v);
  if (k <= NumKind::kLong) {
    if (place >= 0) return v;
    int64_t x = v.NumberLong();
    if (place < -18) return k == NumKind::kInt ? Value::Int(0) : Value::Long(0);
    int64_t scale = 1;
    for (int64_t i = 0; i < -place; ++i) scale *= 10;
    int64_t q = x / scale;
    int64_t rem = x % scale;
    if (round) {
      int64_t twice = 2 * (rem < 0 ? -rem : rem);
      if (twice > scale || (twice == scale && q % 2 != 0)) q += (x < 0 ? -1 : 1);
    }
    int64_t r;
    if (__builtin_mul_overflow(q, scale, &r)) return Value::Double(static_cast<double>(q) * scale);
    return k == NumKind::kInt ? Value::IntOrLong(r) : Value::Long(r);
  }
  if (k == NumKind::kDecimal) {
    return Value::Decimal(
        dec::RoundToPlace(v.element().Decimal(), static_cast<int>(place),
                          round ? dec::Round::kHalfEven : dec::Round::kTowardZero));
  }
  double x = v.NumberDouble();
  if (!std::isfinite(x)) return v;
  double scale = std::pow(10.0, static_cast<double>(place));
  double scaled = x * scale;
  // Drop binary noise (2.675 * 100 = 267.49999...) before rounding, so results match decimal
  // intuition the way MongoDB's decimal-based rounding does.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", scaled);
  scaled = std::strtod(buf, nullptr);
  double r;
  if (round) {
    std::fesetround(FE_TONEAREST);
    r = std::nearbyint(scaled);
  } else {
    r = std::trunc(scaled);
  }
  return Value::Double(r / scale);
}

double Ceil(double x) { return std::ceil(x); }
double Floor(double x) { return std::floor(x); }
double Sqrt(double x) { return std::sqrt(x); }
double Exp(double x) { return std::exp(x); }
double Ln(double x) { return std::log(x); }
double Log10(double x) { return std::log10(x); }
constexpr dec::Round kCeil = dec::Round::kCeil;
constexpr dec::Round kFloor = dec::Round::kFloor;

// Trigonometry: double results (decimal, computed in decimal, for a decimal input); NaN passes
// through; an input outside the function's domain fails with 50989.
struct TrigDef {
  std::string_view op;
  double (*fn)(double);
  double lo, hi;
  bool open;  // bounds exclusive (only the infinities for $sin/$cos/$tan)
  dec::TrigOp dec_op;
};

double DegToRad(double x) { return x * M_PI / 180.0; }
double RadToDeg(double x) { return x * 180.0 / M_PI; }

constexpr double kInf = std::numeric_limits<double>::infinity();
using T = dec::TrigOp;
const TrigDef kTrig[] = {
    {"$sin", &::sin, -kInf, kInf, true, T::kSin},
    {"$cos", &::cos, -kInf, kInf, true, T::kCos},
    {"$tan", &::tan, -kInf, kInf, true, T::kTan},
    {"$asin", &::asin, -1, 1, false, T::kAsin},
    {"$acos", &::acos, -1, 1, false, T::kAcos},
    {"$atan", &::atan, -kInf, kInf, false, T::kAtan},
    {"$asinh", &::asinh, -kInf, kInf, false, T::kAsinh},
    {"$acosh", &::acosh, 1, kInf, false, T::kAcosh},
    {"$atanh", &::atanh, -1, 1, false, T::kAtanh},
    {"$sinh", &::sinh, -kInf, kInf, false, T::kSinh},
    {"$cosh", &::cosh, -kInf, kInf, false, T::kCosh},
    {"$tanh", &::tanh, -kInf, kInf, false, T::kTanh},
    {"$degreesToRadians", &DegToRad, -kInf, kInf, false, T::kDegreesToRadians},
    {"$radiansToDegrees", &RadToDeg, -kInf, kInf, false, T::kRadiansToDegrees},
};

std::string BoundStr(double b) {
  if (std::isinf(b)) return b > 0 ? "Infinity" : "-Infinity";
  return NumStr(Value::Double(b));
}

StatusWith<Value> Trig(std::string_view op, const std::vector<Value>& args) {
  HG_ASSIGN_OR_RETURN(Value v, UnaryNumeric(op, args[0]));
  if (v.nullish()) return v;
  const TrigDef* def = nullptr;
  for (const auto& d : kTrig) {
    if (d.op == op) def = &d;
  }
  const double x = v.NumberDouble();
  const bool in =
      std::isnan(x) || (def->open ? (x > def->lo && x < def->hi) : (x >= def->lo && x <= def->hi));
  if (!in) {
    return PipelineError(50989, "cannot apply " + std::string(op) + " to " + NumStr(v) +
                                    ", value must be in " + (def->open ? "(" : "[") +
                                    BoundStr(def->lo) + "," + BoundStr(def->hi) +
                                    (def->open ? ")" : "]"));
  }
  if (KindOf(v) == NumKind::kDecimal) {
    return Value::Decimal(dec::Trig(def->dec_op, v.element().Decimal()));
  }
  return Value::Double(def->fn(x));
}

StatusWith<Value> Atan2(std::string_view, const std::vector<Value>& args) {
  const Value& y = args[0];
  const Value& x = args[1];
  if (y.nullish() || x.nullish()) return Value::Null();
  if (!y.numeric() || !x.numeric()) {
    return PipelineError(51044, "$atan2 only supports numeric types, not " + TypeNameOf(y) +
                                    " and " + TypeNameOf(x));
  }
  if (KindOf(y) == NumKind::kDecimal || KindOf(x) == NumKind::kDecimal) {
    return Value::Decimal(dec::Atan2(ToDecimal(y), ToDecimal(x)));
  }
  return Value::Double(std::atan2(y.NumberDouble(), x.NumberDouble()));
}

}  // namespace

void AddArithmeticOperators(std::vector<OperatorDef>& out) {
  for (const auto& d : kTrig) out.push_back({d.op, 1, 1, &Trig, nullptr});
  out.push_back({"$atan2", 2, 2, &Atan2, nullptr});
  out.push_back({"$add", 0, kVariadic, &Add, nullptr});
  out.push_back({"$multiply", 0, kVariadic, &Multiply, nullptr});
  out.push_back({"$subtract", 2, 2, &Subtract, nullptr});
  out.push_back({"$divide", 2, 2, &Divide, nullptr});
  out.push_back({"$mod", 2, 2, &Mod, nullptr});
  out.push_back({"$abs", 1, 1, &Abs, nullptr});
  out.push_back({"$ceil", 1, 1, &Rounding<Ceil, kCeil>, nullptr});
  out.push_back({"$floor", 1, 1, &Rounding<Floor, kFloor>, nullptr});
  out.push_back({"$sqrt", 1, 1, &DoubleMath<Sqrt, dec::Sqrt>, nullptr});
  out.push_back({"$exp", 1, 1, &DoubleMath<Exp, dec::Exp>, nullptr});
  out.push_back({"$ln", 1, 1, &DoubleMath<Ln, dec::Ln>, nullptr});
  out.push_back({"$log10", 1, 1, &DoubleMath<Log10, dec::Log10>, nullptr});
  out.push_back({"$log", 2, 2, &Log, nullptr});
  out.push_back({"$pow", 2, 2, &Pow, nullptr});
  out.push_back({"$round", 1, 2, &RoundOrTrunc, nullptr});
  out.push_back({"$trunc", 1, 2, &RoundOrTrunc, nullptr});
}

}  // namespace hourglass::pipeline::internal
