#include "bsoncolumn/bson_column_decoder.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>

#include "bsoncolumn/bson_column_values.h"
#include "bsoncolumn/simple8b.h"

namespace hourglass::bsoncolumn {

namespace {

using bson::BsonType;

Status Corrupt(const std::string& what, size_t offset) {
  return Status(ErrorCode::kInvalidBSON,
                "invalid BSONColumn: " + what + " at offset " + std::to_string(offset));
}

std::string Hex(uint8_t c) {
  static const char* kDigits = "0123456789abcdef";
  return std::string("0x") + kDigits[c >> 4] + kDigits[c & 0xF];
}

void AppendInt32(std::string& out, int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void AppendInt64(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

// The value size of an element of type `t` whose value starts at `v` with `avail` bytes left;
// nullopt if it runs past the end or its type cannot appear in a column.
std::optional<size_t> BoundedValueSize(BsonType t, const char* v, size_t avail) {
  auto length_prefixed = [&](size_t extra, size_t min_len) -> std::optional<size_t> {
    if (avail < 4) return std::nullopt;
    const int32_t len = bson::ReadInt32(v);
    if (len < static_cast<int32_t>(min_len)) return std::nullopt;
    const size_t total = 4 + extra + static_cast<size_t>(len);
    if (total > avail) return std::nullopt;
    return total;
  };
  auto fixed = [&](size_t n) -> std::optional<size_t> {
    if (n > avail) return std::nullopt;
    return n;
  };
  switch (t) {
    case BsonType::kDouble:
    case BsonType::kDate:
    case BsonType::kTimestamp:
    case BsonType::kInt64:
      return fixed(8);
    case BsonType::kString:
    case BsonType::kCode:
    case BsonType::kSymbol:
      return length_prefixed(0, 1);
    case BsonType::kObject:
    case BsonType::kArray: {
      if (avail < 5) return std::nullopt;
      const int32_t len = bson::ReadInt32(v);
      if (len < 5 || static_cast<size_t>(len) > avail) return std::nullopt;
      return static_cast<size_t>(len);
    }
    case BsonType::kBinData:
      return length_prefixed(1, 0);
    case BsonType::kUndefined:
    case BsonType::kNull:
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
      return 0;
    case BsonType::kObjectId:
      return fixed(12);
    case BsonType::kBool:
      return fixed(1);
    case BsonType::kRegex: {
      const void* nul1 = std::memchr(v, 0, avail);
      if (nul1 == nullptr) return std::nullopt;
      const size_t first = static_cast<const char*>(nul1) - v + 1;
      const void* nul2 = std::memchr(v + first, 0, avail - first);
      if (nul2 == nullptr) return std::nullopt;
      return static_cast<const char*>(nul2) - v + 1;
    }
    case BsonType::kDBPointer: {
      auto n = length_prefixed(0, 1);
      if (!n || *n + 12 > avail) return std::nullopt;
      return *n + 12;
    }
    case BsonType::kInt32:
      return fixed(4);
    case BsonType::kDecimal128:
      return fixed(16);
    default:
      return std::nullopt;  // EOO, CodeWScope, unknown types
  }
}

// value = the n bytes at v; the common case (the same size as before) without string
// bookkeeping, since this runs once per decoded cell.
inline void SetFixed(std::string& value, const void* v, size_t n) {
  if (value.size() == n) {
    std::memcpy(value.data(), v, n);
  } else {
    value.assign(static_cast<const char*>(v), n);
  }
}

// Whether a value of type `t` has a fixed size (no length, terminator or nested document).
bool FixedSize(BsonType t) {
  switch (t) {
    case BsonType::kDouble:
    case BsonType::kDate:
    case BsonType::kTimestamp:
    case BsonType::kInt64:
    case BsonType::kInt32:
    case BsonType::kDecimal128:
    case BsonType::kObjectId:
    case BsonType::kBool:
    case BsonType::kUndefined:
    case BsonType::kNull:
    case BsonType::kMinKey:
    case BsonType::kMaxKey:
      return true;
    default:
      return false;
  }
}

bool KnownLiteralType(uint8_t c) { return (c >= 0x01 && c <= 0x13) || c == 0x7F || c == 0xFF; }

// Decoding state of one stream: the regular stream, or one leaf of an interleaved section.
struct Stream {
  bool has_last = false;
  BsonType type = BsonType::kEOO;
  std::string value;  // value bytes of the last value
  bool is128 = false;
  bool dod = false;
  // After an interleaved section the regular stream holds the last row without encoded state:
  // only repeats (and doubles, which re-encode at each block) are possible.
  bool only_repeat = false;
  int64_t enc64 = 0;      // last encoded value, or for delta-of-delta types the last delta
  int64_t dod_value = 0;  // delta-of-delta types: the last encoded value
  int128 enc128 = 0;
  int scale = kScaleMemoryAsInteger;

  bool block_seen = false;               // a Simple-8b block was loaded since the last literal
  std::optional<uint128> last_slot = 0;  // the last Simple-8b value, repeated by RLE words
  const char* next_word = nullptr;
  int words_left = 0;
  // The slots of the word being read: slots[slot_pos, slot_count) are DecodeSimple8bWord's
  // output, and only those are read. Left uninitialized: zero-filling their 2 KB would cost
  // each column (and each leaf of an interleaved section) as much as decoding a few hundred
  // cells of a run-length-encoded one.
  union Slots {
    Slots() {}
    Simple8bSlot<uint128> slot[60];
  } slots;
  int slot_count = 0;
  int slot_pos = 0;
  int rle_left = 0;

  void LoadLiteral(BsonType t, std::string_view v) {
    has_last = true;
    only_repeat = false;
    type = t;
    value.assign(v);
    is128 = Uses128Bit(t);
    dod = UsesDeltaOfDelta(t);
    enc64 = 0;
    dod_value = 0;
    enc128 = 0;
    block_seen = false;
    last_slot = 0;
    words_left = 0;
    slot_count = slot_pos = rle_left = 0;
    const bson::BsonElement e = Element();
    switch (t) {
      case BsonType::kString:
      case BsonType::kCode:
        enc128 = EncodeString(e.Str()).value_or(0);
        break;
      case BsonType::kBinData:
        enc128 = EncodeBinary(e.BinData()).value_or(0);
        break;
      case BsonType::kDecimal128:
        enc128 = EncodeDecimal(e.Decimal());
        break;
      case BsonType::kObjectId:
        enc64 = EncodeObjectId(e.Oid());
        break;
      case BsonType::kDate:
      case BsonType::kInt64:
      case BsonType::kTimestamp:
        enc64 = bson::ReadInt64(value.data());
        break;
      case BsonType::kBool:
        enc64 = value[0] != 0;
        break;
      case BsonType::kInt32:
        enc64 = bson::ReadInt32(value.data());
        break;
      default:
        break;
    }
    if (dod) {
      dod_value = enc64;
      enc64 = 0;
    }
  }

  // An element view of the last value (type, empty name, value), valid until the next change.
  bson::BsonElement Element() {
    scratch.clear();
    scratch.push_back(static_cast<char>(type));
    scratch.push_back('\0');
    scratch.append(value);
    return bson::BsonElement(scratch.data(), 0);
  }
  std::string scratch;
};

// Decodes into a Sink, which receives each cell in row order as Missing() or
// Value(type, value bytes); the value bytes are valid only during the call.
template <typename Sink>
struct Decoder {
  Sink& sink;
  const char* begin;
  const char* end;
  size_t Offset(const char* p) const { return static_cast<size_t>(p - begin); }

  // Parses the literal at `p`; returns its total size.
  StatusWith<size_t> ParseLiteral(const char* p, BsonType* type, std::string_view* value) {
    const uint8_t c = static_cast<uint8_t>(*p);
    if (!KnownLiteralType(c) || c == static_cast<uint8_t>(BsonType::kCodeWScope)) {
      return Corrupt("literal of unsupported BSON type " + Hex(c), Offset(p));
    }
    if (end - p < 2) return Corrupt("truncated literal", Offset(p));
    if (p[1] != '\0') return Corrupt("literal with a non-empty field name", Offset(p));
    const BsonType t = static_cast<BsonType>(static_cast<int8_t>(c));
    const char* v = p + 2;
    auto size = BoundedValueSize(t, v, static_cast<size_t>(end - v));
    if (!size) return Corrupt("truncated or malformed literal", Offset(p));
    if (t == BsonType::kBool && static_cast<uint8_t>(*v) > 1) {
      return Corrupt("literal boolean that is neither 0 nor 1", Offset(p));
    }
    if (!FixedSize(t)) {
      // Full validation (nested documents, strings' terminators, UTF-8) through the document
      // validator: the element wrapped in a one-field document. A value of fixed size
      // (numbers, dates, ObjectIds, booleans, null, ...) is checked in place: it is whole once
      // it fits, which BoundedValueSize checked (and a boolean's byte, above), and that is all
      // the validator would check of it. No document is built for the literals of numeric
      // columns, one per column and more after each change of scale.
      std::string doc(4, '\0');
      doc.append(p, 2 + *size);
      doc.push_back('\0');
      const int32_t len = static_cast<int32_t>(doc.size());
      std::memcpy(doc.data(), &len, 4);
      Status st = bson::ValidateBson(doc);
      if (!st.ok()) return Corrupt("malformed literal (" + st.reason() + ")", Offset(p));
    }
    *type = t;
    *value = std::string_view(v, *size);
    return 2 + *size;
  }

  // Loads the Simple-8b control block at `p` into `s`; returns its size.
  StatusWith<size_t> StartBlock(Stream& s, const char* p) {
    const uint8_t c = static_cast<uint8_t>(*p);
    const int scale = ScaleIndexOfControl(c);
    if (scale < 0) return Corrupt("invalid control byte " + Hex(c), Offset(p));
    const int words = (c & 0x0F) + 1;
    if (end - (p + 1) < 8 * words) {
      return Corrupt("truncated Simple-8b block of " + std::to_string(words) + " words", Offset(p));
    }
    if (s.has_last && s.type == BsonType::kDouble) {
      double d;
      std::memcpy(&d, s.value.data(), 8);
      auto enc = EncodeDouble(d, scale);
      if (!enc) {
        return Corrupt("previous double cannot be encoded at the block's scale " + Hex(c),
                       Offset(p));
      }
      s.enc64 = *enc;
    }
    s.scale = scale;
    if (!s.block_seen) s.last_slot = 0;
    s.block_seen = true;
    s.next_word = p + 1;
    s.words_left = words;
    s.slot_count = s.slot_pos = s.rle_left = 0;
    return 1 + 8 * static_cast<size_t>(words);
  }

  // The next Simple-8b value of the block loaded in `s` (nullopt = skip); false once the block
  // is exhausted.
  StatusWith<bool> NextSlot(Stream& s, std::optional<uint128>* out) {
    for (;;) {
      if (s.rle_left > 0) {
        --s.rle_left;
        *out = s.last_slot;
        return true;
      }
      if (s.slot_pos < s.slot_count) {
        const auto& slot = s.slots.slot[s.slot_pos++];
        s.last_slot = slot.skip ? std::nullopt : std::optional<uint128>(slot.value);
        *out = s.last_slot;
        return true;
      }
      if (s.words_left == 0) return false;
      uint64_t word;
      std::memcpy(&word, s.next_word, 8);
      const char* at = s.next_word;
      s.next_word += 8;
      --s.words_left;
      int rle = 0;
      auto n = DecodeSimple8bWord(word, s.is128, s.slots.slot, &rle);
      if (!n.ok()) return Corrupt(n.status().reason(), Offset(at));
      if (n.value() == 0) {
        s.rle_left = rle;
      } else {
        s.slot_count = n.value();
        s.slot_pos = 0;
      }
    }
  }

  // Applies one Simple-8b value to `s`. *present is false for a skip.
  Status Apply(Stream& s, const std::optional<uint128>& slot, bool* present, const char* at) {
    if (!slot) {
      *present = false;
      return Status::OK();
    }
    if (!s.has_last) {
      // No value yet: a zero delta repeats "nothing".
      if (*slot == 0) {
        *present = false;
        return Status::OK();
      }
      return Corrupt("delta without a previous value", Offset(at));
    }
    *present = true;
    if (s.is128) {
      if (*slot == 0) return Status::OK();
      s.enc128 = WrapAdd(s.enc128, UnZigZag128(*slot));
      switch (s.type) {
        case BsonType::kString:
        case BsonType::kCode: {
          const std::string str = DecodeString(s.enc128);
          s.value.clear();
          AppendInt32(s.value, static_cast<int32_t>(str.size() + 1));
          s.value.append(str);
          s.value.push_back('\0');
          return Status::OK();
        }
        case BsonType::kBinData: {
          const int32_t len = bson::ReadInt32(s.value.data());
          if (len > 16) return Corrupt("delta for a BinData longer than 16 bytes", Offset(at));
          s.value.resize(5);
          s.value.append(DecodeBinary(s.enc128, static_cast<size_t>(len)));
          return Status::OK();
        }
        case BsonType::kDecimal128: {
          const bson::Decimal128 d = DecodeDecimal(s.enc128);
          s.value.clear();
          AppendInt64(s.value, static_cast<int64_t>(d.low));
          AppendInt64(s.value, static_cast<int64_t>(d.high));
          return Status::OK();
        }
        default:
          return Corrupt("128-bit delta for type " + std::string(bson::TypeName(s.type)),
                         Offset(at));
      }
    }
    const uint64_t u = static_cast<uint64_t>(*slot);
    if (!s.dod && u == 0) return Status::OK();
    if (s.only_repeat && s.type != BsonType::kDouble) {
      return Corrupt("non-zero delta after an interleaved section", Offset(at));
    }
    const int64_t d = UnZigZag64(u);
    int64_t v;
    if (s.dod) {
      s.enc64 = WrapAdd(s.enc64, d);
      s.dod_value = WrapAdd(s.dod_value, s.enc64);
      v = s.dod_value;
    } else {
      s.enc64 = WrapAdd(s.enc64, d);
      v = s.enc64;
    }
    switch (s.type) {
      case BsonType::kDouble: {
        const double x = DecodeDouble(v, s.scale);
        SetFixed(s.value, &x, 8);
        return Status::OK();
      }
      case BsonType::kInt32: {
        if (v < INT32_MIN || v > INT32_MAX) {
          return Corrupt("int32 delta out of range", Offset(at));
        }
        const int32_t x = static_cast<int32_t>(v);
        SetFixed(s.value, &x, 4);
        return Status::OK();
      }
      case BsonType::kInt64:
      case BsonType::kDate:
      case BsonType::kTimestamp:
        SetFixed(s.value, &v, 8);
        return Status::OK();
      case BsonType::kBool:
        if (v != 0 && v != 1) return Corrupt("boolean delta out of range", Offset(at));
        s.value.assign(1, static_cast<char>(v));
        return Status::OK();
      case BsonType::kObjectId: {
        bson::ObjectId prev;
        std::memcpy(prev.bytes, s.value.data(), 12);
        const bson::ObjectId next = DecodeObjectId(v, prev);
        s.value.assign(reinterpret_cast<const char*>(next.bytes), 12);
        return Status::OK();
      }
      default:
        return Corrupt("non-zero delta for type " + std::string(bson::TypeName(s.type)),
                       Offset(at));
    }
  }

  struct Interleaved {
    bool arrays;
    std::vector<Stream> states;
    size_t index = 0;
    size_t processed = 0;
  };

  static void CollectLeaves(const char* doc, bool arrays, std::vector<bson::FieldView>* leaves) {
    for (bson::FieldCursor c(doc); c.Next();) {
      const auto& f = c.field();
      if (f.type == BsonType::kObject || (arrays && f.type == BsonType::kArray)) {
        CollectLeaves(f.value, arrays, leaves);
      } else {
        leaves->push_back(f);
      }
    }
  }

  // Writes one row's fields for the reference (sub)document `ref` into `out`. Returns false if
  // the first leaf of the row found the end of the interleaved section.
  StatusWith<bool> VisitRow(const char* ref, Interleaved& il, const char*& p, std::string& out) {
    for (bson::FieldCursor c(ref); c.Next();) {
      const auto& f = c.field();
      if (f.type == BsonType::kObject || (il.arrays && f.type == BsonType::kArray)) {
        const size_t start = out.size();
        out.push_back(static_cast<char>(f.type));
        out.append(f.name);
        out.push_back('\0');
        const size_t size_pos = out.size();
        out.append(4, '\0');
        HG_ASSIGN_OR_RETURN(bool more, VisitRow(f.value, il, p, out));
        if (!more) return false;
        const bool ref_empty = bson::ReadInt32(f.value) <= 5;
        if (out.size() == size_pos + 4 && !ref_empty) {
          out.resize(start);  // every leaf missing: the sub-document is omitted
        } else {
          out.push_back('\0');
          const int32_t len = static_cast<int32_t>(out.size() - size_pos);
          std::memcpy(out.data() + size_pos, &len, 4);
        }
        continue;
      }
      Stream& s = il.states[il.index++];
      std::optional<uint128> slot;
      HG_ASSIGN_OR_RETURN(bool got, NextSlot(s, &slot));
      bool present = true;
      const char* at = p;
      if (!got) {
        if (p >= end) return Corrupt("column ends inside an interleaved section", Offset(p));
        const uint8_t ctl = static_cast<uint8_t>(*p);
        if (ctl == kEndOfColumn) {
          if (il.processed != 0) {
            return Corrupt("interleaved section ends in the middle of a row", Offset(p));
          }
          ++p;
          return false;
        }
        if (IsLiteralControl(ctl)) {
          BsonType t;
          std::string_view v;
          HG_ASSIGN_OR_RETURN(size_t n, ParseLiteral(p, &t, &v));
          s.LoadLiteral(t, v);
          p += n;
        } else if (IsInterleavedStart(ctl)) {
          return Corrupt("interleaved start inside an interleaved section", Offset(p));
        } else {
          HG_ASSIGN_OR_RETURN(size_t n, StartBlock(s, p));
          p += n;
          HG_ASSIGN_OR_RETURN(bool first, NextSlot(s, &slot));
          if (!first) return Corrupt("empty Simple-8b block", Offset(at));
          HG_RETURN_IF_ERROR(Apply(s, slot, &present, at));
        }
      } else {
        HG_RETURN_IF_ERROR(Apply(s, slot, &present, at));
      }
      ++il.processed;
      if (present) {
        out.push_back(static_cast<char>(s.type));
        out.append(f.name);
        out.push_back('\0');
        out.append(s.value);
      }
    }
    return true;
  }

  Status DecodeInterleaved(const char*& p, Stream& regular) {
    const uint8_t ctl = static_cast<uint8_t>(*p);
    const BsonType root = ctl == kInterleavedStartArray ? BsonType::kArray : BsonType::kObject;
    const char* ref = p + 1;
    if (end - ref < 5) return Corrupt("truncated interleaved reference object", Offset(p));
    const int32_t ref_len = bson::ReadInt32(ref);
    if (ref_len < 5 || ref_len > end - ref) {
      return Corrupt("truncated interleaved reference object", Offset(p));
    }
    Status st = bson::ValidateBson(std::string_view(ref, static_cast<size_t>(ref_len)));
    if (!st.ok()) {
      return Corrupt("malformed interleaved reference object (" + st.reason() + ")", Offset(p));
    }
    Interleaved il;
    il.arrays = ctl != kInterleavedStartLegacy;
    std::vector<bson::FieldView> leaves;
    CollectLeaves(ref, il.arrays, &leaves);
    if (leaves.empty()) {
      return Corrupt("interleaved reference object without scalar fields", Offset(p));
    }
    il.states.resize(leaves.size());
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (leaves[i].type == BsonType::kCodeWScope) {
        return Corrupt("CodeWScope in an interleaved reference object", Offset(p));
      }
      il.states[i].LoadLiteral(leaves[i].type,
                               std::string_view(leaves[i].value, leaves[i].value_size));
    }
    p = ref + ref_len;
    std::string row;       // the row being built
    std::string last_row;  // the section's last complete row (the end leaves `row` partial)
    bool rows = false;
    for (;;) {
      if constexpr (Sink::kMayGiveUp) {
        if (sink.gave_up) return Status::OK();
      }
      row.assign(4, '\0');
      il.index = 0;
      il.processed = 0;
      HG_ASSIGN_OR_RETURN(bool more, VisitRow(ref, il, p, row));
      if (!more) break;
      HG_RETURN_IF_ERROR(RoomForCell(p));
      rows = true;
      if (row.size() == 4) {
        EmitMissing();
        continue;
      }
      row.push_back('\0');
      const int32_t len = static_cast<int32_t>(row.size());
      std::memcpy(row.data(), &len, 4);
      EmitValue(root, row);
      std::swap(row, last_row);
    }
    // Regular decoding resumes with the last cell so far as the previous value: the section's
    // last row, or the cell before the section when the section holds no rows (which is the
    // regular stream's value).
    if (last_missing_) {
      regular = Stream();
      return Status::OK();
    }
    Stream resumed;
    if (rows) {
      resumed.LoadLiteral(root, last_row);
    } else {
      resumed.LoadLiteral(regular.type, regular.value);
    }
    resumed.is128 = false;
    resumed.dod = false;
    resumed.only_repeat = true;
    regular = std::move(resumed);
    return Status::OK();
  }

  // Every cell goes through these: the interleaved sections need to know the last one.
  // OK while one more cell fits under max_cells: a few bytes of RLE stand for millions of
  // cells, so a reader that knows the row count (a bucket's control.count) stops the decoder
  // before it builds more.
  Status RoomForCell(const char* at) const {
    if (emitted_ < max_cells) return Status::OK();
    return CapReached(at);
  }
  Status CapReached(const char* at) const {
    return Corrupt("more than the " + std::to_string(max_cells) + " cells expected", Offset(at));
  }
  size_t max_cells = std::numeric_limits<size_t>::max();
  size_t emitted_ = 0;  // cells handed to the sink so far

  void EmitMissing() {
    ++emitted_;
    last_missing_ = true;
    sink.Missing();
  }
  void EmitValue(BsonType t, std::string_view value) {
    ++emitted_;
    last_missing_ = false;
    sink.Value(t, value);
  }
  bool last_missing_ = true;  // also before the first cell: nothing to resume from

  Status Run() {
    Stream regular;
    const char* p = begin;
    if (begin == end) return Corrupt("empty column", 0);
    for (;;) {
      if constexpr (Sink::kMayGiveUp) {
        if (sink.gave_up) return Status::OK();
      }
      std::optional<uint128> slot;
      const char* at = p;
      HG_ASSIGN_OR_RETURN(bool got, NextSlot(regular, &slot));
      if (got) {
        HG_RETURN_IF_ERROR(RoomForCell(at));
        bool present;
        HG_RETURN_IF_ERROR(Apply(regular, slot, &present, at));
        if (present) {
          EmitValue(regular.type, regular.value);
        } else {
          EmitMissing();
        }
        continue;
      }
      if (p >= end) return Corrupt("column does not end with 0x00", Offset(p));
      const uint8_t ctl = static_cast<uint8_t>(*p);
      if (ctl == kEndOfColumn) {
        if (p + 1 != end) return Corrupt("bytes after the end of the column", Offset(p + 1));
        return Status::OK();
      }
      if (IsLiteralControl(ctl)) {
        BsonType t;
        std::string_view v;
        HG_ASSIGN_OR_RETURN(size_t n, ParseLiteral(p, &t, &v));
        HG_RETURN_IF_ERROR(RoomForCell(p));
        regular.LoadLiteral(t, v);
        EmitValue(regular.type, regular.value);
        p += n;
      } else if (IsInterleavedStart(ctl)) {
        HG_RETURN_IF_ERROR(DecodeInterleaved(p, regular));
      } else {
        HG_ASSIGN_OR_RETURN(size_t n, StartBlock(regular, p));
        p += n;
        if constexpr (Sink::kFastBlocks) {
          if (FastBlockApplies(regular) && sink.TakesCursor(regular.type)) {
            HG_RETURN_IF_ERROR(FastBlocks(regular, p));
          }
        }
      }
    }
  }

  // FastBlocks' loop over words of one 60-bit value (selector 14) of a stream of a 64-bit type
  // whose value is its running encoding, from `w` until the first other word or `w_end`; returns
  // where it stopped. Its state lives in locals of its own: inside FastBlocks, with all that
  // function keeps live, the compiler kept the word pointer and the running value on the stack, and
  // each cell waited for a store and a reload of both.
  template <typename Cursor>
  [[gnu::noinline]] static const char* Words60(const char* w, const char* w_end, Cursor& cursor,
                                               int64_t& enc64, uint64_t& last, bool& last_skip) {
    Cursor out = cursor;
    int64_t enc = enc64;
    uint64_t l = last;
    bool skip = last_skip;
    // A skip: selector 14 with every value bit set.
    constexpr uint64_t kSkip = ~uint64_t{1};
    for (; w != w_end; w += 8) {
      uint64_t word;
      std::memcpy(&word, w, 8);
      // The column is read once, front to back, mostly from memory, not the caches: a load
      // waited on a cache miss at the start of each line.
      __builtin_prefetch(w + 1024);
      if ((word & 0xF) != 14) break;
      skip = word == kSkip;
      if (skip) [[unlikely]] {
        out.Missing();
        continue;
      }
      l = word >> 4;
      enc = WrapAdd(enc, UnZigZag64(l));
      out.Value64(static_cast<uint64_t>(enc));
    }
    cursor = out;
    enc64 = enc;
    last = l;
    last_skip = skip;
    return w;
  }

  // Whether FastBlock can decode the block just loaded into `s`: a 64-bit stream of a numeric
  // type with a previous value, which is what nearly every measurement column holds.
  static bool FastBlockApplies(const Stream& s) {
    if (!s.has_last || s.is128 || s.only_repeat) return false;
    switch (s.type) {
      case BsonType::kDouble:
      case BsonType::kInt64:
      case BsonType::kDate:
      case BsonType::kTimestamp:
      case BsonType::kInt32:
        return true;
      default:
        return false;
    }
  }

  // Decodes every word of the block loaded into `s`, and of the blocks that follow it, at once,
  // with the same results and errors as cell by cell through NextSlot and Apply, but without
  // the per-slot state (a 128-bit optional per slot) and writing the cells straight into the
  // sink's buffers through its cursor, a small value kept in locals: stores through the buffers'
  // char pointers would otherwise force every member back to memory per cell. `p` is the
  // position after the loaded block (where Apply's errors are reported, as on the general path);
  // it advances past each following block taken here. A following block is left to Run (which
  // loads it with StartBlock and reports its errors) when anything about it is unusual: a bad
  // control byte, truncation, or a previous double its scale cannot encode. Only for a sink
  // with a Cursor (kFastBlocks).
  // (Its own function, out of Run, whose size would otherwise keep the per-cell lambdas from
  // being inlined.)
  [[gnu::noinline]] Status FastBlocks(Stream& s, const char*& p) {
    // The last slot (repeated by RLE words); s.last_slot is nullopt after a skip.
    bool last_skip = !s.last_slot.has_value();
    uint64_t last = last_skip ? 0 : static_cast<uint64_t>(*s.last_slot);
    const bool int32 = s.type == BsonType::kInt32;
    if (s.value.size() != (int32 ? 4u : 8u)) return Corrupt("malformed previous value", Offset(p));
    // The current value's bytes (little-endian, as stored). Only constant-size copies touch it,
    // so that it stays in a register, as does the rest of the state (the stream's, the
    // decoder's) while the cells are written.
    uint64_t cur = 0;
    if (int32) {
      uint32_t c32;
      std::memcpy(&c32, s.value.data(), 4);
      cur = c32;
    } else {
      std::memcpy(&cur, s.value.data(), 8);
    }
    const BsonType type = s.type;
    const bool dbl = type == BsonType::kDouble;
    const bool dod = s.dod;
    int scale = s.scale;
    bool bits = dbl && scale == kScaleMemoryAsInteger;  // doubles as their bits: no conversion
    int64_t enc64 = s.enc64;
    int64_t dod_value = s.dod_value;
    const char* next_word = s.next_word;
    int words_left = s.words_left;
    bool cell_missing = last_missing_;
    Status st = Status::OK();
    uint64_t values[60];
    // Room for the block's cells, unless it holds RLE words (which make room for themselves):
    // at most 60 per word. `room`: the cells max_cells still allows past the cursor's.
    size_t block_cells = static_cast<size_t>(words_left) * 60;
    auto out = sink.OpenCursor(type, block_cells);
    size_t room = max_cells - emitted_;
    auto commit = [&]() __attribute__((always_inline)) {
      const size_t k = sink.Commit(out);
      emitted_ += k;
      room -= k;
    };
    // One present cell from the Simple-8b value u; false for an int32 out of range.
    auto value = [&](uint64_t u) __attribute__((always_inline))->bool {
      if (dod || u != 0) {
        enc64 = WrapAdd(enc64, UnZigZag64(u));
        int64_t v = enc64;
        if (dod) {
          dod_value = WrapAdd(dod_value, enc64);
          v = dod_value;
        }
        if (bits) {
          cur = static_cast<uint64_t>(v);
        } else if (dbl) {
          const double x = DecodeDouble(v, scale);
          std::memcpy(&cur, &x, 8);
        } else if (int32) {
          if (v < INT32_MIN || v > INT32_MAX) return false;
          cur = static_cast<uint32_t>(static_cast<int32_t>(v));
        } else {
          cur = static_cast<uint64_t>(v);
        }
      }
      out.Value(cur);
      return true;
    };
    for (;;) {
      // Words of one 60-bit value (selector 14) of a stream whose value is its running encoding
      // (int64, doubles as their bits): what full-precision doubles mostly are, in a loop of
      // their own (Words60). Any other word goes to the general loop below.
      if (!dod && !int32 && (bits || !dbl)) {
        const size_t fit = room - out.k;  // the cells max_cells allows
        const size_t n = std::min(static_cast<size_t>(words_left), fit);
        const char* stop = Words60(next_word, next_word + 8 * n, out, enc64, last, last_skip);
        if (stop != next_word) cell_missing = last_skip;
        words_left -= static_cast<int>((stop - next_word) / 8);
        next_word = stop;
        cur = static_cast<uint64_t>(enc64);
      }
      for (; words_left > 0; --words_left, next_word += 8) {
        uint64_t word;
        std::memcpy(&word, next_word, 8);
        bool ok = true;
        // The cells of this word under max_cells; past them the cap error, as on the general
        // path (which checks before each cell).
        if ((word & 0xF) == 14) {
          // One 60-bit value: what full-precision doubles mostly are, decoded here directly.
          if (out.k >= room) {
            st = CapReached(p);
            break;
          }
          const uint64_t u = word >> 4;
          last_skip = u == (uint64_t{1} << 60) - 1;
          if (last_skip) {
            out.Missing();
          } else {
            last = u;
            ok = value(u);
          }
          cell_missing = last_skip;
          if (!ok) {
            st = Corrupt("int32 delta out of range", Offset(p));
            break;
          }
          continue;
        }
        uint64_t skips = 0;
        int rle = 0;
        auto decoded = DecodeSimple8bWord64(word, values, &skips, &rle);
        if (!decoded.ok()) {
          st = Corrupt(decoded.status().reason(), Offset(next_word));
          break;
        }
        const int n = decoded.value();
        const size_t word_cells = n == 0 ? static_cast<size_t>(rle) : static_cast<size_t>(n);
        const size_t allowed = room - std::min(room, out.k);
        const bool over = word_cells > allowed;
        if (n == 0) {
          const size_t cells = std::min(word_cells, allowed);
          commit();
          out = sink.OpenCursor(type, cells + block_cells);
          if (last_skip) {
            for (size_t i = 0; i < cells; ++i) out.Missing();
          } else {
            for (size_t i = 0; i < cells && ok; ++i) ok = value(last);
          }
          cell_missing = last_skip;
        } else if (skips == 0 && !dod && !int32 && word_cells <= allowed) {
          // A word of deltas only (no skips) of a stream whose values are its running encoding
          // (or doubles at a scale): each cell is a sum and a conversion, without value()'s
          // tests. A zero delta recomputes the same value. One loop per conversion, so that
          // none is chosen per cell (integral doubles, scale 0, are the common measurement).
          auto cells = [&](auto convert) __attribute__((always_inline)) {
            for (int i = 0; i < n; ++i) {
              enc64 = WrapAdd(enc64, UnZigZag64(values[i]));
              out.Value64(convert(enc64));
            }
            cur = convert(enc64);
          };
          if (bits || !dbl) {
            cells([](int64_t e) { return static_cast<uint64_t>(e); });
          } else if (scale == 0) {
            cells([](int64_t e) { return std::bit_cast<uint64_t>(DecodeDouble(e, 0)); });
          } else {
            cells([scale](int64_t e) { return std::bit_cast<uint64_t>(DecodeDouble(e, scale)); });
          }
          last = values[n - 1];
          last_skip = false;
          cell_missing = false;
        } else {
          const int limit = static_cast<int>(std::min(word_cells, allowed));
          for (int i = 0; i < limit && ok; ++i) {
            last_skip = (skips >> i) & 1;
            if (last_skip) {
              out.Missing();
              continue;
            }
            last = values[i];
            ok = value(last);
          }
          cell_missing = last_skip;
        }
        if (!ok) {
          st = Corrupt("int32 delta out of range", Offset(p));
          break;
        }
        if (over) {
          st = CapReached(p);
          break;
        }
      }
      if (!st.ok() || p >= end) break;
      // The next block, when it is a plain one (StartBlock's work, for this state).
      const uint8_t c = static_cast<uint8_t>(*p);
      if (c == kEndOfColumn || IsLiteralControl(c) || IsInterleavedStart(c)) break;
      const int next_scale = ScaleIndexOfControl(c);
      const int words = (c & 0x0F) + 1;
      if (next_scale < 0 || end - (p + 1) < 8 * words) break;
      if (dbl && !(bits && next_scale == kScaleMemoryAsInteger)) {
        // (Between blocks of bits, the previous double's encoding is the running one.)
        double d;
        std::memcpy(&d, &cur, 8);
        auto enc = EncodeDouble(d, next_scale);
        if (!enc) break;
        enc64 = *enc;
      }
      scale = next_scale;
      bits = dbl && scale == kScaleMemoryAsInteger;
      next_word = p + 1;
      words_left = words;
      p += 1 + 8 * static_cast<size_t>(words);
      block_cells = static_cast<size_t>(words) * 60;
      commit();
      out = sink.OpenCursor(type, block_cells);
    }
    commit();
    s.next_word = next_word;
    s.words_left = words_left;
    s.scale = scale;
    last_missing_ = cell_missing;
    if (int32) {
      const uint32_t c32 = static_cast<uint32_t>(cur);
      std::memcpy(s.value.data(), &c32, 4);
    } else {
      std::memcpy(s.value.data(), &cur, 8);
    }
    s.enc64 = enc64;
    s.dod_value = dod_value;
    s.last_slot = last_skip ? std::nullopt : std::optional<uint128>(last);
    return st;
  }
};

// DecodeBsonColumn's sink: a ColumnCell per cell. It decodes slot by slot (no FastBlock): the
// reference the fast path is tested against (tests, fuzz target).
struct CellsSink {
  static constexpr bool kFastBlocks = false;
  static constexpr bool kMayGiveUp = false;
  std::vector<ColumnCell> cells;
  void Missing() { cells.emplace_back(); }
  void Value(BsonType t, std::string_view value) {
    std::string e;
    e.reserve(2 + value.size());
    e.push_back(static_cast<char>(t));
    e.push_back('\0');
    e.append(value);
    cells.emplace_back(std::move(e));
  }
};

// The sinks FastBlocks writes into hand it a Cursor (OpenCursor): room for a number of cells of one
// type and the pointers to write them at, copied into FastBlocks' locals; Commit takes the cells
// back and returns how many there were. A sink grows its buffers geometrically and writes past its
// count without a resize per cell (which would zero-fill each time); buffers are cut to size by the
// caller at the end.

// DecodeBsonColumnElements' sink: the elements back to back in one buffer.
struct ElementsSink {
  static constexpr bool kFastBlocks = true;
  static constexpr bool kMayGiveUp = false;
  ColumnElements& out;
  size_t used = 0;   // bytes written
  size_t cells = 0;  // offsets written
  // Makes room for `ncells` more cells of `nbytes` bytes in all.
  void Room(size_t ncells, size_t nbytes) {
    if (out.offsets.size() - cells < ncells) {
      out.offsets.resize(std::max(2 * out.offsets.size(), cells + ncells));
    }
    if (out.bytes.size() - used < nbytes) {
      out.bytes.resize(std::max(2 * out.bytes.size(), used + nbytes));
    }
  }
  struct Cursor {
    char* bytes;
    size_t* offsets;
    size_t used;
    char type_byte;
    bool int32;
    size_t k = 0;  // cells written
    void Missing() { offsets[k++] = ColumnElements::kMissing; }
    // A cell of the cursor's type whose value bytes are the low 8 (int32: 4) bytes of `v`.
    void Value(uint64_t v) {
      if (!int32) {
        Value64(v);
        return;
      }
      offsets[k++] = used;
      char* e = bytes + used;
      e[0] = type_byte;
      e[1] = '\0';
      const uint32_t v32 = static_cast<uint32_t>(v);
      std::memcpy(e + 2, &v32, 4);
      used += 6;
    }
    // Value for a cursor of a 64-bit type.
    void Value64(uint64_t v) {
      offsets[k++] = used;
      char* e = bytes + used;
      e[0] = type_byte;
      e[1] = '\0';
      std::memcpy(e + 2, &v, 8);
      used += 10;
    }
  };
  static bool TakesCursor(BsonType) { return true; }
  Cursor OpenCursor(BsonType t, size_t ncells) {
    const bool int32 = t == BsonType::kInt32;
    Room(ncells, ncells * (int32 ? 6 : 10));
    return {out.bytes.data(), out.offsets.data() + cells, used, static_cast<char>(t), int32};
  }
  size_t Commit(const Cursor& c) {
    cells += c.k;
    used = c.used;
    return c.k;
  }
  void Missing() {
    Room(1, 0);
    out.offsets[cells++] = ColumnElements::kMissing;
  }
  void Value(BsonType t, std::string_view value) {
    const size_t n = 2 + value.size();
    Room(1, n);
    out.offsets[cells++] = used;
    char* w = out.bytes.data() + used;
    w[0] = static_cast<char>(t);
    w[1] = '\0';
    std::memcpy(w + 2, value.data(), value.size());
    used += n;
  }
};

// DecodeBsonColumnValues' sink: the numbers of a column of one numeric type. It gives up (and
// the decoder stops) at the first present cell of another type. Missing cells (rare in
// measurements) are listed apart, so that a present cell costs one store of 8 bytes; the
// caller turns the list into `present`.
struct ValuesSink {
  static constexpr bool kFastBlocks = true;
  static constexpr bool kMayGiveUp = true;
  ColumnValues& out;
  std::vector<size_t>& missing;  // the missing cells, ascending
  size_t cells = 0;
  bool gave_up = false;
  static bool Typed(BsonType t) {
    return t == BsonType::kDouble || t == BsonType::kInt32 || t == BsonType::kInt64 ||
           t == BsonType::kDate;
  }
  void Room(size_t ncells) {
    if (out.values.size() - cells < ncells) {
      out.values.resize(std::max(2 * out.values.size(), cells + ncells));
    }
  }
  struct Cursor {
    uint64_t* values;
    size_t base;  // the cell values[0] is
    std::vector<size_t>* missing;
    bool int32;
    size_t k = 0;
    void Missing() {
      missing->push_back(base + k);
      values[k++] = 0;
    }
    // As ElementsSink's: an int32 comes as its 4 bytes, stored sign-extended.
    void Value(uint64_t v) {
      Value64(int32 ? static_cast<uint64_t>(int64_t{static_cast<int32_t>(v)}) : v);
    }
    // Value for a cursor of a 64-bit type.
    void Value64(uint64_t v) { values[k++] = v; }
  };
  bool TakesCursor(BsonType t) const { return t == out.type; }
  Cursor OpenCursor(BsonType t, size_t ncells) {
    Room(ncells);
    return {out.values.data() + cells, cells, &missing, t == BsonType::kInt32};
  }
  size_t Commit(const Cursor& c) {
    cells += c.k;
    return c.k;
  }
  void Missing() {
    Room(1);
    missing.push_back(cells);
    out.values[cells++] = 0;
  }
  void Value(BsonType t, std::string_view value) {
    if (out.type == BsonType::kEOO && Typed(t)) out.type = t;
    if (t != out.type) {
      gave_up = true;
      return;
    }
    Room(1);
    uint64_t v = 0;
    if (t == BsonType::kInt32) {
      int32_t v32;
      std::memcpy(&v32, value.data(), 4);
      v = static_cast<uint64_t>(int64_t{v32});
    } else {
      std::memcpy(&v, value.data(), 8);
    }
    out.values[cells++] = v;
  }
};

// VisitBsonColumn's sink: forwards to the visitor, cell by cell.
struct VisitorSink {
  static constexpr bool kFastBlocks = false;
  static constexpr bool kMayGiveUp = false;
  CellVisitor& visitor;
  void Missing() { visitor.Missing(); }
  void Value(BsonType t, std::string_view value) { visitor.Value(t, value); }
};

}  // namespace

StatusWith<std::vector<ColumnCell>> DecodeBsonColumn(std::string_view binary) {
  return DecodeBsonColumn(binary, std::numeric_limits<size_t>::max());
}

StatusWith<std::vector<ColumnCell>> DecodeBsonColumn(std::string_view binary, size_t max_cells) {
  CellsSink sink;
  Decoder<CellsSink> d{sink, binary.data(), binary.data() + binary.size()};
  d.max_cells = max_cells;
  HG_RETURN_IF_ERROR(d.Run());
  return std::move(sink.cells);
}

Status DecodeBsonColumnElements(std::string_view binary, ColumnElements* out, size_t expected_cells,
                                size_t max_cells) {
  // A hint from a stored count may be corrupt: never reserve more than a large bucket needs.
  expected_cells = std::min<size_t>(expected_cells, size_t{1} << 16);
  // Room for as many 8-byte values (doubles, dates), the usual measurement, before any growth.
  // Buffers only grow: they are zero-filled once, not once per column.
  if (out->offsets.size() < expected_cells) out->offsets.resize(expected_cells);
  if (out->bytes.size() < expected_cells * 10) out->bytes.resize(expected_cells * 10);
  out->cells = 0;
  ElementsSink sink{*out};
  Decoder<ElementsSink> d{sink, binary.data(), binary.data() + binary.size()};
  d.max_cells = max_cells;
  Status st = d.Run();
  // No cells of a corrupt column are handed out.
  out->cells = st.ok() ? sink.cells : 0;
  return st;
}

Status DecodeBsonColumnValues(std::string_view binary, ColumnValues* out, size_t expected_cells,
                              size_t max_cells) {
  expected_cells = std::min<size_t>(expected_cells, size_t{1} << 16);
  if (out->values.size() < expected_cells) out->values.resize(expected_cells);
  out->type = BsonType::kEOO;
  out->cells = 0;
  out->missing = 0;
  thread_local std::vector<size_t> missing;
  missing.clear();
  ValuesSink sink{*out, missing};
  Decoder<ValuesSink> d{sink, binary.data(), binary.data() + binary.size()};
  d.max_cells = max_cells;
  Status st = d.Run();
  if (!st.ok() || sink.gave_up || out->type == BsonType::kEOO) {
    // Corrupt, of other types, or with no present cell: no typed form.
    out->type = BsonType::kEOO;
    return st;
  }
  out->cells = sink.cells;
  out->missing = missing.size();
  if (!missing.empty()) {
    out->present.assign(out->cells, 1);
    for (size_t i : missing) out->present[i] = 0;
  }
  return Status::OK();
}

Status VisitBsonColumn(std::string_view binary, CellVisitor& visitor) {
  VisitorSink sink{visitor};
  Decoder<VisitorSink> d{sink, binary.data(), binary.data() + binary.size()};
  return d.Run();
}

}  // namespace hourglass::bsoncolumn
