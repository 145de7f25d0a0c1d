#include "bson/bson.h"

#include <bson.h>  // libbson

#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <random>

#include "bson/decimal128.h"

namespace hourglass::bson {

std::string_view TypeName(BsonType t) {
  switch (t) {
    case BsonType::kMinKey:
      return "minKey";
    case BsonType::kEOO:
      return "missing";
    case BsonType::kDouble:
      return "double";
    case BsonType::kString:
      return "string";
    case BsonType::kObject:
      return "object";
    case BsonType::kArray:
      return "array";
    case BsonType::kBinData:
      return "binData";
    case BsonType::kUndefined:
      return "undefined";
    case BsonType::kObjectId:
      return "objectId";
    case BsonType::kBool:
      return "bool";
    case BsonType::kDate:
      return "date";
    case BsonType::kNull:
      return "null";
    case BsonType::kRegex:
      return "regex";
    case BsonType::kDBPointer:
      return "dbPointer";
    case BsonType::kCode:
      return "javascript";
    case BsonType::kSymbol:
      return "symbol";
    case BsonType::kCodeWScope:
      return "javascriptWithScope";
    case BsonType::kInt32:
      return "int";
    case BsonType::kTimestamp:
      return "timestamp";
    case BsonType::kInt64:
      return "long";
    case BsonType::kDecimal128:
      return "decimal";
    case BsonType::kMaxKey:
      return "maxKey";
  }
  return "unknown";
}

// ---- ObjectId ----

ObjectId ObjectId::Generate() {
  static const uint64_t process_unique = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  static std::atomic<uint32_t> counter{[] {
    std::random_device rd;
    return static_cast<uint32_t>(rd());
  }()};
  ObjectId id;
  uint32_t secs = static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count());
  id.bytes[0] = secs >> 24;
  id.bytes[1] = secs >> 16;
  id.bytes[2] = secs >> 8;
  id.bytes[3] = secs;
  for (int i = 0; i < 5; ++i) id.bytes[4 + i] = static_cast<uint8_t>(process_unique >> (8 * i));
  uint32_t c = counter.fetch_add(1);
  id.bytes[9] = c >> 16;
  id.bytes[10] = c >> 8;
  id.bytes[11] = c;
  return id;
}

ObjectId ObjectId::FromSeconds(uint32_t secs) {
  ObjectId id{};
  id.bytes[0] = secs >> 24;
  id.bytes[1] = secs >> 16;
  id.bytes[2] = secs >> 8;
  id.bytes[3] = secs;
  return id;
}

uint32_t ObjectId::Timestamp() const {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         bytes[3];
}

std::string LowerHex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    s.push_back(kHex[c >> 4]);
    s.push_back(kHex[c & 15]);
  }
  return s;
}

std::string ObjectId::ToHex() const {
  return LowerHex(std::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

// ---- Decimal128 ----

std::string Decimal128::ToString() const {
  bson_decimal128_t d{low, high};
  char buf[BSON_DECIMAL128_STRING];
  bson_decimal128_to_string(&d, buf);
  return buf;
}

bool Decimal128::FromString(std::string_view s, Decimal128* out) {
  bson_decimal128_t d;
  std::string str(s);
  if (!bson_decimal128_from_string(str.c_str(), &d)) return false;
  out->low = d.low;
  out->high = d.high;
  return true;
}

double Decimal128::ToDouble() const { return decimal::ToDouble(*this); }

bool Decimal128::IsNaN() const { return Split().kind == Parts::kNaN; }

Decimal128::Parts Decimal128::Split() const {
  using U128 = unsigned __int128;
  static const U128 kTenToTheMax = [] {
    U128 r = 1;
    for (int i = 0; i < kMaxDigits; ++i) r *= 10;
    return r;
  }();
  Parts p;
  p.negative = (high >> 63) != 0;
  uint64_t combination = (high >> 58) & 0x1f;
  if (combination == 0x1f) {
    p.kind = Parts::kNaN;
  } else if (combination == 0x1e) {
    p.kind = Parts::kInfinity;
  } else if (((high >> 61) & 3) == 3) {
    // The "11" form implies a coefficient >= 2^113 > 10^34 - 1: non-canonical, read as zero.
    p.exponent = static_cast<int>((high >> 47) & 0x3fff) - 6176;
  } else {
    p.exponent = static_cast<int>((high >> 49) & 0x3fff) - 6176;
    p.coefficient = (static_cast<U128>(high & ((uint64_t{1} << 49) - 1)) << 64) | low;
    if (p.coefficient >= kTenToTheMax) p.coefficient = 0;
  }
  return p;
}

// ---- BsonElement ----

size_t ValueSizeOf(BsonType t, const char* v) {
  switch (t) {
    case BsonType::kEOO:
    case BsonType::kUndefined:
    case BsonType::kNull:
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
      return 0;
    case BsonType::kBool:
      return 1;
    case BsonType::kInt32:
      return 4;
    case BsonType::kDouble:
    case BsonType::kDate:
    case BsonType::kTimestamp:
    case BsonType::kInt64:
      return 8;
    case BsonType::kObjectId:
      return 12;
    case BsonType::kDecimal128:
      return 16;
    case BsonType::kString:
    case BsonType::kCode:
    case BsonType::kSymbol:
      return 4 + static_cast<size_t>(ReadInt32(v));
    case BsonType::kObject:
    case BsonType::kArray:
    case BsonType::kCodeWScope:
      return static_cast<size_t>(ReadInt32(v));
    case BsonType::kBinData:
      return 5 + static_cast<size_t>(ReadInt32(v));
    case BsonType::kRegex: {
      size_t p = std::strlen(v) + 1;
      return p + std::strlen(v + p) + 1;
    }
    case BsonType::kDBPointer:
      return 4 + static_cast<size_t>(ReadInt32(v)) + 12;
  }
  return 0;
}

size_t BsonElement::ValueSize() const { return ValueSizeOf(type(), value()); }

size_t BsonElement::size() const {
  if (eoo()) return 1;
  return 2 + name_size_ + ValueSizeOf(type(), data_ + 2 + name_size_);
}

ObjectId BsonElement::Oid() const {
  ObjectId id{};
  if (type() == BsonType::kObjectId) std::memcpy(id.bytes, value(), 12);
  return id;
}

Decimal128 BsonElement::Decimal() const {
  Decimal128 d{0, 0};
  if (type() == BsonType::kDecimal128) {
    std::memcpy(&d.low, value(), 8);
    std::memcpy(&d.high, value() + 8, 8);
  }
  return d;
}

std::string_view BsonElement::Str() const {
  auto t = type();
  if (t != BsonType::kString && t != BsonType::kSymbol && t != BsonType::kCode) return {};
  return std::string_view(value() + 4, static_cast<size_t>(ReadInt32(value())) - 1);
}

BsonObj BsonElement::Obj() const {
  if (!IsObjectOrArray()) return BsonObj();
  return BsonObj(value());
}

uint8_t BsonElement::BinSubtype() const {
  return type() == BsonType::kBinData ? static_cast<uint8_t>(value()[4]) : 0;
}

std::string_view BsonElement::BinData() const {
  if (type() != BsonType::kBinData) return {};
  return std::string_view(value() + 5, static_cast<size_t>(ReadInt32(value())));
}

std::string_view BsonElement::RegexPattern() const {
  if (type() != BsonType::kRegex) return {};
  return std::string_view(value());
}

std::string_view BsonElement::RegexOptions() const {
  if (type() != BsonType::kRegex) return {};
  const char* v = value();
  return std::string_view(v + std::strlen(v) + 1);
}

double BsonElement::NumberDouble() const {
  switch (type()) {
    case BsonType::kDouble:
      return ReadDouble();
    case BsonType::kInt32:
      return ReadInt32(value());
    case BsonType::kInt64:
      return static_cast<double>(ReadInt64(value()));
    case BsonType::kDecimal128:
      return Decimal().ToDouble();
    default:
      return 0.0;
  }
}

std::optional<int64_t> BsonElement::WholeNumber() const {
  if (!IsNumber()) return std::nullopt;
  const double d = NumberDouble();
  if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0)) return std::nullopt;
  const int64_t v = NumberLong();
  if (static_cast<double>(v) != d) return std::nullopt;
  return v;
}

int64_t BsonElement::NumberLong() const {
  switch (type()) {
    case BsonType::kInt32:
      return ReadInt32(value());
    case BsonType::kInt64:
      return ReadInt64(value());
    case BsonType::kDecimal128: {
      // Exact for every integer a decimal holds (a double would round above 2^53).
      Decimal128 dec = Decimal();
      int64_t v = 0;
      if (decimal::ToInt64(dec, decimal::Round::kTowardZero, &v)) return v;
      if (decimal::IsNaN(dec)) return 0;
      return decimal::IsNegative(dec) ? INT64_MIN : INT64_MAX;
    }
    case BsonType::kDouble: {
      double d = NumberDouble();
      if (std::isnan(d)) return 0;
      if (d >= 9223372036854775807.0) return INT64_MAX;
      if (d <= -9223372036854775808.0) return INT64_MIN;
      return static_cast<int64_t>(d);
    }
    default:
      return 0;
  }
}

bool BsonElement::Truthy() const {
  switch (type()) {
    case BsonType::kEOO:
    case BsonType::kNull:
    case BsonType::kUndefined:
      return false;
    case BsonType::kBool:
      return Bool();
    case BsonType::kDouble:
    case BsonType::kInt32:
    case BsonType::kInt64:
      return NumberDouble() != 0.0;
    case BsonType::kDecimal128:
      return !decimal::IsZero(Decimal());
    default:
      return true;
  }
}

// ---- BsonObj ----

namespace {
const char kEmptyDoc[5] = {5, 0, 0, 0, 0};
}

BsonObj::BsonObj() : data_(kEmptyDoc) {}

BsonObj BsonObj::CopyOf(std::string_view bytes) {
  return BsonObj(std::make_shared<const std::string>(bytes));
}

BsonObj BsonObj::Owned() const {
  if (owner_) return *this;
  return CopyOf(bytes());
}

int BsonObj::NumFields() const {
  int n = 0;
  for (auto it = begin(); it != end(); ++it) ++n;
  return n;
}

BsonElement BsonObj::GetField(std::string_view name) const {
  for (FieldCursor c(data_); c.Next();) {
    if (c.field().name == name) return c.field().Element();
  }
  return BsonElement();
}

BsonElement BsonObj::GetPath(std::string_view dotted) const {
  BsonObj cur = *this;
  while (true) {
    size_t dot = dotted.find('.');
    BsonElement e = cur.GetField(dotted.substr(0, dot));
    if (dot == std::string_view::npos || e.eoo()) return e;
    if (!e.IsObjectOrArray()) return BsonElement();
    cur = e.Obj();
    dotted.remove_prefix(dot + 1);
  }
}

namespace {
std::string ToJsonImpl(const BsonObj& obj, bool canonical) {
  bson_t b;
  if (!bson_init_static(&b, reinterpret_cast<const uint8_t*>(obj.data()),
                        static_cast<size_t>(obj.size()))) {
    return "<invalid BSON>";
  }
  size_t len = 0;
  char* s = canonical ? bson_as_canonical_extended_json(&b, &len)
                      : bson_as_relaxed_extended_json(&b, &len);
  if (s == nullptr) return "<invalid BSON>";
  std::string out(s, len);
  bson_free(s);
  return out;
}
}  // namespace

std::string BsonObj::ToJson() const { return ToJsonImpl(*this, false); }
std::string BsonObj::ToCanonicalJson() const { return ToJsonImpl(*this, true); }

// ---- BsonBuilder ----

BsonBuilder::BsonBuilder() { buf_.assign(4, '\0'); }

void BsonBuilder::AppendHeader(BsonType t, std::string_view name) {
  buf_.push_back(static_cast<char>(t));
  buf_.append(name);
  buf_.push_back('\0');
}

namespace {
template <typename T>
void Put(std::string& buf, T v) {
  buf.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
}  // namespace

BsonBuilder& BsonBuilder::AppendDouble(std::string_view name, double v) {
  AppendHeader(BsonType::kDouble, name);
  Put(buf_, v);
  return *this;
}

BsonBuilder& BsonBuilder::AppendString(std::string_view name, std::string_view v) {
  AppendHeader(BsonType::kString, name);
  Put(buf_, static_cast<int32_t>(v.size() + 1));
  buf_.append(v);
  buf_.push_back('\0');
  return *this;
}

BsonBuilder& BsonBuilder::AppendCode(std::string_view name, std::string_view v) {
  AppendHeader(BsonType::kCode, name);
  Put(buf_, static_cast<int32_t>(v.size() + 1));
  buf_.append(v);
  buf_.push_back('\0');
  return *this;
}

BsonBuilder& BsonBuilder::AppendObject(std::string_view name, const BsonObj& v) {
  AppendHeader(BsonType::kObject, name);
  buf_.append(v.bytes());
  return *this;
}

BsonBuilder& BsonBuilder::AppendArray(std::string_view name, const BsonObj& v) {
  AppendHeader(BsonType::kArray, name);
  buf_.append(v.bytes());
  return *this;
}

BsonBuilder& BsonBuilder::AppendBinData(std::string_view name, uint8_t subtype,
                                        std::string_view data) {
  AppendHeader(BsonType::kBinData, name);
  Put(buf_, static_cast<int32_t>(data.size()));
  buf_.push_back(static_cast<char>(subtype));
  buf_.append(data);
  return *this;
}

BsonBuilder& BsonBuilder::AppendUndefined(std::string_view name) {
  AppendHeader(BsonType::kUndefined, name);
  return *this;
}

BsonBuilder& BsonBuilder::AppendObjectId(std::string_view name, const ObjectId& v) {
  AppendHeader(BsonType::kObjectId, name);
  AppendRaw(v.bytes, 12);
  return *this;
}

BsonBuilder& BsonBuilder::AppendBool(std::string_view name, bool v) {
  AppendHeader(BsonType::kBool, name);
  buf_.push_back(v ? 1 : 0);
  return *this;
}

BsonBuilder& BsonBuilder::AppendDate(std::string_view name, int64_t millis) {
  AppendHeader(BsonType::kDate, name);
  Put(buf_, millis);
  return *this;
}

BsonBuilder& BsonBuilder::AppendNull(std::string_view name) {
  AppendHeader(BsonType::kNull, name);
  return *this;
}

BsonBuilder& BsonBuilder::AppendRegex(std::string_view name, std::string_view pattern,
                                      std::string_view options) {
  AppendHeader(BsonType::kRegex, name);
  buf_.append(pattern);
  buf_.push_back('\0');
  buf_.append(options);
  buf_.push_back('\0');
  return *this;
}

BsonBuilder& BsonBuilder::AppendInt32(std::string_view name, int32_t v) {
  AppendHeader(BsonType::kInt32, name);
  Put(buf_, v);
  return *this;
}

BsonBuilder& BsonBuilder::AppendTimestamp(std::string_view name, uint64_t v) {
  AppendHeader(BsonType::kTimestamp, name);
  Put(buf_, v);
  return *this;
}

BsonBuilder& BsonBuilder::AppendInt64(std::string_view name, int64_t v) {
  AppendHeader(BsonType::kInt64, name);
  Put(buf_, v);
  return *this;
}

BsonBuilder& BsonBuilder::AppendDecimal(std::string_view name, const Decimal128& v) {
  AppendHeader(BsonType::kDecimal128, name);
  Put(buf_, v.low);
  Put(buf_, v.high);
  return *this;
}

BsonBuilder& BsonBuilder::AppendMinKey(std::string_view name) {
  AppendHeader(BsonType::kMinKey, name);
  return *this;
}

BsonBuilder& BsonBuilder::AppendMaxKey(std::string_view name) {
  AppendHeader(BsonType::kMaxKey, name);
  return *this;
}

BsonBuilder& BsonBuilder::AppendElement(const BsonElement& e) {
  if (!e.eoo()) buf_.append(e.raw(), e.size());
  return *this;
}

BsonBuilder& BsonBuilder::AppendElementAs(const BsonElement& e, std::string_view name) {
  if (e.eoo()) return *this;
  AppendHeader(e.type(), name);
  buf_.append(e.value(), e.ValueSize());
  return *this;
}

BsonBuilder& BsonBuilder::AppendElementsOf(const BsonObj& obj) {
  if (!obj.IsEmpty()) buf_.append(obj.data() + 4, static_cast<size_t>(obj.size()) - 5);
  return *this;
}

size_t BsonBuilder::OpenObject(std::string_view name) {
  AppendHeader(BsonType::kObject, name);
  open_.push_back(buf_.size());
  buf_.append(4, '\0');
  return open_.size();
}

size_t BsonBuilder::OpenArray(std::string_view name) {
  AppendHeader(BsonType::kArray, name);
  open_.push_back(buf_.size());
  buf_.append(4, '\0');
  return open_.size();
}

void BsonBuilder::Close(size_t token) {
  invariant(token == open_.size());
  size_t start = open_.back();
  open_.pop_back();
  buf_.push_back('\0');
  int32_t len = static_cast<int32_t>(buf_.size() - start);
  std::memcpy(&buf_[start], &len, 4);
}

std::string BsonBuilder::Release() {
  invariant(open_.empty());
  buf_.push_back('\0');
  int32_t len = static_cast<int32_t>(buf_.size());
  std::memcpy(&buf_[0], &len, 4);
  std::string out = std::move(buf_);
  buf_.assign(4, '\0');
  return out;
}

BsonObj BsonBuilder::Obj() { return BsonObj(std::make_shared<const std::string>(Release())); }

BsonObj BsonBuilder::View() {
  invariant(open_.empty());
  buf_.push_back('\0');
  int32_t len = static_cast<int32_t>(buf_.size());
  std::memcpy(&buf_[0], &len, 4);
  return BsonObj(buf_.data());
}

void BsonBuilder::Reset() {
  buf_.assign(4, '\0');
  open_.clear();
}

// ---- validation and JSON ----

namespace {
constexpr int kMaxNesting = 200;

bool ReadLen(const char* p, size_t avail, int32_t* v) {
  if (avail < 4) return false;
  std::memcpy(v, p, 4);
  return true;
}

// True if no byte of [p, p + n) has its high bit set (7-bit ASCII, NUL included), eight bytes
// at a time.
bool AllAscii(const char* p, size_t n) {
  uint64_t acc = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; ++i) acc |= static_cast<unsigned char>(p[i]);
  return (acc & 0x8080808080808080ull) == 0;
}

// The length of the NUL-terminated name at `p`, searching at most `n` bytes (n if there is no
// NUL); clears *ascii if a byte of the name has its high bit set. Eight bytes at a time: field
// names are short, and a call to memchr plus a second pass for the bytes cost more than the scan
// (this runs for every field of every document a client sends).
size_t NameLength(const char* p, size_t n, bool* ascii) {
  static_assert(std::endian::native == std::endian::little);
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    // The lowest flagged byte is the first zero byte (flags above it may be false).
    const uint64_t zeros = (w - kOnes) & ~w & kHighs;
    if (zeros != 0) {
      const int k = std::countr_zero(zeros) / 8;
      const uint64_t name_bytes = k == 0 ? 0 : w & (~uint64_t{0} >> (64 - 8 * k));
      if ((name_bytes & kHighs) != 0) *ascii = false;
      return i + static_cast<size_t>(k);
    }
    if ((w & kHighs) != 0) *ascii = false;
  }
  for (; i < n; ++i) {
    if (p[i] == 0) return i;
    if ((static_cast<unsigned char>(p[i]) & 0x80) != 0) *ascii = false;
  }
  return n;
}

// Walks one document of exactly `n` bytes checking that every length stays inside it. libbson
// 1.23's bson_validate accepts some truncated documents (a string with invalid UTF-8 followed by
// an element whose length runs past the end), and the views in bson.h trust lengths, so the
// structure is checked here first. Booleans must be 0 or 1. `*ascii` is cleared when a field
// name or a string value holds a byte >= 0x80 (then UTF-8 needs checking).
bool StructureOk(const char* p, size_t n, int depth, bool* ascii) {
  if (depth > kMaxNesting || n < 5 || p[n - 1] != 0) return false;
  int32_t declared;
  std::memcpy(&declared, p, 4);
  if (declared < 5 || static_cast<size_t>(declared) != n) return false;
  const size_t end = n - 1;  // the terminating NUL
  size_t pos = 4;
  while (pos < end) {
    const auto type = static_cast<int8_t>(p[pos++]);
    const size_t name_len = NameLength(p + pos, end - pos, ascii);
    if (name_len == end - pos) return false;  // no NUL before the document's own
    pos += name_len + 1;
    const size_t avail = end - pos;
    size_t value = 0;
    int32_t len = 0;
    switch (type) {
      case 1:
      case 9:
      case 17:
      case 18:  // double, date, timestamp, int64
        value = 8;
        break;
      case 16:  // int32
        value = 4;
        break;
      case 19:  // decimal128
        value = 16;
        break;
      case 7:  // ObjectId
        value = 12;
        break;
      case 8:  // bool
        if (avail < 1 || static_cast<unsigned char>(p[pos]) > 1) return false;
        value = 1;
        break;
      case 6:
      case 10:
      case -1:
      case 127:  // undefined, null, minKey, maxKey
        value = 0;
        break;
      case 2:
      case 13:
      case 14:  // string, code, symbol
      case 12:  // DBPointer: string + ObjectId
        if (!ReadLen(p + pos, avail, &len) || len < 1 || static_cast<size_t>(len) > avail - 4 ||
            p[pos + 4 + len - 1] != 0) {
          return false;
        }
        value = 4 + static_cast<size_t>(len) + (type == 12 ? 12 : 0);
        if (*ascii && !AllAscii(p + pos + 4, static_cast<size_t>(len) - 1)) *ascii = false;
        break;
      case 3:
      case 4:  // document, array
        if (!ReadLen(p + pos, avail, &len) || len < 5 || static_cast<size_t>(len) > avail ||
            !StructureOk(p + pos, static_cast<size_t>(len), depth + 1, ascii)) {
          return false;
        }
        value = static_cast<size_t>(len);
        break;
      case 5:  // binary: int32 length, subtype, bytes
        if (!ReadLen(p + pos, avail, &len) || len < 0 || static_cast<size_t>(len) > avail - 4) {
          return false;
        }
        value = 4 + 1 + static_cast<size_t>(len);
        break;
      case 11: {  // regex: two cstrings (left to libbson's UTF-8 check)
        *ascii = false;
        const void* a = std::memchr(p + pos, 0, avail);
        if (a == nullptr) return false;
        size_t first = static_cast<size_t>(static_cast<const char*>(a) - (p + pos)) + 1;
        const void* b = std::memchr(p + pos + first, 0, avail - first);
        if (b == nullptr) return false;
        value = static_cast<size_t>(static_cast<const char*>(b) - (p + pos)) + 1;
        break;
      }
      case 15: {  // code with scope: int32 total, string, document (left to libbson)
        *ascii = false;
        int32_t slen = 0;
        int32_t dlen = 0;
        if (!ReadLen(p + pos, avail, &len) || len < 14 || static_cast<size_t>(len) > avail ||
            !ReadLen(p + pos + 4, static_cast<size_t>(len) - 4, &slen) || slen < 1 ||
            static_cast<size_t>(slen) > static_cast<size_t>(len) - 8 - 5 ||
            p[pos + 8 + slen - 1] != 0 ||
            !ReadLen(p + pos + 8 + slen, static_cast<size_t>(len) - 8 - slen, &dlen) ||
            static_cast<size_t>(dlen) != static_cast<size_t>(len) - 8 - slen ||
            !StructureOk(p + pos + 8 + slen, static_cast<size_t>(dlen), depth + 1, ascii)) {
          return false;
        }
        value = static_cast<size_t>(len);
        break;
      }
      default:
        return false;
    }
    if (value > avail) return false;
    pos += value;
  }
  return pos == end;
}

}  // namespace

namespace {

// NestsDeeperThan below `doc`, whose fields are at level `level`. The recursion stops one level
// past `levels` (100 for stored documents), so its depth is bounded whatever the input; and it
// allocates nothing: it runs on every inserted document.
bool NestsDeeper(const BsonObj& doc, size_t level, size_t levels) {
  for (const BsonElement& e : doc) {
    if (e.type() != BsonType::kObject && e.type() != BsonType::kArray) continue;
    BsonObj sub = e.Obj();
    if (sub.IsEmpty()) continue;
    if (level == levels || NestsDeeper(sub, level + 1, levels)) return true;
  }
  return false;
}

}  // namespace

bool NestsDeeperThan(const BsonObj& doc, size_t levels) {
  // Each level costs its document at least 7 bytes (length, type, empty name, terminator) and
  // the innermost non-empty one 7 more, so a smaller document cannot nest that deep: most
  // measurements and documents are decided without a walk.
  if (static_cast<size_t>(doc.size()) < 7 * (levels + 1)) return false;
  return NestsDeeper(doc, 1, levels);
}

Status ValidateBson(std::string_view bytes) {
  if (bytes.size() < 5) {
    return Status(ErrorCode::kInvalidBSON, "BSON document is shorter than 5 bytes");
  }
  int32_t declared = ReadInt32(bytes.data());
  if (declared < 5 || static_cast<size_t>(declared) != bytes.size()) {
    return Status(ErrorCode::kInvalidBSON, "BSON document length " + std::to_string(declared) +
                                               " does not match the " +
                                               std::to_string(bytes.size()) + " bytes available");
  }
  bool ascii = true;
  if (!StructureOk(bytes.data(), bytes.size(), 0, &ascii)) {
    return Status(ErrorCode::kInvalidBSON, "malformed BSON document: an element runs past its end");
  }
  // Structure checked and every name and string plain ASCII: nothing left for libbson to find.
  if (ascii) return Status::OK();
  bson_t b;
  if (!bson_init_static(&b, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())) {
    return Status(ErrorCode::kInvalidBSON, "malformed BSON document");
  }
  size_t offset = 0;
  if (!bson_validate(&b, BSON_VALIDATE_UTF8_ALLOW_NULL, &offset)) {
    return Status(ErrorCode::kInvalidBSON, "invalid BSON at byte offset " + std::to_string(offset));
  }
  return Status::OK();
}

StatusWith<BsonObj> FromJson(std::string_view json) {
  bson_error_t err;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()),
                                 static_cast<ssize_t>(json.size()), &err);
  if (b == nullptr) return Status(ErrorCode::kFailedToParse, err.message);
  BsonObj out =
      BsonObj::CopyOf(std::string_view(reinterpret_cast<const char*>(bson_get_data(b)), b->len));
  bson_destroy(b);
  return out;
}

}  // namespace hourglass::bson
