// Value: one owned BSON value, or "missing", as produced and consumed by aggregation expressions.
//
// A Value keeps its payload in a small owned document {"": v} so it can hand out a BsonElement
// view for free and be copied cheaply (the buffer is shared, never mutated). Missing is the
// empty document: element() is then EOO and type() is BsonType::kEOO. Missing is distinct from
// null: a field path to an absent field yields missing, and AppendTo() writes nothing for it.
// Values are immutable and safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bson/bson.h"
#include "bson/bson_compare.h"

namespace hourglass::pipeline {

class Value {
 public:
  // Missing.
  Value() = default;

  static Value Missing() { return Value(); }
  // Copies `e`'s value (its name is dropped). An EOO element gives missing.
  static Value FromElement(const bson::BsonElement& e);
  // The value held by `holder`, a document {"": v} as AppendTo(b, "") writes it (empty:
  // missing), sharing its buffer instead of copying.
  static Value FromHolder(const bson::BsonObj& holder) { return Value(holder); }
  static Value Int(int32_t v);
  static Value Long(int64_t v);
  static Value Double(double v);
  static Value Decimal(const bson::Decimal128& v);
  static Value String(std::string_view v);
  static Value Bool(bool v);
  static Value Null();
  static Value Undefined();
  static Value Date(int64_t millis);
  static Value Oid(const bson::ObjectId& v);
  static Value Timestamp(uint64_t v);
  static Value Object(const bson::BsonObj& v);
  // Missing members become null (MongoDB's rule for array literals and results).
  static Value Array(const std::vector<Value>& v);
  // An int32 when `v` fits, else an int64.
  static Value IntOrLong(int64_t v);

  bson::BsonType type() const { return element().type(); }
  bson::BsonElement element() const { return holder_.FirstElement(); }

  bool missing() const { return holder_.IsEmpty(); }
  // Missing, null or undefined: the values most operators map to null.
  bool nullish() const {
    auto t = type();
    return t == bson::BsonType::kEOO || t == bson::BsonType::kNull ||
           t == bson::BsonType::kUndefined;
  }
  bool numeric() const { return element().IsNumber(); }
  bool IsArray() const { return type() == bson::BsonType::kArray; }
  bool IsObject() const { return type() == bson::BsonType::kObject; }
  bool IsString() const { return type() == bson::BsonType::kString; }
  bool IsDate() const { return type() == bson::BsonType::kDate; }

  // Accessors with BsonElement's semantics (zero values for other types).
  double NumberDouble() const { return element().NumberDouble(); }
  int64_t NumberLong() const { return element().NumberLong(); }
  std::string_view Str() const { return element().Str(); }
  bool Truthy() const { return element().Truthy(); }
  int64_t DateMillis() const { return element().DateMillis(); }
  // The object or array payload (borrowing this Value's buffer, which must stay alive).
  bson::BsonObj Obj() const { return element().Obj(); }
  // The members of an array (empty for non-arrays).
  std::vector<Value> ArrayValues() const;

  // Appends the value under `name`; appends nothing when missing.
  void AppendTo(bson::BsonBuilder& b, std::string_view name) const;

  // Relaxed extended JSON of the value, for error messages ("missing" when missing).
  std::string ToString() const;

 private:
  explicit Value(bson::BsonObj holder) : holder_(std::move(holder)) {}
  bson::BsonObj holder_;
};

// Canonical BSON order (bson::CompareElementValues); missing orders before every other value and
// equals only missing. `strings`: the collation strings compare under (null: simple).
int Compare(const Value& a, const Value& b, const bson::StringComparator* strings = nullptr);
inline bool ValuesEqual(const Value& a, const Value& b,
                        const bson::StringComparator* strings = nullptr) {
  return Compare(a, b, strings) == 0;
}

struct ValueLess {
  const bson::StringComparator* strings = nullptr;  // null: simple
  bool operator()(const Value& a, const Value& b) const { return Compare(a, b, strings) < 0; }
};

}  // namespace hourglass::pipeline
