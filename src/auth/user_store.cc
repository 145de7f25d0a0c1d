#include "auth/user_store.h"

#include "catalog/catalog.h"
#include "catalog/record_store.h"
#include "storage/kv_engine.h"
#include "storage/session.h"
#include "storage/write_conflict.h"

namespace hourglass::auth {

using bson::BsonBuilder;
using bson::BsonObj;

namespace {

const catalog::NamespaceString kUsers{"admin", "system.users"};

BsonObj IdDoc(const UserName& name) {
  BsonBuilder b;
  b.AppendString("_id", name.Id());
  return b.Obj();
}

Status NotFound(const UserName& name) {
  return Status(ErrorCode::kUserNotFound, "User '" + name.Display() + "' not found");
}

}  // namespace

StatusWith<std::optional<UserDocument>> UserStore::Find(const UserName& name) const {
  auto coll = catalog_->Lookup(kUsers);
  if (!coll) return std::optional<UserDocument>();
  auto session = engine_->NewSession();
  BsonObj id = IdDoc(name);
  HG_ASSIGN_OR_RETURN(std::optional<catalog::Record> rec,
                      coll->FindById(*session, id.FirstElement()));
  if (!rec) return std::optional<UserDocument>();
  HG_ASSIGN_OR_RETURN(UserDocument user, UserDocument::FromBson(rec->doc));
  return std::optional<UserDocument>(std::move(user));
}

Status UserStore::Insert(const UserDocument& user) {
  auto existing = catalog_->Lookup(kUsers);
  HG_ASSIGN_OR_RETURN(auto coll, catalog_->GetOrCreateCollection(kUsers));
  if (!existing && coll->Indexes().size() <= 1) {
    // The index MongoDB gives admin.system.users when it makes it.
    BsonBuilder spec;
    spec.AppendInt32("v", 2);
    BsonBuilder key;
    key.AppendInt32("user", 1);
    key.AppendInt32("db", 1);
    spec.AppendObject("key", key.Obj());
    spec.AppendString("name", "user_1_db_1");
    spec.AppendBool("unique", true);
    HG_RETURN_IF_ERROR(catalog_->CreateIndexes(kUsers, {spec.Obj()}));
    coll = catalog_->Lookup(kUsers);
    if (!coll) return Status(ErrorCode::kNamespaceNotFound, "admin.system.users was dropped");
  }
  BsonObj doc = user.ToBson();
  Status st = storage::RetryOnWriteConflict([&] {
    auto guard = coll->WriteGuard();
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_RETURN_IF_ERROR(coll->Insert(*session, doc).status());
    return wu.Commit();
  });
  if (st.code() == ErrorCode::kDuplicateKey) {
    return Status(ErrorCode::kLocation51003, "User \"" + user.name.Display() + "\" already exists");
  }
  HG_RETURN_IF_ERROR(st);
  coll->AdjustCounts(1, static_cast<int64_t>(doc.size()));
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return Status::OK();
}

Status UserStore::Replace(const UserDocument& user) {
  auto coll = catalog_->Lookup(kUsers);
  if (!coll) return NotFound(user.name);
  BsonObj id = IdDoc(user.name);
  BsonObj doc = user.ToBson();
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    auto guard = coll->WriteGuard();
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_ASSIGN_OR_RETURN(std::optional<catalog::Record> rec,
                        coll->FindById(*session, id.FirstElement()));
    if (!rec) return NotFound(user.name);
    HG_RETURN_IF_ERROR(coll->Update(*session, rec->id, rec->doc, doc));
    return wu.Commit();
  }));
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return Status::OK();
}

StatusWith<int64_t> UserStore::RemoveWhere(const std::optional<std::string>& db,
                                           const std::optional<UserName>& only) {
  auto coll = catalog_->Lookup(kUsers);
  if (!coll) return int64_t{0};
  int64_t removed = 0;
  int64_t bytes = 0;
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    removed = 0;
    bytes = 0;
    auto guard = coll->WriteGuard();
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    std::vector<catalog::Record> doomed;
    HG_ASSIGN_OR_RETURN(catalog::RecordCursor cursor, catalog::RecordCursor::Open(*session, *coll));
    while (true) {
      HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
      if (!more) break;
      BsonObj doc = cursor.doc();
      std::string_view user = doc["user"].Str();
      std::string_view user_db = doc["db"].Str();
      if (db && user_db != *db) continue;
      if (only && (user != only->user || user_db != only->db)) continue;
      doomed.push_back({cursor.id(), doc.Owned()});
    }
    for (const catalog::Record& r : doomed) {
      HG_RETURN_IF_ERROR(coll->Remove(*session, r.id, r.doc));
      ++removed;
      bytes += static_cast<int64_t>(r.doc.size());
    }
    return wu.Commit();
  }));
  coll->AdjustCounts(-removed, -bytes);
  if (removed > 0) generation_.fetch_add(1, std::memory_order_acq_rel);
  return removed;
}

Status UserStore::Remove(const UserName& name) {
  HG_ASSIGN_OR_RETURN(int64_t n, RemoveWhere(name.db, name));
  if (n == 0) return NotFound(name);
  return Status::OK();
}

StatusWith<int64_t> UserStore::RemoveAll(const std::string& db) { return RemoveWhere(db, {}); }

StatusWith<std::vector<UserDocument>> UserStore::List(const std::optional<std::string>& db) const {
  std::vector<UserDocument> out;
  auto coll = catalog_->Lookup(kUsers);
  if (!coll) return out;
  auto session = engine_->NewSession();
  HG_ASSIGN_OR_RETURN(catalog::RecordCursor cursor, catalog::RecordCursor::Open(*session, *coll));
  while (true) {
    HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
    if (!more) break;
    HG_ASSIGN_OR_RETURN(UserDocument user, UserDocument::FromBson(cursor.doc()));
    if (db && user.name.db != *db) continue;
    out.push_back(std::move(user));
  }
  std::sort(out.begin(), out.end(),
            [](const UserDocument& a, const UserDocument& b) { return a.name.Id() < b.name.Id(); });
  return out;
}

StatusWith<bool> UserStore::HasUsers() const {
  auto coll = catalog_->Lookup(kUsers);
  if (!coll) return false;
  auto session = engine_->NewSession();
  HG_ASSIGN_OR_RETURN(catalog::RecordCursor cursor, catalog::RecordCursor::Open(*session, *coll));
  return cursor.Next();
}

}  // namespace hourglass::auth
