#include "timeseries/bucket_validation.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "base/clock.h"
#include "bsoncolumn/bson_column_decoder.h"
#include "timeseries/bucket_field_tree.h"

namespace hourglass::timeseries {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr uint8_t kColumnSubtype = 7;

Status Bad(std::string why) { return Status(ErrorCode::kBadValue, std::move(why)); }

// The row index a version-1 column names its cells by: "0", "1", ... in canonical decimal form;
// -1 for anything else.
int64_t RowIndex(std::string_view name) {
  if (name.empty() || name.size() > 9 || (name.size() > 1 && name[0] == '0')) return -1;
  int64_t v = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

// {name: e} as a document, for messages.
std::string Wrapped(std::string_view name, const BsonElement& e) {
  if (e.eoo()) return "{}";
  bson::BsonBuilder b;
  b.AppendElementAs(e, name);
  return b.Obj().ToJson();
}

// Whether a control bound and the bound computed from the rows are the same value: objects
// field by field whatever their order (a version-2 bucket's rows were re-sorted by time, so the
// order in which an object's subfields were first met may differ from the writer's), arrays by
// position, other values in the canonical order under `strings`.
bool SameBound(const BsonElement& a, const BsonElement& b, const bson::StringComparator* strings) {
  if (a.eoo() || b.eoo()) return a.eoo() && b.eoo();
  const bool a_obj = a.type() == BsonType::kObject, b_obj = b.type() == BsonType::kObject;
  const bool a_arr = a.type() == BsonType::kArray, b_arr = b.type() == BsonType::kArray;
  if (a_obj != b_obj || a_arr != b_arr) return false;
  if (a_obj) {
    const BsonObj x = a.Obj(), y = b.Obj();
    if (x.NumFields() != y.NumFields()) return false;
    for (BsonElement f : x) {
      if (!SameBound(f, y[f.FieldName()], strings)) return false;
    }
    return true;
  }
  if (a_arr) {
    const BsonObj x = a.Obj(), y = b.Obj();
    auto i = x.begin(), j = y.begin();
    for (; i != x.end() && j != y.end(); ++i, ++j) {
      if (!SameBound(*i, *j, strings)) return false;
    }
    return i == x.end() && j == y.end();
  }
  return bson::CompareElementValues(a, b, strings) == 0;
}

// One data column of the bucket, its present cells in row order.
struct Column {
  std::string_view name;
  std::vector<BsonElement> values;  // point into the bucket (v1) or into `decoded`
  bsoncolumn::ColumnElements decoded;
};

Status DecodeColumn(const BsonElement& e, size_t max_cells, Column* out) {
  Status st = bsoncolumn::DecodeBsonColumnElements(e.BinData(), &out->decoded, 0, max_cells);
  if (!st.ok()) {
    return Status(ErrorCode::kInvalidBSON,
                  "Exception occurred while decompressing a BSON column '" +
                      std::string(e.FieldName()) + "': " + st.reason());
  }
  return Status::OK();
}

Status CheckTimeColumn(const BsonElement& e, int version, Column* col) {
  const std::string name(e.FieldName());
  if (version == 1) {
    int64_t expected = 0;
    for (BsonElement cell : e.Obj()) {
      if (cell.type() != BsonType::kDate) {
        return Bad("Time-series bucket " + name + " field is not a Date");
      }
      if (RowIndex(cell.FieldName()) != expected) {
        return Bad("The indexes in time-series bucket data field '" + name +
                   "' is not consecutively increasing from '0'. Expected: " +
                   std::to_string(expected) + ", but got: " + std::string(cell.FieldName()));
      }
      col->values.push_back(cell);
      ++expected;
    }
    return Status::OK();
  }
  HG_RETURN_IF_ERROR(DecodeColumn(e, kMaxBucketRows, col));
  int64_t previous = 0;
  for (size_t i = 0; i < col->decoded.size(); ++i) {
    BsonElement cell = col->decoded.element(i);
    if (cell.eoo()) return Bad("Time-series bucket has missing time fields");
    if (cell.type() != BsonType::kDate) {
      return Bad("Time-series bucket '" + name + "' field is not a Date");
    }
    // Version 2 is the sorted layout; version 3 (MongoDB 8.0) may hold any order.
    if (version == 2 && i > 0 && cell.DateMillis() < previous) {
      return Bad("Time-series bucket '" + name + "' field is not in ascending order");
    }
    previous = cell.DateMillis();
    col->values.push_back(cell);
  }
  return Status::OK();
}

Status CheckDataColumn(const BsonElement& e, int version, size_t rows, Column* col) {
  const std::string name(e.FieldName());
  if (version == 1) {
    int64_t previous = -1;
    for (BsonElement cell : e.Obj()) {
      const int64_t index = RowIndex(cell.FieldName());
      const std::string where = "The index '" + std::string(cell.FieldName()) +
                                "' in time-series bucket data field '" + name + "' is ";
      if (index < 0) return Bad(where + "negative or non-numerical");
      if (index <= previous) return Bad(where + "not in increasing order");
      if (static_cast<size_t>(index) >= rows) return Bad(where + "out of range");
      col->values.push_back(cell);
      previous = index;
    }
    return Status::OK();
  }
  HG_RETURN_IF_ERROR(DecodeColumn(e, kMaxBucketRows, col));
  if (col->decoded.size() != rows) {
    return Bad("Time-series bucket data field '" + name + "' holds " +
               std::to_string(col->decoded.size()) + " values, but the bucket has " +
               std::to_string(rows) + " measurements");
  }
  for (size_t i = 0; i < col->decoded.size(); ++i) {
    if (!col->decoded.missing(i)) col->values.push_back(col->decoded.element(i));
  }
  return Status::OK();
}

size_t DistinctFields(const BsonObj& o) {
  std::unordered_set<std::string_view> names;
  for (BsonElement e : o) names.insert(e.FieldName());
  return names.size();
}

}  // namespace

Status CheckBucketConsistency(const BsonObj& bucket, const TimeseriesOptions& options,
                              const std::shared_ptr<const bson::StringComparator>& strings) {
  const std::string& time_field = options.time_field;
  // 1. The shape every later check reads.
  BsonElement id = bucket["_id"];
  if (id.type() != BsonType::kObjectId) return Bad("'_id' must be an objectId");
  BsonElement control_e = bucket["control"];
  if (control_e.type() != BsonType::kObject) return Bad("'control' must be an object");
  const BsonObj control = control_e.Obj();
  BsonElement min_e = control["min"], max_e = control["max"];
  if (min_e.type() != BsonType::kObject) return Bad("'control.min' must be an object");
  if (max_e.type() != BsonType::kObject) return Bad("'control.max' must be an object");
  const BsonObj control_min = min_e.Obj(), control_max = max_e.Obj();
  BsonElement data_e = bucket["data"];
  if (data_e.type() != BsonType::kObject) return Bad("'data' must be an object");
  const BsonObj data = data_e.Obj();

  // 2. The version.
  BsonElement version_e = control["version"];
  const std::optional<int64_t> whole = version_e.WholeNumber();
  if (!whole || *whole < 1 || *whole > 3) {
    return Bad("Invalid value for 'control.version'. Expected 1, 2, or 3, but got " +
               (version_e.eoo() ? std::string("nothing") : Wrapped("version", version_e)) + ".");
  }
  const int version = static_cast<int>(*whole);

  // 3. The bucket id's timestamp is its start in seconds (rounded down, as NewBucketId does).
  BsonElement min_time = control_min[time_field];
  if (min_time.type() != BsonType::kDate) {
    return Bad("'control.min." + time_field + "' must be a date");
  }
  {
    const int64_t ms = min_time.DateMillis();
    const int64_t secs = ms >= 0 ? ms / 1000 : -((-(ms + 1)) / 1000) - 1;
    const uint32_t expected = static_cast<uint32_t>(static_cast<uint64_t>(secs));
    const uint32_t embedded = id.Oid().Timestamp();
    if (embedded != expected) {
      return Status(ErrorCode::kInvalidIdField,
                    "Mismatch between the embedded timestamp " +
                        FormatIsoDate(static_cast<int64_t>(embedded) * 1000) +
                        " in the time-series bucket '_id' field and the timestamp " +
                        FormatIsoDate(secs * 1000) + " in 'control.min' field.");
    }
  }

  // 4. Column types.
  for (BsonElement column : data) {
    const bool right =
        version == 1 ? column.type() == BsonType::kObject
                     : column.type() == BsonType::kBinData && column.BinSubtype() == kColumnSubtype;
    if (!right) {
      return Status(ErrorCode::kTypeMismatch,
                    "Mismatch between time-series schema version and data field type. Expected "
                    "type " +
                        std::string(version == 1 ? "object" : "binData") + ", but got " +
                        std::string(bson::TypeName(column.type())) + ".");
    }
  }

  // 5. As many bounds as columns.
  const size_t n_data = DistinctFields(data), n_min = DistinctFields(control_min),
               n_max = DistinctFields(control_max);
  if (n_data != n_min || n_min != n_max) {
    return Bad(
        "Mismatch between the number of time-series control fields and the number of "
        "data fields. Control had " +
        std::to_string(n_min) + " min fields and " + std::to_string(n_max) +
        " max fields, but observed data had " + std::to_string(n_data) + " fields.");
  }

  // 6. The time column, which numbers the rows.
  BsonElement time_column = data[time_field];
  if (time_column.eoo()) return Bad("Time-series bucket has no '" + time_field + "' data field");
  // Reserved once: a Column's values may point into its own decoded buffer, which must not move.
  std::vector<Column> columns;
  columns.reserve(static_cast<size_t>(data.NumFields()) + 1);
  columns.emplace_back();
  columns[0].name = time_column.FieldName();
  HG_RETURN_IF_ERROR(CheckTimeColumn(time_column, version, &columns[0]));
  const size_t rows = columns[0].values.size();
  if (version != 1) {
    BsonElement count = control["count"];
    if (!count.IsNumber()) return Bad("The 'control.count' field is missing or not a number.");
    const std::optional<int64_t> n = count.WholeNumber();
    if (!n || *n != static_cast<int64_t>(rows)) {
      return Bad("The 'control.count' field (" + Wrapped("count", count) +
                 ") does not match the actual number of measurements in the document (" +
                 std::to_string(rows) + ").");
    }
  }

  // 7. The other columns.
  for (BsonElement column : data) {
    if (column.FieldName() == time_field) continue;
    columns.emplace_back();
    columns.back().name = column.FieldName();
    HG_RETURN_IF_ERROR(CheckDataColumn(column, version, rows, &columns.back()));
  }

  // 8. The bounds, computed from the values as the bucket catalog computes them.
  BucketFieldTree tree;
  tree.SetCollator(strings);
  bson::BsonBuilder cell;
  for (const Column& c : columns) {
    for (const BsonElement& v : c.values) {
      cell.Reset();
      cell.AppendElementAs(v, c.name);
      tree.UpdateMinMax(cell.View(), std::string_view());
    }
  }
  const BsonObj observed_min = tree.Min(), observed_max = tree.Max();
  for (const Column& c : columns) {
    const BsonElement cmin = control_min[c.name], cmax = control_max[c.name];
    const BsonElement omin = observed_min[c.name], omax = observed_max[c.name];
    bool same;
    if (c.name == time_field) {
      same = cmax.type() == BsonType::kDate && omax.type() == BsonType::kDate &&
             cmax.DateMillis() == omax.DateMillis() && omin.type() == BsonType::kDate &&
             cmin.DateMillis() <= omin.DateMillis();
    } else {
      same = SameBound(cmin, omin, strings.get()) && SameBound(cmax, omax, strings.get());
    }
    if (!same) {
      return Bad("Mismatch between time-series control and observed min or max for field " +
                 std::string(c.name) + ". Control had min " + Wrapped(c.name, cmin) + " and max " +
                 Wrapped(c.name, cmax) + ", but observed data had min " + Wrapped(c.name, omin) +
                 " and max " + Wrapped(c.name, omax) + ".");
    }
  }
  return Status::OK();
}

}  // namespace hourglass::timeseries
