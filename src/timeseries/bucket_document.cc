#include "timeseries/bucket_document.h"

#include <charconv>
#include <cstring>

namespace hourglass::timeseries {

using bson::BsonElement;
using bson::BsonObj;

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

void PutInt32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);  // BSON is little-endian, as is every machine we build for
  out->append(b, 4);
}

std::string Int32Bytes(uint32_t v) {
  std::string s;
  PutInt32(&s, v);
  return s;
}

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
}

StatusWith<BucketDocument> BucketDocument::FromStored(const BsonObj& bucket,
                                                      std::string_view time_field) {
  auto bad = [&](std::string why) {
    return Status(ErrorCode::kBadValue, "bucket cannot be appended to: " + why);
  };
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
  doc.size_ = static_cast<size_t>(bucket.size());
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
  columns_.push_back(std::move(c));
  return columns_.back();
}

void BucketDocument::StageRows(const std::vector<BsonObj>& rows, std::string_view skip_field) {
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
    }
  }
}

void BucketDocument::Prepare(const BsonObj& control, std::string* full,
                             std::vector<storage::Session::Modification>* edits) {
  std::string control_elem(kControlHeader);
  control_elem.append(control.bytes());
  prepared_control_size_ = static_cast<uint32_t>(control_elem.size());
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
    full->clear();
    full->reserve(prepared_size_);
    PutInt32(full, static_cast<uint32_t>(prepared_size_));
    full->push_back('\x07');
    full->append("_id", 4);
    full->append(reinterpret_cast<const char*>(id_.bytes), 12);
    full->append(control_elem);
    full->append(meta_elem_);
    full->append(kDataHeader);
    PutInt32(full, static_cast<uint32_t>(data_len_new));
    for (const auto& c : columns_) AppendColumnElem(full, c.name, c.staged);
    full->push_back('\0');
    full->push_back('\0');
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
  std::vector<size_t> offsets;
  size_t off = data_doc + 4;
  for (const auto& c : columns_) {
    offsets.push_back(off);
    if (!c.is_new) off += c.elem_size;
  }
  for (size_t i = columns_.size(); i-- > 0;) {
    const Column& c = columns_[i];
    if (c.is_new || c.staged.empty()) continue;
    edits->push_back({c.staged, offsets[i] + c.elem_size - 1, 0});
    uint32_t obj_len = static_cast<uint32_t>(c.elem_size - (2 + c.name.size()) + c.staged.size());
    edits->push_back({Int32Bytes(obj_len), offsets[i] + 1 + c.name.size() + 1, 4});
  }
  edits->push_back({Int32Bytes(static_cast<uint32_t>(data_len_new)), data_doc, 4});
  edits->push_back({std::move(control_elem), kControlPos, control_elem_size_});
  edits->push_back({Int32Bytes(static_cast<uint32_t>(prepared_size_)), 0, 4});
}

void BucketDocument::Finish(bool success) {
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
}

std::vector<std::string_view> BucketDocument::ColumnNames() const {
  std::vector<std::string_view> out;
  for (const auto& c : columns_) out.push_back(c.name);
  return out;
}

size_t BucketDocument::ApproxMemory() const {
  size_t n = sizeof(*this) + meta_elem_.capacity();
  for (const auto& c : columns_) n += sizeof(Column) + c.name.capacity() + c.staged.capacity();
  return n;
}

}  // namespace hourglass::timeseries
