// Test-only: a fixture with a real on-disk storage engine, catalog and cursor manager wired into a
// ServiceContext, running commands through the dispatcher as a connection would.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "commands/dispatcher.h"
#include "exec/cursor_manager.h"
#include "storage/kv_engine.h"
#include "storage/storage_test_util.h"
#include "timeseries/bucket_catalog.h"

namespace hourglass::commands::testing {

// A document sequence named `identifier` holding `docs` (Extended JSON).
inline wire::DocumentSequence Sequence(std::string identifier, std::vector<std::string_view> docs) {
  wire::DocumentSequence seq{std::move(identifier), {}};
  for (std::string_view d : docs) {
    auto doc = bson::FromJson(d);
    EXPECT_TRUE(doc.ok()) << d;
    seq.documents.push_back(doc.ok() ? doc.value() : bson::BsonObj());
  }
  return seq;
}

// A request as an OP_MSG brings it, owning what CommandRequest views.
struct TestRequest {
  bson::BsonObj body;
  std::vector<wire::DocumentSequence> sequences;
  CommandRequest view() const { return CommandRequest{body, sequences}; }
};

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Close(); }

  void Open() {
    storage::EngineOptions opts = storage::testing::DiskOptions(dir_.path());
    opts.checkpoint_interval_secs = 0;
    engine_ = storage::testing::OpenOrDie(opts);
    ASSERT_NE(engine_, nullptr);
    auto catalog = catalog::Catalog::Open(engine_.get());
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    catalog_ = std::move(catalog).value();
    service_.engine = engine_.get();
    service_.catalog = catalog_.get();
    service_.cursors = &cursors_;
    bucket_catalog_ = std::make_unique<timeseries::BucketCatalog>(int64_t{64} << 20);
    service_.bucket_catalog = bucket_catalog_.get();
    service_.options.dbpath = dir_.path();
    users_ = std::make_unique<auth::UserStore>(engine_.get(), catalog_.get());
    service_.users = users_.get();
  }
  void Close() {
    cursors_.KillAll();
    service_.bucket_catalog = nullptr;
    bucket_catalog_.reset();
    service_.users = nullptr;
    users_.reset();
    service_.catalog = nullptr;
    service_.engine = nullptr;
    catalog_.reset();
    engine_.reset();
  }
  // Closes and reopens the engine and the catalog on the same dbpath.
  void Reopen() {
    Close();
    Open();
  }

  bson::BsonObj Run(const bson::BsonObj& cmd, std::string_view db = "test") {
    return RunCommandRequest(service_, client_, cmd, db).reply;
  }
  bson::BsonObj Run(const TestRequest& request, std::string_view db = "test") {
    return RunCommandRequest(service_, client_, request.view(), db).reply;
  }
  bson::BsonObj Run(std::string_view json, std::string_view db = "test") {
    auto cmd = bson::FromJson(json);
    EXPECT_TRUE(cmd.ok()) << json;
    return cmd.ok() ? Run(cmd.value(), db) : bson::BsonObj();
  }

  static void ExpectOk(const bson::BsonObj& reply) {
    EXPECT_EQ(reply["ok"].type(), bson::BsonType::kDouble) << reply.ToJson();
    EXPECT_EQ(reply["ok"].Double(), 1.0) << reply.ToJson();
  }
  static void ExpectError(const bson::BsonObj& reply, int code, std::string_view errmsg = {}) {
    EXPECT_EQ(reply["ok"].Double(), 0.0) << reply.ToJson();
    EXPECT_EQ(reply["code"].Int32(), code) << reply.ToJson();
    if (!errmsg.empty()) {
      EXPECT_EQ(reply["errmsg"].Str(), errmsg) << reply.ToJson();
    }
  }

  storage::testing::TempDir dir_;
  std::unique_ptr<storage::KvEngine> engine_;
  std::unique_ptr<catalog::Catalog> catalog_;
  exec::CursorManager cursors_;
  std::unique_ptr<timeseries::BucketCatalog> bucket_catalog_;
  std::unique_ptr<auth::UserStore> users_;
  ServiceContext service_;
  ClientState client_;
};

}  // namespace hourglass::commands::testing
