// dbHash: an MD5 of each collection's documents, and of the database, as MongoDB computes them
// to compare the members of a replica set: documents in _id order (a clustered collection's —
// time-series buckets' — in their cluster key's), read in one storage snapshot.
#include <openssl/evp.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "catalog/record_store.h"
#include "commands/admin_commands.h"
#include "commands/command_factories.h"
#include "commands/command_util.h"
#include "commands/ddl_commands.h"

namespace hourglass::commands {

using bson::BsonArrayBuilder;
using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// An MD5 digest in progress (OpenSSL's EVP interface).
class Md5 {
 public:
  Md5() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    EVP_DigestInit_ex(ctx_.get(), EVP_md5(), nullptr);
  }
  void Update(std::string_view bytes) { EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()); }
  std::string Hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest, &size);
    return bson::LowerHex(std::string_view(reinterpret_cast<const char*>(digest), size));
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

// As MongoDB: the system collections a replica set replicates are hashed (time-series buckets,
// views' definitions, users, roles, ...); the others (system.profile) are each member's own.
bool Replicated(const catalog::NamespaceString& nss) {
  static constexpr std::string_view kReplicatedSystem[] = {
      "system.backup_users", "system.js",      "system.new_users", "system.roles",
      "system.users",        "system.version", "system.views"};
  if (!nss.coll.starts_with("system.") || nss.IsTimeseriesBuckets()) return true;
  for (std::string_view name : kReplicatedSystem) {
    if (nss.coll == name) return true;
  }
  return false;
}

// The MD5 of `coll`'s documents in _id order, read in `s`'s transaction.
StatusWith<std::string> CollectionHash(storage::Session& s, const catalog::Collection& coll) {
  Md5 md5;
  HG_ASSIGN_OR_RETURN(catalog::RecordCursor records, catalog::RecordCursor::Open(s, coll));
  const catalog::SecondaryIndex* id_index = coll.IsClustered() ? nullptr : coll.IdIndex();
  if (id_index == nullptr) {
    // Clustered: the records are in _id order already.
    while (true) {
      HG_ASSIGN_OR_RETURN(bool more, records.Next());
      if (!more) break;
      md5.Update(records.doc().bytes());
    }
    return md5.Hex();
  }
  HG_ASSIGN_OR_RETURN(catalog::IndexCursor ids, catalog::IndexCursor::Open(s, *id_index));
  while (true) {
    HG_ASSIGN_OR_RETURN(bool more, ids.Next());
    if (!more) break;
    HG_ASSIGN_OR_RETURN(bool found, records.SeekExact(ids.record_id()));
    if (!found) {
      return Status(ErrorCode::kInternalError,
                    coll.ns() + "'s _id index names a record that is not there; run validate");
    }
    md5.Update(records.doc().bytes());
  }
  return md5.Hex();
}

Status RunDbHash(CommandContext& ctx, const BsonObj& cmd, BsonBuilder& reply) {
  HG_RETURN_IF_ERROR(CheckKnownFields(cmd, {"collections"}));
  HG_RETURN_IF_ERROR(catalog::ValidateDbName(ctx.db));
  HG_ASSIGN_OR_RETURN(auto only, GetArray("dbHash", cmd, "collections"));
  std::set<std::string> wanted;
  if (only) {
    for (BsonElement e : *only) {
      if (e.type() != BsonType::kString) {
        return Status(ErrorCode::kBadValue, "collections entries have to be strings");
      }
      wanted.emplace(e.Str());
    }
  }
  auto start = std::chrono::steady_clock::now();
  // Sorted by name: the database's MD5 is over the collections' in this order.
  std::map<std::string, std::shared_ptr<catalog::Collection>> collections;
  for (auto& c : ctx.service.catalog->ListCollections(ctx.db)) {
    const std::string& name = c->nss().coll;
    if (c->IsView() || !Replicated(c->nss())) continue;
    if (only && !wanted.contains(name)) continue;
    // Measurements not yet written back are part of the buckets.
    HG_RETURN_IF_ERROR(c->read_barrier().Run());
    collections.emplace(name, std::move(c));
  }
  auto session = ctx.service.engine->NewSession();
  HG_RETURN_IF_ERROR(session->Begin());
  BsonBuilder hashes, uuids;
  Md5 all;
  for (const auto& [name, coll] : collections) {
    HG_ASSIGN_OR_RETURN(std::string hash, CollectionHash(*session, *coll));
    hashes.AppendString(name, hash);
    uuids.AppendBinData(name, 4, coll->entry().uuid);
    all.Update(hash);
  }
  session->Rollback();
  reply.AppendString("host", HostAndPort(ctx.service));
  reply.AppendObject("collections", hashes.Obj());
  reply.AppendArray("capped", BsonArrayBuilder().Obj());  // no capped collections (115)
  reply.AppendObject("uuids", uuids.Obj());
  reply.AppendString("md5", all.Hex());
  reply.AppendInt64("timeMillis", std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count());
  reply.AppendArray("fromCache", BsonArrayBuilder().Obj());
  return Status::OK();
}

}  // namespace

std::unique_ptr<Command> MakeDbHashCommand() {
  return std::make_unique<FnCommand>(
      "dbHash",
      FnCommand::Options{.aliases = {"dbhash"},
                         .help = "Get a hash of the collections of a database\n"
                                 "{ dbHash : 1, collections: [<names>] }",
                         .allows_after_cluster_time = false},
      RunDbHash);
}

}  // namespace hourglass::commands
