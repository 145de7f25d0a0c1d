#include "catalog/collection.h"

#include <algorithm>
#include <iterator>

#include "bson/key_string.h"
#include "catalog/op_observer.h"
#include "catalog/update_diff.h"
#include "storage/record_id.h"

namespace hourglass::catalog {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;

BsonObj CollectionEntry::ToBson() const {
  BsonBuilder b;
  b.AppendString("ns", nss.ns());
  b.AppendBinData("uuid", 4, uuid);
  b.AppendString("type", type);
  b.AppendObject("options", options);
  b.AppendString("ident", ident);
  size_t arr = b.OpenArray("indexes");
  int i = 0;
  for (const auto& idx : indexes) {
    size_t o = b.OpenObject(std::to_string(i++));
    b.AppendObject("spec", idx.spec);
    b.AppendString("ident", idx.ident);
    if (nss.IsTimeseriesBuckets()) b.AppendBool("series", idx.series);
    b.Close(o);
  }
  b.Close(arr);
  return b.Obj();
}

StatusWith<CollectionEntry> CollectionEntry::FromBson(const BsonObj& obj) {
  CollectionEntry e;
  HG_ASSIGN_OR_RETURN(e.nss, ParseNamespace(obj["ns"].Str()));
  e.uuid = std::string(obj["uuid"].BinData());
  e.type = std::string(obj["type"].Str());
  e.options = obj["options"].Obj().Owned();
  e.ident = std::string(obj["ident"].Str());
  bool flagged = false;
  for (BsonElement idx : obj["indexes"].Obj()) {
    BsonObj io = idx.Obj();
    e.indexes.push_back(IndexEntry{io["spec"].Obj().Owned(), std::string(io["ident"].Str())});
    if (BsonElement series = io["series"]; series.type() == bson::BsonType::kBool) {
      flagged = true;
      e.indexes.back().series = series.Bool();
    }
  }
  if (!flagged && e.nss.IsTimeseriesBuckets()) {
    // Written before the flag, when the series index was the only index with its key pattern.
    for (IndexEntry& idx : e.indexes) {
      if (IsSeriesIndexSpec(idx.spec)) {
        idx.series = true;
        break;
      }
    }
  }
  return e;
}

BsonObj CollationOption(const BsonObj& options) {
  bson::BsonElement c = options["collation"];
  return c.type() == bson::BsonType::kObject ? c.Obj() : BsonObj();
}

namespace {
bool IsClusteredEntry(const CollectionEntry& e) {
  bson::BsonElement c = e.options["clusteredIndex"];
  return c.type() == bson::BsonType::kBool && c.Bool();
}

}  // namespace

Collection::Collection(storage::KvEngine* engine, CollectionEntry entry, int64_t next_record_id)
    : engine_(engine),
      entry_(std::move(entry)),
      clustered_(IsClusteredEntry(entry_)),
      counters_(std::make_shared<Counters>()) {
  counters_->next_record_id = next_record_id;
  Init();
}

Collection::Collection(CollectionEntry entry, const Collection& predecessor)
    : engine_(predecessor.engine_),
      entry_(std::move(entry)),
      clustered_(IsClusteredEntry(entry_)),
      counters_(predecessor.counters_) {
  Init();
}

void Collection::Init() {
  if (bson::BsonElement c = entry_.options["clusteredIndex"]; c.type() == bson::BsonType::kObject) {
    BsonBuilder spec;
    for (bson::BsonElement f : c.Obj()) spec.AppendElement(f);
    spec.AppendBool("clustered", true);
    // Its keys are under the collection's collation, as MongoDB lists them.
    if (BsonObj co = CollationOption(entry_.options); !co.IsEmpty()) {
      spec.AppendObject("collation", co);
    }
    clustered_index_ = spec.Obj();
  }
  if (BsonObj c = CollationOption(entry_.options); !c.IsEmpty()) {
    auto collator = collation::Collator::Make(c);
    invariant(collator.ok());  // validated by create
    default_collator_ = std::move(collator).value();
  }
  std::vector<SecondaryIndex> users;
  for (const auto& idx : entry_.indexes) {
    auto desc = IndexDescriptor::FromSpec(idx.spec);
    invariant(desc.ok());  // specs are validated before they are stored
    desc.value().timeseries_buckets = entry_.nss.IsTimeseriesBuckets();
    if (idx.name() == "_id_") {
      desc.value().unique = true;
      indexes_.push_back(
          SecondaryIndex{&idx, std::move(desc.value()), IndexKind::kId, counters_->read_barrier});
    } else if (idx.series) {
      indexes_.push_back(SecondaryIndex{&idx, std::move(desc.value()), IndexKind::kSeries,
                                        counters_->read_barrier});
    } else {
      users.push_back(
          SecondaryIndex{&idx, std::move(desc.value()), IndexKind::kUser, counters_->read_barrier});
    }
  }
  first_user_index_ = indexes_.size();
  for (auto& idx : users) indexes_.push_back(std::move(idx));
}

const SecondaryIndex* Collection::IndexOfKind(IndexKind kind) const {
  for (size_t i = 0; i < first_user_index_; ++i) {
    if (indexes_[i].kind == kind) return &indexes_[i];
  }
  return nullptr;
}

void ReadBarrier::Set(Fn fn) {
  std::lock_guard lk(mu_);
  fn_ = std::make_shared<const Fn>(std::move(fn));
  set_.store(true, std::memory_order_release);
}

namespace {
// The current thread's operation: how deep its scopes nest, and the barriers that ran in it.
thread_local int t_operation_depth = 0;
thread_local std::vector<const ReadBarrier*> t_barriers_run;
}  // namespace

ReadBarrier::OperationScope::OperationScope() { ++t_operation_depth; }

ReadBarrier::OperationScope::OperationScope(const std::vector<const ReadBarrier*>& inherited) {
  if (t_operation_depth++ == 0) t_barriers_run = inherited;
}

std::vector<const ReadBarrier*> ReadBarrier::RunInThisOperation() { return t_barriers_run; }

ReadBarrier::OperationScope::~OperationScope() {
  if (--t_operation_depth == 0) t_barriers_run.clear();
}

void ReadBarrier::RunAgainInThisOperation() const { std::erase(t_barriers_run, this); }

Status ReadBarrier::RunSlow() const {
  const bool in_operation = t_operation_depth > 0;
  if (in_operation &&
      std::find(t_barriers_run.begin(), t_barriers_run.end(), this) != t_barriers_run.end()) {
    return Status::OK();
  }
  std::shared_ptr<const Fn> fn;
  {
    std::lock_guard lk(mu_);
    fn = fn_;
  }
  Status st = (*fn)();
  if (st.ok() && in_operation) t_barriers_run.push_back(this);
  return st;
}

std::shared_ptr<const Collection> Collection::Latest() const {
  std::lock_guard lk(counters_->latest_mu);
  return counters_->latest.lock();
}

void Collection::InstallAsLatest(const std::shared_ptr<const Collection>& self) {
  {
    std::lock_guard lk(self->counters_->latest_mu);
    self->counters_->latest = self;
  }
  std::unique_lock barrier(self->counters_->write_mu);
}

std::vector<std::string> MultikeyPaths::Snapshot() const {
  std::lock_guard lock(mu_);
  return paths_;
}

std::vector<std::string> MultikeyPaths::Add(const std::vector<std::string>& paths) {
  std::vector<std::string> unconfirmed;
  if (paths.empty()) return unconfirmed;
  std::lock_guard lock(mu_);
  for (const auto& p : paths) {
    if (std::find(paths_.begin(), paths_.end(), p) == paths_.end()) paths_.push_back(p);
    if (std::find(confirmed_.begin(), confirmed_.end(), p) == confirmed_.end()) {
      unconfirmed.push_back(p);
    }
  }
  return unconfirmed;
}

void MultikeyPaths::Confirm(const std::string& path) {
  std::lock_guard lock(mu_);
  if (std::find(paths_.begin(), paths_.end(), path) == paths_.end()) paths_.push_back(path);
  if (std::find(confirmed_.begin(), confirmed_.end(), path) == confirmed_.end()) {
    confirmed_.push_back(path);
  }
}

const SecondaryIndex* Collection::FindIndex(std::string_view name) const {
  for (const auto& idx : Indexes()) {
    if (idx.desc.name == name) return &idx;
  }
  return nullptr;
}

// Index table format (src/storage/README.md): a unique index maps key -> RecordId; any other
// index maps key + RecordId -> RecordId.
Status Collection::AddKeys(storage::Session& s, const SecondaryIndex& idx, const IndexKeySet& keys,
                           int64_t rid) const {
  if (keys.multikey && !idx.entry->multikey->load()) {
    // Persisted in this transaction, so a committed multikey document implies a multikey mark.
    idx.entry->multikey->store(true);
    HG_RETURN_IF_ERROR(s.Put(kMultikeyTable, idx.entry->ident, "1"));
  }
  // A wildcard path's row is written when this transaction does not see it (a concurrent first
  // writer then conflicts, retries and sees it). Rows loaded at startup are not read again.
  for (const std::string& path : idx.entry->multikey_paths->Add(keys.array_paths)) {
    const std::string row = idx.entry->ident + "/" + path;
    HG_ASSIGN_OR_RETURN(auto found, s.Get(kMultikeyTable, row));
    if (!found) {
      HG_RETURN_IF_ERROR(s.Put(kMultikeyTable, row, "1"));
    }
  }
  std::string rid_bytes = storage::EncodeRecordId(rid);
  for (const std::string& key : keys.keys) {
    if (!idx.desc.unique) {
      HG_RETURN_IF_ERROR(s.Put(idx.entry->ident, key + rid_bytes, rid_bytes));
      continue;
    }
    Status st = s.Insert(idx.entry->ident, key, rid_bytes);
    if (st.code() == ErrorCode::kDuplicateKey) {
      HG_ASSIGN_OR_RETURN(auto owner, s.Get(idx.entry->ident, key));
      if (owner && *owner == rid_bytes) continue;  // already added (a build racing a write)
      return IndexDuplicateKeyError(idx, key);
    }
    HG_RETURN_IF_ERROR(st);
  }
  return Status::OK();
}

Status Collection::RemoveIndexKeys(storage::Session& s, const SecondaryIndex& idx,
                                   const std::vector<std::string>& keys, int64_t rid) const {
  std::string rid_bytes = storage::EncodeRecordId(rid);
  for (const std::string& key : keys) {
    if (idx.desc.unique) {
      // Only remove the entry if it is ours.
      HG_ASSIGN_OR_RETURN(auto owner, s.Get(idx.entry->ident, key));
      if (!owner || *owner != rid_bytes) continue;
    }
    Status st = s.Remove(idx.entry->ident, idx.desc.unique ? key : key + rid_bytes);
    if (!st.ok() && st.code() != ErrorCode::kNoSuchKey) return st;
  }
  return Status::OK();
}

Status Collection::AddIndexKeys(storage::Session& s, const SecondaryIndex& idx, const BsonObj& doc,
                                int64_t rid) const {
  HG_ASSIGN_OR_RETURN(auto keys, GenerateIndexKeys(idx.desc, doc));
  return AddKeys(s, idx, keys, rid);
}

std::pair<std::string, std::string> Collection::SeriesEntryFor(const SecondaryIndex& idx,
                                                               const BsonObj& doc, int64_t rid,
                                                               size_t* prefix_size) {
  std::string value(1, '\0');
  BsonElement meta = doc["meta"];
  if (!meta.eoo()) value.assign(meta.raw(), meta.size());
  std::string key = BucketIndexSeriesPrefix(meta);
  if (prefix_size != nullptr) *prefix_size = key.size();
  // The pattern is {meta: 1, control.min.<time>: 1[, control.max.<time>: 1]}: the second field
  // is the start time.
  auto it = idx.desc.key.begin();
  ++it;
  bson::KeyStringBuilder t;
  t.AppendElement(doc.GetPath((*it).FieldName()));
  key += t.bytes();
  storage::AppendRecordId(rid, &key);
  return {std::move(key), std::move(value)};
}

Status Collection::PutSeriesEntry(storage::Session& s, const SecondaryIndex& idx,
                                  const BsonObj& doc, int64_t rid) {
  size_t prefix_size = 0;
  auto [key, value] = SeriesEntryFor(idx, doc, rid, &prefix_size);
  // Before the commit, so that no snapshot holds the series while the directory lacks it.
  idx.entry->series_directory->Add(std::string_view(key).substr(0, prefix_size), doc["meta"]);
  return s.Put(idx.entry->ident, key, value);
}

bool IsSeriesIndexSpec(const BsonObj& spec) {
  BsonElement key = spec["key"];
  if (key.type() != bson::BsonType::kObject || key.Obj().NumFields() != 2) return false;
  auto it = key.Obj().begin();
  BsonElement meta = *it;
  ++it;
  BsonElement time = *it;
  return meta.FieldName() == "meta" && meta.IsNumber() && meta.NumberDouble() == 1 &&
         time.FieldName().starts_with("control.min.") && time.IsNumber() &&
         time.NumberDouble() == 1;
}

std::string BucketIndexSeriesPrefix(const BsonElement& meta) {
  bson::KeyStringBuilder k;
  std::string exact;  // type byte and value bytes; empty for no meta
  if (meta.eoo()) {
    k.AppendMissing();
  } else {
    k.AppendElement(meta);
    exact.push_back(static_cast<char>(meta.type()));
    exact.append(meta.value(), meta.ValueSize());
  }
  BsonBuilder b;
  b.AppendBinData("", 0, exact);
  BsonObj holder = b.Obj();
  k.AppendElement(holder.FirstElement());
  return k.Release();
}

int64_t ClusteredRecordId(const bson::ObjectId& oid) {
  return storage::ClusteredRecordId(oid.bytes);
}

namespace {
// A value as the MongoDB shell prints it, for the E11000 message ("{ _id: ObjectId('...') }").
std::string ShellValue(const BsonElement& e) {
  switch (e.type()) {
    case bson::BsonType::kObjectId:
      return "ObjectId('" + e.Oid().ToHex() + "')";
    case bson::BsonType::kString:
      return "\"" + std::string(e.Str()) + "\"";
    case bson::BsonType::kInt32:
      return std::to_string(e.Int32());
    case bson::BsonType::kInt64:
      return std::to_string(e.Int64());
    default: {
      BsonBuilder b;
      b.AppendElementAs(e, "v");
      std::string json = b.Obj().ToJson();  // { "v" : <value> }
      return json.substr(8, json.size() - 10);
    }
  }
}

// A document's fields as the MongoDB shell prints them: "{ a: 1, b: \"x\" }".
std::string ShellObject(const BsonObj& obj) {
  std::string text = "{ ";
  bool first = true;
  for (BsonElement e : obj) {
    if (!first) text += ", ";
    first = false;
    text += std::string(e.FieldName()) + ": " + ShellValue(e);
  }
  return text + " }";
}

// `value` with its strings (collation keys, not UTF-8) as lowercase hex, at any depth.
void AppendHexStrings(BsonBuilder& b, std::string_view name, const BsonElement& value) {
  if (value.type() == bson::BsonType::kString) {
    b.AppendString(name, bson::LowerHex(value.Str()));
  } else if (value.type() == bson::BsonType::kObject || value.type() == bson::BsonType::kArray) {
    size_t t = value.type() == bson::BsonType::kObject ? b.OpenObject(name) : b.OpenArray(name);
    for (BsonElement x : value.Obj()) AppendHexStrings(b, x.FieldName(), x);
    b.Close(t);
  } else {
    b.AppendElementAs(value, name);
  }
}

// DuplicateKey (11000) as MongoDB reports it: keyPattern and keyValue beside the message. Under
// a collation the key holds collation keys, which are not text: MongoDB then shows each string
// component as "CollationKey(0x<hex>)" in the message, sends it as hex in keyValue with
// `hexEncoded` marking which components are, and adds the index's `collation`.
Status DuplicateKeyStatus(std::string_view ns, std::string_view index, const BsonObj& pattern,
                          const BsonObj& value, const BsonObj& collation) {
  BsonBuilder extra;
  extra.AppendObject("keyPattern", pattern);
  std::string text =
      "E11000 duplicate key error collection: " + std::string(ns) + " index: " + std::string(index);
  if (collation.IsEmpty()) {
    extra.AppendObject("keyValue", value);
    return Status(ErrorCode::kDuplicateKey, text + " dup key: " + ShellObject(value),
                  extra.Release());
  }
  text += " collation: " + ShellObject(collation) + " dup key: { ";
  size_t kv = extra.OpenObject("keyValue");
  std::vector<bool> hex;
  for (BsonElement e : value) {
    if (!hex.empty()) text += ", ";
    text += std::string(e.FieldName()) + ": ";
    const bool is_string = e.type() == bson::BsonType::kString;
    hex.push_back(is_string);
    text += is_string ? "\"CollationKey(0x" + bson::LowerHex(e.Str()) + ")\"" : ShellValue(e);
    AppendHexStrings(extra, e.FieldName(), e);
  }
  extra.Close(kv);
  text += " }";
  if (std::find(hex.begin(), hex.end(), true) != hex.end()) {
    size_t arr = extra.OpenArray("hexEncoded");
    for (size_t i = 0; i < hex.size(); ++i) extra.AppendBool(std::to_string(i), hex[i]);
    extra.Close(arr);
  }
  extra.AppendObject("collation", collation);
  return Status(ErrorCode::kDuplicateKey, std::move(text), extra.Release());
}

// The `_id_` key of `id`: the index's collation applies to it, as to any index.
std::string IdKey(const BsonElement& id, const SecondaryIndex& id_index) {
  bson::KeyStringBuilder k;
  k.AppendElement(id, false, id_index.desc.collator.get());
  return k.Release();
}
}  // namespace

Status Collection::IndexDuplicateKeyError(const SecondaryIndex& idx, std::string_view key) const {
  return DuplicateKeyStatus(ns(), idx.desc.name, idx.desc.key, IndexKeyValue(idx.desc.key, key),
                            idx.desc.collation);
}

Status Collection::DuplicateKeyError(const BsonElement& id) const {
  BsonBuilder pattern;
  pattern.AppendInt32("_id", 1);
  BsonBuilder value;
  const SecondaryIndex* id_index = IdIndex();
  if (id_index != nullptr && id_index->desc.collator) {
    bson::AppendComparisonForm(value, "_id", id, *id_index->desc.collator);
    return DuplicateKeyStatus(ns(), "_id_", pattern.Obj(), value.Obj(), id_index->desc.collation);
  }
  value.AppendElementAs(id, "_id");
  return DuplicateKeyStatus(ns(), "_id_", pattern.Obj(), value.Obj(), BsonObj());
}

void Collection::CountUntrackedWrite(storage::Session& s) const {
  if (!entry_.nss.IsTimeseriesBuckets()) return;
  // After the last write of the caller's unit: at its commit, or now for an autocommit write.
  s.OnCommit([counters = counters_] { counters->untracked_writes.fetch_add(1); });
}

StatusWith<int64_t> Collection::Insert(storage::Session& s, const BsonObj& doc,
                                       WriteOrigin origin) {
  HG_ASSIGN_OR_RETURN(int64_t rid, InsertRecord(s, doc));
  if (origin != WriteOrigin::kBucketCatalog) CountUntrackedWrite(s);
  HG_RETURN_IF_ERROR(NotifyWrite(s, rid, &doc));
  if (OpObserver* op = Replicated()) HG_RETURN_IF_ERROR(op->OnInsert(s, *this, doc));
  return rid;
}

Status Collection::InsertAt(storage::Session& s, int64_t rid, const BsonObj& doc) {
  invariant(IdIndex() == nullptr && !clustered_);
  HG_RETURN_IF_ERROR(s.Insert(entry_.ident, storage::EncodeRecordId(rid), doc.bytes()));
  for (const SecondaryIndex& idx : indexes_) HG_RETURN_IF_ERROR(AddIndexKeys(s, idx, doc, rid));
  return Status::OK();
}

OpObserver* Collection::Replicated() const { return OpObserverFor(entry_.nss.db); }

void Collection::SetWriteObserver(std::shared_ptr<WriteObserver> observer) const {
  std::lock_guard lk(counters_->write_observer_mu);
  counters_->has_write_observer.store(observer != nullptr, std::memory_order_release);
  counters_->write_observer = std::move(observer);
}

Status Collection::NotifyWrite(storage::Session& s, int64_t rid, const BsonObj* doc,
                               bool expired) const {
  if (!counters_->has_write_observer.load(std::memory_order_acquire)) return Status::OK();
  std::shared_ptr<WriteObserver> observer;
  {
    std::lock_guard lk(counters_->write_observer_mu);
    observer = counters_->write_observer;
  }
  return observer ? observer->OnWrite(s, rid, doc, expired) : Status::OK();
}

StatusWith<int64_t> Collection::InsertRecord(storage::Session& s, const BsonObj& doc) {
  BsonElement id = doc["_id"];
  invariant(!id.eoo());
  // Every index of the newest handle (index DDL may have replaced this one) is maintained.
  auto latest = Latest();
  const Collection& cur = latest ? *latest : *this;
  int64_t rid;
  if (clustered_) {
    if (id.type() != bson::BsonType::kObjectId) {
      return Status(ErrorCode::kBadValue, "Document " + ns() +
                                              " of a clustered collection must have an ObjectId "
                                              "_id, got " +
                                              std::string(bson::TypeName(id.type())));
    }
    // The record table is the `_id` index: a duplicate `_id` is a duplicate key there.
    rid = ClusteredRecordId(id.Oid());
    Status st = s.Insert(entry_.ident, storage::EncodeRecordId(rid), doc.bytes());
    if (st.code() == ErrorCode::kDuplicateKey) return DuplicateKeyError(id);
    HG_RETURN_IF_ERROR(st);
  } else {
    rid = counters_->next_record_id.fetch_add(1);
    if (const SecondaryIndex* id_index = cur.IdIndex()) {
      Status st =
          s.Insert(id_index->entry->ident, IdKey(id, *id_index), storage::EncodeRecordId(rid));
      if (st.code() == ErrorCode::kDuplicateKey) return DuplicateKeyError(id);
      HG_RETURN_IF_ERROR(st);
    }
    HG_RETURN_IF_ERROR(s.Insert(entry_.ident, storage::EncodeRecordId(rid), doc.bytes()));
  }
  for (const SecondaryIndex& idx : cur.indexes_) {
    if (idx.kind == IndexKind::kSeries) {
      HG_RETURN_IF_ERROR(PutSeriesEntry(s, idx, doc, rid));
    } else if (idx.kind == IndexKind::kUser) {
      HG_RETURN_IF_ERROR(AddIndexKeys(s, idx, doc, rid));
    }
  }
  return rid;
}

Status Collection::Update(storage::Session& s, int64_t id, const BsonObj& old_doc,
                          const BsonObj& new_doc, WriteOrigin origin) {
  // `_id` is unchanged (callers check), so its index is too.
  auto latest = Latest();
  const Collection& cur = latest ? *latest : *this;
  if (const SecondaryIndex* series = cur.SeriesIndex()) {
    auto [old_key, old_value] = SeriesEntryFor(*series, old_doc, id);
    auto [key, value] = SeriesEntryFor(*series, new_doc, id);
    if (old_key != key || old_value != value) {
      Status st = s.Remove(series->entry->ident, old_key);
      if (!st.ok() && st.code() != ErrorCode::kNoSuchKey) return st;
      HG_RETURN_IF_ERROR(PutSeriesEntry(s, *series, new_doc, id));
    }
  }
  HG_RETURN_IF_ERROR(UpdateIndexKeys(s, cur.Indexes(), id, old_doc, new_doc));
  HG_RETURN_IF_ERROR(s.Put(entry_.ident, storage::EncodeRecordId(id), new_doc.bytes()));
  if (OpObserver* op = Replicated()) {
    HG_RETURN_IF_ERROR(op->OnUpdate(s, *this, new_doc, &old_doc));
  }
  if (origin != WriteOrigin::kBucketCatalog) {
    CountUntrackedWrite(s);
    HG_RETURN_IF_ERROR(NotifyWrite(s, id, &old_doc));
    HG_RETURN_IF_ERROR(NotifyWrite(s, id, &new_doc));
  }
  return Status::OK();
}

Status Collection::UpdateIndexKeys(storage::Session& s, std::span<const SecondaryIndex> indexes,
                                   int64_t id, const BsonObj& old_doc,
                                   const BsonObj& new_doc) const {
  for (const SecondaryIndex& idx : indexes) {
    HG_ASSIGN_OR_RETURN(auto old_keys, GenerateIndexKeys(idx.desc, old_doc));
    HG_ASSIGN_OR_RETURN(auto new_keys, GenerateIndexKeys(idx.desc, new_doc));
    std::vector<std::string> gone, added;
    std::set_difference(old_keys.keys.begin(), old_keys.keys.end(), new_keys.keys.begin(),
                        new_keys.keys.end(), std::back_inserter(gone));
    std::set_difference(new_keys.keys.begin(), new_keys.keys.end(), old_keys.keys.begin(),
                        old_keys.keys.end(), std::back_inserter(added));
    HG_RETURN_IF_ERROR(RemoveIndexKeys(s, idx, gone, id));
    new_keys.keys = std::move(added);
    HG_RETURN_IF_ERROR(AddKeys(s, idx, new_keys, id));
  }
  return Status::OK();
}

Status Collection::ModifyRecord(storage::Session& s, int64_t id, const BsonElement& id_field,
                                const std::vector<storage::Session::Modification>& edits,
                                const BsonObj& diff, WriteOrigin origin) {
  const std::string key = storage::EncodeRecordId(id);
  // The bucket catalog's appends leave `_id`, meta and the start time, so the series index, as
  // they are: only user indexes may move.
  auto latest = Latest();
  std::span<const SecondaryIndex> indexes = latest ? latest->Indexes() : Indexes();
  const bool observed = counters_->has_write_observer.load(std::memory_order_acquire);
  // Another writer's change may take measurements out of the record, not only add them: the
  // write observer hears of the record before it too, as Update tells it.
  const bool notify_before = observed && origin != WriteOrigin::kBucketCatalog;
  std::optional<Record> before;
  if (!indexes.empty() || notify_before) {
    HG_ASSIGN_OR_RETURN(before, FindRecord(s, id));
    if (!before) return Status(ErrorCode::kNoSuchKey, "record not found in " + ns());
  }
  if (notify_before) HG_RETURN_IF_ERROR(NotifyWrite(s, id, &before->doc));
  HG_RETURN_IF_ERROR(s.Modify(entry_.ident, key, edits));
  if (origin != WriteOrigin::kBucketCatalog) CountUntrackedWrite(s);
  // Replication logs the diff under `_id`: it needs no read of the edited record.
  if (OpObserver* op = Replicated()) HG_RETURN_IF_ERROR(op->OnUpdateDiff(s, *this, id_field, diff));
  if (indexes.empty() && !observed) return Status::OK();
  // The document as edited (not through the read barrier, which may be what is writing): its
  // index keys, and the bounds the write observer marks.
  HG_ASSIGN_OR_RETURN(auto value, s.Get(entry_.ident, key));
  if (!value) return Status(ErrorCode::kNoSuchKey, "record not found in " + ns());
  const BsonObj after(value->data());
  if (observed) HG_RETURN_IF_ERROR(NotifyWrite(s, id, &after));
  if (indexes.empty()) return Status::OK();
  return UpdateIndexKeys(s, indexes, id, before->doc, after);
}

bool Collection::CanModifyInPlace(const BsonObj& diff) const {
  auto latest = Latest();
  const SecondaryIndex* series = (latest ? *latest : *this).SeriesIndex();
  if (series == nullptr) return true;
  // Its entry holds meta and the start time, the pattern's first two fields (SeriesEntryFor).
  int fields = 0;
  for (BsonElement k : series->desc.key) {
    if (fields++ == 2) break;
    if (UpdateDiffMayChange(diff, k.FieldName())) return false;
  }
  return true;
}

Status Collection::ReplaceRecord(storage::Session& s, int64_t id, const BsonObj& doc,
                                 const BsonObj& diff) {
  const std::string key = storage::EncodeRecordId(id);
  auto latest = Latest();
  std::span<const SecondaryIndex> indexes = latest ? latest->Indexes() : Indexes();
  HG_RETURN_IF_ERROR(NotifyWrite(s, id, &doc));
  if (OpObserver* op = Replicated()) {
    HG_RETURN_IF_ERROR(diff.IsEmpty() ? op->OnUpdate(s, *this, doc, nullptr)
                                      : op->OnUpdateDiff(s, *this, doc["_id"], diff));
  }
  if (indexes.empty()) return s.Update(entry_.ident, key, doc.bytes());
  HG_ASSIGN_OR_RETURN(auto before, FindRecord(s, id));
  if (!before) return Status(ErrorCode::kNoSuchKey, "record not found in " + ns());
  HG_RETURN_IF_ERROR(s.Update(entry_.ident, key, doc.bytes()));
  return UpdateIndexKeys(s, indexes, id, before->doc, doc);
}

StatusWith<bool> Collection::StoreAgainWhole(storage::Session& s, int64_t id) {
  const std::string key = storage::EncodeRecordId(id);
  HG_ASSIGN_OR_RETURN(auto value, s.Get(entry_.ident, key));
  if (!value) return false;
  HG_RETURN_IF_ERROR(s.Update(entry_.ident, key, *value));
  return true;
}

Status Collection::Remove(storage::Session& s, int64_t id, const BsonObj& doc, WriteOrigin origin) {
  auto latest = Latest();
  const Collection& cur = latest ? *latest : *this;
  for (const SecondaryIndex& idx : cur.indexes_) {
    Status st = Status::OK();
    switch (idx.kind) {
      case IndexKind::kSeries:
        st = s.Remove(idx.entry->ident, SeriesEntryFor(idx, doc, id).first);
        break;
      case IndexKind::kId:
        st = s.Remove(idx.entry->ident, IdKey(doc["_id"], idx));
        break;
      case IndexKind::kUser: {
        // A stored document always generated its keys; if it cannot now, there is nothing to
        // remove.
        auto keys = GenerateIndexKeys(idx.desc, doc);
        if (keys.ok()) st = RemoveIndexKeys(s, idx, keys.value().keys, id);
        break;
      }
    }
    if (!st.ok() && st.code() != ErrorCode::kNoSuchKey) return st;
  }
  HG_RETURN_IF_ERROR(s.Remove(entry_.ident, storage::EncodeRecordId(id)));
  if (OpObserver* op = Replicated()) HG_RETURN_IF_ERROR(op->OnDelete(s, *this, doc));
  CountUntrackedWrite(s);
  HG_RETURN_IF_ERROR(NotifyWrite(s, id, &doc, origin == WriteOrigin::kTtl));
  return Status::OK();
}

Status Collection::RewriteForIndexBuild(storage::Session& s, int64_t id, const BsonObj& doc) const {
  return s.Put(entry_.ident, storage::EncodeRecordId(id), doc.bytes());
}

StatusWith<std::optional<Record>> Collection::FindRecord(storage::Session& s, int64_t id) {
  HG_RETURN_IF_ERROR(read_barrier().Run());
  HG_ASSIGN_OR_RETURN(auto val, s.Get(entry_.ident, storage::EncodeRecordId(id)));
  if (!val) return std::optional<Record>();
  // The value was copied out of storage once; the document takes that buffer over.
  return std::optional<Record>(
      Record{id, BsonObj(std::make_shared<const std::string>(std::move(*val)))});
}

StatusWith<std::optional<Record>> Collection::FindById(storage::Session& s, const BsonElement& id) {
  if (clustered_) {
    if (id.type() != bson::BsonType::kObjectId) return std::optional<Record>();
    HG_ASSIGN_OR_RETURN(auto rec, FindRecord(s, ClusteredRecordId(id.Oid())));
    // The RecordId holds 8 of the 12 bytes: the record found must have this very _id.
    if (rec && !(rec->doc["_id"].Oid() == id.Oid())) return std::optional<Record>();
    return rec;
  }
  const SecondaryIndex* id_index = IdIndex();
  if (id_index == nullptr) return std::optional<Record>();
  HG_ASSIGN_OR_RETURN(auto rid_bytes, s.Get(id_index->entry->ident, IdKey(id, *id_index)));
  if (!rid_bytes) return std::optional<Record>();
  return FindRecord(s, storage::DecodeRecordId(*rid_bytes));
}

}  // namespace hourglass::catalog
