#include "timeseries/rollup_marks.h"

#include <algorithm>

#include "base/little_endian.h"
#include "storage/record_id.h"

namespace hourglass::timeseries {

namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr int64_t kMaxMark = int64_t{1} << 60;
constexpr int64_t kMinMark = -kMaxMark;

// One transaction's marks (Session::TransactionState): its seq, and per rollup its disjoint
// ranges by start.
struct TxnMarks {
  uint64_t seq = 0;
  std::map<std::string, std::map<int64_t, int64_t>> ranges;
};

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
  for (std::string_view table : {kRollupMarksTable, kRollupThinnedTable}) {
    if (!engine->TableExists(table)) HG_RETURN_IF_ERROR(engine->CreateTable(table));
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
  from = std::clamp(from, kMinMark, kMaxMark);
  to = std::clamp(to, kMinMark, kMaxMark);
  if (from >= to) return Status::OK();
  if (!s.InTransaction()) return s.Put(kRollupMarksTable, Key(rollup, NextSeq(), from), Value(to));
  std::shared_ptr<void>& slot = s.TransactionState(this);
  if (!slot) slot = std::make_shared<TxnMarks>(TxnMarks{NextSeq(), {}});
  TxnMarks& t = *static_cast<TxnMarks*>(slot.get());
  // This transaction's ranges that [from, to) overlaps or touches become one record.
  std::map<int64_t, int64_t>& ranges = t.ranges[rollup];
  auto it = ranges.upper_bound(from);
  if (it != ranges.begin() && std::prev(it)->second >= from) --it;
  if (it != ranges.end() && it->first <= from && it->second >= to) return Status::OK();
  int64_t merged_from = from, merged_to = to;
  while (it != ranges.end() && it->first <= to) {
    merged_from = std::min(merged_from, it->first);
    merged_to = std::max(merged_to, it->second);
    HG_RETURN_IF_ERROR(s.Remove(kRollupMarksTable, Key(rollup, t.seq, it->first)));
    it = ranges.erase(it);
  }
  HG_RETURN_IF_ERROR(s.Put(kRollupMarksTable, Key(rollup, t.seq, merged_from), Value(merged_to)));
  ranges.emplace(merged_from, merged_to);
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
                          std::vector<DirtyRange>* listed) {
  std::vector<DirtyRange> kept;
  for (const DirtyRange& m : *listed) {
    if (m.to <= from || m.from >= to) {
      kept.push_back(m);
      continue;
    }
    const std::string key = Key(rollup, m.seq, m.from);
    HG_ASSIGN_OR_RETURN(auto stored, s.Get(kRollupMarksTable, key));
    if (!stored || *stored != Value(m.to)) continue;  // changed since it was listed
    if (m.from < from) {
      HG_RETURN_IF_ERROR(s.Put(kRollupMarksTable, key, Value(from)));
      kept.push_back({m.from, from, m.seq});
    } else {
      HG_RETURN_IF_ERROR(s.Remove(kRollupMarksTable, key));
    }
    if (m.to > to) {
      HG_RETURN_IF_ERROR(s.Put(kRollupMarksTable, Key(rollup, m.seq, to), Value(m.to)));
      kept.push_back({to, m.to, m.seq});
    }
  }
  *listed = std::move(kept);
  return Status::OK();
}

Status RollupMarks::DropAll(storage::Session& s, const std::string& rollup) {
  HG_ASSIGN_OR_RETURN(auto marks, List(s, rollup));
  for (const DirtyRange& m : marks) {
    HG_RETURN_IF_ERROR(s.Remove(kRollupMarksTable, Key(rollup, m.seq, m.from)));
  }
  Status st = s.Remove(kRollupThinnedTable, Prefix(rollup));
  return st.code() == ErrorCode::kNoSuchKey ? Status::OK() : st;
}

Status RollupMarks::MarkThinned(storage::Session& s, const std::string& rollup, int64_t through) {
  HG_ASSIGN_OR_RETURN(std::optional<int64_t> now, ThinnedThrough(s, rollup));
  if (now && *now >= through) return Status::OK();
  return s.Put(kRollupThinnedTable, Prefix(rollup), Value(through));
}

StatusWith<std::optional<int64_t>> RollupMarks::ThinnedThrough(storage::Session& s,
                                                               const std::string& rollup) const {
  HG_ASSIGN_OR_RETURN(auto value, s.Get(kRollupThinnedTable, Prefix(rollup)));
  if (!value || value->size() != 8) return std::optional<int64_t>();
  return std::optional<int64_t>(static_cast<int64_t>(LoadLe(value->data(), 8)));
}

StatusWith<std::vector<std::string>> RollupMarks::MarkedRollups(storage::Session& s) const {
  std::vector<std::string> out;
  HG_ASSIGN_OR_RETURN(auto cursor, s.OpenCursorOrError(kRollupMarksTable));
  HG_ASSIGN_OR_RETURN(bool more, cursor->SeekFirst());
  while (more) {
    std::string_view k = cursor->key();
    const size_t len = static_cast<uint8_t>(k[0]);
    if (k.size() < 1 + len) break;
    out.emplace_back(k.substr(1, len));
    // The next rollup's marks start after every key with this prefix.
    std::string next(k.substr(0, 1 + len));
    next.append(17, '\xff');
    HG_ASSIGN_OR_RETURN(more, cursor->Seek(next));
  }
  return out;
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

std::vector<DirtyRange> SubtractRanges(const std::vector<DirtyRange>& ranges,
                                       const std::vector<DirtyRange>& cut) {
  std::vector<DirtyRange> out;
  for (DirtyRange r : ranges) {
    for (const DirtyRange& c : cut) {
      if (c.to <= r.from || c.from >= r.to) continue;
      if (c.from > r.from) out.push_back({r.from, c.from, r.seq});
      r.from = c.to;
      if (r.from >= r.to) break;
    }
    if (r.from < r.to) out.push_back(r);
  }
  return out;
}

std::vector<DirtyRange> CoalesceRanges(std::vector<DirtyRange> ranges, size_t max) {
  max = std::max<size_t>(max, 1);
  if (ranges.size() <= max) return ranges;
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < ranges.size(); ++i) gaps.push_back(ranges[i].from - ranges[i - 1].to);
  std::vector<int64_t> sorted = gaps;
  const size_t joins = ranges.size() - max;
  std::nth_element(sorted.begin(), sorted.begin() + (joins - 1), sorted.end());
  const int64_t widest = sorted[joins - 1];  // join gaps up to this wide...
  size_t at_widest =
      static_cast<size_t>(std::count(sorted.begin(), sorted.begin() + joins, widest));
  std::vector<DirtyRange> out{ranges[0]};
  for (size_t i = 1; i < ranges.size(); ++i) {
    const int64_t gap = gaps[i - 1];
    // ...and of the gaps exactly that wide, only as many as were counted among the smallest.
    if (gap < widest || (gap == widest && at_widest > 0)) {
      if (gap == widest) --at_widest;
      out.back().to = ranges[i].to;
    } else {
      out.push_back(ranges[i]);
    }
  }
  return out;
}

Status RollupSourceObserver::OnWrite(storage::Session& s, int64_t rid, const bson::BsonObj* doc,
                                     bool expired) {
  int64_t from = 0, to = 0;
  bool known = false;
  if (doc != nullptr) {
    bson::BsonElement lo = doc->GetPath("control.min." + time_field_);
    bson::BsonElement hi = doc->GetPath("control.max." + time_field_);
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
  for (const std::string& r : rollups_) {
    HG_RETURN_IF_ERROR(expired ? marks_->MarkThinned(s, r, to - 1) : marks_->Mark(s, r, from, to));
  }
  return Status::OK();
}

}  // namespace hourglass::timeseries
