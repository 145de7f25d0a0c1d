// Operation latencies, as serverStatus.opLatencies reports them: for reads (find, getMore,
// aggregate, count, distinct), writes (insert, update, delete, findAndModify), commands (all
// others) and transactions (none yet), the total microseconds, the number of operations and a
// histogram over MongoDB's 51 buckets (lower bounds 0, 2, 4, ... 1024 microseconds, then halves
// of each power of two up to 2^20, then powers of two up to 2^40). Process-wide, lock-free.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "bson/bson.h"
#include "commands/command.h"

namespace hourglass::commands {

enum class LatencyKind { kReads, kWrites, kCommands, kTransactions };
inline constexpr size_t kLatencyBuckets = 51;

// The buckets' lower bounds, in microseconds, ascending.
const std::array<uint64_t, kLatencyBuckets>& LatencyBucketBounds();
// The bucket `micros` falls in.
size_t LatencyBucketOf(uint64_t micros);
// The kind MongoDB counts the command `name` under (its opcounter helps tell writes).
LatencyKind LatencyKindOf(std::string_view name, OpCounter counter);

class OpLatencies {
 public:
  static OpLatencies& Get();

  struct Totals {
    uint64_t latency = 0;  // microseconds
    uint64_t ops = 0;
    std::array<uint64_t, kLatencyBuckets> buckets{};
  };

  void Record(LatencyKind kind, uint64_t micros);
  Totals Read(LatencyKind kind) const;
  // {reads: {[histogram: [{micros, count}...],] latency, ops}, writes, commands, transactions},
  // the histogram listing the buckets that counted something.
  void Append(bson::BsonBuilder& b, bool histograms) const;

 private:
  struct Data {
    std::atomic<uint64_t> latency{0}, ops{0};
    std::array<std::atomic<uint64_t>, kLatencyBuckets> buckets{};
  };
  std::array<Data, 4> data_;
};

}  // namespace hourglass::commands
