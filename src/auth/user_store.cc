#include "auth/user_store.h"

#include <algorithm>

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
const catalog::NamespaceString kRoles{"admin", "system.roles"};

BsonObj IdDoc(const std::string& id) {
  BsonBuilder b;
  b.AppendString("_id", id);
  return b.Obj();
}

Status UserNotFound(const UserName& name) {
  return Status(ErrorCode::kUserNotFound, "User '" + name.Display() + "' not found");
}

Status RoleNotFound(const RoleName& name) {
  return Status(ErrorCode::kRoleNotFound, "Role " + name.Display() + " not found");
}

}  // namespace

StatusWith<std::optional<BsonObj>> UserStore::FindDoc(const catalog::NamespaceString& nss,
                                                      const std::string& id) const {
  auto coll = catalog_->Lookup(nss);
  if (!coll) return std::optional<BsonObj>();
  auto session = engine_->NewSession();
  BsonObj id_doc = IdDoc(id);
  HG_ASSIGN_OR_RETURN(std::optional<catalog::Record> rec,
                      coll->FindById(*session, id_doc.FirstElement()));
  if (!rec) return std::optional<BsonObj>();
  return std::optional<BsonObj>(rec->doc);
}

Status UserStore::InsertDoc(const catalog::NamespaceString& nss, std::string_view name_field,
                            const BsonObj& doc) {
  auto existing = catalog_->Lookup(nss);
  HG_ASSIGN_OR_RETURN(auto coll, catalog_->GetOrCreateCollection(nss));
  if (!existing && coll->Indexes().size() <= 1) {
    // The index MongoDB gives the collection when it makes it: {user: 1, db: 1} or {role: 1, db:
    // 1}.
    BsonBuilder spec;
    spec.AppendInt32("v", 2);
    BsonBuilder key;
    key.AppendInt32(name_field, 1);
    key.AppendInt32("db", 1);
    spec.AppendObject("key", key.Obj());
    spec.AppendString("name", std::string(name_field) + "_1_db_1");
    spec.AppendBool("unique", true);
    HG_RETURN_IF_ERROR(catalog_->CreateIndexes(nss, {spec.Obj()}));
    coll = catalog_->Lookup(nss);
    if (!coll) return Status(ErrorCode::kNamespaceNotFound, nss.ns() + " was dropped");
  }
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    auto guard = coll->WriteGuard();
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_RETURN_IF_ERROR(coll->Insert(*session, doc).status());
    return wu.Commit();
  }));
  coll->AdjustCounts(1, static_cast<int64_t>(doc.size()));
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return Status::OK();
}

StatusWith<bool> UserStore::ReplaceDoc(const catalog::NamespaceString& nss, const std::string& id,
                                       const BsonObj& doc) {
  auto coll = catalog_->Lookup(nss);
  if (!coll) return false;
  BsonObj id_doc = IdDoc(id);
  bool found = false;
  HG_RETURN_IF_ERROR(storage::RetryOnWriteConflict([&] {
    auto guard = coll->WriteGuard();
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    HG_ASSIGN_OR_RETURN(std::optional<catalog::Record> rec,
                        coll->FindById(*session, id_doc.FirstElement()));
    found = rec.has_value();
    if (!found) return Status::OK();
    HG_RETURN_IF_ERROR(coll->Update(*session, rec->id, rec->doc, doc));
    return wu.Commit();
  }));
  if (found) generation_.fetch_add(1, std::memory_order_acq_rel);
  return found;
}

StatusWith<int64_t> UserStore::RemoveDocs(const catalog::NamespaceString& nss,
                                          std::string_view name_field, const std::string& db,
                                          const std::optional<std::string>& only) {
  auto coll = catalog_->Lookup(nss);
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
      if (doc["db"].Str() != db) continue;
      if (only && doc[name_field].Str() != *only) continue;
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

StatusWith<std::vector<BsonObj>> UserStore::ListDocs(const catalog::NamespaceString& nss) const {
  std::vector<BsonObj> out;
  auto coll = catalog_->Lookup(nss);
  if (!coll) return out;
  auto session = engine_->NewSession();
  HG_ASSIGN_OR_RETURN(catalog::RecordCursor cursor, catalog::RecordCursor::Open(*session, *coll));
  while (true) {
    HG_ASSIGN_OR_RETURN(bool more, cursor.Next());
    if (!more) break;
    out.push_back(cursor.doc().Owned());
  }
  std::sort(out.begin(), out.end(),
            [](const BsonObj& a, const BsonObj& b) { return a["_id"].Str() < b["_id"].Str(); });
  return out;
}

StatusWith<std::optional<UserDocument>> UserStore::Find(const UserName& name) const {
  if (internal_ && internal_->name.user == name.user && internal_->name.db == name.db) {
    return std::optional<UserDocument>(*internal_);
  }
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> doc, FindDoc(kUsers, name.Id()));
  if (!doc) return std::optional<UserDocument>();
  HG_ASSIGN_OR_RETURN(UserDocument user, UserDocument::FromBson(*doc));
  return std::optional<UserDocument>(std::move(user));
}

Status UserStore::Insert(const UserDocument& user) {
  Status st = InsertDoc(kUsers, "user", user.ToBson());
  if (st.code() == ErrorCode::kDuplicateKey) {
    return Status(ErrorCode::kLocation51003, "User \"" + user.name.Display() + "\" already exists");
  }
  return st;
}

Status UserStore::Replace(const UserDocument& user) {
  HG_ASSIGN_OR_RETURN(bool found, ReplaceDoc(kUsers, user.name.Id(), user.ToBson()));
  return found ? Status::OK() : UserNotFound(user.name);
}

Status UserStore::Remove(const UserName& name) {
  HG_ASSIGN_OR_RETURN(int64_t n, RemoveDocs(kUsers, "user", name.db, name.user));
  return n == 0 ? UserNotFound(name) : Status::OK();
}

StatusWith<int64_t> UserStore::RemoveAll(const std::string& db) {
  return RemoveDocs(kUsers, "user", db, std::nullopt);
}

StatusWith<std::vector<UserDocument>> UserStore::List(const std::optional<std::string>& db) const {
  HG_ASSIGN_OR_RETURN(std::vector<BsonObj> docs, ListDocs(kUsers));
  std::vector<UserDocument> out;
  for (const BsonObj& d : docs) {
    HG_ASSIGN_OR_RETURN(UserDocument user, UserDocument::FromBson(d));
    if (!db || user.name.db == *db) out.push_back(std::move(user));
  }
  return out;
}

StatusWith<std::optional<RoleDocument>> UserStore::FindRole(const RoleName& name) const {
  HG_ASSIGN_OR_RETURN(std::optional<BsonObj> doc, FindDoc(kRoles, name.db + "." + name.role));
  if (!doc) return std::optional<RoleDocument>();
  HG_ASSIGN_OR_RETURN(RoleDocument role, RoleDocument::FromBson(*doc));
  return std::optional<RoleDocument>(std::move(role));
}

Status UserStore::InsertRole(const RoleDocument& role) {
  Status st = InsertDoc(kRoles, "role", role.ToBson());
  if (st.code() == ErrorCode::kDuplicateKey) {
    return Status(ErrorCode::kLocation51002, "Role \"" + role.name.Display() + "\" already exists");
  }
  return st;
}

Status UserStore::ReplaceRole(const RoleDocument& role) {
  HG_ASSIGN_OR_RETURN(bool found, ReplaceDoc(kRoles, role.Id(), role.ToBson()));
  return found ? Status::OK() : RoleNotFound(role.name);
}

Status UserStore::RemoveRole(const RoleName& name) {
  HG_ASSIGN_OR_RETURN(int64_t n, RemoveDocs(kRoles, "role", name.db, name.role));
  return n == 0 ? RoleNotFound(name) : Status::OK();
}

StatusWith<int64_t> UserStore::RemoveAllRoles(const std::string& db) {
  return RemoveDocs(kRoles, "role", db, std::nullopt);
}

StatusWith<std::vector<RoleDocument>> UserStore::ListRoles(
    const std::optional<std::string>& db) const {
  HG_ASSIGN_OR_RETURN(std::vector<BsonObj> docs, ListDocs(kRoles));
  std::vector<RoleDocument> out;
  for (const BsonObj& d : docs) {
    HG_ASSIGN_OR_RETURN(RoleDocument role, RoleDocument::FromBson(d));
    if (!db || role.name.db == *db) out.push_back(std::move(role));
  }
  return out;
}

StatusWith<ResolvedRoles> ResolveRoles(const UserStore& store, const std::vector<RoleName>& roles) {
  ResolvedRoles out;
  std::vector<RoleName> pending = roles;
  for (size_t i = 0; i < pending.size(); ++i) {
    const RoleName role = pending[i];
    if (std::find(out.roles.begin(), out.roles.end(), role) != out.roles.end()) continue;
    out.roles.push_back(role);
    if (auto privileges = BuiltinRolePrivileges(role)) {
      out.privileges.Add(*privileges);
      continue;
    }
    HG_ASSIGN_OR_RETURN(std::optional<RoleDocument> custom, store.FindRole(role));
    if (!custom) continue;
    out.privileges.Add(custom->privileges);
    pending.insert(pending.end(), custom->roles.begin(), custom->roles.end());
  }
  return out;
}

StatusWith<bool> UserStore::HasUsers() const {
  for (const catalog::NamespaceString* nss : {&kUsers, &kRoles}) {
    auto coll = catalog_->Lookup(*nss);
    if (!coll) continue;
    auto session = engine_->NewSession();
    HG_ASSIGN_OR_RETURN(catalog::RecordCursor cursor, catalog::RecordCursor::Open(*session, *coll));
    HG_ASSIGN_OR_RETURN(bool any, cursor.Next());
    if (any) return true;
  }
  return false;
}

}  // namespace hourglass::auth
