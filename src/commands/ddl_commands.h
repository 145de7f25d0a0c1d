// Database and collection definition commands (DDL): create, drop, dropDatabase, renameCollection,
// listCollections, listDatabases, listIndexes, createIndexes, dropIndexes, collMod, dbStats and
// collStats, with MongoDB 7.0's reply shapes, error codes and messages. The catalog
// (catalog/catalog.h) does the work and keeps it durable; these commands parse and check the
// request and shape the reply. Each command only appends its own fields (the dispatcher adds
// `ok`). Text/geo/wildcard indexes, capped collections, views, validators and non-simple
// collations are not implemented yet and fail with CommandNotSupported (115) rather than being
// half-honoured.
//
// The commands keep no state: they are as thread-safe as the Catalog and the CursorManager.
// Each ddl_*.cc file exposes its commands' factories (command_factories.h), which registry.cc's
// table lists; below are the helpers the files share.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/catalog.h"
#include "commands/command.h"

namespace hourglass::commands {

// A DDL command defined by a function.
class DdlCommand : public Command {
 public:
  using RunFn = std::function<Status(CommandContext&, const bson::BsonObj&, bson::BsonBuilder&)>;

  DdlCommand(std::string_view name, bool admin_only, std::string_view help, RunFn run,
             std::vector<std::string_view> aliases = {})
      : name_(name),
        admin_only_(admin_only),
        help_(help),
        run_(std::move(run)),
        aliases_(std::move(aliases)) {}

  std::string_view Name() const override { return name_; }
  std::vector<std::string_view> Aliases() const override { return aliases_; }
  std::string_view Help() const override { return help_; }
  bool AdminOnly() const override { return admin_only_; }
  Status Run(CommandContext& ctx, const bson::BsonObj& cmd,
             bson::BsonBuilder& reply) const override {
    return run_(ctx, cmd, reply);
  }

 private:
  std::string_view name_;
  bool admin_only_;
  std::string_view help_;
  RunFn run_;
  std::vector<std::string_view> aliases_;
};

// MongoDB's BSONObjBuilder::appendNumber(long long): int32 when |n| < 2^30, int64 otherwise.
void AppendNumber(bson::BsonBuilder& b, std::string_view name, int64_t n);

// The namespace "<ctx.db>.<first field of cmd>", checked: InvalidNamespace (73) for a non-string
// or empty name, an invalid database name or an invalid collection name.
StatusWith<catalog::NamespaceString> CommandNamespace(const CommandContext& ctx,
                                                      const bson::BsonObj& cmd);

// Parses the optional `cursor: {batchSize: n}` argument of a cursor-returning command.
// Returns -1 when no batch size is given. TypeMismatch for a non-object `cursor` or a
// non-numeric batchSize, BadValue for a negative one, 40415 for other fields of `cursor`.
StatusWith<int64_t> ParseCursorBatchSize(std::string_view cmd_name, const bson::BsonObj& cmd);

// Replies {cursor: {id, ns, firstBatch}} with `docs`. With batch_size < 0 every document goes in
// the first batch (what MongoDB does for listCollections/listIndexes without a batchSize);
// otherwise at most batch_size go first and the rest wait in a cursor for getMore.
Status ReplyWithDocuments(CommandContext& ctx, const std::string& ns,
                          std::vector<bson::BsonObj> docs, int64_t batch_size,
                          bson::BsonBuilder& reply);

// The storage size in bytes of a collection's record table and of each of its indexes.
int64_t CollectionStorageSize(const CommandContext& ctx, const catalog::Collection& c);
int64_t IndexStorageSize(const CommandContext& ctx, const catalog::IndexEntry& index);

// collMod's `index: {name | keyPattern, hidden, expireAfterSeconds}` on a regular collection
// (ddl_indexes.cc). Appends hidden_old/new, expireAfterSeconds_old/new. IndexNotFound (27).
// On a time-series collection the index is named by its user name or key and only `hidden`
// may change (unique/prepareUnique/forceNonUnique/expireAfterSeconds: InvalidOptions 72).
Status CollModIndex(CommandContext& ctx, const catalog::NamespaceString& nss,
                    const bson::BsonElement& index, bson::BsonBuilder& reply);

// collStats' statistics of `nss` (everything but `ns`), sizes divided by `scale`: the
// command's reply and $collStats' storageStats. A time-series collection reports its bucket
// collection's sizes and a `timeseries` section instead of `count` (spec 4.8).
Status AppendCollStats(CommandContext& ctx, const catalog::NamespaceString& nss, int64_t scale,
                       bson::BsonBuilder& out);

// create with `timeseries` (ddl_timeseries.cc): validates the options (spec §1.1-1.2) and creates
// the time-series entry and its clustered bucket collection, or succeeds without change when an
// equivalent one exists.
Status CreateTimeseriesCollection(CommandContext& ctx, const catalog::NamespaceString& nss,
                                  const bson::BsonObj& cmd);
// Writes the definition `doc` ({_id: "<db>.<view>", viewOn, pipeline}) of the view or time-series
// collection `nss` into <db>.system.views, as MongoDB keeps it (ddl_views.cc).
Status PutViewDefinition(CommandContext& ctx, const catalog::NamespaceString& nss,
                         const bson::BsonObj& doc);
// Removes `nss`'s definition from <db>.system.views (drop).
Status RemoveViewDefinition(CommandContext& ctx, const catalog::NamespaceString& nss);
// create with `viewOn` (ddl_views.cc): checks the definition as MongoDB does (the pipeline's
// stages, cycles: 5, depth: 149) and creates the view, or succeeds without change when the same
// view exists; NamespaceExists (48) for anything else by that name.
Status CreateView(CommandContext& ctx, const catalog::NamespaceString& nss,
                  const bson::BsonObj& cmd);
// collMod of a view: a new viewOn and/or pipeline, checked as create checks them; other options
// are InvalidOptions (72).
Status CollModView(CommandContext& ctx, const catalog::Collection& view, const bson::BsonObj& cmd);
// collMod on a time-series collection (spec §1.3): expireAfterSeconds, timeseries bucketing
// parameters, `index: {hidden}` (through CollModIndex).
Status CollModTimeseries(CommandContext& ctx, const catalog::NamespaceString& nss,
                         const bson::BsonObj& cmd, bson::BsonBuilder& reply);

}  // namespace hourglass::commands
