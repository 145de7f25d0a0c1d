#include "timeseries/bucket_unpacker.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "timeseries/bucket_compression.h"

namespace hourglass::timeseries {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr int64_t kNoMoreRows = std::numeric_limits<int64_t>::max();

std::string DescribeBucketId(const BsonObj& bucket) {
  BsonElement id = bucket["_id"];
  if (id.type() == BsonType::kObjectId) return "ObjectId('" + id.Oid().ToHex() + "')";
  if (id.eoo()) return "<no _id>";
  bson::BsonBuilder b;
  b.AppendElementAs(id, "_id");
  return b.Obj().ToJson();
}

Status Corrupt(const BsonObj& bucket, std::string_view what) {
  return Status(
      ErrorCode::kDataCorruptionDetected,
      "malformed time-series bucket " + DescribeBucketId(bucket) + ": " + std::string(what));
}

// The bucket's control.version: 1 for uncompressed buckets; DataCorruptionDetected for anything
// else (the compressed versions 2 and 3 are decompressed before this is asked).
StatusWith<int> CheckVersion(const BsonObj& bucket) {
  BsonElement control = bucket["control"];
  if (control.type() != BsonType::kObject) return Corrupt(bucket, "'control' is not an object");
  BsonElement version = control.Obj()["version"];
  if (!version.IsNumber()) return Corrupt(bucket, "'control.version' is missing or not a number");
  int64_t v = version.NumberLong();
  if (v == 1 && version.NumberDouble() == 1.0) return 1;
  return Corrupt(bucket, "unknown control.version " + std::to_string(v));
}

// Reads a row key starting at `key`: a canonical non-negative decimal number ("0", "17"; not "",
// "01", "-1", "1a"). Returns the key's terminating NUL, or nullptr for anything else.
inline const char* ParseRowKey(const char* key, int64_t* row) {
  if (*key < '0' || *key > '9') return nullptr;
  if (key[0] == '0') {
    *row = 0;
    return key[1] == '\0' ? key + 1 : nullptr;
  }
  int64_t v = 0;
  for (int n = 0; *key != '\0'; ++key, ++n) {
    if (*key < '0' || *key > '9' || n >= 18) return nullptr;
    v = v * 10 + (*key - '0');
  }
  *row = v;
  return key;
}

// ValueSizeOf with the fixed sizes of the usual measurement types decided inline.
inline size_t CellValueSize(BsonType t, const char* value) {
  switch (t) {
    case BsonType::kDouble:
    case BsonType::kDate:
    case BsonType::kInt64:
    case BsonType::kTimestamp:
      return 8;
    case BsonType::kInt32:
      return 4;
    default:
      return bson::ValueSizeOf(t, value);
  }
}

// Walks the cells of one column ({"0": v, "3": v, ...}) in step with the time column. Holds raw
// pointers into the bucket: no per-row lookups, one key parse per cell.
struct ColumnCursor {
  const char* p = nullptr;      // current cell (an element), or the column's terminating EOO
  const char* value = nullptr;  // the current cell's value bytes
  size_t value_size = 0;
  size_t key_size = 0;
  int64_t row = kNoMoreRows;  // the current cell's row number, or kNoMoreRows at the end
  std::string header;         // the output field name followed by its NUL
  std::string_view name;

  // Positions on the cell at `p`; false if its key is not a row number or does not ascend past
  // `prev_row`.
  bool Load(int64_t prev_row) {
    if (*p == '\0') {
      row = kNoMoreRows;
      return true;
    }
    const char* key_end = ParseRowKey(p + 1, &row);
    if (key_end == nullptr || row <= prev_row) return false;
    key_size = static_cast<size_t>(key_end - (p + 1));
    value = key_end + 1;
    value_size = CellValueSize(static_cast<BsonType>(*p), value);
    return true;
  }
  bool Next() {
    int64_t prev = row;
    p = value + value_size;
    // Cells are read in address order, each one's address known only from the one before: a
    // prefetch a few cells ahead keeps the walk from waiting on memory line by line.
    __builtin_prefetch(p + 384);
    return Load(prev);
  }
  // Writes the current cell under the output name at `w`; returns the end of what it wrote.
  char* Write(char* w) const {
    *w++ = *p;
    std::memcpy(w, header.data(), header.size());
    w += header.size();
    std::memcpy(w, value, value_size);
    return w + value_size;
  }
};

// The row keys "0", "1", "2", ... in turn. A dense column's cells carry exactly these keys, and
// checking a key against the expected one is one masked 8-byte compare instead of a parse. The
// key lives in a register-sized word (byte i: digit i, then NUL), never in memory: a byte store
// followed by a wider load of the same bytes would stall on every cell.
class RowKeyCounter {
 public:
  size_t size() const { return len_; }
  // Whether the key (with its NUL) at `key` is this one; reads 8 bytes, so `key + 8` must not
  // pass `end`. False too for keys of more than 6 digits: the caller parses those.
  bool Matches(const char* key, const char* end) const {
    if (len_ > 6 || end - key < 8) return false;
    uint64_t w;
    std::memcpy(&w, key, 8);
    return (w & Mask()) == word_;
  }
  void Increment() {
    if (len_ > 6) return;  // past what Matches handles
    size_t i = len_;
    while (i > 0 && Digit(i - 1) == '9') {
      --i;
      word_ -= uint64_t{9} << (8 * i);  // '9' -> '0'
    }
    if (i == 0) {  // 9...9 -> 10...0: a '1' in front of the zeros
      word_ = (word_ << 8) | '1';
      ++len_;
    } else {
      word_ += uint64_t{1} << (8 * (i - 1));
    }
  }

 private:
  char Digit(size_t i) const { return static_cast<char>(word_ >> (8 * i)); }
  uint64_t Mask() const { return (uint64_t{1} << (8 * (len_ + 1))) - 1; }  // key and NUL
  size_t len_ = 1;
  uint64_t word_ = '0';
};

// Steps over the cells from `p` on whose keys are the next row numbers of `key` in turn, at most
// `limit` of them, calling cell(element, key_size) for each; returns where it stopped (the
// column's terminating NUL, or the first cell with another key, to be read the general way).
template <typename Fn>
const char* WalkDenseCells(const char* p, const char* end, RowKeyCounter& key, int64_t limit,
                           Fn&& cell) {
  for (int64_t i = 0; i < limit && *p != '\0' && key.Matches(p + 1, end); ++i) {
    const char* value = p + 2 + key.size();
    cell(p, key.size());
    p = value + CellValueSize(static_cast<BsonType>(*p), value);
    __builtin_prefetch(p + 384);
    key.Increment();
  }
  return p;
}

inline bool Contains(std::span<const std::string> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

BucketUnpacker::BucketUnpacker(UnpackSpec spec) : spec_(std::move(spec)) {
  include_time_ = Produces(spec_.time_field);
  include_meta_ = spec_.meta_field.has_value() && Produces(*spec_.meta_field);
}

bool BucketUnpacker::Produces(std::string_view name) const {
  switch (spec_.mode) {
    case UnpackSpec::Mode::kAll:
      return true;
    case UnpackSpec::Mode::kInclude:
      return Contains(spec_.fields, name);
    case UnpackSpec::Mode::kExclude:
      return !Contains(spec_.fields, name);
  }
  return true;
}

Status BucketUnpacker::Unpack(const BsonObj& bucket,
                              const std::function<bool(BsonObj)>& emit) const {
  return Unpack(bucket, nullptr, emit);
}

Status BucketUnpacker::Unpack(const BsonObj& bucket,
                              const std::function<bool(int64_t, const BsonElement&)>& keep_row,
                              const std::function<bool(BsonObj)>& emit) const {
  if (IsCompressedBucket(bucket)) return UnpackCompressed(bucket, keep_row, emit);
  auto version = CheckVersion(bucket);
  if (!version.ok()) return version.status();
  BsonElement data_elem = bucket["data"];
  if (data_elem.type() != BsonType::kObject) return Corrupt(bucket, "'data' is not an object");
  BsonObj data = data_elem.Obj();

  BsonElement time_column;
  std::vector<ColumnCursor> columns;
  size_t headers_size = 0;
  for (BsonElement column : data) {
    if (column.type() != BsonType::kObject) {
      return Corrupt(bucket,
                     "column 'data." + std::string(column.FieldName()) + "' is not an object");
    }
    std::string_view name = column.FieldName();
    if (name == spec_.time_field) {
      time_column = column;
      continue;
    }
    // A measurement never stores its meta value in `data`; the bucket's `meta` wins.
    if (spec_.meta_field && name == *spec_.meta_field) continue;
    if (!Produces(name)) continue;
    ColumnCursor c;
    c.p = column.value() + 4;
    c.header.assign(name);
    c.header.push_back('\0');
    c.name = name;
    if (!c.Load(-1)) {
      return Corrupt(bucket, "the keys of column 'data." + std::string(name) +
                                 "' are not ascending row numbers");
    }
    headers_size += 1 + c.header.size();
    columns.push_back(std::move(c));
  }
  if (time_column.eoo()) {
    return Corrupt(bucket, "no time column 'data." + spec_.time_field + "'");
  }
  ColumnCursor time;
  time.p = time_column.value() + 4;
  time.header = spec_.time_field;
  time.header.push_back('\0');
  time.name = spec_.time_field;

  const std::string meta_cell = MetaCell(bucket);  // the whole meta element, renamed

  // One row never holds more than every field name plus every value byte of the bucket, so a
  // buffer of that size is written without bounds checks and reused for every row. It is
  // allocated, uninitialized, for the first row built: rows stepped over cost no copy.
  const size_t buf_size = 5 + 1 + time.header.size() + meta_cell.size() + headers_size +
                          static_cast<size_t>(bucket.size());
  std::unique_ptr<char[]> buf;
  auto time_error = [&] {
    return Corrupt(bucket,
                   "the keys of 'data." + spec_.time_field + "' are not ascending row numbers");
  };
  if (!time.Load(-1)) return time_error();
  int64_t position = 0;
  for (; time.row != kNoMoreRows;) {
    const int64_t row = time.row;
    const bool keep = !keep_row || keep_row(position++, BsonElement(time.p, time.key_size));
    if (keep && buf == nullptr) buf.reset(new char[buf_size]);
    char* const start = buf.get();
    char* w = keep ? start + 4 : nullptr;
    if (keep && include_time_) w = time.Write(w);
    if (keep && !meta_cell.empty()) {
      std::memcpy(w, meta_cell.data(), meta_cell.size());
      w += meta_cell.size();
    }
    for (ColumnCursor& c : columns) {
      if (c.row > row) continue;
      if (c.row < row) {
        return Corrupt(bucket, "column 'data." + std::string(c.name) + "' has row " +
                                   std::to_string(c.row) + ", which 'data." + spec_.time_field +
                                   "' lacks");
      }
      if (keep) w = c.Write(w);
      if (!c.Next()) {
        return Corrupt(bucket, "the keys of column 'data." + std::string(c.name) +
                                   "' are not ascending row numbers");
      }
    }
    if (keep) {
      *w++ = '\0';
      int32_t len = static_cast<int32_t>(w - start);
      std::memcpy(start, &len, 4);
      if (!emit(BsonObj(start))) return Status::OK();
    }
    if (!time.Next()) return time_error();
  }
  for (const ColumnCursor& c : columns) {
    if (c.row != kNoMoreRows) {
      return Corrupt(bucket, "column 'data." + std::string(c.name) + "' has row " +
                                 std::to_string(c.row) + ", which 'data." + spec_.time_field +
                                 "' lacks");
    }
  }
  return Status::OK();
}

std::string BucketUnpacker::MetaCell(const BsonObj& bucket) const {
  std::string cell;
  if (!include_meta_) return cell;
  BsonElement meta = bucket["meta"];
  if (meta.eoo()) return cell;
  cell.push_back(*meta.raw());
  cell.append(*spec_.meta_field);
  cell.push_back('\0');
  cell.append(meta.value(), meta.ValueSize());
  return cell;
}

Status BucketUnpacker::UnpackCompressed(
    const BsonObj& bucket, const std::function<bool(int64_t, const BsonElement&)>& keep_row,
    const std::function<bool(BsonObj)>& emit) const {
  // Only the columns this spec produces are decoded, and the time column always: its cells
  // are keep_row's, and a row without a time is no row. Each row is built from their cells, in
  // the order the version-1 walk gives: time, meta, then the other columns in stored order.
  std::vector<DecodedColumn> decoded;
  HG_ASSIGN_OR_RETURN(int64_t rows, DecodeCompressedColumns(
                                        bucket, spec_.time_field,
                                        [this](std::string_view name) {
                                          return name == spec_.time_field ||
                                                 (Produces(name) &&
                                                  !(spec_.meta_field && name == *spec_.meta_field));
                                        },
                                        &decoded));
  const bsoncolumn::ColumnElements* time = nullptr;
  struct Out {
    const bsoncolumn::ColumnElements* cells;
    std::string_view name;
  };
  std::vector<Out> columns;
  for (const DecodedColumn& c : decoded) {
    if (c.name == spec_.time_field) {
      if (time == nullptr) time = c.cells.get();
      continue;
    }
    columns.push_back(Out{c.cells.get(), c.name});
  }
  const std::string meta_cell = MetaCell(bucket);  // the whole meta element, renamed
  // A cell's element is type, empty name (one NUL), value: renamed by writing the type, the
  // output name with its NUL, then the value.
  auto append = [](std::string& row, const BsonElement& cell, std::string_view name) {
    const char* e = cell.raw();
    const size_t value_size = CellValueSize(static_cast<BsonType>(*e), e + 2);
    row.push_back(*e);
    row.append(name);
    row.push_back('\0');
    row.append(e + 2, value_size);
  };
  std::string row;
  for (int64_t r = 0; r < rows; ++r) {
    const BsonElement t = time->element(static_cast<size_t>(r));
    if (keep_row && !keep_row(r, t)) continue;
    row.assign(4, '\0');
    if (include_time_) append(row, t, spec_.time_field);
    row.append(meta_cell);
    for (const Out& c : columns) {
      if (c.cells->missing(static_cast<size_t>(r))) continue;
      append(row, c.cells->element(static_cast<size_t>(r)), c.name);
    }
    row.push_back('\0');
    const int32_t len = static_cast<int32_t>(row.size());
    std::memcpy(row.data(), &len, 4);
    if (!emit(BsonObj(row.data()))) return Status::OK();
  }
  return Status::OK();
}

StatusWith<int64_t> BucketUnpacker::Columns(const BsonObj& bucket, std::string_view time_field,
                                            std::span<const std::string> fields,
                                            std::vector<Column>* out, bool numbers) {
  out->resize(fields.size());
  for (Column& c : *out) {
    c.present = false;
    c.cells.clear();
    c.values = nullptr;
    c.owner.reset();
  }
  if (IsCompressedBucket(bucket)) {
    // The named columns decoded, and only those (the time column too only when named: the row
    // count is control.count); the cells point into their buffers, which each Column owns. The
    // walk of `data` ends at the last named column.
    std::vector<DecodedColumn> decoded;
    auto wanted = [&](std::string_view name) { return Contains(fields, name); };
    size_t distinct = 0;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (std::find(fields.begin(), fields.begin() + i, fields[i]) == fields.begin() + i) {
        ++distinct;
      }
    }
    HG_ASSIGN_OR_RETURN(
        int64_t n,
        DecodeCompressedColumns(bucket, time_field, wanted, &decoded,
                                numbers ? std::function<bool(std::string_view)>(wanted) : nullptr,
                                distinct));
    for (size_t i = 0; i < fields.size(); ++i) {
      auto it = std::find_if(decoded.begin(), decoded.end(),
                             [&](const DecodedColumn& d) { return d.name == fields[i]; });
      if (it == decoded.end()) continue;
      Column& col = (*out)[i];
      col.present = true;
      if (it->values) {
        col.values = it->values.get();
        col.owner = it->values;
        continue;
      }
      col.cells.resize(static_cast<size_t>(n));
      const bsoncolumn::ColumnElements& cells = *it->cells;
      for (size_t r = 0; r < col.cells.size(); ++r) col.cells[r] = cells.element(r);
      col.owner = it->cells;
    }
    return n;
  }
  auto version = CheckVersion(bucket);
  if (!version.ok()) return version.status();
  BsonElement data_elem = bucket["data"];
  if (data_elem.type() != BsonType::kObject) return Corrupt(bucket, "'data' is not an object");
  BsonObj data = data_elem.Obj();
  BsonElement time_column = data.GetField(time_field);
  if (time_column.type() != BsonType::kObject) {
    return Corrupt(bucket, "no time column 'data." + std::string(time_field) + "'");
  }
  auto not_ascending = [&](std::string_view name) {
    return Corrupt(bucket, "the keys of column 'data." + std::string(name) +
                               "' are not ascending row numbers");
  };
  // The time column's row numbers define the rows. They are nearly always 0, 1, 2, ... (dense);
  // only otherwise is their list kept, for the merge below.
  const char* const end = bucket.data() + bucket.size();
  const auto time_at = std::find(fields.begin(), fields.end(), time_field);
  Column* time_out = time_at == fields.end() ? nullptr : &(*out)[time_at - fields.begin()];
  int64_t n = 0;
  RowKeyCounter time_key;
  ColumnCursor time;
  time.p = WalkDenseCells(time_column.value() + 4, end, time_key, INT64_MAX,
                          [&](const char* cell, size_t key_size) {
                            if (time_out != nullptr) time_out->cells.emplace_back(cell, key_size);
                            ++n;
                          });
  const bool dense = *time.p == '\0';
  std::vector<int64_t> rows;
  if (!dense) {
    for (int64_t r = 0; r < n; ++r) rows.push_back(r);
    if (!time.Load(n - 1)) return not_ascending(time_field);
    for (; time.row != kNoMoreRows; ++n) {
      rows.push_back(time.row);
      if (time_out != nullptr) time_out->cells.emplace_back(time.p, time.key_size);
      if (!time.Next()) return not_ascending(time_field);
    }
  }
  if (time_out != nullptr) time_out->present = true;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string& name = fields[i];
    if (name == time_field) continue;
    BsonElement column = data.GetField(name);
    if (column.eoo()) continue;
    if (column.type() != BsonType::kObject) {
      return Corrupt(bucket, "column 'data." + name + "' is not an object");
    }
    Column& col = (*out)[i];
    col.present = true;
    col.cells.assign(static_cast<size_t>(n), BsonElement());
    // Cells of consecutive rows from 0 on (a dense column of a dense bucket) ...
    size_t pos = 0;
    ColumnCursor c;
    if (dense) {
      RowKeyCounter key;
      c.p = WalkDenseCells(column.value() + 4, end, key, n, [&](const char* cell, size_t key_size) {
        col.cells[pos++] = BsonElement(cell, key_size);
      });
    } else {
      c.p = column.value() + 4;
    }
    // ... and the rest by their row numbers.
    if (!c.Load(static_cast<int64_t>(pos) - 1)) return not_ascending(name);
    while (c.row != kNoMoreRows) {
      if (dense) {
        pos = static_cast<size_t>(c.row);
      } else {
        while (pos < rows.size() && rows[pos] < c.row) ++pos;
      }
      if (dense ? c.row >= n : pos == rows.size() || rows[pos] != c.row) {
        return Corrupt(bucket, "column 'data." + name + "' has row " + std::to_string(c.row) +
                                   ", which 'data." + std::string(time_field) + "' lacks");
      }
      col.cells[pos] = BsonElement(c.p, c.key_size);
      if (!c.Next()) return not_ascending(name);
    }
  }
  return n;
}

StatusWith<int64_t> BucketUnpacker::CountRows(const BsonObj& bucket, std::string_view time_field) {
  if (IsCompressedBucket(bucket)) {
    // Compressed buckets record their row count (spec §3.2); writes check that every column
    // holds that many cells (CheckCompressedBucket), so the columns need no decoding here.
    BsonElement count = bucket["control"].Obj()["count"];
    if (!count.IsNumber() || count.NumberLong() < 0) {
      return Corrupt(bucket, "'control.count' is missing or not a non-negative number");
    }
    return count.NumberLong();
  }
  auto checked = CheckVersion(bucket);
  if (!checked.ok()) return checked.status();
  BsonElement data = bucket["data"];
  if (data.type() != BsonType::kObject) return Corrupt(bucket, "'data' is not an object");
  BsonElement time_column = data.Obj().GetField(time_field);
  if (time_column.type() != BsonType::kObject) {
    return Corrupt(bucket, "no time column 'data." + std::string(time_field) + "'");
  }
  int64_t n = 0;
  for (auto it = time_column.Obj().begin(), end = time_column.Obj().end(); it != end; ++it) ++n;
  return n;
}

}  // namespace hourglass::timeseries
