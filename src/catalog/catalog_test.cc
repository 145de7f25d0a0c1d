// The catalog against a real WiredTiger engine: DDL, persistence across reopen, namespace rules,
// and the `_id` index's duplicate-key error.
#include "catalog/catalog.h"

#include <gtest/gtest.h>

#include "storage/storage_test_util.h"
#include "storage/write_conflict.h"

namespace hourglass::catalog {
namespace {

using bson::BsonObj;

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override {
    catalog_.reset();
    engine_.reset();
  }
  void Open() {
    storage::EngineOptions opts = storage::testing::DiskOptions(dir_.path());
    opts.checkpoint_interval_secs = 0;
    engine_ = storage::testing::OpenOrDie(opts);
    ASSERT_NE(engine_, nullptr);
    auto catalog = Catalog::Open(engine_.get());
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    catalog_ = std::move(catalog).value();
  }
  void Reopen() {
    catalog_.reset();
    engine_.reset();
    Open();
  }
  // Inserts `json` documents into `coll` in one transaction; returns the first error.
  Status Insert(Collection& coll, std::initializer_list<const char*> docs) {
    auto session = engine_->NewSession();
    storage::WriteUnit wu(*session);
    for (const char* json : docs) {
      auto rid = coll.Insert(*session, bson::FromJson(json).value());
      if (!rid.ok()) return rid.status();
    }
    HG_RETURN_IF_ERROR(wu.Commit());
    coll.AdjustCounts(static_cast<int64_t>(docs.size()), 0);
    return Status::OK();
  }

  storage::testing::TempDir dir_;
  std::unique_ptr<storage::KvEngine> engine_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogTest, CreateLookupAndDuplicateCreate) {
  NamespaceString nss{"db", "c"};
  auto created = catalog_->CreateCollection(nss, BsonObj());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(catalog_->Lookup(nss), created.value());
  EXPECT_EQ(created.value()->entry().uuid.size(), 16u);
  ASSERT_EQ(created.value()->entry().indexes.size(), 1u);
  EXPECT_EQ(created.value()->entry().indexes[0].name(), "_id_");
  EXPECT_EQ(catalog_->CreateCollection(nss, BsonObj()).status().code(),
            ErrorCode::kNamespaceExists);
  EXPECT_EQ(catalog_->GetOrCreateCollection(nss).value(), created.value());
}

TEST_F(CatalogTest, RejectsInvalidNamespaces) {
  for (auto nss :
       {NamespaceString{"db", ""}, NamespaceString{"db", "a$b"}, NamespaceString{"db", ".a"},
        NamespaceString{"d b", "c"}, NamespaceString{"", "c"},
        NamespaceString{std::string(64, 'x'), "c"}, NamespaceString{"db", std::string(260, 'c')}}) {
    EXPECT_EQ(catalog_->CreateCollection(nss, BsonObj()).status().code(),
              ErrorCode::kInvalidNamespace)
        << nss.ns();
  }
  EXPECT_EQ(ParseNamespace("nodot").status().code(), ErrorCode::kInvalidNamespace);
}

TEST_F(CatalogTest, DuplicateIdReportsKeyPatternAndValue) {
  auto coll = catalog_->CreateCollection({"db", "c"}, BsonObj()).value();
  ASSERT_TRUE(Insert(*coll, {R"({"_id": 1, "a": 1})"}).ok());
  Status st = Insert(*coll, {R"({"_id": 1, "a": 2})"});
  ASSERT_EQ(st.code(), ErrorCode::kDuplicateKey);
  EXPECT_EQ(st.reason(),
            "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1 }");
  BsonObj extra(st.extra_info().data());
  EXPECT_EQ(extra["keyPattern"].Obj().ToJson(), R"({ "_id" : 1 })");
  EXPECT_EQ(extra["keyValue"].Obj().ToJson(), R"({ "_id" : 1 })");
  // 1 and 1.0 are the same _id: the index key is the canonical value.
  EXPECT_EQ(Insert(*coll, {R"({"_id": 1.0})"}).code(), ErrorCode::kDuplicateKey);
}

TEST_F(CatalogTest, CollectionsAndCountsSurviveReopen) {
  auto coll = catalog_->CreateCollection({"db", "c"}, BsonObj()).value();
  ASSERT_TRUE(Insert(*coll, {R"({"_id": 1})", R"({"_id": 2})", R"({"_id": 3})"}).ok());
  ASSERT_TRUE(catalog_->CreateCollection({"other", "d"}, BsonObj()).ok());
  Reopen();
  auto again = catalog_->Lookup({"db", "c"});
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->NumRecords(), 3);
  EXPECT_EQ(again->NextRecordId(), 4);
  EXPECT_EQ(catalog_->ListDatabases(), (std::vector<std::string>{"db", "other"}));
}

TEST_F(CatalogTest, DropRemovesEntryAndTables) {
  auto coll = catalog_->CreateCollection({"db", "c"}, BsonObj()).value();
  std::string ident = coll->ident();
  ASSERT_TRUE(catalog_->DropCollection({"db", "c"}).ok());
  EXPECT_EQ(catalog_->Lookup({"db", "c"}), nullptr);
  EXPECT_FALSE(engine_->TableExists(ident));
  EXPECT_EQ(catalog_->DropCollection({"db", "c"}).code(), ErrorCode::kNamespaceNotFound);
  Reopen();
  EXPECT_EQ(catalog_->Lookup({"db", "c"}), nullptr);
}

TEST_F(CatalogTest, RenameWithDropTargetReplacesTargetAtomically) {
  auto a = catalog_->CreateCollection({"db", "a"}, BsonObj()).value();
  ASSERT_TRUE(Insert(*a, {R"({"_id": 1})", R"({"_id": 2})"}).ok());
  auto b = catalog_->CreateCollection({"db", "b"}, BsonObj()).value();
  std::string b_ident = b->ident();
  EXPECT_EQ(catalog_->RenameCollection({"db", "a"}, {"db", "b"}, false).code(),
            ErrorCode::kNamespaceExists);
  EXPECT_EQ(catalog_->RenameCollection({"db", "zz"}, {"db", "y"}, false).code(),
            ErrorCode::kNamespaceNotFound);
  ASSERT_TRUE(catalog_->RenameCollection({"db", "a"}, {"db", "b"}, true).ok());
  EXPECT_EQ(catalog_->Lookup({"db", "a"}), nullptr);
  auto renamed = catalog_->Lookup({"db", "b"});
  ASSERT_NE(renamed, nullptr);
  EXPECT_EQ(renamed->ident(), a->ident());
  EXPECT_EQ(renamed->NumRecords(), 2);
  EXPECT_FALSE(engine_->TableExists(b_ident));
  // Inserts continue after the moved records, and the `_id` index came along.
  ASSERT_TRUE(Insert(*renamed, {R"({"_id": 3})"}).ok());
  EXPECT_EQ(Insert(*renamed, {R"({"_id": 1})"}).code(), ErrorCode::kDuplicateKey);
  Reopen();
  EXPECT_EQ(catalog_->Lookup({"db", "b"})->NumRecords(), 3);
  EXPECT_EQ(catalog_->Lookup({"db", "a"}), nullptr);
}

// Number of entries in a table.
int CountEntries(storage::KvEngine& engine, const std::string& ident) {
  auto session = engine.NewSession();
  auto cursor = session->OpenCursorOrError(ident);
  if (!cursor.ok()) return -1;
  int n = 0;
  for (auto more = cursor.value()->SeekFirst(); more.ok() && more.value();
       more = cursor.value()->Next()) {
    ++n;
  }
  return n;
}

TEST_F(CatalogTest, IndexBuildFillsTheTableAndSurvivesReopen) {
  NamespaceString nss{"db", "c"};
  auto coll = catalog_->CreateCollection(nss, BsonObj()).value();
  ASSERT_TRUE(
      Insert(*coll, {R"({"_id": 1, "a": 5})", R"({"_id": 2, "a": [6, 7]})", R"({"_id": 3})"}).ok());
  BsonObj spec = bson::FromJson(R"({"v": 2, "key": {"a": 1}, "name": "a_1"})").value();
  ASSERT_TRUE(catalog_->CreateIndexes(nss, {spec}).ok());
  auto built = catalog_->Lookup(nss);
  ASSERT_EQ(built->Indexes().size(), 1u);
  const SecondaryIndex& idx = built->Indexes()[0];
  EXPECT_TRUE(idx.entry->ready);
  EXPECT_TRUE(idx.entry->multikey->load());
  std::string ident = idx.entry->ident;
  EXPECT_EQ(CountEntries(*engine_, ident), 4);  // 5, 6, 7 and null for the missing field
  // Writes through the new handle maintain it; the counters are shared with the old handle.
  ASSERT_TRUE(Insert(*built, {R"({"_id": 4, "a": 8})"}).ok());
  EXPECT_EQ(CountEntries(*engine_, ident), 5);
  EXPECT_EQ(built->NextRecordId(), coll->NextRecordId());
  Reopen();
  auto again = catalog_->Lookup(nss);
  ASSERT_EQ(again->Indexes().size(), 1u);
  EXPECT_EQ(again->Indexes()[0].desc.name, "a_1");
  EXPECT_TRUE(again->Indexes()[0].entry->multikey->load());
  ASSERT_TRUE(catalog_->DropIndexes(nss, {"a_1"}).ok());
  EXPECT_FALSE(engine_->TableExists(ident));
  Reopen();
  EXPECT_TRUE(catalog_->Lookup(nss)->Indexes().empty());
}

TEST_F(CatalogTest, FailedUniqueBuildLeavesNoIndex) {
  NamespaceString nss{"db", "c"};
  auto coll = catalog_->CreateCollection(nss, BsonObj()).value();
  ASSERT_TRUE(Insert(*coll, {R"({"_id": 1, "a": 5})", R"({"_id": 2, "a": 5.0})"}).ok());
  BsonObj spec =
      bson::FromJson(R"({"v": 2, "key": {"a": 1}, "name": "a_1", "unique": true})").value();
  Status st = catalog_->CreateIndexes(nss, {spec});
  ASSERT_EQ(st.code(), ErrorCode::kDuplicateKey);
  BsonObj extra(st.extra_info().data());
  EXPECT_EQ(extra["keyPattern"].Obj().ToJson(), R"({ "a" : 1 })");
  EXPECT_EQ(extra["keyValue"].Obj().ToJson(), R"({ "a" : 5 })");
  auto after = catalog_->Lookup(nss);
  EXPECT_TRUE(after->Indexes().empty());
  EXPECT_EQ(after->entry().indexes.size(), 1u);
  Reopen();
  EXPECT_EQ(catalog_->Lookup(nss)->entry().indexes.size(), 1u);
  // The table list holds no stray index table: only the record table and `_id_`'s.
  int index_tables = 0;
  for (const auto& t : engine_->ListTables()) {
    if (t.rfind("index-", 0) == 0) ++index_tables;
  }
  EXPECT_EQ(index_tables, 1);
}

TEST(CollectionEntryTest, OnlyTheSeriesIndexHasTheSeriesFormat) {
  const char* series = R"({"v": 2, "key": {"meta": 1, "control.min.t": 1}, "name": "m_1_t_1"})";
  const char* second = R"({"v": 2, "key": {"meta": 1, "control.min.x": 1}, "name": "second"})";
  CollectionEntry e;
  ASSERT_TRUE(ParseNamespace("db.system.buckets.ts").ok());
  e.nss = ParseNamespace("db.system.buckets.ts").value();
  e.uuid = std::string(16, 'u');
  e.type = "collection";
  e.indexes.push_back(IndexEntry{bson::FromJson(second).value(), "index-2"});
  e.indexes.push_back(IndexEntry{bson::FromJson(series).value(), "index-1"});
  e.indexes.back().series = true;
  // The flag is stored: the series index stays the one made with the collection.
  auto back = CollectionEntry::FromBson(e.ToBson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back.value().indexes[0].series);
  EXPECT_TRUE(back.value().indexes[1].series);
  // None is the series index once it was dropped: a later index of its key pattern is not.
  e.indexes.pop_back();
  e.indexes.push_back(IndexEntry{bson::FromJson(series).value(), "index-3"});
  back = CollectionEntry::FromBson(e.ToBson());
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back.value().indexes[0].series);
  EXPECT_FALSE(back.value().indexes[1].series);
  // A catalog written before the flag had one index of that shape at most: the series index.
  bson::BsonBuilder old;
  old.AppendString("ns", "db.system.buckets.ts");
  old.AppendBinData("uuid", 4, e.uuid);
  old.AppendString("type", "collection");
  old.AppendObject("options", BsonObj());
  old.AppendString("ident", "collection-1");
  size_t arr = old.OpenArray("indexes");
  size_t o = old.OpenObject("0");
  old.AppendObject("spec", bson::FromJson(series).value());
  old.AppendString("ident", "index-1");
  old.Close(o);
  old.Close(arr);
  back = CollectionEntry::FromBson(old.Obj());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back.value().indexes[0].series);
}

TEST_F(CatalogTest, DerivedValuesAreComputedOncePerHandleAndNotAfterAFailure) {
  NamespaceString nss{"db", "v"};
  auto coll = catalog_->CreateCollection(nss, bson::FromJson(R"({"x": 7})").value()).value();
  int calls = 0;
  auto failing = coll->Derived<int>([&]() -> StatusWith<int> {
    ++calls;
    return Status(ErrorCode::kBadValue, "not yet");
  });
  EXPECT_EQ(failing.status().code(), ErrorCode::kBadValue);
  auto parse = [&]() -> StatusWith<int> {
    ++calls;
    return coll->entry().options["x"].Int32();
  };
  auto first = coll->Derived<int>(parse);
  auto second = coll->Derived<int>(parse);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first.value(), 7);
  EXPECT_EQ(first.value(), second.value());  // the same object: computed once
  EXPECT_EQ(calls, 2);
  // A new handle (DDL replaces the entry's handle) computes its own.
  ASSERT_TRUE(catalog_->SetOptions({{nss, bson::FromJson(R"({"x": 8})").value()}}).ok());
  auto replaced = catalog_->Lookup(nss);
  ASSERT_NE(replaced, coll);
  EXPECT_EQ(*replaced
                 ->Derived<int>([&]() -> StatusWith<int> {
                   ++calls;
                   return replaced->entry().options["x"].Int32();
                 })
                 .value(),
            8);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(*coll->Derived<int>(parse).value(), 7);
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace hourglass::catalog
