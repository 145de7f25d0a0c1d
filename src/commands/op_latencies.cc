#include "commands/op_latencies.h"

#include <algorithm>

namespace hourglass::commands {

const std::array<uint64_t, kLatencyBuckets>& LatencyBucketBounds() {
  static const std::array<uint64_t, kLatencyBuckets> bounds = [] {
    std::array<uint64_t, kLatencyBuckets> b{};
    size_t i = 0;
    b[i++] = 0;
    for (int p = 1; p <= 10; ++p) b[i++] = uint64_t{1} << p;  // 2 .. 1024
    for (int p = 11; p <= 20; ++p) {                          // 2048, 3072, 4096, 6144, ...
      b[i++] = uint64_t{1} << p;
      b[i++] = uint64_t{3} << (p - 1);
    }
    for (int p = 21; i < kLatencyBuckets; ++p) b[i++] = uint64_t{1} << p;  // .. 2^40
    return b;
  }();
  return bounds;
}

size_t LatencyBucketOf(uint64_t micros) {
  const auto& b = LatencyBucketBounds();
  return static_cast<size_t>(std::upper_bound(b.begin(), b.end(), micros) - b.begin()) - 1;
}

LatencyKind LatencyKindOf(std::string_view name, OpCounter counter) {
  // (The insert, update and delete commands count their documents, not themselves: by name.)
  if (counter == OpCounter::kInsert || counter == OpCounter::kUpdate ||
      counter == OpCounter::kDelete || name == "insert" || name == "update" || name == "delete" ||
      name == "findAndModify" || name == "findandmodify") {
    return LatencyKind::kWrites;
  }
  if (name == "find" || name == "getMore" || name == "aggregate" || name == "count" ||
      name == "distinct") {
    return LatencyKind::kReads;
  }
  return LatencyKind::kCommands;
}

OpLatencies& OpLatencies::Get() {
  static OpLatencies latencies;
  return latencies;
}

void OpLatencies::Record(LatencyKind kind, uint64_t micros) {
  Data& d = data_[static_cast<size_t>(kind)];
  d.latency.fetch_add(micros, std::memory_order_relaxed);
  d.ops.fetch_add(1, std::memory_order_relaxed);
  d.buckets[LatencyBucketOf(micros)].fetch_add(1, std::memory_order_relaxed);
}

OpLatencies::Totals OpLatencies::Read(LatencyKind kind) const {
  const Data& d = data_[static_cast<size_t>(kind)];
  Totals t;
  t.latency = d.latency.load(std::memory_order_relaxed);
  t.ops = d.ops.load(std::memory_order_relaxed);
  for (size_t i = 0; i < kLatencyBuckets; ++i) {
    t.buckets[i] = d.buckets[i].load(std::memory_order_relaxed);
  }
  return t;
}

void OpLatencies::Append(bson::BsonBuilder& b, bool histograms) const {
  static constexpr std::pair<LatencyKind, std::string_view> kKinds[] = {
      {LatencyKind::kReads, "reads"},
      {LatencyKind::kWrites, "writes"},
      {LatencyKind::kCommands, "commands"},
      {LatencyKind::kTransactions, "transactions"}};
  for (const auto& [kind, name] : kKinds) {
    const Totals t = Read(kind);
    const size_t section = b.OpenObject(name);
    if (histograms) {
      const size_t list = b.OpenArray("histogram");
      size_t n = 0;
      for (size_t i = 0; i < kLatencyBuckets; ++i) {
        if (t.buckets[i] == 0) continue;
        const size_t entry = b.OpenObject(std::to_string(n++));
        b.AppendInt64("micros", static_cast<int64_t>(LatencyBucketBounds()[i]));
        b.AppendInt64("count", static_cast<int64_t>(t.buckets[i]));
        b.Close(entry);
      }
      b.Close(list);
    }
    b.AppendInt64("latency", static_cast<int64_t>(t.latency));
    b.AppendInt64("ops", static_cast<int64_t>(t.ops));
    b.Close(section);
  }
}

}  // namespace hourglass::commands
