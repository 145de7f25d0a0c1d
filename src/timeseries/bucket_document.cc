#include "timeseries/bucket_document.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "bson/little_endian.h"
#include "catalog/update_diff.h"

namespace hourglass::timeseries {

using bson::BsonElement;
using bson::BsonObj;
using bson::Int32Bytes;
using bson::PutInt32;

namespace {
constexpr std::string_view kControlHeader{
    "\x03"
    "control\0",
    9};
constexpr std::string_view kDataHeader{
    "\x03"
    "data\0",
    6};
constexpr size_t kIdElemSize = 1 + 4 + 12;  // type, "_id\0", 12 bytes
constexpr size_t kControlPos = 4 + kIdElemSize;

// Bytes of a column element: type 3, name, length, entries, EOO.
uint32_t ColumnElemSize(std::string_view name, size_t entries_bytes) {
  return static_cast<uint32_t>(1 + name.size() + 1 + 4 + entries_bytes + 1);
}

void AppendColumnElem(std::string* out, std::string_view name, std::string_view entries) {
  out->push_back('\x03');
  out->append(name);
  out->push_back('\0');
  PutInt32(out, static_cast<uint32_t>(4 + entries.size() + 1));
  out->append(entries);
  out->push_back('\0');
}
}  // namespace

BucketDocument::BucketDocument(const bson::ObjectId& id, const BsonElement& meta) : id_(id) {
  if (!meta.eoo()) {
    meta_elem_.push_back(static_cast<char>(meta.type()));
    meta_elem_.append("meta");
    meta_elem_.push_back('\0');
    meta_elem_.append(meta.value(), meta.ValueSize());
  }
  MeasureLayout();
}

BucketDocument BucketDocument::Compressed(const bson::ObjectId& id, const BsonElement& meta,
                                          std::string_view time_field) {
  BucketDocument doc(id, meta);
  doc.compressed_ = true;
  doc.time_field_ = std::string(time_field);
  Column time;
  time.name = doc.time_field_;
  time.packed = std::make_unique<Packed>();
  doc.columns_.push_back(std::move(time));
  doc.MeasureLayout();
  return doc;
}

bool BucketDocument::CanCompress(const BsonObj& row) {
  for (bson::FieldCursor cur(row.data()); cur.Next();) {
    if (!bsoncolumn::BsonColumnBuilder::CanHold(cur.field().type, cur.field().value)) return false;
  }
  return true;
}

namespace {
Status Unappendable(std::string why) {
  return Status(ErrorCode::kBadValue, "bucket cannot be appended to: " + why);
}

// The _id, control and meta that open every bucket, and its `data` (the last field).
struct StoredParts {
  BsonElement id, control, meta, data;
};
StatusWith<StoredParts> SplitStored(const BsonObj& bucket) {
  StoredParts p;
  auto it = bucket.begin();
  p.id = *it;
  if (p.id.FieldName() != "_id" || p.id.type() != bson::BsonType::kObjectId) {
    return Unappendable("_id");
  }
  ++it;
  p.control = *it;
  if (p.control.FieldName() != "control" || p.control.type() != bson::BsonType::kObject) {
    return Unappendable("control must follow _id");
  }
  ++it;
  BsonElement next = *it;
  if (next.FieldName() == "meta") {
    p.meta = next;
    ++it;
    next = *it;
  }
  if (next.FieldName() != "data" || next.type() != bson::BsonType::kObject) {
    return Unappendable("data must be the last field");
  }
  p.data = next;
  ++it;
  if (it != bucket.end()) return Unappendable("unexpected field after data");
  return p;
}
}  // namespace

StatusWith<BucketDocument> BucketDocument::FromStored(const BsonObj& bucket,
                                                      std::string_view time_field) {
  const BsonElement version = bucket["control"].type() == bson::BsonType::kObject
                                  ? bucket["control"].Obj()["version"]
                                  : BsonElement();
  if (version.IsNumber() && (version.NumberLong() == 2 || version.NumberLong() == 3)) {
    return FromStoredCompressed(bucket, time_field);
  }
  auto bad = [&](std::string why) { return Unappendable(std::move(why)); };
  auto it = bucket.begin();
  BsonElement id = *it;
  if (id.FieldName() != "_id" || id.type() != bson::BsonType::kObjectId) return bad("_id");
  ++it;
  BsonElement control = *it;
  if (control.FieldName() != "control" || control.type() != bson::BsonType::kObject) {
    return bad("control must follow _id");
  }
  if (control.Obj()["version"].NumberLong() != 1) return bad("not a version 1 bucket");
  ++it;
  BucketDocument doc(id.Oid(), BsonElement());
  BsonElement next = *it;
  if (next.FieldName() == "meta") {
    doc.meta_elem_.assign(next.raw(), next.size());
    ++it;
    next = *it;
  }
  if (next.FieldName() != "data" || next.type() != bson::BsonType::kObject) {
    return bad("data must be the last field");
  }
  ++it;
  if (it != bucket.end()) return bad("unexpected field after data");
  // Row keys must be canonical decimals ("0", "17", never "017"), ascending; the time column
  // numbers the rows 0..n-1 and appends continue from n.
  auto row_number = [](std::string_view name, uint32_t* k) {
    if (name.empty() || (name.size() > 1 && name[0] == '0')) return false;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), *k);
    return ec == std::errc() && p == name.data() + name.size();
  };
  bool saw_time = false;
  for (BsonElement col : next.Obj()) {
    if (col.type() != bson::BsonType::kObject) return bad("column is not an object");
    if (col.FieldName() == time_field) {
      uint32_t expect = 0;
      for (BsonElement cell : col.Obj()) {
        uint32_t k = 0;
        if (!row_number(cell.FieldName(), &k) || k != expect) {
          return bad("time column keys are not 0..n-1");
        }
        ++expect;
      }
      doc.num_rows_ = expect;
      saw_time = true;
    }
    Column c;
    c.name = std::string(col.FieldName());
    c.elem_size = static_cast<uint32_t>(col.size());
    c.is_new = false;
    doc.columns_.push_back(std::move(c));
  }
  if (saw_time) {
    for (BsonElement col : next.Obj()) {
      int64_t last = -1;
      for (BsonElement cell : col.Obj()) {
        uint32_t k = 0;
        if (!row_number(cell.FieldName(), &k) || k <= last || k >= doc.num_rows_) {
          return bad("column '" + std::string(col.FieldName()) + "' has a bad row key");
        }
        last = k;
      }
    }
  }
  if (!saw_time) return bad("no time column");
  doc.stored_ = true;
  doc.control_elem_size_ = static_cast<uint32_t>(control.size());
  doc.control_.assign(control.value(), control.ValueSize());
  doc.size_ = static_cast<size_t>(bucket.size());
  doc.MeasureLayout();
  return doc;
}

StatusWith<BucketDocument> BucketDocument::FromStoredCompressed(const BsonObj& bucket,
                                                                std::string_view time_field) {
  HG_ASSIGN_OR_RETURN(StoredParts parts, SplitStored(bucket));
  const BsonObj control = parts.control.Obj();
  const BsonElement count = control["count"];
  if (!count.IsNumber() || count.NumberDouble() < 1 ||
      count.NumberDouble() != static_cast<double>(count.NumberLong()) ||
      count.NumberLong() > std::numeric_limits<int32_t>::max()) {
    return Unappendable("control.count is not a row count");
  }
  const BsonElement max_t = control["max"].type() == bson::BsonType::kObject
                                ? control["max"].Obj()[time_field]
                                : BsonElement();
  if (max_t.type() != bson::BsonType::kDate) return Unappendable("no control.max time");
  BucketDocument doc(parts.id.Oid(), BsonElement());
  if (!parts.meta.eoo()) doc.meta_elem_.assign(parts.meta.raw(), parts.meta.size());
  doc.compressed_ = true;
  doc.time_field_ = std::string(time_field);
  doc.sorted_ = control["version"].NumberLong() == 2;
  doc.max_time_ = max_t.DateMillis();
  doc.num_rows_ = static_cast<uint32_t>(count.NumberLong());
  doc.encoded_rows_ = doc.num_rows_;
  bool saw_time = false;
  for (BsonElement col : parts.data.Obj()) {
    if (col.type() != bson::BsonType::kBinData || col.BinSubtype() != 7) {
      return Unappendable("column '" + std::string(col.FieldName()) + "' is not a BSONColumn");
    }
    auto builder = bsoncolumn::BsonColumnBuilder::FromBinary(col.BinData());
    if (!builder.ok()) return Unappendable(builder.status().reason());
    if (builder.value().size() != doc.num_rows_) {
      return Unappendable("column '" + std::string(col.FieldName()) +
                          "' does not hold control.count cells");
    }
    if (col.FieldName() == time_field && !saw_time) {
      saw_time = true;
      doc.time_column_ = doc.columns_.size();
    }
    Column c;
    c.name = std::string(col.FieldName());
    c.elem_size = static_cast<uint32_t>(col.size());
    c.is_new = false;
    c.packed = std::make_unique<Packed>();
    c.packed->builder = std::move(builder).value();
    c.packed->stored_len = static_cast<uint32_t>(col.BinData().size());
    doc.columns_.push_back(std::move(c));
  }
  if (!saw_time) return Unappendable("no time column");
  doc.stored_ = true;
  doc.control_elem_size_ = static_cast<uint32_t>(parts.control.size());
  doc.control_.assign(parts.control.value(), parts.control.ValueSize());
  doc.size_ = static_cast<size_t>(bucket.size());
  doc.MeasureLayout();
  return doc;
}

BucketDocument::Column& BucketDocument::ColumnFor(std::string_view name, size_t hint) {
  // Measurements of a series nearly always list their fields in the same order, so the column at
  // the field's position is almost always the one.
  if (hint < columns_.size() && columns_[hint].name == name) return columns_[hint];
  for (auto& c : columns_) {
    if (c.name == name) return c;
  }
  Column c;
  c.name = std::string(name);
  if (compressed_) {
    // The rows already encoded lack the field.
    c.packed = std::make_unique<Packed>();
    for (uint32_t i = 0; i < encoded_rows_; ++i) c.packed->builder.Skip();
  }
  columns_.push_back(std::move(c));
  return columns_.back();
}

void BucketDocument::EncodeStagedCopies() {
  if (!compressed_ || unencoded_.empty()) return;
  EncodeRows(staged_rows_ - (encoded_rows_ - num_rows_));
  // The copies of a bucket's rows between two writes are most of its memory otherwise.
  unencoded_.shrink_to_fit();
}

uint32_t BucketDocument::EncodeRowsBounded(uint32_t rows, BucketFieldTree::RowBounds* bounds) {
  // Copies are freed as they are encoded: `bounds` may only view held rows.
  if (!compressed_ || failed_ || rows > staged_rows_ || !unencoded_.empty()) return rows;
  const uint32_t encoded = std::min(encoded_rows_ - num_rows_, rows);
  EncodeRows(rows - encoded, bounds);
  return encoded;
}

void BucketDocument::EncodeRows(uint32_t rows, BucketFieldTree::RowBounds* bounds) {
  invariant(!failed_);
  if (!shared_rows_.empty()) {
    invariant(rows <= shared_rows_.size());
    for (uint32_t i = 0; i < rows; ++i) EncodeRow(shared_rows_[i].data(), bounds);
    shared_rows_.erase(shared_rows_.begin(), shared_rows_.begin() + rows);
    return;
  }
  size_t at = 0;
  for (uint32_t done = 0; done < rows; ++done) {
    invariant(at < unencoded_.size());
    const char* row = unencoded_.data() + at;
    at += static_cast<size_t>(bson::ReadInt32(row));
    EncodeRow(row, bounds);
  }
  unencoded_.erase(0, at);
}

void BucketDocument::StageEncoded(std::span<const BsonObj> rows, std::string_view skip_field,
                                  BucketFieldTree::RowBounds* bounds) {
  invariant(CanStageEncoded());
  skip_field_.assign(skip_field);
  for (const BsonObj& row : rows) EncodeRow(row.data(), bounds);
  staged_rows_ = static_cast<uint32_t>(rows.size());
}

void BucketDocument::EncodeRow(const char* row, BucketFieldTree::RowBounds* bounds) {
  const uint32_t cells = encoded_rows_ + 1;
  // The time column is first; the others usually follow in the measurement's order.
  size_t pos = 1;
  for (bson::FieldCursor cur(row); cur.Next();) {
    const bson::FieldView& f = cur.field();
    if (!skip_field_.empty() && f.name == skip_field_) continue;
    const bool is_time = f.name == time_field_;
    Column& c = is_time ? columns_[time_column_] : ColumnFor(f.name, pos++);
    if (bounds != nullptr) bounds->Add(static_cast<size_t>(&c - columns_.data()), f);
    if (is_time && f.type == bson::BsonType::kDate) {
      const int64_t t = f.Element().DateMillis();
      sorted_ = sorted_ && t >= max_time_;
      max_time_ = std::max(max_time_, t);
    }
    if (c.packed->builder.size() < cells) {  // a repeated field name keeps its first value
      Status st = c.packed->builder.Append(f);
      invariant(st.ok());  // callers only stage rows CanCompress accepts
    }
  }
  for (Column& c : columns_) {
    if (c.packed->builder.size() < cells) c.packed->builder.Skip();
  }
  encoded_rows_ = cells;
}

void BucketDocument::StageSharedRows(std::span<const BsonObj> rows, std::string_view skip_field) {
  // Held rather than copied, unless copies are staged already (rows are encoded in order).
  if (!compressed_ || !unencoded_.empty()) {
    StageRows(rows, skip_field);
    return;
  }
  invariant(!failed_);
  skip_field_.assign(skip_field);  // in place: staged per bucket per commit
  for (const BsonObj& row : rows) {
    invariant(row.IsOwned());
    shared_rows_.push_back(row);
  }
  staged_rows_ += static_cast<uint32_t>(rows.size());
}

void BucketDocument::StageRows(std::span<const BsonObj> rows, std::string_view skip_field) {
  if (compressed_) {
    invariant(!failed_);
    skip_field_.assign(skip_field);
    // Rows held before these become copies too, ahead of them.
    for (const BsonObj& row : shared_rows_) {
      unencoded_.append(row.data(), static_cast<size_t>(row.size()));
    }
    shared_rows_.clear();
    for (const BsonObj& row : rows) unencoded_.append(row.data(), static_cast<size_t>(row.size()));
    staged_rows_ += static_cast<uint32_t>(rows.size());
    return;
  }
  char key[16];
  for (const BsonObj& row : rows) {
    uint32_t r = num_rows_ + staged_rows_++;
    auto [kend, ec] = std::to_chars(key, key + sizeof(key), r);
    (void)ec;
    std::string_view k(key, static_cast<size_t>(kend - key));
    size_t pos = 0;
    for (bson::FieldCursor cur(row.data()); cur.Next();) {
      const bson::FieldView& f = cur.field();
      if (!skip_field.empty() && f.name == skip_field) continue;
      Column& c = ColumnFor(f.name, pos++);
      c.staged.push_back(static_cast<char>(f.type));
      c.staged.append(k);
      c.staged.push_back('\0');
      c.staged.append(f.value, f.value_size);
      ++c.staged_count;
      staged_bytes_ += 1 + k.size() + 1 + f.value_size;
    }
  }
}

namespace {
// Bytes of a compressed column element: type 5, name, len4, subtype 7, binary.
uint32_t PackedElemSize(std::string_view name, size_t binary_bytes) {
  return static_cast<uint32_t>(1 + name.size() + 1 + 4 + 1 + binary_bytes);
}

void AppendPackedElem(std::string* out, std::string_view name, std::string_view binary) {
  out->push_back('\x05');
  out->append(name);
  out->push_back('\0');
  PutInt32(out, static_cast<uint32_t>(binary.size()));
  out->push_back('\x07');
  out->append(binary);
}
}  // namespace

void BucketDocument::WriteFull(std::string_view control_elem, size_t data_len,
                               std::string_view columns, std::string* full) const {
  full->clear();
  full->reserve(prepared_size_);
  PutInt32(full, static_cast<uint32_t>(prepared_size_));
  full->push_back('\x07');
  full->append("_id", 4);
  full->append(reinterpret_cast<const char*>(id_.bytes), 12);
  full->append(control_elem);
  full->append(meta_elem_);
  full->append(kDataHeader);
  PutInt32(full, static_cast<uint32_t>(data_len));
  full->append(columns);
  full->push_back('\0');
  full->push_back('\0');
}

std::vector<size_t> BucketDocument::StoredColumnOffsets(size_t data_doc) const {
  std::vector<size_t> offsets;
  size_t off = data_doc + 4;
  for (const auto& c : columns_) {
    offsets.push_back(off);
    if (!c.is_new) off += c.elem_size;
  }
  return offsets;
}

void BucketDocument::AppendHeadEdits(std::string control_elem, size_t data_doc, size_t data_len,
                                     std::vector<storage::Session::Modification>* edits) const {
  edits->push_back({Int32Bytes(static_cast<uint32_t>(data_len)), data_doc, 4});
  edits->push_back({std::move(control_elem), kControlPos, control_elem_size_});
  edits->push_back({Int32Bytes(static_cast<uint32_t>(prepared_size_)), 0, 4});
}

BsonObj BucketDocument::PreparedDiff() {
  if (!stored_) return BsonObj();
  if (!prepared_diff_.empty()) return BsonObj(prepared_diff_.data());
  bson::BsonBuilder sdata, added;
  bool any_added = false;
  if (compressed_) {
    // Each changed column as one binary range (a proposal's `head` byte, before the range it
    // edits, starts the range there), new columns whole.
    bson::BsonBuilder changed;
    bool any_changed = false;
    for (const Column& c : columns_) {
      const auto& p = *c.packed->proposal;
      if (c.is_new) {
        added.AppendBinData(c.name, 7, p.diff.data);
        any_added = true;
        continue;
      }
      if (p.diff.data.empty() && p.diff.offset == c.packed->stored_len && !p.diff.head) continue;
      bson::BsonBuilder range;
      if (p.diff.head) {
        range.AppendInt32("o", static_cast<int32_t>(p.diff.head_offset));
        range.AppendBinData("d", 0, c.packed->builder.BytesFrom(p, p.diff.head_offset));
      } else {
        range.AppendInt32("o", static_cast<int32_t>(p.diff.offset));
        range.AppendBinData("d", 0, p.diff.data);
      }
      changed.AppendObject(c.name, range.Obj());
      any_changed = true;
    }
    if (any_added) sdata.AppendObject("i", added.Obj());
    if (any_changed) sdata.AppendObject("b", changed.Obj());
  } else {
    // New columns inserted, each stored column's new entries as the inserts of its sub-diff.
    auto entries = [](const std::string& staged) {
      std::string obj;
      PutInt32(&obj, static_cast<uint32_t>(4 + staged.size() + 1));
      obj.append(staged);
      obj.push_back('\0');
      return obj;
    };
    for (const auto& c : columns_) {
      if (!c.is_new) continue;
      const std::string obj = entries(c.staged);
      added.AppendObject(c.name, BsonObj(obj.data()));
      any_added = true;
    }
    if (any_added) sdata.AppendObject("i", added.Obj());
    for (const auto& c : columns_) {
      if (c.is_new || c.staged.empty()) continue;
      const std::string obj = entries(c.staged);
      bson::BsonBuilder sub;
      sub.AppendObject("i", BsonObj(obj.data()));
      sdata.AppendObject("s" + c.name, sub.Obj());
    }
  }
  const BsonObj before(control_.data()), after(prepared_control_.data());
  bson::BsonBuilder d;
  std::optional<BsonObj> control_diff =
      catalog::ComputeUpdateDiff(before, after, catalog::SubDiffs::kAlways);
  if (!control_diff) {
    size_t u = d.OpenObject("u");
    d.AppendObject("control", after);
    d.Close(u);
  } else if (!control_diff->IsEmpty()) {
    d.AppendObject("scontrol", *control_diff);
  }
  const BsonObj data_diff = sdata.Obj();
  if (!data_diff.IsEmpty()) d.AppendObject("sdata", data_diff);
  prepared_diff_ = d.Release();
  return BsonObj(prepared_diff_.data());
}

void BucketDocument::PrepareCompressed(const BsonObj& control, std::string* full,
                                       std::vector<storage::Session::Modification>* edits,
                                       bool whole, uint32_t rows) {
  // The builders hold the committed rows, then the staged ones a Prepare encoded.
  const uint32_t encoded = encoded_rows_ - num_rows_;
  rows = std::min(rows, staged_rows_);
  invariant(encoded <= rows);
  EncodeRows(rows - encoded);
  prepared_rows_ = rows;
  // control as MongoDB writes a compressed bucket's: version, min, max, count.
  bson::BsonBuilder cb;
  for (BsonElement e : control) {
    if (e.FieldName() == "version") {
      cb.AppendInt32("version", sorted_ ? 2 : 3);
    } else if (e.FieldName() != "count") {
      cb.AppendElement(e);
    }
  }
  cb.AppendInt32("count", static_cast<int32_t>(num_rows_ + rows));
  const BsonObj control_obj = cb.Obj();
  std::string control_elem(kControlHeader);
  control_elem.append(control_obj.bytes());
  prepared_control_size_ = static_cast<uint32_t>(control_elem.size());
  prepared_control_.assign(control_obj.bytes());
  // Each column's new binary: the stored one up to the proposal's offset, then its bytes.
  std::vector<size_t> new_len(columns_.size());
  size_t data_len_old = 4 + 1, data_len_new = 4 + 1;
  for (size_t i = 0; i < columns_.size(); ++i) {
    Column& c = columns_[i];
    c.packed->proposal = std::make_unique<bsoncolumn::BsonColumnBuilder::Proposal>(
        c.packed->builder.ProposeIntermediate());
    const auto& diff = c.packed->proposal->diff;
    new_len[i] = diff.offset + diff.data.size();
    if (!c.is_new) data_len_old += c.elem_size;
    data_len_new += PackedElemSize(c.name, new_len[i]);
  }
  const size_t data_pos = kControlPos + control_elem_size_ + meta_elem_.size();
  prepared_size_ =
      kControlPos + control_elem.size() + meta_elem_.size() + kDataHeader.size() + data_len_new + 1;
  prepared_whole_ = whole;
  prepared_diff_.clear();
  if (!stored_ || whole) {
    // A stored column's new binary is the builder's whole column (the proposal holds its tail).
    std::string cols;
    for (const auto& c : columns_) {
      AppendPackedElem(
          &cols, c.name,
          stored_ && !c.is_new ? c.packed->builder.Finish() : c.packed->proposal->diff.data);
    }
    WriteFull(control_elem, data_len_new, cols, full);
    edits->clear();
    return;
  }
  // As for version 1: edits from the end of the document to its start.
  edits->clear();
  const size_t data_doc = data_pos + kDataHeader.size();
  std::string new_cols;
  for (const auto& c : columns_) {
    if (c.is_new) AppendPackedElem(&new_cols, c.name, c.packed->proposal->diff.data);
  }
  if (!new_cols.empty()) edits->push_back({std::move(new_cols), data_doc + data_len_old - 1, 0});
  const std::vector<size_t> offsets = StoredColumnOffsets(data_doc);
  for (size_t i = columns_.size(); i-- > 0;) {
    const Column& c = columns_[i];
    if (c.is_new) continue;
    const auto& diff = c.packed->proposal->diff;
    if (diff.data.empty() && diff.offset == c.packed->stored_len && !diff.head) continue;
    const size_t len_pos = offsets[i] + 1 + c.name.size() + 1;
    if (!diff.data.empty() || diff.offset != c.packed->stored_len) {
      edits->push_back(
          {diff.data, len_pos + 4 + 1 + diff.offset, c.packed->stored_len - diff.offset});
    }
    if (diff.head) {
      edits->push_back({std::string(1, *diff.head), len_pos + 4 + 1 + diff.head_offset, 1});
    }
    edits->push_back({Int32Bytes(static_cast<uint32_t>(new_len[i])), len_pos, 4});
  }
  AppendHeadEdits(std::move(control_elem), data_doc, data_len_new, edits);
}

void BucketDocument::Prepare(const BsonObj& control, std::string* full,
                             std::vector<storage::Session::Modification>* edits,
                             int64_t rewrite_after, uint32_t rows) {
  if (compressed_) {
    PrepareCompressed(control, full, edits,
                      stored_ && rewrite_after >= 0 && edits_in_a_row_ >= rewrite_after, rows);
    return;
  }
  invariant(rows == kAllStaged || rows == staged_rows_);
  std::string control_elem(kControlHeader);
  control_elem.append(control.bytes());
  prepared_control_size_ = static_cast<uint32_t>(control_elem.size());
  prepared_control_.assign(control.bytes());
  prepared_diff_.clear();
  size_t data_len_old = 4 + 1, data_len_new = 4 + 1;
  for (const auto& c : columns_) {
    if (!c.is_new) data_len_old += c.elem_size;
    data_len_new +=
        c.is_new ? ColumnElemSize(c.name, c.staged.size()) : c.elem_size + c.staged.size();
  }
  size_t data_pos = kControlPos + control_elem_size_ + meta_elem_.size();
  prepared_size_ =
      kControlPos + control_elem.size() + meta_elem_.size() + kDataHeader.size() + data_len_new + 1;
  if (!stored_) {
    std::string cols;
    for (const auto& c : columns_) AppendColumnElem(&cols, c.name, c.staged);
    WriteFull(control_elem, data_len_new, cols, full);
    return;
  }
  // Edits go from the end of the document to its start, so each offset, taken from the stored
  // layout, is still valid when its turn comes.
  edits->clear();
  size_t data_doc = data_pos + kDataHeader.size();
  std::string new_cols;
  for (const auto& c : columns_) {
    if (c.is_new) AppendColumnElem(&new_cols, c.name, c.staged);
  }
  if (!new_cols.empty()) edits->push_back({std::move(new_cols), data_doc + data_len_old - 1, 0});
  const std::vector<size_t> offsets = StoredColumnOffsets(data_doc);
  for (size_t i = columns_.size(); i-- > 0;) {
    const Column& c = columns_[i];
    if (c.is_new || c.staged.empty()) continue;
    edits->push_back({c.staged, offsets[i] + c.elem_size - 1, 0});
    uint32_t obj_len = static_cast<uint32_t>(c.elem_size - (2 + c.name.size()) + c.staged.size());
    edits->push_back({Int32Bytes(obj_len), offsets[i] + 1 + c.name.size() + 1, 4});
  }
  AppendHeadEdits(std::move(control_elem), data_doc, data_len_new, edits);
}

void BucketDocument::Finish(bool success) {
  prepared_diff_.clear();  // of the write now finished
  if (compressed_) {
    if (!success) {
      failed_ = failed_ || stored_ || staged_rows_ > 0;
      return;
    }
    for (auto& c : columns_) {
      invariant(c.packed->proposal != nullptr);  // Prepare came first
      auto& diff = c.packed->proposal->diff;
      c.packed->stored_len = static_cast<uint32_t>(diff.offset + diff.data.size());
      c.elem_size = PackedElemSize(c.name, c.packed->stored_len);
      c.is_new = false;
      c.packed->builder.AcceptIntermediate(std::move(*c.packed->proposal));
      c.packed->proposal.reset();
    }
    edits_in_a_row_ = stored_ && !prepared_whole_ ? edits_in_a_row_ + 1 : 0;
    num_rows_ += prepared_rows_;
    staged_rows_ -= prepared_rows_;
    prepared_rows_ = 0;
    control_elem_size_ = prepared_control_size_;
    control_.swap(prepared_control_);
    size_ = prepared_size_;
    stored_ = true;
    MeasureLayout();
    return;
  }
  if (success) {
    for (auto& c : columns_) {
      c.elem_size = c.is_new ? ColumnElemSize(c.name, c.staged.size())
                             : static_cast<uint32_t>(c.elem_size + c.staged.size());
      c.is_new = false;
      c.staged.clear();
      c.staged_count = 0;
    }
    num_rows_ += staged_rows_;
    control_elem_size_ = prepared_control_size_;
    control_.swap(prepared_control_);
    size_ = prepared_size_;
    stored_ = true;
  } else {
    std::vector<Column> kept;
    for (auto& c : columns_) {
      if (c.is_new && stored_) continue;
      c.staged.clear();
      c.staged_count = 0;
      kept.push_back(std::move(c));
    }
    if (!stored_) kept.clear();
    columns_ = std::move(kept);
  }
  staged_rows_ = 0;
  staged_bytes_ = 0;
  MeasureLayout();
}

std::vector<std::string_view> BucketDocument::ColumnNames() const {
  std::vector<std::string_view> out;
  for (const auto& c : columns_) out.push_back(c.name);
  // Rows not encoded yet may bring new columns: they come last, in first-seen order.
  auto add_names = [&](const char* row) {
    for (bson::FieldCursor cur(row); cur.Next();) {
      const std::string_view name = cur.field().name;
      if (!skip_field_.empty() && name == skip_field_) continue;
      if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
  };
  for (const BsonObj& row : shared_rows_) add_names(row.data());
  for (size_t at = 0; at < unencoded_.size();) {
    const char* row = unencoded_.data() + at;
    at += static_cast<size_t>(bson::ReadInt32(row));
    add_names(row);
  }
  return out;
}

size_t BucketDocument::ApproxMemory() const {
  // Held rows count as their handles: their bytes belong to the journal's entries.
  return layout_memory_ + staged_bytes_ + unencoded_.capacity() +
         shared_rows_.capacity() * sizeof(BsonObj);
}

void BucketDocument::MeasureLayout() {
  size_t n =
      sizeof(*this) + meta_elem_.capacity() + control_.capacity() + prepared_control_.capacity();
  for (const auto& c : columns_) {
    n += sizeof(Column) + c.name.capacity() + c.staged.capacity();
    if (c.packed) {
      // The builder's ApproxMemory counts its own bytes, which sizeof(Packed) holds.
      n += sizeof(Packed) - sizeof(c.packed->builder) + c.packed->builder.ApproxMemory();
      if (const auto& p = c.packed->proposal) n += p->diff.data.capacity() + p->tail.capacity();
    }
  }
  layout_memory_ = n;
}

}  // namespace hourglass::timeseries
