#include "timeseries/measurement_journal.h"

#include <memory>

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
}  // namespace

StatusWith<std::unique_ptr<MeasurementJournal>> MeasurementJournal::Open(
    storage::KvEngine* engine) {
  HG_RETURN_IF_ERROR(engine->CreateTable(kMeasurementJournalTable));
  auto s = engine->NewSession();
  HG_ASSIGN_OR_RETURN(auto cursor, s->OpenCursorOrError(kMeasurementJournalTable));
  HG_ASSIGN_OR_RETURN(bool any, cursor->SeekLast());
  uint64_t next = any ? DecodeKey(cursor->key()) + 1 : 1;
  return std::unique_ptr<MeasurementJournal>(new MeasurementJournal(next));
}

StatusWith<std::string> MeasurementJournal::Append(storage::Session& s, std::string_view entry) {
  std::string key = EncodeKey(next_.fetch_add(1, std::memory_order_relaxed));
  HG_RETURN_IF_ERROR(s.Insert(kMeasurementJournalTable, key, entry));
  return key;
}

Status MeasurementJournal::Remove(storage::Session& s, std::string_view key) {
  return s.Remove(kMeasurementJournalTable, key);
}

Status MeasurementJournal::ForEach(
    storage::Session& s,
    const std::function<Status(std::string_view key, const bson::BsonObj& entry)>& fn) {
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kMeasurementJournalTable));
  HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
  while (more) {
    std::string value(cursor->value());
    if (value.size() < 5 || bson::ReadInt32(value.data()) != static_cast<int32_t>(value.size())) {
      return Status(ErrorCode::kInternalError, "a time-series journal entry is not a document");
    }
    HG_RETURN_IF_ERROR(fn(cursor->key(), bson::BsonObj(value.data())));
    HG_ASSIGN_OR_RETURN(more, cursor->Next());
  }
  return Status::OK();
}

}  // namespace hourglass::timeseries
