#include "timeseries/bucket_unpacker.h"

#include <algorithm>
#include <cstring>
#include <limits>

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

// A row key: a canonical non-negative decimal number ("0", "17"; not "", "01", "-1", "1a").
// Returns false for anything else.
inline bool ParseRowKey(const char* key, int64_t* row) {
  if (*key < '0' || *key > '9') return false;
  if (key[0] == '0') {
    *row = 0;
    return key[1] == '\0';
  }
  int64_t v = 0;
  for (int n = 0; *key != '\0'; ++key, ++n) {
    if (*key < '0' || *key > '9' || n >= 18) return false;
    v = v * 10 + (*key - '0');
  }
  *row = v;
  return true;
}

// One data column being walked in step with the time column.
struct ColumnCursor {
  const char* p;       // current cell (an element), or the column's terminating EOO
  int64_t row;         // the current cell's row number, or kNoMoreRows
  std::string header;  // the output field name followed by its NUL
  std::string_view name;

  // Positions on the cell at `p`; false if its key is not a row number or does not ascend past
  // `prev_row`.
  bool Load(int64_t prev_row) {
    if (*p == '\0') {
      row = kNoMoreRows;
      return true;
    }
    return ParseRowKey(p + 1, &row) && row > prev_row;
  }
};

// Appends element `e`'s value to `out` as a field whose "name\0" is `header`.
inline void AppendCell(std::string& out, const BsonElement& e, std::string_view header) {
  out.push_back(*e.raw());
  out.append(header);
  out.append(e.value(), e.ValueSize());
}

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
  auto version = CheckVersion(bucket);
  if (!version.ok()) return version.status();
  BsonElement data_elem = bucket["data"];
  if (data_elem.type() != BsonType::kObject) return Corrupt(bucket, "'data' is not an object");
  BsonObj data = data_elem.Obj();

  BsonElement time_column;
  std::vector<ColumnCursor> columns;
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
    c.row = kNoMoreRows;
    c.header.assign(name);
    c.header.push_back('\0');
    c.name = name;
    if (!c.Load(-1)) {
      return Corrupt(bucket,
                     "column 'data." + std::string(name) + "' has a key that is not a row number");
    }
    columns.push_back(std::move(c));
  }
  if (time_column.eoo()) {
    return Corrupt(bucket, "no time column 'data." + spec_.time_field + "'");
  }

  std::string time_header = spec_.time_field;
  time_header.push_back('\0');
  std::string meta_header;
  BsonElement meta;
  if (include_meta_) {
    meta = bucket["meta"];
    meta_header = *spec_.meta_field;
    meta_header.push_back('\0');
  }

  std::string buf;
  buf.reserve(256);
  int64_t prev_row = -1;
  for (BsonElement t : time_column.Obj()) {
    int64_t row;
    if (!ParseRowKey(t.raw() + 1, &row) || row <= prev_row) {
      return Corrupt(bucket,
                     "the keys of 'data." + spec_.time_field + "' are not ascending row numbers");
    }
    prev_row = row;
    buf.assign(4, '\0');
    if (include_time_) AppendCell(buf, t, time_header);
    if (!meta.eoo()) AppendCell(buf, meta, meta_header);
    for (ColumnCursor& c : columns) {
      if (c.row > row) continue;
      if (c.row < row) {
        return Corrupt(bucket, "column 'data." + std::string(c.name) + "' has row " +
                                   std::to_string(c.row) + ", which 'data." + spec_.time_field +
                                   "' lacks");
      }
      BsonElement cell(c.p);
      AppendCell(buf, cell, c.header);
      c.p += cell.size();
      if (!c.Load(row)) {
        return Corrupt(bucket, "the keys of column 'data." + std::string(c.name) +
                                   "' are not ascending row numbers");
      }
    }
    buf.push_back('\0');
    int32_t len = static_cast<int32_t>(buf.size());
    std::memcpy(buf.data(), &len, 4);
    if (!emit(BsonObj(buf.data()))) return Status::OK();
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
