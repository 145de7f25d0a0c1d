// create and collMod of time-series collections (spec §1, §2.1).
#include "collation/collator.h"
#include "commands/command_util.h"
#include "commands/ddl_commands.h"
#include "commands/rollups.h"
#include "commands/timeseries_util.h"
#include "storage/kv_engine.h"
#include "storage/write_conflict.h"
#include "timeseries/rollup_spec.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::commands {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using timeseries::TimeseriesOptions;

namespace {

// The bucket collection's $jsonSchema validator as MongoDB 7.1+ writes it for a new collection
// (schema version 2: control.count, and no other control field than those listed).
BsonObj BucketsValidator(const std::string& time_field) {
  BsonBuilder b;
  size_t js = b.OpenObject("$jsonSchema");
  b.AppendString("bsonType", "object");
  size_t req = b.OpenArray("required");
  b.AppendString("0", "_id");
  b.AppendString("1", "control");
  b.AppendString("2", "data");
  b.Close(req);
  size_t props = b.OpenObject("properties");
  size_t id = b.OpenObject("_id");
  b.AppendString("bsonType", "objectId");
  b.Close(id);
  size_t control = b.OpenObject("control");
  b.AppendString("bsonType", "object");
  size_t creq = b.OpenArray("required");
  b.AppendString("0", "version");
  b.AppendString("1", "min");
  b.AppendString("2", "max");
  b.Close(creq);
  size_t cprops = b.OpenObject("properties");
  size_t version = b.OpenObject("version");
  b.AppendString("bsonType", "number");
  b.Close(version);
  for (const char* side : {"min", "max"}) {
    size_t s = b.OpenObject(side);
    b.AppendString("bsonType", "object");
    size_t sreq = b.OpenArray("required");
    b.AppendString("0", time_field);
    b.Close(sreq);
    size_t sprops = b.OpenObject("properties");
    size_t t = b.OpenObject(time_field);
    b.AppendString("bsonType", "date");
    b.Close(t);
    b.Close(sprops);
    b.Close(s);
  }
  size_t closed = b.OpenObject("closed");
  b.AppendString("bsonType", "bool");
  b.Close(closed);
  size_t count = b.OpenObject("count");
  b.AppendString("bsonType", "number");
  b.AppendInt32("minimum", 1);
  b.Close(count);
  b.Close(cprops);
  b.AppendBool("additionalProperties", false);
  b.Close(control);
  size_t data = b.OpenObject("data");
  b.AppendString("bsonType", "object");
  b.Close(data);
  size_t meta = b.OpenObject("meta");
  b.Close(meta);
  b.Close(props);
  b.AppendBool("additionalProperties", false);
  b.Close(js);
  return b.Obj();
}

struct TimeseriesCreate {
  TimeseriesOptions options;
  std::optional<timeseries::RollupSpec> rollup;
  std::optional<int64_t> expire_after_seconds;
  BsonObj view_options;
  BsonObj buckets_options;
};

BsonObj ViewOptions(const TimeseriesOptions& o, std::optional<int64_t> expire,
                    const BsonObj& extra) {
  BsonBuilder b;
  b.AppendObject("timeseries", o.ToBson());
  if (expire) b.AppendInt64("expireAfterSeconds", *expire);
  b.AppendElementsOf(extra);
  return b.Obj();
}

BsonObj BucketsOptions(const TimeseriesOptions& o, std::optional<int64_t> expire,
                       const BsonObj& extra) {
  BsonBuilder b;
  b.AppendObject("validator", BucketsValidator(o.time_field));
  b.AppendBool("clusteredIndex", true);
  b.AppendObject("timeseries", o.ToBson());
  if (expire) b.AppendInt64("expireAfterSeconds", *expire);
  b.AppendElementsOf(extra);
  return b.Obj();
}

StatusWith<TimeseriesCreate> ParseTimeseriesCreate(const catalog::NamespaceString& nss,
                                                   const BsonObj& cmd) {
  const std::string ns = nss.ns();
  HG_RETURN_IF_ERROR(timeseries::CheckOptionsAllowedWithTimeseries(cmd, ns));
  TimeseriesCreate c;
  HG_ASSIGN_OR_RETURN(c.options, timeseries::ParseTimeseriesOptions(cmd["timeseries"], ns));
  BsonElement expire = cmd["expireAfterSeconds"];
  if (!expire.eoo() && expire.type() != bson::BsonType::kNull) {
    HG_ASSIGN_OR_RETURN(int64_t secs, timeseries::ParseExpireAfterSeconds(expire));
    c.expire_after_seconds = secs;
  }
  BsonBuilder extra;
  // The default collation, normalized as listCollections shows it on the collection and its
  // buckets (both keep it, as in MongoDB); the simple one is not kept.
  if (BsonElement collation = cmd["collation"]; !collation.eoo()) {
    if (collation.type() != bson::BsonType::kObject) {
      return WrongType("create", collation, "object");
    }
    HG_ASSIGN_OR_RETURN(auto collator, collation::Collator::Make(collation.Obj()));
    if (collator) extra.AppendObject("collation", collator->spec().ToBson());
  }
  if (cmd["temp"].Truthy()) {
    return Status(ErrorCode::kCommandNotSupported, "temporary collections are not supported");
  }
  for (const char* f : {"storageEngine", "indexOptionDefaults"}) {
    BsonElement e = cmd[f];
    if (e.eoo()) continue;
    if (e.type() != bson::BsonType::kObject) return WrongType("create", e, "object");
    if (!e.Obj().IsEmpty()) extra.AppendElement(e);
  }
  if (BsonElement rollup = cmd["rollupOf"];
      !rollup.eoo() && rollup.type() != bson::BsonType::kNull) {
    if (nss.IsTimeseriesBuckets()) {
      return Status(ErrorCode::kInvalidOptions,
                    ns + ": 'rollupOf' is an option of the time-series collection, not of its "
                         "buckets");
    }
    HG_ASSIGN_OR_RETURN(c.rollup, timeseries::ParseRollupSpec(rollup, c.options));
  }
  BsonObj extra_obj = extra.Obj();
  c.view_options = ViewOptions(c.options, c.expire_after_seconds, extra_obj);
  c.buckets_options = BucketsOptions(c.options, c.expire_after_seconds, extra_obj);
  return c;
}

Status CheckExistingTimeseries(const catalog::Collection& existing, const TimeseriesCreate& c) {
  const auto& e = existing.entry();
  if (e.type == "timeseries") {
    auto cur = timeseries::TimeseriesOptionsOf(existing);
    if (cur.ok() && timeseries::EquivalentForCreate(*cur.value(), c.options) &&
        TimeseriesExpireAfterSeconds(e.options) == c.expire_after_seconds &&
        catalog::CollationOption(e.options).BinaryEqual(catalog::CollationOption(c.view_options)) &&
        e.options["rollupOf"].eoo() == c.view_options["rollupOf"].eoo() &&
        (e.options["rollupOf"].eoo() ||
         e.options["rollupOf"].Obj().BinaryEqual(c.view_options["rollupOf"].Obj()))) {
      return Status::OK();
    }
  }
  return Status(ErrorCode::kNamespaceExists, "Collection " + existing.ns() + " already exists.");
}

}  // namespace

namespace {

// The rules of `rollupOf` that need its source (timeseries::CheckRollupSource); the spec, with
// groupBy filled in, joins the collection's options.
Status CheckRollupOf(CommandContext& ctx, const catalog::NamespaceString& nss,
                     TimeseriesCreate& c) {
  const catalog::NamespaceString source_nss{nss.db, c.rollup->source};
  if (source_nss.coll == nss.coll) {
    return Status(ErrorCode::kInvalidOptions,
                  "rollupOf.source: a collection cannot roll itself up");
  }
  auto source = ctx.service.catalog->Lookup(source_nss);
  if (!source) {
    return Status(ErrorCode::kNamespaceNotFound,
                  "rollupOf.source: " + source_nss.ns() + " does not exist");
  }
  if (source->entry().type != "timeseries") {
    return Status(ErrorCode::kInvalidOptions,
                  "rollupOf.source: " + source_nss.ns() + " is not a time-series collection");
  }
  HG_ASSIGN_OR_RETURN(auto source_options, timeseries::TimeseriesOptionsOf(*source));
  HG_RETURN_IF_ERROR(timeseries::CheckRollupSource(*c.rollup, c.options, *source_options,
                                                   !source->entry().options["rollupOf"].eoo()));
  BsonBuilder b;
  b.AppendElementsOf(c.view_options);
  b.AppendObject("rollupOf", c.rollup->ToBson());
  c.view_options = b.Obj();
  return Status::OK();
}

// MongoDB keeps each view's definition in <db>.system.views; a time-series collection's is
// {_id: "db.X", viewOn: "system.buckets.X", pipeline: [{$_internalUnpackBucket: {...}}]}, and
// the collection's `collation` when it has one.
Status PutTimeseriesViewDefinition(CommandContext& ctx, const catalog::NamespaceString& nss,
                                   const TimeseriesOptions& o, const BsonObj& collation) {
  BsonBuilder b;
  b.AppendString("_id", nss.ns());
  b.AppendString("viewOn", exec::BucketsNamespace(nss).coll);
  size_t pipeline = b.OpenArray("pipeline");
  size_t stage = b.OpenObject("0");
  size_t unpack = b.OpenObject("$_internalUnpackBucket");
  b.AppendString("timeField", o.time_field);
  if (o.meta_field) b.AppendString("metaField", *o.meta_field);
  b.AppendInt32("bucketMaxSpanSeconds", static_cast<int32_t>(o.bucket_max_span_seconds));
  b.Close(unpack);
  b.Close(stage);
  b.Close(pipeline);
  if (!collation.IsEmpty()) b.AppendObject("collation", collation);
  return PutViewDefinition(ctx, nss, b.Obj());
}

}  // namespace

Status CreateTimeseriesCollection(CommandContext& ctx, const catalog::NamespaceString& nss,
                                  const BsonObj& cmd) {
  catalog::Catalog& catalog = *ctx.service.catalog;
  HG_ASSIGN_OR_RETURN(TimeseriesCreate c, ParseTimeseriesCreate(nss, cmd));
  if (nss.IsTimeseriesBuckets()) {
    // The restore path: the bucket collection alone, as a dump holds it.
    return catalog.CreateCollection(nss, c.buckets_options).status();
  }
  if (c.rollup) HG_RETURN_IF_ERROR(CheckRollupOf(ctx, nss, c));
  if (auto existing = catalog.Lookup(nss)) return CheckExistingTimeseries(*existing, c);
  Status st =
      catalog.CreateTimeseries(nss, c.view_options, exec::BucketsNamespace(nss), c.buckets_options);
  if (st.code() == ErrorCode::kNamespaceExists) {
    if (auto existing = catalog.Lookup(nss)) return CheckExistingTimeseries(*existing, c);
  }
  HG_RETURN_IF_ERROR(st);
  HG_RETURN_IF_ERROR(
      PutTimeseriesViewDefinition(ctx, nss, c.options, catalog::CollationOption(c.view_options)));
  // A new collection may be a rollup, or the new source of an existing one.
  if (ctx.service.rollups == nullptr) return Status::OK();
  return c.rollup ? ctx.service.rollups->Created(nss) : ctx.service.rollups->Refresh();
}

Status CollModTimeseries(CommandContext& ctx, const catalog::NamespaceString& nss,
                         const BsonObj& cmd, BsonBuilder& reply) {
  catalog::Catalog& catalog = *ctx.service.catalog;
  auto view = catalog.Lookup(nss);
  auto buckets = catalog.Lookup(exec::BucketsNamespace(nss));
  if (!view || !buckets) {
    return Status(ErrorCode::kNamespaceNotFound, "ns does not exist: " + nss.ns());
  }
  HG_ASSIGN_OR_RETURN(auto stored, timeseries::TimeseriesOptionsOf(*view));
  TimeseriesOptions options = *stored;
  std::optional<int64_t> expire = TimeseriesExpireAfterSeconds(view->entry().options);
  const TimeseriesOptions before = options;
  bool first = true;
  for (BsonElement e : cmd) {
    if (first) {
      first = false;
      continue;
    }
    std::string_view f = e.FieldName();
    if (IsGenericArgument(f)) continue;
    if (f == "timeseries") {
      HG_ASSIGN_OR_RETURN(options, timeseries::ApplyCollModTimeseries(options, e));
    } else if (f == "expireAfterSeconds") {
      if (e.type() == bson::BsonType::kNull) continue;
      HG_ASSIGN_OR_RETURN(expire, timeseries::ParseCollModExpireAfterSeconds(e));
    } else if (f == "index") {
      HG_RETURN_IF_ERROR(CollModIndex(ctx, nss, e, reply));
    } else if (f == "timeseriesBucketsMayHaveMixedSchemaData") {
      if (e.type() != bson::BsonType::kBool) return WrongType("collMod", e, "bool");
    } else if (f == "validator" || f == "validationLevel" || f == "validationAction" ||
               f == "viewOn" || f == "pipeline") {
      return Status(ErrorCode::kInvalidOptions,
                    "option not supported on a time-series collection: " + std::string(f));
    } else {
      return Status(ErrorCode::kCommandNotSupported,
                    "collMod option '" + std::string(f) +
                        "' is not supported yet on time-series collections");
    }
  }
  auto rebuild = [&](const BsonObj& old, bool is_buckets) {
    BsonBuilder extra;
    for (BsonElement e : old) {
      std::string_view f = e.FieldName();
      if (f != "timeseries" && f != "expireAfterSeconds" && f != "validator" &&
          f != "clusteredIndex") {
        extra.AppendElement(e);
      }
    }
    BsonObj x = extra.Obj();
    return is_buckets ? BucketsOptions(options, expire, x) : ViewOptions(options, expire, x);
  };
  HG_RETURN_IF_ERROR(
      catalog.SetOptions({{nss, rebuild(view->entry().options, false)},
                          {buckets->nss(), rebuild(buckets->entry().options, true)}}));
  // Open buckets were sized for the old parameters: new measurements start new buckets.
  if (!(before == options)) {
    if (ctx.service.bucket_catalog) {
      ctx.service.bucket_catalog->ClearCollection(buckets->entry().uuid);
    }
    HG_RETURN_IF_ERROR(PutTimeseriesViewDefinition(
        ctx, nss, options, catalog::CollationOption(view->entry().options)));
  }
  return Status::OK();
}

}  // namespace hourglass::commands
