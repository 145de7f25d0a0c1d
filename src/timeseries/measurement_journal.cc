#include "timeseries/measurement_journal.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/little_endian.h"
#include "storage/write_conflict.h"

namespace hourglass::timeseries {

namespace {
std::string EncodeKey(uint64_t n) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(n >> (56 - 8 * i));
  return k;
}

uint64_t DecodeKey(std::string_view k) {
  uint64_t n = 0;
  for (size_t i = 0; i < 8 && i < k.size(); ++i) n = (n << 8) | static_cast<uint8_t>(k[i]);
  return n;
}
void PutString(std::string* out, std::string_view name, std::string_view value) {
  out->push_back(static_cast<char>(bson::BsonType::kString));
  out->append(name).push_back('\0');
  AppendLe(out, value.size() + 1, 4);
  out->append(value).push_back('\0');
}

void PutBinDataHeader(std::string* out, std::string_view name, size_t size) {
  out->push_back(static_cast<char>(bson::BsonType::kBinData));
  out->append(name).push_back('\0');
  AppendLe(out, size, 4);
  out->push_back('\0');  // generic subtype
}

constexpr size_t kBucketRecord = 12 + 8 + 4;
constexpr uint32_t kMetaOmitted = 0x80000000u;  // in a bucket record's row count

// Writes `row` as it is, or without its top-level field `omit` if not empty.
void PutRow(std::string* out, const bson::BsonObj& row, std::string_view omit) {
  const bson::BsonElement m = omit.empty() ? bson::BsonElement() : row.GetField(omit);
  if (m.eoo()) {
    out->append(row.bytes());
    return;
  }
  AppendLe(out, static_cast<size_t>(row.size()) - static_cast<size_t>(m.size()), 4);
  const char* begin = row.data() + 4;
  const char* end = row.data() + row.size();
  out->append(begin, m.raw());
  out->append(m.raw() + m.size(), end);
}

Status Malformed(std::string_view what) {
  return Status(ErrorCode::kInternalError,
                "a time-series journal entry is malformed: " + std::string(what));
}
}  // namespace

std::string EncodeJournalEntry(const JournalEntry& e, std::vector<size_t>* row_at) {
  JournalEntryRows view{e.uuid, e.time_field, e.meta_field, {}};
  view.buckets.reserve(e.buckets.size());
  for (const JournalBucket& b : e.buckets)
    view.buckets.push_back({b.id, b.start, b.rows, b.meta_omitted});
  return EncodeJournalEntry(view, row_at);
}

std::string EncodeJournalEntry(const JournalEntryRows& e, std::vector<size_t>* row_at) {
  // An upper bound (rows leaving their meta out are shorter); "r"'s length is set once written.
  size_t rows_size = 0;
  for (const auto& b : e.buckets) {
    for (const auto& r : b.rows) rows_size += static_cast<size_t>(r.size());
  }
  std::string out;
  out.reserve(64 + e.uuid.size() + e.time_field.size() + e.meta_field.size() +
              kBucketRecord * e.buckets.size() + rows_size);
  AppendLe(&out, 0, 4);  // the length, set at the end
  PutString(&out, "u", e.uuid);
  PutString(&out, "t", e.time_field);
  if (!e.meta_field.empty()) PutString(&out, "m", e.meta_field);
  PutBinDataHeader(&out, "b", kBucketRecord * e.buckets.size());
  for (const auto& b : e.buckets) {
    out.append(reinterpret_cast<const char*>(b.id.bytes), 12);
    AppendLe(&out, static_cast<uint64_t>(b.start), 8);
    AppendLe(&out, b.rows.size() | (b.meta_omitted ? kMetaOmitted : 0), 4);
  }
  PutBinDataHeader(&out, "r", 0);
  const size_t rows_len_at = out.size() - 5;  // the BinData's length, before its subtype
  const size_t rows_begin = out.size();
  for (const auto& b : e.buckets) {
    const std::string_view omit = b.meta_omitted ? std::string_view(e.meta_field) : "";
    for (const auto& r : b.rows) {
      if (row_at != nullptr) row_at->push_back(out.size());
      PutRow(&out, r, omit);
    }
  }
  OverwriteLe(&out, rows_len_at, out.size() - rows_begin, 4);
  out.push_back('\0');
  OverwriteLe(&out, 0, out.size(), 4);
  return out;
}

StatusWith<JournalEntry> DecodeJournalEntry(std::shared_ptr<const std::string> entry) {
  const bson::BsonObj doc(entry);
  JournalEntry e;
  bson::BsonElement u = doc["u"], t = doc["t"], m = doc["m"], b = doc["b"], r = doc["r"];
  if (u.type() != bson::BsonType::kString || t.type() != bson::BsonType::kString ||
      (!m.eoo() && m.type() != bson::BsonType::kString) || b.type() != bson::BsonType::kBinData ||
      r.type() != bson::BsonType::kBinData) {
    return Malformed("a field is missing or of the wrong type");
  }
  e.uuid = u.Str();
  e.time_field = t.Str();
  if (!m.eoo()) e.meta_field = m.Str();
  std::string_view table = b.BinData(), rows = r.BinData();
  if (table.size() % kBucketRecord != 0) return Malformed("the bucket table is truncated");
  size_t at = 0;
  for (size_t off = 0; off < table.size(); off += kBucketRecord) {
    JournalBucket jb;
    std::memcpy(jb.id.bytes, table.data() + off, 12);
    jb.start = static_cast<int64_t>(LoadLe(table.data() + off + 12, 8));
    const uint64_t n = LoadLe(table.data() + off + 20, 4) & ~uint64_t{kMetaOmitted};
    jb.meta_omitted = (LoadLe(table.data() + off + 20, 4) & kMetaOmitted) != 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (rows.size() - at < 5) return Malformed("the rows are truncated");
      const int32_t len = bson::ReadInt32(rows.data() + at);
      if (len < 5 || static_cast<size_t>(len) > rows.size() - at) {
        return Malformed("a row's length is out of range");
      }
      jb.rows.emplace_back(entry, rows.data() + at);
      at += static_cast<size_t>(len);
    }
    e.buckets.push_back(std::move(jb));
  }
  if (at != rows.size()) return Malformed("rows are left over");
  return e;
}

StatusWith<std::unique_ptr<MeasurementJournal>> MeasurementJournal::Open(storage::KvEngine* engine,
                                                                         uint64_t segment_bytes) {
  HG_ASSIGN_OR_RETURN(std::shared_ptr<storage::AppendLog> log,
                      engine->OpenAppendLog(kMeasurementJournalLog, segment_bytes));
  HG_RETURN_IF_ERROR(engine->CreateTable(kMeasurementJournalWrittenTable));
  HG_RETURN_IF_ERROR(engine->CreateTable(kMeasurementJournalPartlyWrittenTable));
  auto s = engine->NewSession();
  uint64_t last_mark = 0, legacy_last = 0, last_partial = 0;
  for (auto [table, last] : {std::pair{kMeasurementJournalWrittenTable, &last_mark},
                             std::pair{kMeasurementJournalPartlyWrittenTable, &last_partial}}) {
    HG_ASSIGN_OR_RETURN(auto cursor, s->OpenCursorOrError(table));
    HG_ASSIGN_OR_RETURN(bool any, cursor->SeekLast());
    if (any) *last = DecodeKey(cursor->key());
  }
  bool drop_legacy = false;
  if (engine->TableExists(kMeasurementJournalTable)) {
    HG_ASSIGN_OR_RETURN(auto cursor, s->OpenCursorOrError(kMeasurementJournalTable));
    HG_ASSIGN_OR_RETURN(bool any, cursor->SeekLast());
    if (any) legacy_last = DecodeKey(cursor->key());
    drop_legacy = !any;
  }
  s.reset();  // its cached cursor would keep the table busy
  if (drop_legacy) HG_RETURN_IF_ERROR(engine->DropTable(kMeasurementJournalTable));
  // A number must never name two entries: not one a mark still names, nor one of the table's.
  log->NumberAfter(std::max(last_mark, legacy_last));
  return std::unique_ptr<MeasurementJournal>(
      new MeasurementJournal(engine, std::move(log), legacy_last, last_partial));
}

StatusWith<uint64_t> MeasurementJournal::Append(std::string_view entry) {
  // Held across the append, so that Prune never sees a number appended and not yet unwritten.
  std::lock_guard lk(mu_);
  HG_ASSIGN_OR_RETURN(uint64_t n, log_->Append(entry));
  unwritten_.insert(unwritten_.end(), n);
  return n;
}

Status MeasurementJournal::MarkWritten(storage::Session& s, uint64_t n) {
  if (n <= legacy_last_) return s.Remove(kMeasurementJournalTable, EncodeKey(n));
  return s.Insert(kMeasurementJournalWrittenTable, EncodeKey(n), {});
}

// A partly-written record: <entries: uint32 LE><entry numbers: uint64 LE each><bucket _ids: 12
// bytes each>.
StatusWith<std::string> MeasurementJournal::MarkPartlyWritten(
    storage::Session& s, const std::vector<uint64_t>& ns, const std::vector<bson::ObjectId>& ids) {
  std::string value;
  value.reserve(4 + 8 * ns.size() + 12 * ids.size());
  AppendLe(&value, ns.size(), 4);
  for (uint64_t n : ns) AppendLe(&value, n, 8);
  for (const bson::ObjectId& id : ids) value.append(reinterpret_cast<const char*>(id.bytes), 12);
  std::string key = EncodeKey(last_partial_.fetch_add(1) + 1);
  HG_RETURN_IF_ERROR(s.Insert(kMeasurementJournalPartlyWrittenTable, key, value));
  return key;
}

Status MeasurementJournal::ForgetPartlyWritten(storage::Session& s,
                                               const std::vector<std::string>* keys) {
  if (keys != nullptr) {
    for (const std::string& k : *keys) {
      HG_RETURN_IF_ERROR(s.Remove(kMeasurementJournalPartlyWrittenTable, k));
    }
    return Status::OK();
  }
  std::vector<std::string> all;
  {
    HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kMeasurementJournalPartlyWrittenTable));
    HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
    while (more) {
      all.emplace_back(cursor->key());
      HG_ASSIGN_OR_RETURN(more, cursor->Next());
    }
  }
  return ForgetPartlyWritten(s, &all);
}

StatusWith<PartlyWrittenShares> MeasurementJournal::PartlyWritten(storage::Session& s) {
  PartlyWrittenShares shares;
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kMeasurementJournalPartlyWrittenTable));
  HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
  while (more) {
    std::string_view v = cursor->value();
    const uint64_t n = v.size() >= 4 ? LoadLe(v.data(), 4) : 0;
    if (v.size() < 4 || (v.size() - 4) / 8 < n || (v.size() - 4 - 8 * n) % 12 != 0) {
      return Status(ErrorCode::kInternalError,
                    "a record of the time-series journal's partly-written entries is malformed");
    }
    PartlyWrittenShares::Record r;
    for (uint64_t i = 0; i < n; ++i) r.entries.push_back(LoadLe(v.data() + 4 + 8 * i, 8));
    std::sort(r.entries.begin(), r.entries.end());
    for (size_t at = 4 + 8 * n; at < v.size(); at += 12) r.ids.emplace(v.substr(at, 12));
    shares.records_.push_back(std::move(r));
    HG_ASSIGN_OR_RETURN(more, cursor->Next());
  }
  return shares;
}

bool PartlyWrittenShares::Holds(uint64_t n, const bson::ObjectId& id) const {
  const std::string key(reinterpret_cast<const char*>(id.bytes), 12);
  for (const Record& r : records_) {
    if (std::binary_search(r.entries.begin(), r.entries.end(), n) && r.ids.contains(key)) {
      return true;
    }
  }
  return false;
}

void MeasurementJournal::Written(const std::vector<uint64_t>& ns) {
  std::lock_guard lk(mu_);
  for (uint64_t n : ns) unwritten_.erase(n);
}

Status MeasurementJournal::Prune(storage::Session& s) {
  std::unique_lock pl(prune_mu_, std::try_to_lock);
  if (!pl.owns_lock()) return Status::OK();
  uint64_t low = 0;
  {
    std::lock_guard lk(mu_);
    low = unwritten_.empty() ? log_->next_number() : *unwritten_.begin();
  }
  if (!log_->HasSegmentsBefore(low)) return Status::OK();
  // The transactions that wrote the rows of every entry below `low` (and marked it) committed
  // before Written said so; they must be durable before those entries go, or a crash could lose
  // both the rows and their entries.
  HG_RETURN_IF_ERROR(engine_->WaitForJournal());
  HG_ASSIGN_OR_RETURN(uint64_t kept_from, log_->DropBefore(low));
  // Their marks name entries that are gone for good (DropBefore made that durable).
  return storage::RetryOnWriteConflict([&] {
    storage::WriteUnit wu(s);
    HG_RETURN_IF_ERROR(wu.begin_status());
    std::vector<std::string> marks;
    {
      HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kMeasurementJournalWrittenTable));
      HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
      while (more && DecodeKey(cursor->key()) < kept_from) {
        marks.emplace_back(cursor->key());
        HG_ASSIGN_OR_RETURN(more, cursor->Next());
      }
    }
    for (const std::string& k : marks)
      HG_RETURN_IF_ERROR(s.Remove(kMeasurementJournalWrittenTable, k));
    return wu.Commit();
  });
}

Status MeasurementJournal::ForEach(
    storage::Session& s,
    const std::function<Status(uint64_t n, std::shared_ptr<const std::string> entry)>& fn) {
  auto check = [](std::string_view value) {
    if (value.size() < 5 || bson::ReadInt32(value.data()) != static_cast<int32_t>(value.size())) {
      return Malformed("it is not a document");
    }
    return Status::OK();
  };
  if (legacy_last_ != 0) {
    HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kMeasurementJournalTable));
    HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
    while (more) {
      HG_RETURN_IF_ERROR(check(cursor->value()));
      HG_RETURN_IF_ERROR(
          fn(DecodeKey(cursor->key()), std::make_shared<const std::string>(cursor->value())));
      HG_ASSIGN_OR_RETURN(more, cursor->Next());
    }
  }
  std::vector<uint64_t> marks;  // ascending
  {
    HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kMeasurementJournalWrittenTable));
    HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
    while (more) {
      marks.push_back(DecodeKey(cursor->key()));
      HG_ASSIGN_OR_RETURN(more, cursor->Next());
    }
  }
  return log_->ForEach([&](uint64_t n, std::string_view payload) {
    if (std::binary_search(marks.begin(), marks.end(), n)) return Status::OK();
    HG_RETURN_IF_ERROR(check(payload));
    return fn(n, std::make_shared<const std::string>(payload));
  });
}

}  // namespace hourglass::timeseries
