#include "timeseries/bucket_compression.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <string>
#include <vector>

#include "bsoncolumn/bson_column_builder.h"

namespace hourglass::timeseries {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

Status NotVersion1(const std::string& why) {
  return Status(ErrorCode::kBadValue, "cannot compress the bucket: " + why);
}

// The row number a version-1 cell is keyed by ("0", "1", ...).
StatusWith<size_t> RowOf(std::string_view key, size_t rows, std::string_view column) {
  size_t row = 0;
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), row);
  if (ec != std::errc() || end != key.data() + key.size() || key.empty()) {
    return NotVersion1("data." + std::string(column) + " has a cell named '" + std::string(key) +
                       "', not a row number");
  }
  if (row >= rows) {
    return NotVersion1("data." + std::string(column) + " has row " + std::string(key) +
                       " beyond the time column's " + std::to_string(rows) + " rows");
  }
  return row;
}

}  // namespace

StatusWith<CompressedBucket> CompressBucket(const BsonObj& bucket, std::string_view time_field) {
  BsonElement control = bucket["control"];
  if (control.type() != BsonType::kObject || !control.Obj()["version"].IsNumber() ||
      control.Obj()["version"].NumberLong() != 1) {
    return NotVersion1("it is not a version-1 bucket");
  }
  BsonElement data = bucket["data"];
  if (data.type() != BsonType::kObject) return NotVersion1("it has no data object");
  BsonElement time_col = data.Obj()[time_field];
  if (time_col.type() != BsonType::kObject) {
    return NotVersion1("data." + std::string(time_field) + " is not an object");
  }

  // The time of each row, then the rows in time order.
  const size_t rows = static_cast<size_t>(time_col.Obj().NumFields());
  std::vector<int64_t> times(rows, 0);
  std::vector<bool> seen(rows, false);
  for (BsonElement cell : time_col.Obj()) {
    HG_ASSIGN_OR_RETURN(size_t row, RowOf(cell.FieldName(), rows, time_field));
    if (cell.type() != BsonType::kDate || seen[row]) {
      return NotVersion1("data." + std::string(time_field) + "." + std::string(cell.FieldName()) +
                         " is not one date per row");
    }
    seen[row] = true;
    times[row] = cell.DateMillis();
  }
  std::vector<size_t> order(rows);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return times[a] < times[b]; });

  int64_t restarts = 0;
  // One column: its cells in time order, a skip where a row has none.
  auto compress = [&](const BsonElement& column, BsonBuilder& out) -> Status {
    if (column.type() != BsonType::kObject) {
      return NotVersion1("data." + std::string(column.FieldName()) + " is not an object");
    }
    std::vector<BsonElement> cells(rows);
    for (BsonElement cell : column.Obj()) {
      HG_ASSIGN_OR_RETURN(size_t row, RowOf(cell.FieldName(), rows, column.FieldName()));
      cells[row] = cell;
    }
    bsoncolumn::BsonColumnBuilder builder;
    for (size_t row : order) {
      if (cells[row].eoo()) {
        builder.Skip();
      } else {
        HG_RETURN_IF_ERROR(builder.Append(cells[row]));
      }
    }
    restarts += builder.interleave_restarts();
    out.AppendBinData(column.FieldName(), 7, builder.Release());
    return Status::OK();
  };

  BsonBuilder out;
  for (BsonElement e : bucket) {
    if (e.FieldName() == "data") continue;  // last
    if (e.FieldName() != "control") {
      out.AppendElement(e);
      continue;
    }
    size_t c = out.OpenObject("control");
    for (BsonElement f : control.Obj()) {
      if (f.FieldName() == "version") {
        out.AppendInt32("version", 2);
      } else if (f.FieldName() != "count") {
        out.AppendElement(f);
      }
    }
    out.AppendInt32("count", static_cast<int32_t>(rows));
    out.Close(c);
  }
  size_t d = out.OpenObject("data");
  HG_RETURN_IF_ERROR(compress(time_col, out));
  for (BsonElement column : data.Obj()) {
    if (column.FieldName() == time_field) continue;
    HG_RETURN_IF_ERROR(compress(column, out));
  }
  out.Close(d);
  return CompressedBucket{out.Obj(), restarts};
}

}  // namespace hourglass::timeseries
