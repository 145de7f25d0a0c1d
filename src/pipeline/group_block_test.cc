// $group over column blocks must give exactly what it gives over the same rows as documents.
#include "pipeline/group_block.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <random>
#include <set>

#include "pipeline/column_block.h"
#include "pipeline/test_util.h"

namespace hourglass::pipeline {
namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using testing::Json;
using testing::ToJson;

// Blocks of documents: each block is a list of rows; a field listed in `constants` is handed
// over as a block constant (the test data keeps it equal in every row of a block), the others
// as columns. `selected[b]` lists the rows of block b that count.
class BlockStream : public DocumentStream, public BlockSource {
 public:
  // With `numbers`, a column whose present cells all have one numeric type (double, int32,
  // int64, date) comes as a NumberColumn, as a compressed bucket's column does.
  BlockStream(std::vector<std::vector<BsonObj>> blocks, std::vector<std::vector<uint32_t>> selected,
              std::vector<std::string> constants, bool* blocks_taken, bool numbers = false)
      : blocks_(std::move(blocks)),
        selected_(std::move(selected)),
        constants_(constants),
        blocks_taken_(blocks_taken),
        numbers_(numbers) {}

  // The selected rows as documents, for consumers that do not take blocks.
  StatusWith<std::optional<BsonObj>> Next() override {
    while (doc_block_ < blocks_.size() && doc_row_ >= selected_[doc_block_].size()) {
      ++doc_block_;
      doc_row_ = 0;
    }
    if (doc_block_ >= blocks_.size()) return std::optional<BsonObj>();
    return std::optional<BsonObj>(blocks_[doc_block_][selected_[doc_block_][doc_row_++]]);
  }
  BlockSource* AsBlockSource() override { return this; }
  void RequireFields(const std::vector<std::string>& names) override { required_ = names; }
  // A field the consumer takes by its bounds comes bounded (by its least and greatest cell) in
  // blocks whose rows all count and whose cells are all dates, as a time-series scan does.
  void AcceptBounds(const std::vector<std::string>& names) override { boundable_ = names; }
  StatusWith<const ColumnBlock::Field*> DecodeBounded(std::string_view name) override {
    for (ColumnBlock::Field& f : block_.fields) {
      if (f.name != name || !f.bounded) continue;
      f.bounded = false;
      f.cells = std::move(bounded_cells_);
      ToNumbers(f);
      if (decoded_ != nullptr) ++*decoded_;
      return &f;
    }
    return Status(ErrorCode::kInternalError, "no bounded field " + std::string(name));
  }
  // Where to count the blocks given with a bounded field, and those then decoded (the stream
  // dies with the pipeline, the counts outlive it).
  void CountBoundsIn(int* bounded, int* decoded) {
    bounded_ = bounded;
    decoded_ = decoded;
  }

  StatusWith<const ColumnBlock*> NextBlock() override {
    *blocks_taken_ = true;
    if (next_ >= blocks_.size()) return static_cast<const ColumnBlock*>(nullptr);
    const auto& rows = blocks_[next_];
    block_ = ColumnBlock();
    block_.num_rows = static_cast<int64_t>(rows.size());
    block_.all_rows = selected_[next_].size() == rows.size();
    block_.selection = selected_[next_];
    for (const std::string& name : required_) {
      ColumnBlock::Field f;
      f.name = name;
      bool any = false;
      for (const BsonObj& r : rows) {
        f.cells.push_back(r[name]);
        any = any || !r[name].eoo();
      }
      if (!any) continue;
      if (std::find(constants_.begin(), constants_.end(), name) != constants_.end()) {
        f.constant = true;
        f.value = f.cells[0];
        f.cells.clear();
      } else if (block_.all_rows &&
                 std::find(boundable_.begin(), boundable_.end(), name) != boundable_.end() &&
                 std::all_of(f.cells.begin(), f.cells.end(), [](const BsonElement& c) {
                   return c.type() == bson::BsonType::kDate;
                 })) {
        auto by_date = [](const BsonElement& a, const BsonElement& b) {
          return a.DateMillis() < b.DateMillis();
        };
        f.lo = *std::min_element(f.cells.begin(), f.cells.end(), by_date);
        f.hi = *std::max_element(f.cells.begin(), f.cells.end(), by_date);
        f.bounded = true;
        bounded_cells_ = std::move(f.cells);
        f.cells.clear();
        if (bounded_ != nullptr) ++*bounded_;
      }
      if (!f.constant && !f.bounded) ToNumbers(f);
      block_.fields.push_back(std::move(f));
    }
    ++next_;
    return static_cast<const ColumnBlock*>(&block_);
  }

 private:
  // Turns f's cells into numbers when they are numbers of one type (and numbers_ is set).
  void ToNumbers(ColumnBlock::Field& f) {
    if (!numbers_) return;
    bson::BsonType type = bson::BsonType::kEOO;
    for (const BsonElement& c : f.cells) {
      if (c.eoo()) continue;
      if (type != bson::BsonType::kEOO && c.type() != type) return;
      type = c.type();
    }
    if (type != bson::BsonType::kDouble && type != bson::BsonType::kInt32 &&
        type != bson::BsonType::kInt64 && type != bson::BsonType::kDate) {
      return;
    }
    auto& values = number_values_.emplace_back();
    auto& present = number_present_.emplace_back();
    bool all = true;
    for (const BsonElement& c : f.cells) {
      uint64_t v = 0;
      if (c.type() == bson::BsonType::kInt32) {
        v = static_cast<uint64_t>(int64_t{c.Int32()});
      } else if (!c.eoo()) {
        std::memcpy(&v, c.value(), 8);
      }
      values.push_back(v);
      present.push_back(c.eoo() ? 0 : 1);
      all = all && !c.eoo();
    }
    f.numbers = {.type = type, .values = values.data(), .present = all ? nullptr : present.data()};
    f.cells.clear();
  }

  std::vector<std::vector<BsonObj>> blocks_;
  std::vector<std::vector<uint32_t>> selected_;
  std::vector<std::string> constants_;
  std::vector<std::string> required_;
  std::vector<std::string> boundable_;
  std::vector<BsonElement> bounded_cells_;  // the current block's bounded field's cells
  int* bounded_ = nullptr;
  int* decoded_ = nullptr;
  ColumnBlock block_;
  size_t next_ = 0;
  size_t doc_block_ = 0, doc_row_ = 0;
  bool* blocks_taken_;
  bool numbers_ = false;
  std::deque<std::vector<uint64_t>> number_values_;  // the NumberColumns' storage
  std::deque<std::vector<uint8_t>> number_present_;
};

// Random rows in blocks: t a date (hour-sized blocks of minutes, sometimes crossing an hour,
// sometimes null or missing), m a per-block constant object, v mixed types, w doubles.
struct Data {
  std::vector<std::vector<BsonObj>> blocks;
  std::vector<std::vector<uint32_t>> selected;
  std::vector<BsonObj> selected_docs;  // the same rows, in order, as documents
};

Data MakeData(uint64_t seed, bool odd_times) {
  std::mt19937_64 rng(seed);
  Data d;
  const int64_t base = 1'599'998'400'000;  // on the hour
  for (int b = 0; b < 12; ++b) {
    std::vector<BsonObj> rows;
    std::vector<uint32_t> sel;
    const int n = 1 + static_cast<int>(rng() % 40);
    const int64_t start = base + b * 3'600'000 + (b % 3 == 0 ? 3'300'000 : 0);  // some cross
    for (int i = 0; i < n; ++i) {
      BsonBuilder r;
      const int kind = static_cast<int>(rng() % 20);
      if (!odd_times || kind > 1) {
        r.AppendDate("t", start + static_cast<int64_t>(rng() % 600) * 1000);
      } else if (kind == 1) {
        r.AppendNull("t");
      }
      size_t m = r.OpenObject("m");
      r.AppendString("host", "h" + std::to_string(b % 4));
      r.AppendString("tz", b % 2 ? "America/New_York" : "+05:30");
      r.Close(m);
      switch (rng() % 8) {
        case 0:
          r.AppendInt32("v", static_cast<int32_t>(rng() % 100));
          break;
        case 1:
          r.AppendInt64("v", static_cast<int64_t>(rng() % 100));
          break;
        case 2:
          r.AppendDouble("v", static_cast<double>(rng() % 1000) / 7);
          break;
        case 3:
          r.AppendString("v", "s" + std::to_string(rng() % 5));
          break;
        case 4:
          r.AppendNull("v");
          break;
        case 5:  // NaN, the least number in $min/$max's order
          r.AppendDouble("v", std::nan(""));
          break;
        case 6:  // -0.0 and 0 are equal: the first one seen stays the extreme
          r.AppendDouble("v", rng() % 2 ? -0.0 : 0.0);
          break;
        default:
          break;  // missing
      }
      // Mostly plain doubles (runs of them take the accumulators' fast path), now and then
      // NaN, an infinity or a zero of either sign.
      const uint64_t special = rng() % 64;
      r.AppendDouble("w", special == 0   ? std::nan("")
                          : special == 1 ? -std::numeric_limits<double>::infinity()
                          : special == 2 ? -0.0
                          : special == 3 ? 0.0
                                         : static_cast<double>(rng() % 1000) / 3);
      // i: int64s, some past 2^53 and near the ends of the range ($sum overflows to a double),
      // sometimes missing. x: one numeric type per block, another in the next.
      const uint64_t ik = rng() % 16;
      if (ik != 0) {
        r.AppendInt64("i", ik == 1   ? std::numeric_limits<int64_t>::max() - 3
                           : ik == 2 ? std::numeric_limits<int64_t>::min() + 5
                           : ik == 3 ? (int64_t{1} << 53) + 1
                                     : static_cast<int64_t>(rng() % 100000) - 50000);
      }
      if (rng() % 10 != 0) {
        const int64_t xv = static_cast<int64_t>(rng() % 200) - 100;
        if (b % 3 == 0) {
          r.AppendInt32("x", static_cast<int32_t>(xv));
        } else if (b % 3 == 1) {
          r.AppendDouble("x", static_cast<double>(xv) / 4);
        } else {
          r.AppendInt64("x", xv);
        }
      }
      rows.push_back(r.Obj());
      if (rng() % 4 != 0) {
        sel.push_back(static_cast<uint32_t>(i));
        d.selected_docs.push_back(rows.back());
      }
    }
    if (b % 5 == 0) {  // some blocks keep every row
      sel.clear();
      for (int i = 0; i < n; ++i) sel.push_back(static_cast<uint32_t>(i));
    }
    d.blocks.push_back(rows);
    d.selected.push_back(sel);
  }
  // selected_docs must follow the final selections.
  d.selected_docs.clear();
  for (size_t b = 0; b < d.blocks.size(); ++b) {
    for (uint32_t r : d.selected[b]) d.selected_docs.push_back(d.blocks[b][r]);
  }
  return d;
}

StatusWith<std::vector<BsonObj>> RunGroup(const BsonObj& stages, std::unique_ptr<DocumentStream> in,
                                          const PipelineContext& ctx = PipelineContext()) {
  HG_ASSIGN_OR_RETURN(auto p, Pipeline::Parse(stages, ctx));
  auto out = p->Bind(std::move(in));
  std::vector<BsonObj> docs;
  while (true) {
    HG_ASSIGN_OR_RETURN(auto d, out->Next());
    if (!d) break;
    docs.push_back(*d);
  }
  return docs;
}

TEST(GroupBlockTest, BlocksGiveTheDocumentPathsResults) {
  const char* const kGroups[] = {
      R"({"_id": "$m", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "mn": {"$min": "$v"},
          "mx": {"$max": "$v"}, "f": {"$first": "$v"}, "l": {"$last": "$v"},
          "p": {"$push": "$v"}, "c": {"$count": {}}, "one": {"$sum": 1}, "k": {"$push": "x"}})",
      R"({"_id": {"h": "$m.host", "hour": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
          "avg": {"$avg": "$w"}, "n": {"$sum": 1}, "lt": {"$last": "$t"},
          "wmin": {"$min": "$w"}, "wmax": {"$max": "$w"}})",
      R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "minute", "binSize": 5}},
          "mx": {"$max": "$w"}, "mn": {"$min": "$t"}})",
      R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "day", "timezone": "$m.tz"}},
          "s": {"$sum": "$w"}})",
      R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "second", "binSize": 7,
                                 "timezone": "America/New_York"}},
          "n": {"$sum": 1}, "f": {"$first": "$w"}})",
      R"({"_id": {"a": {"$dateTrunc": {"date": "$t", "unit": "minute"}},
                  "b": {"$dateTrunc": {"date": "$t", "unit": "second", "binSize": 90}}},
          "l": {"$last": "$w"}})",
      R"({"_id": null, "s": {"$sum": "$w"}, "set": {"$addToSet": "$m.host"},
          "sv": {"$addToSet": "$v"}})",
      R"({"_id": "$v", "n": {"$sum": 1}, "w": {"$stdDevPop": "$w"}})",
      R"({"_id": {"$add": [{"$toLong": {"$dateTrunc": {"date": "$t", "unit": "hour"}}}, "$w"]},
          "n": {"$sum": 1}})",
      R"({"_id": "$m.host", "s": {"$sum": "$i"}, "a": {"$avg": "$i"}, "mn": {"$min": "$i"},
          "mx": {"$max": "$i"}, "f": {"$first": "$i"}, "l": {"$last": "$i"},
          "xs": {"$sum": "$x"}, "xa": {"$avg": "$x"}, "xmn": {"$min": "$x"}, "xmx": {"$max": "$x"},
          "xf": {"$first": "$x"}, "xl": {"$last": "$x"}, "tmn": {"$min": "$t"},
          "tmx": {"$max": "$t"}, "ts": {"$sum": "$t"}, "ta": {"$avg": "$t"}})",
      R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "minute", "binSize": 10}},
          "s": {"$sum": "$x"}, "mn": {"$min": "$w"}, "p": {"$push": "$x"}})",
      R"({"_id": "$m.host", "e": {"$sum": {"$multiply": ["$w", 2]}},
          "a": {"$avg": {"$add": ["$w", "$w", 0.5]}},
          "d": {"$max": {"$subtract": ["$w", {"$multiply": ["$w", 0.1, 3]}]}},
          "z": {"$sum": {"$add": ["$w"]}}, "q": {"$avg": {"$divide": ["$w", 4]}},
          "r": {"$max": {"$divide": [1000, {"$add": ["$w", 1]}]}},
          "y": {"$min": {"$multiply": [{"$add": [1, "$w"]}, {"$numberLong": "3"}]}}})",
      R"({"_id": "$m.host", "q": {"$sum": {"$divide": [1, "$w"]}}})",
      R"({"_id": "$m.host", "x": {"$sum": {"$add": ["$x", 1]}}, "i": {"$avg": {"$add": ["$i", 1]}},
          "w": {"$sum": {"$subtract": ["$w", "$x"]}}})",
      R"({"_id": "$m.host", "e": {"$sum": {"$multiply": ["$w", 2]}},
          "c": {"$push": {"$cond": [{"$gt": ["$w", 5]}, "$v", null]}},
          "t": {"$max": {"$add": ["$t", "$i"]}}, "h": {"$first": "$m.host"}})",
  };
  for (bool numbers : {false, true}) {
    for (bool odd_times : {false, true}) {
      for (uint64_t seed = 1; seed <= 5; ++seed) {
        for (const char* group : kGroups) {
          SCOPED_TRACE(numbers ? "columns of numbers" : "columns of elements");
          Data data = MakeData(seed, odd_times);
          BsonObj holder = Json(std::string(R"({"p": [{"$group": )") + group + "}]}");
          BsonObj stages = holder["p"].Obj();
          bool taken = false;
          auto by_docs =
              RunGroup(stages, std::make_unique<VectorDocumentStream>(data.selected_docs));
          auto by_blocks = RunGroup(stages, std::make_unique<BlockStream>(
                                                data.blocks, data.selected,
                                                std::vector<std::string>{"m"}, &taken, numbers));
          EXPECT_TRUE(taken) << group;  // every stage above takes blocks
          ASSERT_EQ(by_docs.ok(), by_blocks.ok()) << group;
          if (!by_docs.ok()) {
            EXPECT_EQ(by_docs.status().code(), by_blocks.status().code()) << group;
            continue;
          }
          EXPECT_EQ(ToJson(by_docs.value()), ToJson(by_blocks.value()))
              << group << " seed " << seed << " odd_times " << odd_times;
          EXPECT_FALSE(by_docs.value().empty());
        }
      }
    }
  }
}

// Sums and averages of a column of doubles are staged with other groups' and folded together;
// a group table spilling at every check must not lose or misplace any of them.
TEST(GroupBlockTest, StagedSumsGiveTheDocumentPathsResultsWhenGroupsSpill) {
  char dir[] = "/tmp/hg_group_block_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  PipelineContext ctx;
  ctx.limits.group = 1;
  ctx.allow_disk_use = true;
  ctx.tmp_dir = dir;
  const char* const kGroups[] = {
      R"({"_id": {"h": "$m.host", "m": {"$dateTrunc": {"date": "$t", "unit": "minute"}}},
          "a": {"$avg": "$w"}, "s": {"$sum": "$w"}})",
      R"({"_id": "$m.host", "s": {"$sum": "$w"}})",
      R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "second", "binSize": 7}},
          "a": {"$avg": "$w"}})",
  };
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (const char* group : kGroups) {
      Data data = MakeData(seed, false);
      BsonObj holder = Json(std::string(R"({"p": [{"$group": )") + group + "}]}");
      BsonObj stages = holder["p"].Obj();
      for (const PipelineContext& c : {PipelineContext(), ctx}) {
        bool taken = false;
        auto by_docs =
            RunGroup(stages, std::make_unique<VectorDocumentStream>(data.selected_docs), c);
        auto by_blocks =
            RunGroup(stages,
                     std::make_unique<BlockStream>(data.blocks, data.selected,
                                                   std::vector<std::string>{"m"}, &taken, true),
                     c);
        EXPECT_TRUE(taken) << group;
        ASSERT_TRUE(by_docs.ok()) << by_docs.status().ToString();
        ASSERT_TRUE(by_blocks.ok()) << by_blocks.status().ToString();
        EXPECT_EQ(ToJson(by_docs.value()), ToJson(by_blocks.value()))
            << group << " seed " << seed << " spilling " << (c.limits.group == 1);
        EXPECT_GT(by_docs.value().size(), 3u);
      }
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(GroupBlockTest, BoundedDatesAreDecodedOnlyWhenTheirBinsDiffer) {
  int all_whole = 0, all_crossing = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    Data data = MakeData(seed, false);
    auto run = [&](const char* group) {
      BsonObj holder = Json(std::string(R"({"p": [{"$group": )") + group + "}]}");
      bool taken = false;
      auto in = std::make_unique<BlockStream>(data.blocks, data.selected,
                                              std::vector<std::string>{"m"}, &taken,
                                              /*numbers=*/seed % 2 == 0);
      int bounded = 0, decoded = 0;
      in->CountBoundsIn(&bounded, &decoded);
      auto by_blocks = RunGroup(holder["p"].Obj(), std::move(in));
      auto by_docs =
          RunGroup(holder["p"].Obj(), std::make_unique<VectorDocumentStream>(data.selected_docs));
      EXPECT_TRUE(taken);
      EXPECT_TRUE(by_blocks.ok() && by_docs.ok());
      EXPECT_EQ(ToJson(by_docs.value()), ToJson(by_blocks.value())) << group;
      return std::make_pair(bounded, decoded);
    };
    // Expected: blocks whose rows all count are bounded; those whose dates span two hours are
    // decoded.
    int whole = 0, crossing = 0;
    for (size_t b = 0; b < data.blocks.size(); ++b) {
      if (data.selected[b].size() != data.blocks[b].size()) continue;
      ++whole;
      std::set<int64_t> hours;
      for (const BsonObj& r : data.blocks[b]) hours.insert(r["t"].DateMillis() / 3'600'000);
      crossing += hours.size() > 1;
    }
    all_whole += whole;
    all_crossing += crossing;
    EXPECT_EQ(run(R"({"_id": {"h": "$m.host",
                              "hour": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
                      "a": {"$avg": "$w"}})"),
              std::make_pair(whole, crossing));
    // Second bins split every bounded block of more than one distinct second.
    auto [bounded, decoded] =
        run(R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "second"}}, "n": {"$sum": 1}})");
    EXPECT_EQ(bounded, whole);
    EXPECT_GE(decoded, whole - 2);
    // The date is also an accumulator's input: never bounded.
    EXPECT_EQ(run(R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}},
                      "l": {"$last": "$t"}})")
                  .first,
              0);
  }
  // The data has both kinds of bounded blocks.
  EXPECT_GE(all_crossing, 1);
  EXPECT_LT(all_crossing, all_whole);
}

TEST(GroupBlockTest, EligibilityFollowsTheShapeOfTheStage) {
  auto plan = [](std::string_view group) {
    BsonObj spec = Json(group);
    std::vector<BsonElement> outputs;
    BsonElement id;
    for (const BsonElement& e : spec) {
      if (e.FieldName() == "_id") {
        id = e;
      } else {
        outputs.push_back(e);
      }
    }
    return GroupBlockPlan::Make(id, outputs);
  };
  EXPECT_TRUE(plan(R"({"_id": "$m.a", "x": {"$max": "$v"}, "n": {"$count": {}}})"));
  EXPECT_TRUE(plan(R"({"_id": {"$dateTrunc": {"date": "$t", "unit": "hour"}}, "x": {"$sum": 1}})"));
  // A dotted or computed accumulator input: evaluated on the cells it reads.
  EXPECT_TRUE(plan(R"({"_id": null, "x": {"$sum": "$a.b"}})"));
  auto computed = plan(R"({"_id": null, "x": {"$sum": {"$add": ["$a", "$b.c", 1]}}})");
  ASSERT_TRUE(computed);
  EXPECT_EQ(computed->RequiredFields(), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(plan(R"({"_id": null, "x": {"$percentile": {"input": "$a", "p": [0.5],
                                                           "method": "approximate"}}})"));
  // The whole document, variables, or options but a percentile's: not eligible.
  EXPECT_FALSE(plan(R"({"_id": "$$ROOT", "x": {"$sum": 1}})"));
  EXPECT_FALSE(plan(R"({"_id": "$$CURRENT.a", "x": {"$sum": 1}})"));
  EXPECT_FALSE(plan(R"({"_id": null, "x": {"$sum": "$$ROOT.a"}})"));
  EXPECT_FALSE(plan(R"({"_id": null, "x": {"$sum": {"$add": ["$a", "$$NOW"]}}})"));
  EXPECT_FALSE(
      plan(R"({"_id": null, "x": {"$sum": {"$let": {"vars": {"y": "$a"}, "in": "$$y"}}}})"));
  EXPECT_FALSE(
      plan(R"({"_id": null, "x": {"$topN": {"n": 2, "sortBy": {"a": 1}, "output": "$a"}}})"));
  auto p = plan(R"({"_id": {"h": "$m.host", "d": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
                    "x": {"$avg": "$v"}})");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->RequiredFields(), (std::vector<std::string>{"m", "t", "v"}));
}

}  // namespace
}  // namespace hourglass::pipeline
