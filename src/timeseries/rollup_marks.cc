#include "timeseries/rollup_marks.h"

#include <algorithm>

#include "base/little_endian.h"
#include "storage/record_id.h"

namespace hourglass::timeseries {

namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;

std::string Prefix(const std::string& rollup) {
  std::string k(1, static_cast<char>(rollup.size()));
  k += rollup;
  return k;
}

void AppendBe(std::string& k, uint64_t v) {
  for (int i = 7; i >= 0; --i) k.push_back(static_cast<char>(v >> (8 * i)));
}

uint64_t LoadBe(std::string_view p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string Key(const std::string& rollup, uint64_t seq, int64_t from) {
  std::string k = Prefix(rollup);
  AppendBe(k, seq);
  AppendBe(k, static_cast<uint64_t>(from) ^ kSignBit);
  return k;
}

std::string Value(int64_t to) {
  std::string v(8, '\0');
  StoreLe(v.data(), static_cast<uint64_t>(to), 8);
  return v;
}

// A stored mark (the key's part after the prefix, and the value); false if malformed.
bool Decode(std::string_view rest, std::string_view value, DirtyRange* out) {
  if (rest.size() != 16 || value.size() != 8) return false;
  out->seq = LoadBe(rest);
  out->from = static_cast<int64_t>(LoadBe(rest.substr(8)) ^ kSignBit);
  out->to = static_cast<int64_t>(LoadLe(value.data(), 8));
  return true;
}

}  // namespace

StatusWith<std::unique_ptr<RollupMarks>> RollupMarks::Open(storage::KvEngine* engine) {
  if (!engine->TableExists(kRollupMarksTable)) {
    HG_RETURN_IF_ERROR(engine->CreateTable(kRollupMarksTable));
  }
  uint64_t max_seq = 0;
  auto session = engine->NewSession();
  HG_ASSIGN_OR_RETURN(auto cursor, session->OpenCursorOrError(kRollupMarksTable));
  HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
  while (more) {
    std::string_view k = cursor->key();
    const size_t plen = k.empty() ? 0 : 1 + static_cast<uint8_t>(k[0]);
    DirtyRange r;
    if (k.size() >= plen && Decode(k.substr(plen), cursor->value(), &r)) {
      max_seq = std::max(max_seq, r.seq);
    }
    HG_ASSIGN_OR_RETURN(more, cursor->Next());
  }
  return std::unique_ptr<RollupMarks>(new RollupMarks(max_seq + 1));
}

Status RollupMarks::Mark(storage::Session& s, const std::string& rollup, int64_t from, int64_t to) {
  if (from >= to) return Status::OK();
  if (!s.InTransaction()) return s.Put(kRollupMarksTable, Key(rollup, NextSeq(), from), Value(to));
  std::lock_guard lk(mu_);
  TxnMarks& t = open_[reinterpret_cast<uintptr_t>(&s)];
  if (t.txn != s.transaction_id()) t = TxnMarks{s.transaction_id(), NextSeq(), {}};
  auto it = t.ranges.find(rollup);
  if (it == t.ranges.end()) {
    HG_RETURN_IF_ERROR(s.Put(kRollupMarksTable, Key(rollup, t.seq, from), Value(to)));
    t.ranges.emplace(rollup, std::make_pair(from, to));
    return Status::OK();
  }
  auto [cur_from, cur_to] = it->second;
  if (from >= cur_from && to <= cur_to) return Status::OK();
  const int64_t new_from = std::min(from, cur_from), new_to = std::max(to, cur_to);
  if (new_from != cur_from)
    HG_RETURN_IF_ERROR(s.Remove(kRollupMarksTable, Key(rollup, t.seq, cur_from)));
  HG_RETURN_IF_ERROR(s.Put(kRollupMarksTable, Key(rollup, t.seq, new_from), Value(new_to)));
  it->second = {new_from, new_to};
  return Status::OK();
}

StatusWith<std::vector<DirtyRange>> RollupMarks::List(storage::Session& s,
                                                      const std::string& rollup) const {
  const std::string prefix = Prefix(rollup);
  std::vector<DirtyRange> out;
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kRollupMarksTable));
  HG_ASSIGN_OR_RETURN(bool more, cursor->Seek(prefix));
  while (more) {
    std::string_view k = cursor->key();
    if (!k.starts_with(prefix)) break;
    DirtyRange r;
    if (!Decode(k.substr(prefix.size()), cursor->value(), &r)) {
      return Status(ErrorCode::kInternalError,
                    "a malformed record in " + std::string(kRollupMarksTable));
    }
    out.push_back(r);
    HG_ASSIGN_OR_RETURN(more, cursor->Next());
  }
  return out;
}

Status RollupMarks::Clear(storage::Session& s, const std::string& rollup, int64_t from, int64_t to,
                          uint64_t below) {
  HG_ASSIGN_OR_RETURN(auto marks, List(s, rollup));
  for (const DirtyRange& m : marks) {
    if (m.seq >= below || m.to <= from || m.from >= to) continue;
    const std::string key = Key(rollup, m.seq, m.from);
    if (m.from < from) {
      HG_RETURN_IF_ERROR(s.Put(kRollupMarksTable, key, Value(from)));
    } else {
      HG_RETURN_IF_ERROR(s.Remove(kRollupMarksTable, key));
    }
    if (m.to > to)
      HG_RETURN_IF_ERROR(s.Put(kRollupMarksTable, Key(rollup, m.seq, to), Value(m.to)));
  }
  return Status::OK();
}

Status RollupMarks::DropAll(storage::Session& s, const std::string& rollup) {
  HG_ASSIGN_OR_RETURN(auto marks, List(s, rollup));
  for (const DirtyRange& m : marks) {
    HG_RETURN_IF_ERROR(s.Remove(kRollupMarksTable, Key(rollup, m.seq, m.from)));
  }
  return Status::OK();
}

std::vector<DirtyRange> MergeRanges(std::vector<DirtyRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const DirtyRange& a, const DirtyRange& b) { return a.from < b.from; });
  std::vector<DirtyRange> out;
  for (const DirtyRange& r : ranges) {
    if (r.from >= r.to) continue;
    if (!out.empty() && r.from <= out.back().to) {
      out.back().to = std::max(out.back().to, r.to);
      out.back().seq = std::max(out.back().seq, r.seq);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

Status RollupSourceObserver::OnWrite(storage::Session& s, int64_t rid, const bson::BsonObj* doc) {
  int64_t from = 0, to = 0;
  bool known = false;
  if (doc != nullptr && (*doc)["control"].type() == bson::BsonType::kObject) {
    bson::BsonObj control = (*doc)["control"].Obj();
    bson::BsonElement lo = control["min"].type() == bson::BsonType::kObject
                               ? control["min"].Obj()[time_field_]
                               : bson::BsonElement();
    bson::BsonElement hi = control["max"].type() == bson::BsonType::kObject
                               ? control["max"].Obj()[time_field_]
                               : bson::BsonElement();
    if (lo.type() == bson::BsonType::kDate && hi.type() == bson::BsonType::kDate &&
        lo.DateMillis() <= hi.DateMillis() && hi.DateMillis() < INT64_MAX) {
      from = lo.DateMillis();
      to = hi.DateMillis() + 1;
      known = true;
    }
  }
  if (!known) {
    // A bucket without readable bounds (a direct write may store one): it starts at its _id's
    // seconds (signed, as the bucket catalog writes them) and holds less than its span after.
    from = int64_t{static_cast<int32_t>(storage::ClusteredRecordIdSeconds(rid))} * 1000;
    to = from + max_span_ms_;
  }
  for (const std::string& r : rollups_) HG_RETURN_IF_ERROR(marks_->Mark(s, r, from, to));
  return Status::OK();
}

}  // namespace hourglass::timeseries
