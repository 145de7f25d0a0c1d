#include "timeseries/bucket_unpacker.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

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

// The bucket's control.version: 1 for uncompressed buckets; CommandNotSupported for the
// compressed versions 2 and 3; DataCorruptionDetected for anything else.
StatusWith<int> CheckVersion(const BsonObj& bucket) {
  BsonElement control = bucket["control"];
  if (control.type() != BsonType::kObject) return Corrupt(bucket, "'control' is not an object");
  BsonElement version = control.Obj()["version"];
  if (!version.IsNumber()) return Corrupt(bucket, "'control.version' is missing or not a number");
  int64_t v = version.NumberLong();
  if (v == 1 && version.NumberDouble() == 1.0) return 1;
  if (v == 2 || v == 3) {
    return Status(ErrorCode::kCommandNotSupported,
                  "compressed time-series buckets are not supported yet (bucket " +
                      DescribeBucketId(bucket) + " has control.version " + std::to_string(v) + ")");
  }
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

inline bool Contains(const std::vector<std::string>& names, std::string_view name) {
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

  std::string meta_cell;  // the whole meta element, renamed
  if (include_meta_) {
    BsonElement meta = bucket["meta"];
    if (!meta.eoo()) {
      meta_cell.push_back(*meta.raw());
      meta_cell.append(*spec_.meta_field);
      meta_cell.push_back('\0');
      meta_cell.append(meta.value(), meta.ValueSize());
    }
  }

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

StatusWith<int64_t> BucketUnpacker::Columns(const BsonObj& bucket, std::string_view time_field,
                                            const std::vector<std::string>& fields,
                                            std::vector<Column>* out) {
  out->resize(fields.size());
  for (Column& c : *out) {
    c.present = false;
    c.cells.clear();
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
  const auto time_at = std::find(fields.begin(), fields.end(), time_field);
  Column* time_out = time_at == fields.end() ? nullptr : &(*out)[time_at - fields.begin()];
  std::vector<int64_t> rows;
  bool dense = true;
  int64_t n = 0;
  ColumnCursor time;
  time.p = time_column.value() + 4;
  if (!time.Load(-1)) return not_ascending(time_field);
  for (; time.row != kNoMoreRows; ++n) {
    if (dense && time.row != n) {
      dense = false;
      for (int64_t r = 0; r < n; ++r) rows.push_back(r);
    }
    if (!dense) rows.push_back(time.row);
    if (time_out != nullptr) time_out->cells.emplace_back(time.p, time.key_size);
    if (!time.Next()) return not_ascending(time_field);
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
    ColumnCursor c;
    c.p = column.value() + 4;
    if (!c.Load(-1)) return not_ascending(name);
    size_t pos = 0;  // sparse rows: both row lists ascend, a merge
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
  BsonElement control = bucket["control"];
  if (control.type() == BsonType::kObject) {
    BsonElement version = control.Obj()["version"];
    int64_t v = version.IsNumber() ? version.NumberLong() : 0;
    if (v == 2 || v == 3) {
      // Compressed buckets record their row count (spec §3.2).
      BsonElement count = control.Obj()["count"];
      if (!count.IsNumber() || count.NumberLong() < 0) {
        return Corrupt(bucket, "'control.count' is missing or not a non-negative number");
      }
      return count.NumberLong();
    }
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
