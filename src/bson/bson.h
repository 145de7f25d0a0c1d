// Read-only views over BSON bytes (BsonObj, BsonElement) and a byte-buffer builder (BsonBuilder).
//
// A BsonObj either borrows its bytes (the caller keeps the buffer alive) or shares ownership of
// them (Owned(), or anything a BsonBuilder returns). Views never validate: bytes that came from
// outside the process must pass ValidateBson() first, after which every accessor is safe.
// All types here are cheap to copy and safe to use from several threads once built.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hourglass::bson {

enum class BsonType : int8_t {
  kMinKey = -1,
  kEOO = 0,
  kDouble = 1,
  kString = 2,
  kObject = 3,
  kArray = 4,
  kBinData = 5,
  kUndefined = 6,
  kObjectId = 7,
  kBool = 8,
  kDate = 9,
  kNull = 10,
  kRegex = 11,
  kDBPointer = 12,
  kCode = 13,
  kSymbol = 14,
  kCodeWScope = 15,
  kInt32 = 16,
  kTimestamp = 17,
  kInt64 = 18,
  kDecimal128 = 19,
  kMaxKey = 127,
};

// MongoDB's $type alias for a type ("double", "string", "object", ...).
std::string_view TypeName(BsonType t);

inline int32_t ReadInt32(const char* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline int64_t ReadInt64(const char* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

class BsonObj;

// `bytes` as lowercase hexadecimal digits, two per byte ("\x0a\xff" -> "0aff").
std::string LowerHex(std::string_view bytes);

struct ObjectId {
  uint8_t bytes[12];
  // A new id: 4-byte seconds, 5 per-process random bytes, 3-byte counter (the ObjectId spec).
  static ObjectId Generate();
  // An id whose timestamp is `seconds` and whose other bytes are zero (bucket ids, bounds).
  static ObjectId FromSeconds(uint32_t seconds);
  uint32_t Timestamp() const;
  std::string ToHex() const;
  bool operator==(const ObjectId& o) const { return std::memcmp(bytes, o.bytes, 12) == 0; }
};

struct Decimal128 {
  // The value decoded from BSON's IEEE 754-2008 BID encoding: (-1)^negative * coefficient *
  // 10^exponent for finite values, with coefficient < 10^34 (non-canonical coefficients read as
  // zero, as the standard says).
  struct Parts {
    enum Kind { kFinite, kInfinity, kNaN } kind = kFinite;
    bool negative = false;
    unsigned __int128 coefficient = 0;
    int exponent = 0;
  };
  static constexpr int kMaxDigits = 34;

  uint64_t low;
  uint64_t high;
  Parts Split() const;
  std::string ToString() const;
  static bool FromString(std::string_view s, Decimal128* out);
  // Nearest double (infinities/NaN preserved).
  double ToDouble() const;
  bool IsNaN() const;
};

// One element (type byte, field name, value) inside a BsonObj. A default-constructed element is
// EOO ("end of object"): eoo() is true and every accessor returns a zero value.
class BsonElement {
 public:
  BsonElement() = default;
  // The field name's length is measured once here: value() and every accessor built on it run
  // in the innermost loops of document walks.
  explicit BsonElement(const char* data)
      : data_(data), name_size_(data != nullptr && *data != 0 ? std::strlen(data + 1) : 0) {}
  // An element whose field name is known to be `name_size` bytes long (a walker that has just
  // parsed it).
  BsonElement(const char* data, size_t name_size) : data_(data), name_size_(name_size) {}

  bool eoo() const { return data_ == nullptr || *data_ == 0; }
  BsonType type() const { return eoo() ? BsonType::kEOO : static_cast<BsonType>(*data_); }
  std::string_view FieldName() const {
    return eoo() ? std::string_view() : std::string_view(data_ + 1, name_size_);
  }
  // Bytes of the whole element (type, name, value).
  size_t size() const;
  const char* raw() const { return data_; }
  const char* value() const { return data_ + 2 + name_size_; }
  size_t ValueSize() const;

  double Double() const { return type() == BsonType::kDouble ? ReadDouble() : 0.0; }
  int32_t Int32() const { return type() == BsonType::kInt32 ? ReadInt32(value()) : 0; }
  int64_t Int64() const { return type() == BsonType::kInt64 ? ReadInt64(value()) : 0; }
  bool Bool() const { return type() == BsonType::kBool && *value() != 0; }
  int64_t DateMillis() const { return type() == BsonType::kDate ? ReadInt64(value()) : 0; }
  uint64_t TimestampValue() const {
    return type() == BsonType::kTimestamp ? static_cast<uint64_t>(ReadInt64(value())) : 0;
  }
  ObjectId Oid() const;
  Decimal128 Decimal() const;
  // String, Symbol and Code values (without the trailing NUL); empty for other types.
  std::string_view Str() const;
  // Object and Array values as a borrowed view; empty object for other types.
  BsonObj Obj() const;
  // BinData: subtype and payload.
  uint8_t BinSubtype() const;
  std::string_view BinData() const;
  // Regex: pattern and options.
  std::string_view RegexPattern() const;
  std::string_view RegexOptions() const;

  bool IsNumber() const {
    auto t = type();
    return t == BsonType::kDouble || t == BsonType::kInt32 || t == BsonType::kInt64 ||
           t == BsonType::kDecimal128;
  }
  bool IsObjectOrArray() const { return type() == BsonType::kObject || type() == BsonType::kArray; }
  // Any number as a double (decimal rounded); 0 for non-numbers.
  double NumberDouble() const;
  // Any number as int64 (doubles truncated toward zero, saturating); 0 for non-numbers.
  int64_t NumberLong() const;
  // A number whose value is whole and within (-2^63, 2^63) (any numeric type: 5, 5.0,
  // NumberLong(5)), as int64; nullopt for anything else.
  std::optional<int64_t> WholeNumber() const;
  // MongoDB's truthiness: false, null, undefined, EOO and numeric zero are false.
  bool Truthy() const;

 private:
  double ReadDouble() const {
    double d;
    std::memcpy(&d, value(), 8);
    return d;
  }
  const char* data_ = nullptr;
  size_t name_size_ = 0;
};

// Bytes of a value of type `t` starting at `value` (valid BSON assumed).
size_t ValueSizeOf(BsonType t, const char* value);

// One element of a document with its name, value and value size located once, for hot
// per-document walks that need all three.
struct FieldView {
  const char* raw;  // the element: type byte, name, value
  BsonType type;
  std::string_view name;
  const char* value;
  size_t value_size;
  BsonElement Element() const { return BsonElement(raw, name.size()); }
};

// Walks the elements of a valid document: `for (FieldCursor c(doc.data()); c.Next();)
// use(c.field());`
class FieldCursor {
 public:
  explicit FieldCursor(const char* doc) : p_(doc + 4) {}
  bool Next() {
    if (*p_ == 0) return false;
    f_.raw = p_;
    f_.type = static_cast<BsonType>(*p_);
    f_.name = std::string_view(p_ + 1);
    f_.value = p_ + 2 + f_.name.size();
    f_.value_size = ValueSizeOf(f_.type, f_.value);
    p_ = f_.value + f_.value_size;
    return true;
  }
  const FieldView& field() const { return f_; }

 private:
  const char* p_;
  FieldView f_{};
};

class BsonObj {
 public:
  // The empty document {}.
  BsonObj();
  // Borrows `data`, which must hold a valid BSON document for the view's lifetime.
  explicit BsonObj(const char* data) : data_(data) {}
  // Shares ownership of `buffer`, which holds one BSON document starting at offset 0.
  explicit BsonObj(std::shared_ptr<const std::string> buffer)
      : data_(buffer->data()), owner_(std::move(buffer)) {}
  // Shares ownership of `buffer` and views the document at `data`, which lies inside it (a
  // document inside a received message, kept without a copy).
  BsonObj(std::shared_ptr<const std::string> buffer, const char* data)
      : data_(data), owner_(std::move(buffer)) {}
  // Copies `bytes` (which must hold one valid document) into an owned object.
  static BsonObj CopyOf(std::string_view bytes);

  const char* data() const { return data_; }
  int32_t size() const { return ReadInt32(data_); }
  std::string_view bytes() const { return {data_, static_cast<size_t>(size())}; }
  bool IsEmpty() const { return size() <= 5; }
  bool IsOwned() const { return owner_ != nullptr; }
  // An owning copy (or *this if already owning).
  BsonObj Owned() const;
  int NumFields() const;

  class Iterator {
   public:
    Iterator(const char* p, const char* end) : p_(p), end_(end) {}
    BsonElement operator*() const { return BsonElement(p_); }
    Iterator& operator++() {
      p_ += BsonElement(p_).size();
      return *this;
    }
    bool operator!=(const Iterator& o) const { return p_ != o.p_; }
    bool operator==(const Iterator& o) const { return p_ == o.p_; }

   private:
    const char* p_;
    const char* end_;
  };
  Iterator begin() const { return Iterator(data_ + 4, data_ + size() - 1); }
  Iterator end() const { return Iterator(data_ + size() - 1, data_ + size() - 1); }

  // The first element named `name` (no dotted-path handling); EOO if absent.
  BsonElement operator[](std::string_view name) const { return GetField(name); }
  BsonElement GetField(std::string_view name) const;
  // Follows a dotted path through nested objects (and arrays by numeric index); EOO if any
  // step is missing. No implicit array traversal: the query layer does that.
  BsonElement GetPath(std::string_view dotted) const;
  BsonElement FirstElement() const { return *begin(); }
  bool HasField(std::string_view name) const { return !GetField(name).eoo(); }

  // Relaxed / canonical Extended JSON (via libbson), for logs, tests and diagnostics.
  std::string ToJson() const;
  std::string ToCanonicalJson() const;

  // Bytes are identical.
  bool BinaryEqual(const BsonObj& o) const { return bytes() == o.bytes(); }

 private:
  const char* data_;
  std::shared_ptr<const std::string> owner_;
};

// Builds one BSON document in a growable buffer. Nested documents are written in place with
// OpenObject/OpenArray ... Close, or copied in with AppendObject/AppendArray.
class BsonBuilder {
 public:
  BsonBuilder();

  BsonBuilder& AppendDouble(std::string_view name, double v);
  BsonBuilder& AppendString(std::string_view name, std::string_view v);
  BsonBuilder& AppendObject(std::string_view name, const BsonObj& v);
  BsonBuilder& AppendArray(std::string_view name, const BsonObj& v);
  BsonBuilder& AppendBinData(std::string_view name, uint8_t subtype, std::string_view data);
  BsonBuilder& AppendUndefined(std::string_view name);
  BsonBuilder& AppendObjectId(std::string_view name, const ObjectId& v);
  BsonBuilder& AppendBool(std::string_view name, bool v);
  BsonBuilder& AppendDate(std::string_view name, int64_t millis);
  BsonBuilder& AppendNull(std::string_view name);
  BsonBuilder& AppendRegex(std::string_view name, std::string_view pattern,
                           std::string_view options);
  BsonBuilder& AppendCode(std::string_view name, std::string_view code);
  BsonBuilder& AppendInt32(std::string_view name, int32_t v);
  BsonBuilder& AppendTimestamp(std::string_view name, uint64_t v);
  BsonBuilder& AppendInt64(std::string_view name, int64_t v);
  BsonBuilder& AppendDecimal(std::string_view name, const Decimal128& v);
  BsonBuilder& AppendMinKey(std::string_view name);
  BsonBuilder& AppendMaxKey(std::string_view name);
  // Copies `e`'s value under `name` (its own name if `name` is omitted).
  BsonBuilder& AppendElement(const BsonElement& e);
  BsonBuilder& AppendElementAs(const BsonElement& e, std::string_view name);
  // Appends the elements of `obj` (not wrapped in a sub-document).
  BsonBuilder& AppendElementsOf(const BsonObj& obj);

  // Starts a nested object/array written in place; returns a token for Close().
  size_t OpenObject(std::string_view name);
  size_t OpenArray(std::string_view name);
  void Close(size_t token);

  size_t Length() const { return buf_.size() + 1; }

  // Finishes the document and returns it (owned). The builder is left empty and reusable.
  BsonObj Obj();
  // Finishes and returns the raw bytes.
  std::string Release();
  // Finishes the document in place and returns a view of it (not owned), valid until the
  // builder is next changed; append nothing more before Reset(). For decoding many small
  // documents into one buffer without allocating for each.
  BsonObj View();
  // Empties the builder, keeping its buffer's capacity.
  void Reset();

 private:
  void AppendHeader(BsonType t, std::string_view name);
  void AppendRaw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  std::string buf_;
  std::vector<size_t> open_;
};

// Builds arrays with keys "0", "1", ... supplied automatically.
class BsonArrayBuilder {
 public:
  BsonBuilder& builder() { return b_; }
  std::string NextKey() { return std::to_string(n_++); }
  BsonArrayBuilder& Append(const BsonElement& e) {
    b_.AppendElementAs(e, NextKey());
    return *this;
  }
  BsonArrayBuilder& AppendObject(const BsonObj& o) {
    b_.AppendObject(NextKey(), o);
    return *this;
  }
  BsonArrayBuilder& AppendString(std::string_view s) {
    b_.AppendString(NextKey(), s);
    return *this;
  }
  int count() const { return n_; }
  BsonObj Obj() { return b_.Obj(); }

 private:
  BsonBuilder b_;
  int n_ = 0;
};

// Checks that `bytes` holds exactly one well-formed BSON document (lengths, types, UTF-8 of
// strings, nested documents). Returns InvalidBSON (22) naming the problem otherwise.
Status ValidateBson(std::string_view bytes);

// Whether `doc` nests more than `levels` levels deep: its top-level fields are at level 1, the
// fields of a document or array in it at level 2, and so on. Empty documents and arrays add no
// level (MongoDB's rule for what it stores).
bool NestsDeeperThan(const BsonObj& doc, size_t levels);

// Parses Extended JSON (canonical or relaxed) into a document; FailedToParse on error.
StatusWith<BsonObj> FromJson(std::string_view json);

}  // namespace hourglass::bson
