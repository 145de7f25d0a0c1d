#include "timeseries/bucket_compression.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "bson/bson_compare.h"
#include "bsoncolumn/bson_column_builder.h"
#include "bsoncolumn/bson_column_decoder.h"
#include "timeseries/bucket_unpacker.h"

namespace hourglass::timeseries {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr uint8_t kColumnSubtype = 7;

Status Bad(std::string why) { return Status(ErrorCode::kBadValue, std::move(why)); }

std::string ColumnName(std::string_view name) { return "'data." + std::string(name) + "'"; }

// control.count of a compressed bucket. MongoDB writes an int32, but its shell (and so its own
// tests and scripts) writes a double: any number holding a whole count is taken.
StatusWith<int64_t> ControlCount(const BsonObj& bucket) {
  BsonElement control = bucket["control"];
  if (control.type() != BsonType::kObject) return Bad("'control' must be an object");
  BsonElement count = control.Obj()["count"];
  if (count.eoo()) return Bad("'control.count' is required in a compressed bucket");
  if (!count.IsNumber()) return Bad("'control.count' must be a number");
  double d = count.NumberDouble();
  if (!(d >= 1 && d <= std::numeric_limits<int32_t>::max()) || std::floor(d) != d) {
    return Bad("'control.count' must be a whole number between 1 and 2147483647");
  }
  return static_cast<int64_t>(d);
}

// Decodes column `col` (an element of `data`) into *cells, which must be `count` of them; the
// time column's must all be present (a missing time would leave its row without an identity)
// and, with `check_time_types`, dates. With `values`, a column whose present cells have one
// numeric type is decoded into *values instead (*numbers set; `cells` is then left alone).
Status DecodeColumn(const BsonElement& col, int64_t count, bool is_time, bool check_time_types,
                    bsoncolumn::ColumnElements* cells, bsoncolumn::ColumnValues* values = nullptr,
                    bool* numbers = nullptr) {
  const std::string name = ColumnName(col.FieldName());
  if (col.type() != BsonType::kBinData || col.BinSubtype() != kColumnSubtype) {
    return Bad("column " + name + " of a compressed bucket must be a BinData of subtype 7");
  }
  auto check_count = [&](size_t n) {
    if (static_cast<int64_t>(n) == count) return Status::OK();
    return Bad("column " + name + " holds " + std::to_string(n) +
               " measurements but 'control.count' is " + std::to_string(count));
  };
  // One cell more than the count is enough to tell a mismatch, and no more are built.
  const size_t max_cells = static_cast<size_t>(count) + 1;
  if (values != nullptr) {
    Status st = bsoncolumn::DecodeBsonColumnValues(col.BinData(), values,
                                                   static_cast<size_t>(count), max_cells);
    if (!st.ok()) return Bad("column " + name + " is not a valid BSONColumn: " + st.reason());
    *numbers = values->type != BsonType::kEOO;
    if (*numbers) {
      HG_RETURN_IF_ERROR(check_count(values->size()));
      if (!is_time) return Status::OK();
      if (values->missing != 0 || (check_time_types && values->type != BsonType::kDate)) {
        // Reported cell by cell below.
        *numbers = false;
      } else {
        return Status::OK();
      }
    }
  }
  Status st = bsoncolumn::DecodeBsonColumnElements(col.BinData(), cells, static_cast<size_t>(count),
                                                   max_cells);
  if (!st.ok()) return Bad("column " + name + " is not a valid BSONColumn: " + st.reason());
  HG_RETURN_IF_ERROR(check_count(cells->size()));
  if (!is_time) return Status::OK();
  for (size_t i = 0; i < cells->size(); ++i) {
    if (cells->missing(i)) {
      return Bad("the time column " + name + " lacks measurement " + std::to_string(i));
    }
    if (check_time_types && cells->element(i).type() != BsonType::kDate) {
      return Bad("the time column " + name + " holds a " +
                 std::string(bson::TypeName(cells->element(i).type())) + " at measurement " +
                 std::to_string(i) + ", not a date");
    }
  }
  return Status::OK();
}

// Cell buffers for DecodeCompressedColumns, reused from bucket to bucket by the thread that
// decodes: a fresh buffer per column per bucket would be allocated and zero-filled each time,
// which costs as much as decoding the cells. A buffer is free again once only the pool holds it
// (its reader let go of the bucket's cells). Buffers grown past kPooledBytes are not kept.
size_t BufferBytes(const bsoncolumn::ColumnElements& c) {
  return std::max(c.bytes.capacity(), c.offsets.capacity() * sizeof(size_t));
}
size_t BufferBytes(const bsoncolumn::ColumnValues& c) {
  return c.values.capacity() * sizeof(uint64_t);
}
template <typename Buffer>
std::shared_ptr<Buffer> Pooled() {
  constexpr size_t kPoolSize = 64;
  constexpr size_t kPooledBytes = size_t{1} << 20;
  thread_local std::vector<std::shared_ptr<Buffer>> pool;
  for (auto& c : pool) {
    if (c.use_count() != 1) continue;
    // The last reader may have let go on another thread (a block read ahead): its reads of the
    // buffer happen before the writes that reuse it.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (BufferBytes(*c) > kPooledBytes) c = std::make_shared<Buffer>();
    return c;
  }
  auto c = std::make_shared<Buffer>();
  if (pool.size() < kPoolSize) pool.push_back(c);
  return c;
}
std::shared_ptr<bsoncolumn::ColumnElements> PooledCells() {
  return Pooled<bsoncolumn::ColumnElements>();
}

std::string DescribeBucketId(const BsonObj& bucket) {
  BsonElement id = bucket["_id"];
  if (id.type() == BsonType::kObjectId) return "ObjectId('" + id.Oid().ToHex() + "')";
  return "<_id not an ObjectId>";
}

}  // namespace

bool IsCompressedBucket(const BsonObj& bucket) {
  BsonElement control = bucket["control"];
  if (control.type() != BsonType::kObject) return false;
  BsonElement version = control.Obj()["version"];
  if (!version.IsNumber()) return false;
  double v = version.NumberDouble();
  return v == 2 || v == 3;
}

Status CheckCompressedBucket(const BsonObj& bucket, std::string_view time_field) {
  HG_ASSIGN_OR_RETURN(int64_t count, ControlCount(bucket));
  BsonElement data = bucket["data"];
  if (data.type() != BsonType::kObject) return Bad("'data' must be an object");
  bool saw_time = false;
  for (BsonElement col : data.Obj()) {
    const bool is_time = col.FieldName() == time_field;
    saw_time = saw_time || is_time;
    HG_RETURN_IF_ERROR(
        DecodeColumn(col, count, is_time, /*check_time_types=*/true, PooledCells().get()));
  }
  if (!saw_time) {
    return Bad("a compressed bucket must hold the time column " + ColumnName(time_field));
  }
  return Status::OK();
}

namespace {
// A malformed compressed bucket, as reads report it.
Status Corrupt(const BsonObj& bucket, const Status& why) {
  return Status(ErrorCode::kDataCorruptionDetected,
                "malformed time-series bucket " + DescribeBucketId(bucket) + ": " + why.reason());
}

// What every read of a compressed bucket starts from: its row count and its `data` object.
StatusWith<std::pair<int64_t, BsonObj>> CountAndData(const BsonObj& bucket) {
  auto count = ControlCount(bucket);
  if (!count.ok()) return Corrupt(bucket, count.status());
  BsonElement data = bucket["data"];
  if (data.type() != BsonType::kObject) return Corrupt(bucket, Bad("'data' is not an object"));
  return std::make_pair(count.value(), data.Obj());
}
}  // namespace

StatusWith<BsonObj> DecompressBucket(const BsonObj& bucket, std::string_view time_field,
                                     const std::function<bool(std::string_view)>& want) {
  auto corrupt = [&](const Status& why) { return Corrupt(bucket, why); };
  HG_ASSIGN_OR_RETURN(auto count_data, CountAndData(bucket));
  const int64_t count = count_data.first;
  BsonBuilder b;
  bool saw_time = false;
  for (BsonElement top : bucket) {
    const std::string_view name = top.FieldName();
    if (name == "control") {
      size_t c = b.OpenObject("control");
      for (BsonElement f : top.Obj()) {
        if (f.FieldName() == "count") continue;
        if (f.FieldName() == "version") {
          b.AppendInt32("version", 1);
        } else {
          b.AppendElement(f);
        }
      }
      b.Close(c);
      continue;
    }
    if (name != "data") {
      b.AppendElement(top);
      continue;
    }
    size_t d = b.OpenObject("data");
    std::string key;
    for (BsonElement col : top.Obj()) {
      const bool is_time = col.FieldName() == time_field;
      saw_time = saw_time || is_time;
      if (!is_time && want && !want(col.FieldName())) continue;
      auto cells = PooledCells();
      Status st = DecodeColumn(col, count, is_time, /*check_time_types=*/false, cells.get());
      if (!st.ok()) return corrupt(st);
      size_t o = b.OpenObject(col.FieldName());
      for (size_t row = 0; row < cells->size(); ++row) {
        if (cells->missing(row)) continue;
        key = std::to_string(row);
        b.AppendElementAs(cells->element(row), key);
      }
      b.Close(o);
    }
    b.Close(d);
  }
  if (!saw_time) {
    return corrupt(Bad("no time column " + ColumnName(time_field)));
  }
  return b.Obj();
}

StatusWith<int64_t> DecodeCompressedColumns(const BsonObj& bucket, std::string_view time_field,
                                            const std::function<bool(std::string_view)>& want,
                                            std::vector<DecodedColumn>* out,
                                            const std::function<bool(std::string_view)>& numbers,
                                            size_t max_columns) {
  out->clear();
  auto corrupt = [&](const Status& why) { return Corrupt(bucket, why); };
  HG_ASSIGN_OR_RETURN(auto count_data, CountAndData(bucket));
  const auto& [count, data] = count_data;
  bool saw_time = false;
  size_t distinct = 0;  // differently named columns decoded
  for (BsonElement col : data) {
    if (distinct == max_columns) break;
    const std::string_view name = col.FieldName();
    if (want && !want(name)) continue;
    const bool is_time = name == time_field;
    saw_time = saw_time || is_time;
    auto cells = PooledCells();
    std::shared_ptr<bsoncolumn::ColumnValues> values;
    if (numbers && numbers(name)) values = Pooled<bsoncolumn::ColumnValues>();
    bool as_numbers = false;
    Status st = DecodeColumn(col, count, is_time, /*check_time_types=*/false, cells.get(),
                             values.get(), &as_numbers);
    if (!st.ok()) return corrupt(st);
    if (std::none_of(out->begin(), out->end(),
                     [&](const DecodedColumn& d) { return d.name == name; })) {
      ++distinct;
    }
    if (as_numbers) {
      out->push_back(DecodedColumn{name, nullptr, std::move(values)});
    } else {
      out->push_back(DecodedColumn{name, std::move(cells), nullptr});
    }
  }
  // Whether `want` accepts the time column is known only from asking it.
  if (!saw_time && distinct != max_columns && (!want || want(time_field))) {
    return corrupt(Bad("no time column " + ColumnName(time_field)));
  }
  return count;
}

StatusWith<BsonObj> CompressBucket(const BsonObj& bucket, std::string_view time_field, int version,
                                   int64_t* interleave_restarts) {
  if (version != 2 && version != 3) return Bad("a compressed bucket has version 2 or 3");
  BsonElement data = bucket["data"];
  BsonElement control = bucket["control"];
  if (data.type() != BsonType::kObject || control.type() != BsonType::kObject) {
    return Bad("not a bucket");
  }
  // The time column first, then the others in stored order (MongoDB's compressBucket).
  std::vector<std::string> names = {std::string(time_field)};
  for (BsonElement col : data.Obj()) {
    if (col.FieldName() != time_field) names.emplace_back(col.FieldName());
  }
  std::vector<BucketUnpacker::Column> columns;
  HG_ASSIGN_OR_RETURN(int64_t rows, BucketUnpacker::Columns(bucket, time_field, names, &columns));
  if (rows == 0) return Bad("a bucket without measurements cannot be compressed");
  if (rows > std::numeric_limits<int32_t>::max()) return Bad("too many measurements");
  std::vector<size_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  if (version == 2) {
    const auto& t = columns[0].cells;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return bson::CompareElementValues(t[a], t[b]) < 0;
    });
  }

  BsonBuilder b;
  b.AppendElement(bucket["_id"]);
  size_t c = b.OpenObject("control");
  bool has_version = false;
  for (BsonElement f : control.Obj()) {
    if (f.FieldName() == "count") continue;
    if (f.FieldName() == "version") {
      b.AppendInt32("version", version);
      has_version = true;
    } else {
      b.AppendElement(f);
    }
  }
  if (!has_version) b.AppendInt32("version", version);
  b.AppendInt32("count", static_cast<int32_t>(rows));
  b.Close(c);
  for (BsonElement top : bucket) {
    if (top.FieldName() == "_id" || top.FieldName() == "control" || top.FieldName() == "data") {
      continue;
    }
    b.AppendElement(top);
  }
  int64_t restarts = 0;
  size_t d = b.OpenObject("data");
  for (size_t i = 0; i < names.size(); ++i) {
    if (!columns[i].present) continue;
    bsoncolumn::BsonColumnBuilder builder;
    for (size_t row : order) {
      const BsonElement& cell = columns[i].cells[row];
      if (cell.eoo()) {
        builder.Skip();
      } else {
        HG_RETURN_IF_ERROR(builder.Append(cell));
      }
    }
    restarts += builder.interleave_restarts();
    b.AppendBinData(names[i], kColumnSubtype, builder.Release());
  }
  b.Close(d);
  if (interleave_restarts != nullptr) *interleave_restarts = restarts;
  return b.Obj();
}

}  // namespace hourglass::timeseries
