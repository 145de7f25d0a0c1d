// validate: checks a collection's records and indexes against each other, as mongod 7.0's
// validate command does, and reports what it finds ({valid, errors, warnings, keysPerIndex,
// missingIndexEntries, extraIndexEntries, corruptRecords, ...}). A time-series collection is
// validated through its bucket collection (`ns` then names system.buckets.X), whose buckets also
// get the time-series checks of timeseries/bucket_validation.h.
//
// How: one storage snapshot (a read transaction held for the whole command) so that the record
// scan and the index scans see the same data whatever writers do meanwhile — validate never
// blocks them (mongod's foreground validate takes the collection's exclusive lock instead).
// Index consistency follows MongoDB's two phases: phase 1 counts, into hash buckets, +1 for every
// key a record generates (with the very key generation the writers use: GenerateIndexKeys, and
// the `_id_` and series index keys as catalog/collection.cc makes them) and -1 for every index
// entry, in memory independent of the collection's size; only when some hash bucket does not
// come back to zero does phase 2 scan again, keeping the keys of those buckets, to name each
// missing and extra entry.
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/interrupt.h"
#include "base/logger.h"
#include "bson/key_string.h"
#include "catalog/index_keys.h"
#include "catalog/record_store.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "exec/namespace_resolver.h"
#include "timeseries/bucket_compression.h"
#include "timeseries/bucket_validation.h"
#include "timeseries/bucket_validator.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr std::string_view kCorruptReason = "Detected one or more invalid documents. See logs.";
constexpr std::string_view kSchemaReason =
    "Detected one or more documents not compliant with the collection's schema. Check logs for "
    "log id 5363500.";
constexpr std::string_view kTimeseriesReason =
    "Detected one or more documents in this collection incompatible with time-series "
    "specifications. For more info, see logs with log id 6698300.";
constexpr std::string_view kAdvice =
    "A corrupt namespace has been detected. See http://dochub.mongodb.org/core/data-recovery for "
    "recovery steps.";
// MongoDB reports at most about 1 MB of entries in each list; the rest is counted.
constexpr size_t kMaxListedBytes = 1 << 20;
constexpr size_t kHashBuckets = size_t{1} << 16;
// Records (or index entries) between two checks for interruption (killOp, maxTimeMS).
constexpr int64_t kInterruptInterval = 4096;

struct Options {
  bool full = false;
  bool background = false;
};

// The options, checked in MongoDB's order (validate.cpp): types first (14, naming the field),
// then the combinations MongoDB refuses (InvalidOptions 72), then what Hourglass does not do.
StatusWith<Options> ParseOptions(const BsonObj& cmd) {
  HG_RETURN_IF_ERROR(CheckKnownFields(
      cmd, {"full", "repair", "metadata", "checkBSONConformance", "background", "scandata"}));
  Options o;
  HG_ASSIGN_OR_RETURN(o.full, GetBool("validate", cmd, "full", false));
  HG_ASSIGN_OR_RETURN(o.background, GetBool("validate", cmd, "background", false));
  HG_ASSIGN_OR_RETURN(bool repair, GetBool("validate", cmd, "repair", false));
  HG_ASSIGN_OR_RETURN(bool metadata, GetBool("validate", cmd, "metadata", false));
  HG_ASSIGN_OR_RETURN(bool check_bson, GetBool("validate", cmd, "checkBSONConformance", false));
  HG_ASSIGN_OR_RETURN(bool scandata, GetBool("validate", cmd, "scandata", false));
  (void)scandata;  // mongod 7.0 ignores this pre-3.0 option; every record is always scanned
  auto invalid = [](std::string why) { return Status(ErrorCode::kInvalidOptions, std::move(why)); };
  if (o.background && o.full) {
    return invalid(
        "Running the validate command with both { background: true } and { full: true } is not "
        "supported.");
  }
  const BsonElement raw_check_bson = cmd["checkBSONConformance"];
  if (!raw_check_bson.eoo() && raw_check_bson.type() != BsonType::kNull && !check_bson && o.full) {
    return invalid("Cannot explicitly set 'checkBSONConformance: false' with full validation set.");
  }
  if (o.background && repair) {
    return invalid(
        "Running the validate command with both { background: true } and { repair: true } is "
        "not supported.");
  }
  if (check_bson && repair) {
    return invalid(
        "Running the validate command with both { checkBSONConformance: true } and { repair: "
        "true } is not supported.");
  }
  if (metadata && (o.background || o.full || check_bson || repair)) {
    return invalid(
        "Running the validate command with { metadata: true } is not supported with any other "
        "options");
  }
  // Not half-honoured: a repair that repairs nothing, or a metadata-only check that checks
  // everything, would mislead whoever relies on it.
  if (repair) {
    return Status(ErrorCode::kCommandNotSupported,
                  "validate with { repair: true } is not supported: Hourglass only reports "
                  "inconsistencies");
  }
  if (metadata) {
    return Status(ErrorCode::kCommandNotSupported,
                  "validate with { metadata: true } is not supported; run it without to check "
                  "the whole collection");
  }
  return o;
}

// An index being checked: the entries its records should have, and those it has.
struct CheckedIndex {
  const catalog::SecondaryIndex* index;
  std::string name;
  int64_t keys_traversed = 0;
  bool valid = true;
};

// The keys `doc` (stored at `rid`) must have in `idx`, as catalog/collection.cc writes them; what
// catalog::IndexCursor::key() returns for each.
StatusWith<catalog::IndexKeySet> ExpectedKeys(const catalog::SecondaryIndex& idx,
                                              const BsonObj& doc) {
  catalog::IndexKeySet out;
  switch (idx.kind) {
    case catalog::IndexKind::kId: {
      bson::KeyStringBuilder k;
      k.AppendElement(doc["_id"], false, idx.desc.collator.get());
      out.keys.push_back(k.Release());
      return out;
    }
    case catalog::IndexKind::kSeries: {
      // {meta: 1, control.min.<time>: 1, ...}: the series prefix, then the bucket's start.
      auto it = idx.desc.key.begin();
      ++it;
      std::string key = catalog::BucketIndexSeriesPrefix(doc["meta"]);
      bson::KeyStringBuilder t;
      t.AppendElement(doc.GetPath((*it).FieldName()));
      key += t.bytes();
      out.keys.push_back(std::move(key));
      return out;
    }
    case catalog::IndexKind::kUser:
      return catalog::GenerateIndexKeys(idx.desc, doc);
  }
  return out;
}

// The key pattern's fields with the values of an entry, as MongoDB's missing/extra entries show
// them. The series index keys hold the exact bytes of `meta` after its sort key: they are shown
// from the bucket (`meta`, the start time) instead of being decoded.
BsonObj ShowKey(const catalog::SecondaryIndex& idx, std::string_view key, const BsonObj* doc,
                const BsonElement& series_meta) {
  if (idx.kind != catalog::IndexKind::kSeries) return catalog::IndexKeyValue(idx.desc.key, key);
  BsonBuilder b;
  bool first = true;
  for (BsonElement f : idx.desc.key) {
    BsonElement v = doc ? (first ? (*doc)["meta"] : doc->GetPath(f.FieldName()))
                        : (first ? series_meta : BsonElement());
    first = false;
    if (!v.eoo()) b.AppendElementAs(v, f.FieldName());
  }
  return b.Obj();
}

// Phase 1's hash buckets: two per key (two slices of one 64-bit hash), so that a missing and an
// extra entry cancel out only if they collide twice.
class KeyBuckets {
 public:
  KeyBuckets() : counts_(kHashBuckets, 0) {}
  static uint64_t Hash(size_t index, std::string_view key, int64_t rid) {
    uint64_t h = std::hash<std::string_view>{}(key);
    h ^= (static_cast<uint64_t>(rid) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    h ^= (static_cast<uint64_t>(index) * 0xff51afd7ed558ccdULL);
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
  }
  void Add(uint64_t h, int64_t delta) {
    counts_[h % kHashBuckets] += delta;
    counts_[(h / kHashBuckets) % kHashBuckets] += delta;
  }
  bool Mismatch(uint64_t h) const {
    return counts_[h % kHashBuckets] != 0 || counts_[(h / kHashBuckets) % kHashBuckets] != 0;
  }
  bool AnyMismatch() const {
    return std::any_of(counts_.begin(), counts_.end(), [](int64_t c) { return c != 0; });
  }

 private:
  std::vector<int64_t> counts_;
};

// Everything the reply reports.
struct Results {
  int64_t records = 0;
  int64_t invalid_documents = 0;
  int64_t non_compliant = 0;
  bool valid = true;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  std::vector<int64_t> corrupt_records;
  std::vector<BsonObj> missing;
  std::vector<BsonObj> extra;

  void Error(std::string_view e) {
    valid = false;
    if (std::find(errors.begin(), errors.end(), e) == errors.end()) errors.emplace_back(e);
  }
  void Warning(std::string_view w) {
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.emplace_back(w);
  }
};

// The time-series half of a bucket collection's validation.
struct BucketChecks {
  timeseries::TimeseriesOptions options;
  int schema_version = 1;
  std::shared_ptr<const bson::StringComparator> strings;
};

// The `reason` a ValidateBucketDocument failure carries in errInfo.details.
std::string_view ValidatorReason(const Status& st) {
  if (st.extra_info().size() < 5) return {};
  BsonObj info(st.extra_info().data());
  return info["errInfo"].Obj()["details"].Obj()["reason"].Str();
}

void CheckBucket(const BucketChecks& ts, const catalog::Collection& coll, int64_t rid,
                 const BsonObj& doc, Results* r) {
  auto log = [&](int id, std::string_view msg, const Status& why) {
    BsonBuilder attr;
    attr.AppendString("namespace", coll.ns());
    attr.AppendInt64("recordId", rid);
    attr.AppendString("reason", why.reason());
    LOGW("STORAGE", id, msg, attr.Obj().ToJson());
  };
  Status schema = timeseries::ValidateBucketDocument(doc, ts.options.time_field, ts.schema_version);
  if (!schema.ok() && timeseries::IsCompressedBucket(doc)) {
    // The validator also runs the compressed-column checks, which are time-series rules (below),
    // not the collection's $jsonSchema: a failure there is not a schema violation.
    Status columns = timeseries::CheckCompressedBucket(doc, ts.options.time_field);
    if (!columns.ok() && ValidatorReason(schema) == columns.reason()) schema = Status::OK();
  }
  if (!schema.ok()) {
    // The bucket collection's validator has validationAction "error": an error, as in mongod.
    log(5363500, "Document is not compliant with the collection's schema", schema);
    ++r->non_compliant;
    r->Error(kSchemaReason);
    return;
  }
  Status bucket = timeseries::CheckBucketConsistency(doc, ts.options, ts.strings);
  if (!bucket.ok()) {
    log(6698300, "Document is not compliant with time-series specifications", bucket);
    ++r->non_compliant;
    r->Warning(kTimeseriesReason);
  }
}

// MongoDB's appendNumber: an int while the count is well inside int's range, else a long.
void AppendCount(BsonBuilder& b, std::string_view name, int64_t n) {
  if (n > -(int64_t{1} << 30) && n < (int64_t{1} << 30)) {
    b.AppendInt32(name, static_cast<int32_t>(n));
  } else {
    b.AppendInt64(name, n);
  }
}

// An entry of phase 2: which index, key bytes, RecordId.
using EntryKey = std::tuple<size_t, std::string, int64_t>;

class Validator {
 public:
  Validator(storage::Session& s, const catalog::Collection& coll,
            std::optional<BucketChecks> buckets)
      : s_(s), coll_(coll), buckets_(std::move(buckets)) {
    auto add = [&](const catalog::SecondaryIndex* idx) {
      // An index still being built lacks keys of the records it has not reached yet.
      if (idx != nullptr && idx->entry->ready) indexes_.push_back({idx, idx->desc.name});
    };
    add(coll.IdIndex());
    add(coll.SeriesIndex());
    for (const catalog::SecondaryIndex& idx : coll.Indexes()) add(&idx);
  }

  Status Run(Results* r) {
    HG_RETURN_IF_ERROR(ScanRecords(/*second_phase=*/false, r));
    for (size_t i = 0; i < indexes_.size(); ++i) {
      HG_RETURN_IF_ERROR(ScanIndex(i, /*second_phase=*/false, r));
    }
    if (!buckets_hash_.AnyMismatch()) return Status::OK();
    HG_RETURN_IF_ERROR(ScanRecords(/*second_phase=*/true, r));
    for (size_t i = 0; i < indexes_.size(); ++i) {
      HG_RETURN_IF_ERROR(ScanIndex(i, /*second_phase=*/true, r));
    }
    ReportInconsistencies(r);
    return Status::OK();
  }

  const std::vector<CheckedIndex>& indexes() const { return indexes_; }

 private:
  Status ScanRecords(bool second_phase, Results* r) {
    HG_ASSIGN_OR_RETURN(catalog::RecordCursor cursor,
                        catalog::RecordCursor::Open(s_, coll_, catalog::RecordRange::All(true)));
    int64_t seen = 0;
    while (true) {
      HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
      if (!more) break;
      if (++seen % kInterruptInterval == 0) HG_RETURN_IF_ERROR(CheckForInterrupt());
      const int64_t rid = cursor.id();
      Status bson_ok = bson::ValidateBson(cursor.data());
      if (!second_phase) ++r->records;
      if (!bson_ok.ok()) {
        // Its keys cannot be known: the index entries pointing at it turn up as extra entries.
        if (!second_phase) {
          BsonBuilder attr;
          attr.AppendInt64("recordId", rid);
          attr.AppendString("error", bson_ok.reason());
          LOGI("STORAGE", 4835001,
               "Document corruption details - Document validation failed with error",
               attr.Obj().ToJson());
          ++r->invalid_documents;
          r->corrupt_records.push_back(rid);
          r->Error(kCorruptReason);
        }
        continue;
      }
      const BsonObj doc = cursor.doc();
      if (!second_phase && buckets_) CheckBucket(*buckets_, coll_, rid, doc, r);
      for (size_t i = 0; i < indexes_.size(); ++i) {
        CheckedIndex& ci = indexes_[i];
        StatusWith<catalog::IndexKeySet> keys = ExpectedKeys(*ci.index, doc);
        if (!keys.ok()) {
          if (!second_phase) {
            IndexError(ci,
                       "Index " + ci.name +
                           " cannot generate the keys of the document with "
                           "RecordId(" +
                           std::to_string(rid) + "): " + keys.status().reason(),
                       r);
          }
          continue;
        }
        if (!second_phase && keys.value().multikey && ci.index->kind == catalog::IndexKind::kUser &&
            !ci.index->entry->multikey->load()) {
          IndexError(ci,
                     "Index " + ci.name +
                         " is not multi-key but has more than one key in "
                         "document RecordId(" +
                         std::to_string(rid) + ")",
                     r);
        }
        for (const std::string& key : keys.value().keys) {
          const uint64_t h = KeyBuckets::Hash(i, key, rid);
          if (!second_phase) {
            buckets_hash_.Add(h, +1);
          } else if (buckets_hash_.Mismatch(h)) {
            BsonBuilder info;
            info.AppendString("indexName", ci.name);
            info.AppendInt64("recordId", rid);
            if (BsonElement id = doc["_id"]; !id.eoo()) {
              BsonBuilder id_key;
              id_key.AppendElement(id);
              info.AppendObject("idKey", id_key.Obj());
            }
            info.AppendObject("indexKey", ShowKey(*ci.index, key, &doc, BsonElement()));
            missing_.emplace(EntryKey{i, key, rid}, info.Obj());
          }
        }
      }
    }
    return Status::OK();
  }

  Status ScanIndex(size_t i, bool second_phase, Results* r) {
    CheckedIndex& ci = indexes_[i];
    HG_ASSIGN_OR_RETURN(catalog::IndexCursor cursor, catalog::IndexCursor::Open(s_, *ci.index));
    int64_t seen = 0;
    while (true) {
      HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
      if (!more) break;
      if (++seen % kInterruptInterval == 0) HG_RETURN_IF_ERROR(CheckForInterrupt());
      const std::string_view key = cursor.key();
      const int64_t rid = cursor.record_id();
      const uint64_t h = KeyBuckets::Hash(i, key, rid);
      if (!second_phase) {
        ++ci.keys_traversed;
        buckets_hash_.Add(h, -1);
        continue;
      }
      if (!buckets_hash_.Mismatch(h)) continue;
      auto found = missing_.find(EntryKey{i, std::string(key), rid});
      if (found != missing_.end()) {
        missing_.erase(found);  // the record's key is there after all: neither missing nor extra
        continue;
      }
      BsonBuilder info;
      info.AppendString("indexName", ci.name);
      info.AppendInt64("recordId", rid);
      const BsonElement meta =
          ci.index->kind == catalog::IndexKind::kSeries ? cursor.meta() : BsonElement();
      info.AppendObject("indexKey", ShowKey(*ci.index, key, nullptr, meta));
      extra_.push_back(info.Obj());
      (void)r;
    }
    return Status::OK();
  }

  void IndexError(CheckedIndex& ci, const std::string& msg, Results* r) {
    ci.valid = false;
    r->Error(msg);
  }

  // MongoDB's report: each inconsistent index named once, the entries listed up to ~1 MB per
  // list (smallest first), and how many there were of each kind.
  void ReportInconsistencies(Results* r) {
    auto mark = [&](const BsonObj& entry) {
      std::string_view name = entry["indexName"].Str();
      for (CheckedIndex& ci : indexes_) {
        if (ci.name == name && ci.valid) {
          ci.valid = false;
          r->Error("Index with name '" + ci.name + "' has inconsistencies.");
        }
      }
    };
    auto list = [&](std::vector<BsonObj> entries, std::vector<BsonObj>* out,
                    std::string_view too_many) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const BsonObj& a, const BsonObj& b) { return a.size() < b.size(); });
      size_t bytes = 0;
      for (const BsonObj& e : entries) {
        bytes += e.size();
        if (out->empty() || bytes <= kMaxListedBytes) {
          out->push_back(e);
        } else {
          r->Error(too_many);
        }
        mark(e);
      }
    };
    std::vector<BsonObj> missing;
    for (auto& [key, info] : missing_) missing.push_back(info);
    list(std::move(missing), &r->missing,
         "Not all missing index entry inconsistencies are listed due to size limitations.");
    list(extra_, &r->extra,
         "Not all extra index entry inconsistencies are listed due to size limitations.");
    if (!missing_.empty()) {
      r->Warning("Detected " + std::to_string(missing_.size()) + " missing index entries.");
      r->valid = false;
    }
    if (!extra_.empty()) {
      r->Warning("Detected " + std::to_string(extra_.size()) + " extra index entries.");
      r->valid = false;
    }
  }

  storage::Session& s_;
  const catalog::Collection& coll_;
  std::optional<BucketChecks> buckets_;
  std::vector<CheckedIndex> indexes_;
  KeyBuckets buckets_hash_;
  std::map<EntryKey, BsonObj> missing_;
  std::vector<BsonObj> extra_;
};

Status RunValidate(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_ASSIGN_OR_RETURN(std::string name, GetCollectionName(cmd, ctx.db));
  HG_ASSIGN_OR_RETURN(Options options, ParseOptions(cmd));
  (void)options;  // both modes run every check: nothing here is too slow to leave out
  catalog::NamespaceString nss{ctx.db, name};
  HG_RETURN_IF_ERROR(catalog::ValidateCollectionName(nss));
  HG_ASSIGN_OR_RETURN(exec::ResolvedNamespace resolved, exec::Resolve(ctx.service.Read(), nss));
  std::shared_ptr<catalog::Collection> coll = resolved.collection;
  auto not_found = [&](const catalog::NamespaceString& n) {
    return Status(ErrorCode::kNamespaceNotFound,
                  "Collection '" + n.ns() + "' does not exist to validate.");
  };
  if (!coll) return not_found(nss);
  if (coll->entry().type == "view") {
    return Status(ErrorCode::kCommandNotSupportedOnView, "Cannot validate a view");
  }
  // A time-series collection is validated as its bucket collection, as mongod 7.0 does.
  if (coll->entry().type == "timeseries") {
    if (!resolved.timeseries) return not_found(exec::BucketsNamespace(nss));
    coll = resolved.timeseries->buckets;
  }
  if (coll->IsView()) return not_found(coll->nss());

  std::optional<BucketChecks> buckets;
  if (coll->nss().IsTimeseriesBuckets()) {
    BsonElement ts = coll->entry().options["timeseries"];
    if (ts.type() == BsonType::kObject) {
      HG_ASSIGN_OR_RETURN(timeseries::TimeseriesOptions o,
                          timeseries::TimeseriesOptions::FromBson(ts.Obj()));
      BsonElement validator = coll->entry().options["validator"];
      buckets = BucketChecks{std::move(o),
                             validator.type() == BsonType::kObject
                                 ? timeseries::BucketSchemaVersion(validator.Obj())
                                 : 1,
                             coll->DefaultCollator()};
    }
  }

  // Writes acknowledged before the command are in storage before the snapshot is taken.
  HG_RETURN_IF_ERROR(coll->read_barrier().Run());
  auto session = ctx.service.engine->NewSession();
  HG_RETURN_IF_ERROR(session->Begin());
  Results r;
  Status run = Status::OK();
  std::vector<CheckedIndex> indexes;
  {
    Validator v(*session, *coll, std::move(buckets));
    run = v.Run(&r);
    indexes = v.indexes();
  }
  session->Rollback();  // read only
  if (run.code() == ErrorCode::kNamespaceNotFound) return not_found(coll->nss());
  HG_RETURN_IF_ERROR(run);

  reply.AppendString("ns", coll->ns());
  reply.AppendBinData("uuid", 4, coll->entry().uuid);
  AppendCount(reply, "nInvalidDocuments", r.invalid_documents);
  AppendCount(reply, "nNonCompliantDocuments", r.non_compliant);
  AppendCount(reply, "nrecords", r.records);
  AppendCount(reply, "nIndexes", static_cast<int64_t>(indexes.size()));
  size_t o = reply.OpenObject("keysPerIndex");
  for (const CheckedIndex& ci : indexes) AppendCount(reply, ci.name, ci.keys_traversed);
  reply.Close(o);
  o = reply.OpenObject("indexDetails");
  for (const CheckedIndex& ci : indexes) {
    size_t d = reply.OpenObject(ci.name);
    reply.AppendBool("valid", ci.valid);
    reply.Close(d);
  }
  reply.Close(o);
  reply.AppendBool("valid", r.valid);
  reply.AppendBool("repaired", false);
  auto strings = [&](std::string_view field, const std::vector<std::string>& values) {
    size_t a = reply.OpenArray(field);
    for (size_t i = 0; i < values.size(); ++i) reply.AppendString(std::to_string(i), values[i]);
    reply.Close(a);
  };
  auto objects = [&](std::string_view field, const std::vector<BsonObj>& values) {
    size_t a = reply.OpenArray(field);
    for (size_t i = 0; i < values.size(); ++i) reply.AppendObject(std::to_string(i), values[i]);
    reply.Close(a);
  };
  strings("warnings", r.warnings);
  strings("errors", r.errors);
  objects("extraIndexEntries", r.extra);
  objects("missingIndexEntries", r.missing);
  size_t a = reply.OpenArray("corruptRecords");
  for (size_t i = 0; i < r.corrupt_records.size(); ++i) {
    reply.AppendInt64(std::to_string(i), r.corrupt_records[i]);
  }
  reply.Close(a);
  if (!r.valid) reply.AppendString("advice", kAdvice);
  return Status::OK();
}

}  // namespace

std::unique_ptr<Command> MakeValidateCommand() {
  return std::make_unique<FnCommand>(
      "validate",
      FnCommand::Options{.help = "check a collection's records and indexes for consistency",
                         .allows_after_cluster_time = false},
      RunValidate);
}

}  // namespace hourglass::commands
