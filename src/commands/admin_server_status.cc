// serverStatus: process identity and uptime plus the sections monitoring tools read
// (connections, network, opcounters, mem, tcmalloc, metrics.cursor/query/ttl, storageEngine).
// `{<section>: 0}` in the request leaves a section out, as in MongoDB.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "catalog/transaction_table.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/op_latencies.h"
#include "commands/replication_checks.h"
#include "exec/cursor_manager.h"
#include "exec/timeseries_scan.h"
#include "pipeline/spill_file.h"
#include "repl/replication_coordinator.h"
#include "timeseries/ttl_monitor.h"

// gperftools' C interface to its statistics, declared weak: hourglassd links tcmalloc, the test
// build (sanitizers, their own allocator) does not, and then the symbol is null.
extern "C" int MallocExtension_GetNumericProperty(const char* property, size_t* value)
    __attribute__((weak));

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

namespace {

// The section is wanted unless the request names it with a false value.
bool Wanted(const BsonObj& cmd, std::string_view section) {
  BsonElement e = cmd.GetField(section);
  return e.eoo() || e.Truthy();
}

std::string HostName(const ServiceContext& service) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::string out = host;
  if (service.options.port != 27017) out += ":" + std::to_string(service.options.port);
  return out;
}

void AppendMem(BsonBuilder& reply) {
  // /proc/self/statm: total program size and resident set, in pages.
  int64_t size_pages = 0, resident_pages = 0;
  std::ifstream statm("/proc/self/statm");
  statm >> size_pages >> resident_pages;
  int64_t page = sysconf(_SC_PAGESIZE);
  constexpr int64_t kMb = 1024 * 1024;
  size_t t = reply.OpenObject("mem");
  reply.AppendInt32("bits", 64);
  reply.AppendInt32("resident", static_cast<int32_t>(resident_pages * page / kMb));
  reply.AppendInt32("virtual", static_cast<int32_t>(size_pages * page / kMb));
  reply.AppendBool("supported", statm.good() || statm.eof());
  reply.Close(t);
}

// serverStatus().tcmalloc as mongod reports it from tcmalloc's properties: `generic` (bytes the
// program holds, bytes the allocator took from the system) and `tcmalloc` (where the free bytes
// wait). Absent when the process does not allocate with tcmalloc.
void AppendTcmalloc(BsonBuilder& reply) {
  if (MallocExtension_GetNumericProperty == nullptr) return;
  auto property = [](const char* name) {
    size_t v = 0;
    return MallocExtension_GetNumericProperty(name, &v) ? static_cast<int64_t>(v) : int64_t{0};
  };
  size_t t = reply.OpenObject("tcmalloc");
  size_t g = reply.OpenObject("generic");
  reply.AppendInt64("current_allocated_bytes", property("generic.current_allocated_bytes"));
  reply.AppendInt64("heap_size", property("generic.heap_size"));
  reply.Close(g);
  size_t m = reply.OpenObject("tcmalloc");
  reply.AppendInt64("pageheap_free_bytes", property("tcmalloc.pageheap_free_bytes"));
  reply.AppendInt64("pageheap_unmapped_bytes", property("tcmalloc.pageheap_unmapped_bytes"));
  reply.AppendInt64("max_total_thread_cache_bytes",
                    property("tcmalloc.max_total_thread_cache_bytes"));
  reply.AppendInt64("current_total_thread_cache_bytes",
                    property("tcmalloc.current_total_thread_cache_bytes"));
  const int64_t central = property("tcmalloc.central_cache_free_bytes");
  const int64_t transfer = property("tcmalloc.transfer_cache_free_bytes");
  const int64_t thread = property("tcmalloc.thread_cache_free_bytes");
  reply.AppendInt64("total_free_bytes", central + transfer + thread);
  reply.AppendInt64("central_cache_free_bytes", central);
  reply.AppendInt64("transfer_cache_free_bytes", transfer);
  reply.AppendInt64("thread_cache_free_bytes", thread);
  reply.Close(m);
  reply.Close(t);
}

Status RunServerStatus(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  const ServiceContext& service = ctx.service;
  const ServerCounters& c = service.counters;
  auto uptime = std::chrono::steady_clock::now() - service.start_time;
  int64_t uptime_ms = std::chrono::duration_cast<std::chrono::milliseconds>(uptime).count();

  reply.AppendString("host", HostName(service));
  reply.AppendString("version", kReportedMongoVersion);
  reply.AppendString("process", "mongod");  // tools key on this name
  reply.AppendInt64("pid", static_cast<int64_t>(getpid()));
  reply.AppendDouble("uptime", static_cast<double>(uptime_ms / 1000));
  reply.AppendInt64("uptimeMillis", uptime_ms);
  reply.AppendInt64("uptimeEstimate", uptime_ms / 1000);
  reply.AppendDate("localTime", NowMillis());

  if (Wanted(cmd, "connections")) {
    int64_t current = c.connections_current.load();
    size_t t = reply.OpenObject("connections");
    reply.AppendInt32("current", static_cast<int32_t>(current));
    reply.AppendInt32("available", static_cast<int32_t>(
                                       std::max<int64_t>(0, service.options.max_conns - current)));
    reply.AppendInt64("totalCreated", c.connections_total.load());
    reply.AppendInt64("rejected", c.connections_rejected.load());
    reply.Close(t);
  }
  if (service.tls_info && Wanted(cmd, "security")) {
    size_t t = reply.OpenObject("security");
    reply.AppendString("SSLServerSubjectName", service.tls_info->subject);
    reply.AppendBool("SSLServerHasCertificateAuthority", true);  // required to start with TLS
    reply.AppendDate("SSLServerCertificateExpirationDate", service.tls_info->expiration_ms);
    reply.Close(t);
  }
  if (service.tls_info && Wanted(cmd, "transportSecurity")) {
    size_t t = reply.OpenObject("transportSecurity");
    const char* names[] = {"1.0", "1.1", "1.2", "1.3", "unknown"};
    for (int i = 0; i < 5; ++i) reply.AppendInt64(names[i], c.tls_versions[i].load());
    reply.Close(t);
  }
  if (Wanted(cmd, "network")) {
    size_t t = reply.OpenObject("network");
    reply.AppendInt64("bytesIn", c.bytes_in.load());
    reply.AppendInt64("bytesOut", c.bytes_out.load());
    reply.AppendInt64("physicalBytesIn", c.physical_bytes_in.load());
    reply.AppendInt64("physicalBytesOut", c.physical_bytes_out.load());
    reply.AppendInt64("numRequests", c.num_requests.load());
    if (service.tls_info) {
      reply.AppendInt64("totalIngressTLSConnections", c.tls_connections.load());
    }
    size_t comp = reply.OpenObject("compression");
    for (auto which :
         {wire::Compressor::kSnappy, wire::Compressor::kZstd, wire::Compressor::kZlib}) {
      const CompressionCounters& cc = c.compression[static_cast<int>(which)];
      size_t one = reply.OpenObject(wire::CompressorName(which));
      size_t side = reply.OpenObject("compressor");
      reply.AppendInt64("bytesIn", cc.compressor_bytes_in.load());
      reply.AppendInt64("bytesOut", cc.compressor_bytes_out.load());
      reply.Close(side);
      side = reply.OpenObject("decompressor");
      reply.AppendInt64("bytesIn", cc.decompressor_bytes_in.load());
      reply.AppendInt64("bytesOut", cc.decompressor_bytes_out.load());
      reply.Close(side);
      reply.Close(one);
    }
    reply.Close(comp);
    reply.Close(t);
  }
  if (Wanted(cmd, "opcounters")) {
    size_t t = reply.OpenObject("opcounters");
    reply.AppendInt64("insert", c.op_insert.load());
    reply.AppendInt64("query", c.op_query.load());
    reply.AppendInt64("update", c.op_update.load());
    reply.AppendInt64("delete", c.op_delete.load());
    reply.AppendInt64("getmore", c.op_getmore.load());
    reply.AppendInt64("command", c.op_command.load());
    reply.Close(t);
  }
  if (Wanted(cmd, "opLatencies")) {
    // {opLatencies: {histograms: true}} adds the buckets, as in MongoDB.
    BsonElement option = cmd.GetField("opLatencies");
    const bool histograms =
        option.type() == bson::BsonType::kObject && option.Obj()["histograms"].Truthy();
    size_t t = reply.OpenObject("opLatencies");
    OpLatencies::Get().Append(reply, histograms);
    reply.Close(t);
  }
  if (Wanted(cmd, "mem")) AppendMem(reply);
  if (Wanted(cmd, "tcmalloc")) AppendTcmalloc(reply);
  if (Wanted(cmd, "metrics")) {
    size_t t = reply.OpenObject("metrics");
    size_t cur = reply.OpenObject("cursor");
    reply.AppendInt64("timedOut", c.cursors_timed_out.load());
    size_t open = reply.OpenObject("open");
    int64_t total =
        service.cursors == nullptr ? 0 : static_cast<int64_t>(service.cursors->NumOpen());
    reply.AppendInt64("total", total);
    reply.Close(open);
    reply.Close(cur);
    const pipeline::SpillMetrics& spill = pipeline::GlobalSpillMetrics();
    size_t query = reply.OpenObject("query");
    size_t sort = reply.OpenObject("sort");
    reply.AppendInt64("spillToDisk", spill.sort_spills.load());
    reply.AppendInt64("totalBytesSorted", spill.sort_bytes_sorted.load());
    reply.AppendInt64("totalKeysSorted", spill.sort_keys_sorted.load());
    reply.Close(sort);
    size_t group = reply.OpenObject("group");
    reply.AppendInt64("spills", spill.group_spills.load());
    reply.Close(group);
    reply.Close(query);
    size_t ttl = reply.OpenObject("ttl");
    reply.AppendInt64("deletedDocuments", timeseries::TtlMonitor::Stats().deleted_documents.load());
    reply.AppendInt64("passes", timeseries::TtlMonitor::Stats().passes.load());
    reply.Close(ttl);
    reply.Close(t);
  }
  if (Wanted(cmd, "bucketCatalog") && service.bucket_catalog != nullptr) {
    service.bucket_catalog->AppendServerStatus(reply);
  }
  if (Wanted(cmd, "hourglass")) {
    // Hourglass's own counters (not in MongoDB): the work time-series reads did.
    const auto& ts = exec::GlobalTimeseriesReadCounters();
    size_t t = reply.OpenObject("hourglass");
    size_t r = reply.OpenObject("timeseries");
    reply.AppendInt64("bucketsRead", ts.buckets_read.load());
    reply.AppendInt64("bucketsUnpacked", ts.buckets_unpacked.load());
    reply.AppendInt64("measurementsUnpacked", ts.measurements_unpacked.load());
    reply.AppendInt64("bucketsAsBlocks", ts.buckets_as_blocks.load());
    reply.AppendInt64("bucketsFilteredAsBlocks", ts.buckets_filtered_as_blocks.load());
    reply.AppendInt64("bucketsReadAhead", ts.buckets_read_ahead.load());
    reply.AppendInt64("latestCacheHits", ts.latest_cache_hits.load());
    reply.AppendInt64("newestBinsWindowReads", ts.newest_bins_windows.load());
    reply.AppendInt64("bucketsStoredWholeForReads",
                      service.bucket_catalog != nullptr
                          ? service.bucket_catalog->buckets_stored_whole_for_reads()
                          : 0);
    reply.AppendInt64("flushesForBacklog", service.bucket_catalog != nullptr
                                               ? service.bucket_catalog->flushes_for_backlog()
                                               : 0);
    reply.AppendInt64(
        "bucketsWrittenTogether",
        service.bucket_catalog != nullptr ? service.bucket_catalog->buckets_written_together() : 0);
    reply.Close(r);
    reply.Close(t);
  }
  if (service.repl != nullptr && Wanted(cmd, "repl")) {
    // A member's view of its set, as hello gives it (mongod's serverStatus.repl).
    size_t t = reply.OpenObject("repl");
    AppendReplicaSetHello(ctx, false, reply);
    reply.Close(t);
  }
  if (service.repl != nullptr && Wanted(cmd, "oplogTruncation")) {
    const auto stats = service.repl->OplogTruncation();
    size_t t = reply.OpenObject("oplogTruncation");
    // No scan at startup: the oplog's size is known from its counters.
    reply.AppendInt64("totalTimeProcessingMicros", 0);
    reply.AppendString("processingMethod", "scanning");
    if (stats.min_retention_hours > 0) {
      reply.AppendDouble("oplogMinRetentionHours", stats.min_retention_hours);
    }
    reply.AppendInt64("totalTimeTruncatingMicros", stats.truncating_micros);
    reply.AppendInt64("truncateCount", stats.truncate_count);
    reply.Close(t);
  }
  if (service.transactions != nullptr && Wanted(cmd, "transactions")) {
    // Retryable writes, as mongod counts them; multi-document transactions do not exist yet.
    const auto& c = service.transactions->counters();
    size_t t = reply.OpenObject("transactions");
    reply.AppendInt64("retriedCommandsCount", c.retried_commands.load());
    reply.AppendInt64("retriedStatementsCount", c.retried_statements.load());
    reply.AppendInt64("transactionsCollectionWriteCount", c.records_written.load());
    for (const char* zero :
         {"currentActive", "currentInactive", "currentOpen", "totalAborted", "totalCommitted",
          "totalStarted", "totalPrepared", "totalPreparedThenCommitted", "totalPreparedThenAborted",
          "currentPrepared"}) {
      reply.AppendInt64(zero, 0);
    }
    reply.Close(t);
  }
  if (Wanted(cmd, "wiredTiger")) {
    size_t t = reply.OpenObject("wiredTiger");
    size_t c = reply.OpenObject("cache");
    reply.AppendInt64("maximum bytes configured", int64_t{service.options.cache_size_mb} << 20);
    reply.Close(c);
    reply.Close(t);
  }
  if (Wanted(cmd, "storageEngine")) {
    size_t t = reply.OpenObject("storageEngine");
    reply.AppendString("name", "wiredTiger");
    reply.AppendBool("supportsCommittedReads", true);
    reply.AppendBool("supportsPendingDrops", false);
    // readConcern "snapshot" is refused (docs/replication.md): tools should not try it.
    reply.AppendBool("supportsSnapshotReadConcern", false);
    reply.AppendBool("readOnly", false);
    reply.AppendBool("persistent", !service.options.in_memory);
    reply.AppendBool("backupCursorOpen", false);
    reply.Close(t);
  }
  return Status::OK();
}

}  // namespace

std::unique_ptr<Command> MakeServerStatusCommand() {
  return std::make_unique<FnCommand>(
      "serverStatus",
      FnCommand::Options{.help = "returns lots of administrative server statistics",
                         .allows_after_cluster_time = false},
      RunServerStatus);
}

}  // namespace hourglass::commands
