#include "bson/key_string.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace hourglass::bson {
namespace {

using U128 = unsigned __int128;

// One byte per canonical type bracket, in bracket order (bson_compare.h). kEnd closes an object
// or array and sorts below every bracket, so a shorter document that is a prefix of a longer one
// orders first.
constexpr uint8_t kEnd = 0x04;
constexpr uint8_t kRankMinKey = 0x0A;
constexpr uint8_t kRankUndefined = 0x0F;
constexpr uint8_t kRankNull = 0x14;
constexpr uint8_t kRankNumber = 0x1E;
constexpr uint8_t kRankString = 0x3C;
constexpr uint8_t kRankObject = 0x46;
constexpr uint8_t kRankArray = 0x50;
constexpr uint8_t kRankBinData = 0x5A;
constexpr uint8_t kRankObjectId = 0x64;
constexpr uint8_t kRankBool = 0x6E;
constexpr uint8_t kRankDate = 0x78;
constexpr uint8_t kRankTimestamp = 0x82;
constexpr uint8_t kRankRegex = 0x8C;
constexpr uint8_t kRankDBPointer = 0x96;
constexpr uint8_t kRankCode = 0xA0;
constexpr uint8_t kRankCodeWScope = 0xAA;
constexpr uint8_t kRankMaxKey = 0xF0;

// First byte of a number's body.
constexpr uint8_t kNumNaN = 0x01;
constexpr uint8_t kNumNegInfinity = 0x02;
constexpr uint8_t kNumNegative = 0x03;
constexpr uint8_t kNumZero = 0x04;
constexpr uint8_t kNumPositive = 0x05;
constexpr uint8_t kNumPosInfinity = 0x06;

// A finite nonzero magnitude is 2^exponent * (1 + fraction / 2^126), where fraction holds the
// bits after the leading one, left-aligned in 126 bits. Doubles (52 bits) and int64s (63 bits)
// fit exactly. A decimal128 that needs more bits is truncated and marked sticky (its exact value
// is a little above the truncation). Distinct decimal128 values differ by more than one part in
// 10^34 > 2^-126, so they never share the same 126 truncated bits: no tie-breaker is needed.
constexpr int kFractionBits = 126;
constexpr int kGroupBits = 7;
constexpr int kGroups = kFractionBits / kGroupBits;  // 18
constexpr int kExponentBias = 0x8000;
constexpr uint8_t kStickyGroup = 0x02;  // data 0000001, no continuation

struct Magnitude {
  int exponent = 0;
  U128 fraction = 0;
  bool sticky = false;
};

int CountTrailingZeros(U128 v) {
  uint64_t low = static_cast<uint64_t>(v);
  if (low != 0) return __builtin_ctzll(low);
  return 64 + __builtin_ctzll(static_cast<uint64_t>(v >> 64));
}

Magnitude MagnitudeOfUint64(uint64_t u) {
  int top = 63 - __builtin_clzll(u);
  Magnitude m;
  m.exponent = top;
  m.fraction = static_cast<U128>(u ^ (uint64_t{1} << top)) << (kFractionBits - top);
  return m;
}

Magnitude MagnitudeOfDouble(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  int biased = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t mantissa = bits & ((uint64_t{1} << 52) - 1);
  Magnitude m;
  if (biased != 0) {
    m.exponent = biased - 1023;
    m.fraction = static_cast<U128>(mantissa) << (kFractionBits - 52);
  } else {  // subnormal
    int top = 63 - __builtin_clzll(mantissa);
    m.exponent = -1074 + top;
    m.fraction = static_cast<U128>(mantissa ^ (uint64_t{1} << top)) << (kFractionBits - top);
  }
  return m;
}

// Just enough unsigned bignum (32-bit limbs, little-endian) to expand c * 10^e in binary.
// Decimal128 reaches 10^6144 and 10^-6176, i.e. about 20,500 bits.
class BigUint {
 public:
  explicit BigUint(U128 v) {
    for (; v != 0; v >>= 32) limbs_.push_back(static_cast<uint32_t>(v));
  }
  bool IsZero() const { return limbs_.empty(); }
  int BitLength() const {
    if (limbs_.empty()) return 0;
    return 32 * static_cast<int>(limbs_.size() - 1) + (32 - __builtin_clz(limbs_.back()));
  }
  void MultiplySmall(uint32_t m) {
    uint64_t carry = 0;
    for (auto& l : limbs_) {
      uint64_t t = uint64_t{l} * m + carry;
      l = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    if (carry != 0) limbs_.push_back(static_cast<uint32_t>(carry));
  }
  void MultiplyByPowerOfTen(int n) {
    for (; n >= 9; n -= 9) MultiplySmall(1000000000u);
    uint32_t rest = 1;
    for (; n > 0; --n) rest *= 10;
    MultiplySmall(rest);
  }
  void ShiftLeft(int bits) {
    if (IsZero() || bits == 0) return;
    int rem = bits % 32;
    if (rem != 0) {
      uint32_t carry = 0;
      for (auto& l : limbs_) {
        uint32_t next = l >> (32 - rem);
        l = (l << rem) | carry;
        carry = next;
      }
      if (carry != 0) limbs_.push_back(carry);
    }
    limbs_.insert(limbs_.begin(), static_cast<size_t>(bits / 32), 0u);
  }
  void ShiftRightOne() {
    for (size_t i = 0; i < limbs_.size(); ++i) {
      uint32_t high = i + 1 < limbs_.size() ? limbs_[i + 1] << 31 : 0;
      limbs_[i] = (limbs_[i] >> 1) | high;
    }
    Trim();
  }
  // *this -= o; requires *this >= o.
  void Subtract(const BigUint& o) {
    int64_t borrow = 0;
    for (size_t i = 0; i < limbs_.size(); ++i) {
      int64_t t = int64_t{limbs_[i]} - borrow - (i < o.limbs_.size() ? int64_t{o.limbs_[i]} : 0);
      borrow = t < 0 ? 1 : 0;
      limbs_[i] = static_cast<uint32_t>(t + (borrow << 32));
    }
    Trim();
  }
  static int Compare(const BigUint& a, const BigUint& b) {
    if (a.limbs_.size() != b.limbs_.size()) return a.limbs_.size() < b.limbs_.size() ? -1 : 1;
    for (size_t i = a.limbs_.size(); i-- > 0;) {
      if (a.limbs_[i] != b.limbs_[i]) return a.limbs_[i] < b.limbs_[i] ? -1 : 1;
    }
    return 0;
  }

 private:
  void Trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<uint32_t> limbs_;
};

// Binary expansion of coefficient * 10^exponent (coefficient > 0): numerator / denominator with
// exact long division for the 127 leading bits, and whether anything remains.
Magnitude MagnitudeOfDecimal(U128 coefficient, int exponent) {
  BigUint num(coefficient), den(1);
  if (exponent >= 0) {
    num.MultiplyByPowerOfTen(exponent);
  } else {
    den.MultiplyByPowerOfTen(-exponent);
  }
  // num/den lies in [2^(k-1), 2^(k+1)); pick the binary exponent exactly.
  int k = num.BitLength() - den.BitLength();
  {
    BigUint n2 = num, d2 = den;
    if (k >= 0) {
      d2.ShiftLeft(k);
    } else {
      n2.ShiftLeft(-k);
    }
    if (BigUint::Compare(n2, d2) < 0) --k;
  }
  int shift = kFractionBits - k;
  if (shift >= 0) {
    num.ShiftLeft(shift);
  } else {
    den.ShiftLeft(-shift);
  }
  // Quotient num/den is in [2^126, 2^127).
  BigUint step = den;
  step.ShiftLeft(kFractionBits);
  U128 quotient = 0;
  for (int bit = kFractionBits; bit >= 0; --bit) {
    if (BigUint::Compare(num, step) >= 0) {
      num.Subtract(step);
      quotient |= U128{1} << bit;
    }
    step.ShiftRightOne();
  }
  invariant((quotient >> kFractionBits) == 1);
  Magnitude m;
  m.exponent = k;
  m.fraction = quotient ^ (U128{1} << kFractionBits);
  m.sticky = !num.IsZero();
  return m;
}

// Whether the magnitude is the magnitude of some double or int64. Only decimals can fail this;
// they then carry their (normalized) decimal value after the magnitude so that decoding is
// exact. The answer depends on the value alone, so equal values still encode identically.
bool NeedsDecimalSuffix(const Magnitude& m) {
  if (m.sticky) return true;
  int used = m.fraction == 0 ? 0 : kFractionBits - CountTrailingZeros(m.fraction);
  int lowest_bit = m.exponent - used;
  bool double_exact = m.exponent <= 1023 && used <= 52 && lowest_bit >= -1074;
  bool int64_exact = lowest_bit >= 0 && m.exponent <= 62;
  return !(double_exact || int64_exact);
}

int GroupAt(const Magnitude& m, int j) {
  return static_cast<int>((m.fraction >> (kFractionBits - kGroupBits * (j + 1))) & 0x7f);
}

// Exponent (2 bytes, biased, big-endian) then the fraction in 7-bit groups, one per byte as
// (bits << 1) | more. Trailing zero groups are dropped; a byte with more=0 at a position where
// another value continues with the same bits sorts first, which is exactly "the rest is zero".
void AppendMagnitude(std::string* out, const Magnitude& m) {
  int biased = m.exponent + kExponentBias;
  out->push_back(static_cast<char>(biased >> 8));
  out->push_back(static_cast<char>(biased & 0xff));
  int n = 1;
  if (m.sticky) {
    n = kGroups;
  } else {
    for (int j = 0; j < kGroups; ++j) {
      if (GroupAt(m, j) != 0) n = j + 1;
    }
  }
  for (int j = 0; j < n; ++j) {
    bool more = m.sticky || j + 1 < n;
    out->push_back(static_cast<char>((GroupAt(m, j) << 1) | (more ? 1 : 0)));
  }
  if (m.sticky) out->push_back(static_cast<char>(kStickyGroup));
}

void AppendBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

using DecimalParts = Decimal128::Parts;

U128 TenToThe34() {
  U128 r = 1;
  for (int i = 0; i < 34; ++i) r *= 10;
  return r;
}

void AppendNumberBody(std::string* out, const BsonElement& e) {
  bool negative = false;
  Magnitude m;
  const DecimalParts* decimal = nullptr;
  DecimalParts parts;
  switch (e.type()) {
    case BsonType::kDouble: {
      double d = e.Double();
      if (std::isnan(d)) return out->push_back(kNumNaN);
      if (std::isinf(d)) return out->push_back(d > 0 ? kNumPosInfinity : kNumNegInfinity);
      if (d == 0) return out->push_back(kNumZero);
      negative = d < 0;
      m = MagnitudeOfDouble(d);
      break;
    }
    case BsonType::kInt32:
    case BsonType::kInt64: {
      int64_t v = e.NumberLong();
      if (v == 0) return out->push_back(kNumZero);
      negative = v < 0;
      m = MagnitudeOfUint64(negative ? ~static_cast<uint64_t>(v) + 1 : static_cast<uint64_t>(v));
      break;
    }
    default: {  // kDecimal128
      parts = e.Decimal().Split();
      if (parts.kind == DecimalParts::kNaN) return out->push_back(kNumNaN);
      if (parts.kind == DecimalParts::kInfinity) {
        return out->push_back(parts.negative ? kNumNegInfinity : kNumPosInfinity);
      }
      if (parts.coefficient == 0) return out->push_back(kNumZero);
      negative = parts.negative;
      m = MagnitudeOfDecimal(parts.coefficient, parts.exponent);
      decimal = &parts;
      break;
    }
  }
  out->push_back(negative ? kNumNegative : kNumPositive);
  size_t start = out->size();
  AppendMagnitude(out, m);
  if (NeedsDecimalSuffix(m)) {
    invariant(decimal != nullptr);
    // Normalized (no trailing zeros), so equal decimals write equal bytes.
    U128 c = decimal->coefficient;
    int exponent = decimal->exponent;
    while (c % 10 == 0) {
      c /= 10;
      ++exponent;
    }
    AppendBigEndian(out, static_cast<uint64_t>(exponent + kExponentBias), 2);
    AppendBigEndian(out, static_cast<uint64_t>(c >> 64), 8);
    AppendBigEndian(out, static_cast<uint64_t>(c), 8);
  }
  // Larger magnitudes of negative numbers sort first.
  if (negative) {
    for (size_t i = start; i < out->size(); ++i) (*out)[i] = static_cast<char>(~(*out)[i]);
  }
}

// Bytes with 0x00 escaped as 0x00 0xFF, then 0x00 0x00: byte order is preserved and a string
// sorts before any longer string it prefixes.
void AppendEscaped(std::string* out, std::string_view s) {
  for (char c : s) {
    out->push_back(c);
    if (c == '\0') out->push_back(static_cast<char>(0xff));
  }
  out->push_back('\0');
  out->push_back('\0');
}

uint8_t RankOf(BsonType t) {
  switch (t) {
    case BsonType::kMinKey:
      return kRankMinKey;
    case BsonType::kEOO:
    case BsonType::kUndefined:
      return kRankUndefined;
    case BsonType::kNull:
      return kRankNull;
    case BsonType::kDouble:
    case BsonType::kInt32:
    case BsonType::kInt64:
    case BsonType::kDecimal128:
      return kRankNumber;
    case BsonType::kString:
    case BsonType::kSymbol:
      return kRankString;
    case BsonType::kObject:
      return kRankObject;
    case BsonType::kArray:
      return kRankArray;
    case BsonType::kBinData:
      return kRankBinData;
    case BsonType::kObjectId:
      return kRankObjectId;
    case BsonType::kBool:
      return kRankBool;
    case BsonType::kDate:
      return kRankDate;
    case BsonType::kTimestamp:
      return kRankTimestamp;
    case BsonType::kRegex:
      return kRankRegex;
    case BsonType::kDBPointer:
      return kRankDBPointer;
    case BsonType::kCode:
      return kRankCode;
    case BsonType::kCodeWScope:
      return kRankCodeWScope;
    case BsonType::kMaxKey:
      return kRankMaxKey;
  }
  invariant(false);
  return 0;
}

void AppendBody(std::string* out, const BsonElement& e);

// Elements as (bracket, field name, body) so that objects order like CompareObjects: bracket,
// then name, then value. Array field names are positional and equal at equal positions, so they
// are left out.
void AppendDocumentBody(std::string* out, const BsonObj& obj, bool with_names) {
  for (const BsonElement& el : obj) {
    out->push_back(static_cast<char>(RankOf(el.type())));
    if (with_names) AppendEscaped(out, el.FieldName());
    AppendBody(out, el);
  }
  out->push_back(kEnd);
}

void AppendBody(std::string* out, const BsonElement& e) {
  switch (e.type()) {
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
    case BsonType::kEOO:
    case BsonType::kUndefined:
    case BsonType::kNull:
      return;
    case BsonType::kDouble:
    case BsonType::kInt32:
    case BsonType::kInt64:
    case BsonType::kDecimal128:
      return AppendNumberBody(out, e);
    case BsonType::kString:
    case BsonType::kSymbol:
    case BsonType::kCode:
      return AppendEscaped(out, e.Str());
    case BsonType::kObject:
      return AppendDocumentBody(out, e.Obj(), true);
    case BsonType::kArray:
      return AppendDocumentBody(out, e.Obj(), false);
    case BsonType::kBinData: {
      // Length, subtype, bytes: MongoDB's BinData order; the length also delimits the bytes.
      std::string_view data = e.BinData();
      AppendBigEndian(out, data.size(), 4);
      out->push_back(static_cast<char>(e.BinSubtype()));
      out->append(data);
      return;
    }
    case BsonType::kObjectId:
      out->append(e.value(), 12);
      return;
    case BsonType::kBool:
      out->push_back(e.Bool() ? 1 : 0);
      return;
    case BsonType::kDate:
      // Signed: flipping the sign bit makes two's complement sort as unsigned.
      AppendBigEndian(out, static_cast<uint64_t>(e.DateMillis()) ^ (uint64_t{1} << 63), 8);
      return;
    case BsonType::kTimestamp:
      AppendBigEndian(out, e.TimestampValue(), 8);
      return;
    case BsonType::kRegex:
      AppendEscaped(out, e.RegexPattern());
      AppendEscaped(out, e.RegexOptions());
      return;
    case BsonType::kDBPointer: {
      // MongoDB orders by namespace length, then namespace bytes, then ObjectId.
      const char* v = e.value();
      size_t ns_size = static_cast<size_t>(ReadInt32(v)) - 1;
      AppendBigEndian(out, ns_size, 4);
      out->append(v + 4, ns_size);
      out->append(v + 4 + ns_size + 1, 12);
      return;
    }
    case BsonType::kCodeWScope: {
      const char* v = e.value();
      int32_t code_size = ReadInt32(v + 4);
      AppendEscaped(out, std::string_view(v + 8, static_cast<size_t>(code_size) - 1));
      AppendDocumentBody(out, BsonObj(v + 8 + code_size), true);
      return;
    }
  }
}

void Complement(std::string* out, size_t start) {
  for (size_t i = start; i < out->size(); ++i) (*out)[i] = static_cast<char>(~(*out)[i]);
}

// ---- Decoding ----

Status Malformed(std::string_view what) {
  return Status(ErrorCode::kBadValue, "malformed index key: " + std::string(what));
}

constexpr int kMaxDecodeDepth = 200;

struct Reader {
  std::string_view bytes;
  size_t pos = 0;
  uint8_t mask = 0;  // 0xFF while reading a complemented (descending) component

  bool Byte(uint8_t* b) {
    if (pos >= bytes.size()) return false;
    *b = static_cast<uint8_t>(bytes[pos++]) ^ mask;
    return true;
  }
  bool BigEndian(int n, uint64_t* v) {
    *v = 0;
    for (int i = 0; i < n; ++i) {
      uint8_t b;
      if (!Byte(&b)) return false;
      *v = (*v << 8) | b;
    }
    return true;
  }
  bool Raw(size_t n, std::string* out) {
    out->clear();
    for (size_t i = 0; i < n; ++i) {
      uint8_t b;
      if (!Byte(&b)) return false;
      out->push_back(static_cast<char>(b));
    }
    return true;
  }
  bool Escaped(std::string* out) {
    out->clear();
    for (;;) {
      uint8_t b;
      if (!Byte(&b)) return false;
      if (b != 0) {
        out->push_back(static_cast<char>(b));
        continue;
      }
      if (!Byte(&b)) return false;
      if (b == 0) return true;
      if (b != 0xff) return false;
      out->push_back('\0');
    }
  }
};

// Writes an element whose value bytes are already in BSON form (types BsonBuilder has no
// appender for).
void AppendRawElement(BsonBuilder& b, BsonType t, std::string_view name, std::string_view value) {
  std::string element;
  element.push_back(static_cast<char>(t));
  element.append(name);
  element.push_back('\0');
  element.append(value);
  b.AppendElementAs(BsonElement(element.data()), name);
}

std::string Int32Bytes(int32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

Status DecodeNumber(Reader& r, BsonBuilder& b, std::string_view name) {
  uint8_t cls;
  if (!r.Byte(&cls)) return Malformed("truncated number");
  switch (cls) {
    case kNumNaN:
      b.AppendDouble(name, std::numeric_limits<double>::quiet_NaN());
      return Status::OK();
    case kNumNegInfinity:
      b.AppendDouble(name, -std::numeric_limits<double>::infinity());
      return Status::OK();
    case kNumPosInfinity:
      b.AppendDouble(name, std::numeric_limits<double>::infinity());
      return Status::OK();
    case kNumZero:
      b.AppendInt32(name, 0);
      return Status::OK();
    case kNumNegative:
    case kNumPositive:
      break;
    default:
      return Malformed("bad number class");
  }
  bool negative = cls == kNumNegative;
  if (negative) r.mask ^= 0xff;
  Magnitude m;
  uint64_t biased;
  if (!r.BigEndian(2, &biased)) return Malformed("truncated number");
  m.exponent = static_cast<int>(biased) - kExponentBias;
  for (int j = 0;; ++j) {
    uint8_t g;
    if (!r.Byte(&g)) return Malformed("truncated number");
    m.fraction |= static_cast<U128>(g >> 1) << (kFractionBits - kGroupBits * (j + 1));
    if ((g & 1) == 0) break;
    if (j + 1 == kGroups) {
      if (!r.Byte(&g) || g != kStickyGroup) return Malformed("bad number tail");
      m.sticky = true;
      break;
    }
  }
  if (NeedsDecimalSuffix(m)) {
    uint64_t exp_biased, high, low;
    if (!r.BigEndian(2, &exp_biased) || !r.BigEndian(8, &high) || !r.BigEndian(8, &low)) {
      return Malformed("truncated decimal");
    }
    if (negative) r.mask ^= 0xff;
    U128 c = (static_cast<U128>(high) << 64) | low;
    int exponent = static_cast<int>(exp_biased) - kExponentBias;
    // Normalizing may have raised the exponent past decimal128's limit; give digits back.
    while (exponent > 6111 && c < TenToThe34() / 10) {
      c *= 10;
      --exponent;
    }
    if (c == 0 || c >= TenToThe34() || exponent > 6111 || exponent < -6176) {
      return Malformed("bad decimal");
    }
    Decimal128 d;
    d.low = static_cast<uint64_t>(c);
    d.high = (negative ? uint64_t{1} << 63 : 0) | (static_cast<uint64_t>(exponent + 6176) << 49) |
             static_cast<uint64_t>(c >> 64);
    b.AppendDecimal(name, d);
    return Status::OK();
  }
  if (negative) r.mask ^= 0xff;
  int used = m.fraction == 0 ? 0 : kFractionBits - CountTrailingZeros(m.fraction);
  int lowest_bit = m.exponent - used;
  if (lowest_bit >= 0 && m.exponent <= 63) {
    // Integral and |v| <= 2^63 (2^63 itself only reaches here as a double, see below).
    uint64_t u = (uint64_t{1} << m.exponent) |
                 static_cast<uint64_t>(m.fraction >> (kFractionBits - m.exponent));
    if (m.exponent <= 62 || (negative && u == uint64_t{1} << 63)) {
      int64_t v = negative ? static_cast<int64_t>(~u + 1) : static_cast<int64_t>(u);
      if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
        b.AppendInt32(name, static_cast<int32_t>(v));
      } else {
        b.AppendInt64(name, v);
      }
      return Status::OK();
    }
  }
  // Exactly a double: (1.fraction) has at most 53 significant bits.
  uint64_t significand =
      (uint64_t{1} << used) | static_cast<uint64_t>(m.fraction >> (kFractionBits - used));
  double d = std::ldexp(static_cast<double>(significand), lowest_bit);
  b.AppendDouble(name, negative ? -d : d);
  return Status::OK();
}

Status DecodeBody(uint8_t rank, Reader& r, BsonBuilder& b, std::string_view name, int depth);

Status DecodeDocumentBody(Reader& r, BsonBuilder& b, bool with_names, int depth) {
  if (depth > kMaxDecodeDepth) return Malformed("nested too deeply");
  std::string field;
  for (int i = 0;; ++i) {
    uint8_t rank;
    if (!r.Byte(&rank)) return Malformed("unterminated document");
    if (rank == kEnd) return Status::OK();
    if (with_names) {
      if (!r.Escaped(&field)) return Malformed("bad field name");
    } else {
      field = std::to_string(i);
    }
    HG_RETURN_IF_ERROR(DecodeBody(rank, r, b, field, depth + 1));
  }
}

Status DecodeBody(uint8_t rank, Reader& r, BsonBuilder& b, std::string_view name, int depth) {
  std::string s, t;
  uint64_t v;
  switch (rank) {
    case kRankMinKey:
      b.AppendMinKey(name);
      return Status::OK();
    case kRankUndefined:
      b.AppendUndefined(name);
      return Status::OK();
    case kRankNull:
      b.AppendNull(name);
      return Status::OK();
    case kRankMaxKey:
      b.AppendMaxKey(name);
      return Status::OK();
    case kRankNumber:
      return DecodeNumber(r, b, name);
    case kRankString:
      if (!r.Escaped(&s)) return Malformed("bad string");
      b.AppendString(name, s);
      return Status::OK();
    case kRankCode:
      if (!r.Escaped(&s)) return Malformed("bad code");
      b.AppendCode(name, s);
      return Status::OK();
    case kRankObject: {
      size_t token = b.OpenObject(name);
      HG_RETURN_IF_ERROR(DecodeDocumentBody(r, b, true, depth));
      b.Close(token);
      return Status::OK();
    }
    case kRankArray: {
      size_t token = b.OpenArray(name);
      HG_RETURN_IF_ERROR(DecodeDocumentBody(r, b, false, depth));
      b.Close(token);
      return Status::OK();
    }
    case kRankBinData: {
      uint8_t subtype;
      if (!r.BigEndian(4, &v) || !r.Byte(&subtype) || v > r.bytes.size() || !r.Raw(v, &s)) {
        return Malformed("bad bindata");
      }
      b.AppendBinData(name, subtype, s);
      return Status::OK();
    }
    case kRankObjectId: {
      if (!r.Raw(12, &s)) return Malformed("bad objectid");
      ObjectId id;
      std::memcpy(id.bytes, s.data(), 12);
      b.AppendObjectId(name, id);
      return Status::OK();
    }
    case kRankBool: {
      uint8_t x;
      if (!r.Byte(&x) || x > 1) return Malformed("bad bool");
      b.AppendBool(name, x == 1);
      return Status::OK();
    }
    case kRankDate:
      if (!r.BigEndian(8, &v)) return Malformed("bad date");
      b.AppendDate(name, static_cast<int64_t>(v ^ (uint64_t{1} << 63)));
      return Status::OK();
    case kRankTimestamp:
      if (!r.BigEndian(8, &v)) return Malformed("bad timestamp");
      b.AppendTimestamp(name, v);
      return Status::OK();
    case kRankRegex:
      if (!r.Escaped(&s) || !r.Escaped(&t)) return Malformed("bad regex");
      b.AppendRegex(name, s, t);
      return Status::OK();
    case kRankDBPointer: {
      std::string oid;
      if (!r.BigEndian(4, &v) || v > r.bytes.size() || !r.Raw(v, &s) || !r.Raw(12, &oid)) {
        return Malformed("bad dbpointer");
      }
      std::string value = Int32Bytes(static_cast<int32_t>(s.size() + 1)) + s;
      value.push_back('\0');
      value += oid;
      AppendRawElement(b, BsonType::kDBPointer, name, value);
      return Status::OK();
    }
    case kRankCodeWScope: {
      if (!r.Escaped(&s)) return Malformed("bad code");
      BsonBuilder scope;
      HG_RETURN_IF_ERROR(DecodeDocumentBody(r, scope, true, depth));
      std::string scope_bytes = scope.Release();
      std::string body = Int32Bytes(static_cast<int32_t>(s.size() + 1)) + s;
      body.push_back('\0');
      body += scope_bytes;
      AppendRawElement(b, BsonType::kCodeWScope, name,
                       Int32Bytes(static_cast<int32_t>(body.size() + 4)) + body);
      return Status::OK();
    }
    default:
      return Malformed("unknown type byte");
  }
}

}  // namespace

bool IsDescending(const BsonElement& pattern_field) {
  return pattern_field.IsNumber() && pattern_field.NumberDouble() < 0;
}

void KeyStringBuilder::AppendElement(const BsonElement& e, bool descending) {
  if (e.eoo()) return AppendMissing(descending);
  size_t start = bytes_.size();
  bytes_.push_back(static_cast<char>(RankOf(e.type())));
  AppendBody(&bytes_, e);
  if (descending) Complement(&bytes_, start);
}

void KeyStringBuilder::AppendElement(const BsonElement& e, bool descending,
                                     const StringComparator* strings) {
  if (strings == nullptr || !IsCollatable(e.type())) return AppendElement(e, descending);
  BsonBuilder b;
  AppendComparisonForm(b, "", e, *strings);
  BsonObj holder = b.Obj();
  AppendElement(holder.FirstElement(), descending);
}

void KeyStringBuilder::AppendDate(int64_t millis, bool descending) {
  BsonBuilder b;
  b.AppendDate("", millis);
  BsonObj holder = b.Obj();
  AppendElement(holder.FirstElement(), descending);
}

void KeyStringBuilder::AppendMissing(bool descending) {
  bytes_.push_back(static_cast<char>(descending ? static_cast<uint8_t>(~kRankNull) : kRankNull));
}

std::string EncodeIndexKey(const BsonObj& key_pattern, const BsonObj& doc) {
  KeyStringBuilder builder;
  for (const BsonElement& field : key_pattern) {
    builder.AppendElement(doc.GetPath(field.FieldName()), IsDescending(field));
  }
  return builder.Release();
}

Status AppendDecodedIndexKey(std::string_view bytes, const BsonObj& key_pattern, BsonBuilder& out) {
  Reader r{bytes};
  for (const BsonElement& field : key_pattern) {
    r.mask = IsDescending(field) ? 0xff : 0;
    uint8_t rank;
    if (!r.Byte(&rank)) return Malformed("fewer components than the key pattern");
    HG_RETURN_IF_ERROR(DecodeBody(rank, r, out, "", 0));
  }
  if (r.pos != bytes.size()) return Malformed("bytes after the last component");
  return Status::OK();
}

StatusWith<BsonObj> DecodeIndexKey(std::string_view bytes, const BsonObj& key_pattern) {
  BsonBuilder b;
  HG_RETURN_IF_ERROR(AppendDecodedIndexKey(bytes, key_pattern, b));
  return b.Obj();
}

}  // namespace hourglass::bson
