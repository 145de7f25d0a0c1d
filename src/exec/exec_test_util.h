// Test-only: a fixture for exec_test with a real on-disk storage engine, catalog and bucket
// catalog, and the lower layers' own calls to put data in: collections, indexes and documents go
// through catalog::, time-series collections and measurements through catalog:: and
// timeseries:: (what the create, createIndexes and insert commands call, without the commands:
// exec's tests include nothing from src/commands/).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "exec/namespace_resolver.h"
#include "exec/read_context.h"
#include "storage/kv_engine.h"
#include "storage/storage_test_util.h"
#include "timeseries/bucket_catalog.h"
#include "timeseries/timeseries_options.h"

namespace hourglass::exec::testing {

// The documents of a JSON array (Extended JSON).
inline std::vector<bson::BsonObj> Documents(std::string_view json_array) {
  auto holder = bson::FromJson(std::string("{\"a\": ") + std::string(json_array) + "}");
  EXPECT_TRUE(holder.ok()) << json_array;
  std::vector<bson::BsonObj> out;
  if (!holder.ok()) return out;
  for (bson::BsonElement e : holder.value()["a"].Obj()) out.push_back(e.Obj().Owned());
  return out;
}

// `doc` with `_id` first, a new ObjectId if it has none (as insert stores documents).
inline bson::BsonObj WithId(const bson::BsonObj& doc) {
  bson::BsonElement id = doc["_id"];
  if (!id.eoo() && doc.FirstElement().FieldName() == "_id") return doc;
  bson::BsonBuilder b;
  if (id.eoo()) {
    b.AppendObjectId("_id", bson::ObjectId::Generate());
  } else {
    b.AppendElement(id);
  }
  for (bson::BsonElement e : doc) {
    if (e.FieldName() != "_id") b.AppendElement(e);
  }
  return b.Obj();
}

class ExecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::EngineOptions opts = storage::testing::DiskOptions(dir_.path());
    opts.checkpoint_interval_secs = 0;
    engine_ = storage::testing::OpenOrDie(opts);
    ASSERT_NE(engine_, nullptr);
    auto catalog = catalog::Catalog::Open(engine_.get());
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    catalog_ = std::move(catalog).value();
    bucket_catalog_ = std::make_unique<timeseries::BucketCatalog>(int64_t{64} << 20);
  }
  void TearDown() override {
    bucket_catalog_.reset();
    catalog_.reset();
    engine_.reset();
  }

  ReadContext Read() const {
    return {engine_.get(), catalog_.get(), bucket_catalog_.get(), dir_.path()};
  }

  // Builds the indexes `specs_json` (a JSON array of complete specs, {v: 2, key, name, ...}, as
  // createIndexes stores them) on the regular collection `nss`, creating it if needed.
  Status CreateIndexes(const catalog::NamespaceString& nss, std::string_view specs_json) {
    HG_RETURN_IF_ERROR(catalog_->GetOrCreateCollection(nss).status());
    return catalog_->CreateIndexes(nss, Documents(specs_json));
  }

  // Inserts `docs_json` (a JSON array) into the regular collection `nss` in one transaction,
  // creating it if needed; a document without `_id` gets an ObjectId.
  Status Insert(const catalog::NamespaceString& nss, std::string_view docs_json) {
    HG_ASSIGN_OR_RETURN(auto coll, catalog_->GetOrCreateCollection(nss));
    int64_t n = 0, bytes = 0;
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    HG_RETURN_IF_ERROR(wu.begin_status());
    for (const bson::BsonObj& d : Documents(docs_json)) {
      bson::BsonObj doc = WithId(d);
      HG_RETURN_IF_ERROR(coll->Insert(*session, doc).status());
      ++n;
      bytes += doc.size();
    }
    HG_RETURN_IF_ERROR(wu.Commit());
    coll->AdjustCounts(n, bytes);
    return Status::OK();
  }

  // Creates the time-series collection `nss` (its entry and its clustered bucket collection)
  // with `options_json`, the create command's `timeseries` option.
  Status CreateTimeseries(const catalog::NamespaceString& nss, std::string_view options_json) {
    auto holder =
        bson::FromJson(std::string("{\"timeseries\": ") + std::string(options_json) + "}");
    HG_RETURN_IF_ERROR(holder.status());
    HG_ASSIGN_OR_RETURN(timeseries::TimeseriesOptions o,
                        timeseries::ParseTimeseriesOptions(holder.value()["timeseries"], nss.ns()));
    bson::BsonBuilder view;
    view.AppendObject("timeseries", o.ToBson());
    bson::BsonBuilder buckets;
    buckets.AppendBool("clusteredIndex", true);
    buckets.AppendObject("timeseries", o.ToBson());
    return catalog_->CreateTimeseries(nss, view.Obj(), BucketsNamespace(nss), buckets.Obj());
  }

  // Inserts the measurements `docs_json` (a JSON array; each with a Date in the time field) into
  // the time-series collection `nss` through the bucket catalog: all are staged, then each batch
  // is committed once.
  Status InsertMeasurements(const catalog::NamespaceString& nss, std::string_view docs_json) {
    HG_ASSIGN_OR_RETURN(ResolvedNamespace resolved, Resolve(Read(), nss));
    HG_RETURN_IF_ERROR(RequireBuckets(resolved));
    std::optional<timeseries::TimeseriesCollection>& ts = resolved.timeseries;
    if (!ts) return Status(ErrorCode::kNamespaceNotFound, nss.ns() + " is not time-series");
    std::vector<bson::BsonObj> docs;
    for (const bson::BsonObj& d : Documents(docs_json)) docs.push_back(WithId(d));
    auto session = engine_->NewSession();
    std::vector<std::shared_ptr<timeseries::WriteBatch>> batches;
    for (const bson::BsonObj& m : docs) {
      HG_ASSIGN_OR_RETURN(auto batch, bucket_catalog_->Insert(*ts, *session, m));
      batches.push_back(std::move(batch));
    }
    std::unordered_map<timeseries::WriteBatch*, bool> committed;
    for (const auto& batch : batches) {
      if (!committed.emplace(batch.get(), true).second) continue;
      HG_RETURN_IF_ERROR(bucket_catalog_->Commit(*ts, *session, batch));
    }
    return Status::OK();
  }

  storage::testing::TempDir dir_;
  std::unique_ptr<storage::KvEngine> engine_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::unique_ptr<timeseries::BucketCatalog> bucket_catalog_;
};

}  // namespace hourglass::exec::testing
