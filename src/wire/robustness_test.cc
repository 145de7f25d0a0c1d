// Mutation-based robustness test: valid messages with bytes flipped, truncated, extended, or
// with lengths replaced by boundary values must make every parser return OK or an error — never
// crash, hang or read out of bounds (the sanitizer build catches overreads). A deterministic
// seed keeps failures reproducible.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "base/crc32c.h"
#include "wire/op_compressed.h"
#include "wire/op_msg.h"
#include "wire/op_query.h"
#include "wire/wire_test_util.h"

namespace hourglass::wire {
namespace {

using testing::Doc;
using testing::RawMessage;

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds;
  bson::BsonObj body = Doc(R"({"insert": "c", "$db": "d", "ordered": true})");
  seeds.push_back(BuildOpMsg(1, 0, Doc(R"({"ping": 1, "$db": "admin"})")));
  seeds.push_back(
      BuildOpMsg(1, 0, Doc(R"({"hello": 1, "n": {"a": [1, 2.5, "x"]}})"), kChecksumPresent));
  OpMsg msg;
  msg.body = body;
  msg.sequences.push_back(
      {"documents", {Doc(R"({"_id": 1, "t": {"$date": 0}})"), Doc(R"({"_id": 2})")}});
  msg.sequences.push_back({"more", {Doc(R"({"s": "héllo"})")}});
  seeds.push_back(BuildOpMsg(2, 0, msg));
  msg.flags = kChecksumPresent;
  seeds.push_back(BuildOpMsg(3, 0, msg));
  OpQuery q;
  q.full_collection_name = "admin.$cmd";
  q.number_to_return = -1;
  q.query = Doc(R"({"isMaster": 1, "client": {"driver": {"name": "x"}}})");
  seeds.push_back(BuildOpQuery(4, q));
  q.return_fields_selector = Doc(R"({"a": 1})");
  seeds.push_back(BuildOpQuery(5, q));
  seeds.push_back(BuildOpReply(6, 5, {body, body}));
  const size_t plain = seeds.size();
  for (size_t i = 0; i < plain; ++i) {
    for (Compressor c :
         {Compressor::kNoop, Compressor::kSnappy, Compressor::kZlib, Compressor::kZstd}) {
      auto m = CompressMessage(seeds[i], c);
      EXPECT_TRUE(m.ok());
      if (m.ok()) seeds.push_back(m.value());
    }
  }
  return seeds;
}

void SetLength(std::string* m) {
  if (m->size() < 4) return;
  int32_t len = static_cast<int32_t>(m->size());
  std::memcpy(m->data(), &len, 4);
}

// Exercises every parser on `m` and touches whatever they return.
void ParseEverything(std::string_view m) {
  if (m.size() >= static_cast<size_t>(kHeaderSize)) (void)CheckHeader(ParseHeader(m.data()));
  auto msg = ParseOpMsg(m);
  if (msg.ok()) {
    bson::BsonObj merged = msg.value().MergedBody();
    EXPECT_GE(merged.size(), msg.value().body.size());
    (void)merged.ToCanonicalJson();
  } else {
    EXPECT_FALSE(msg.status().reason().empty());
  }
  auto q = ParseOpQuery(m);
  if (q.ok()) (void)q.value().query.ToCanonicalJson();
  auto reply = ParseOpReply(m);
  if (reply.ok()) {
    for (const auto& d : reply.value().documents) (void)d.NumFields();
  }
  auto d = DecompressMessage(m);
  if (d.ok()) {
    EXPECT_EQ(ParseHeader(d.value().first.data()).message_length,
              static_cast<int32_t>(d.value().first.size()));
    (void)ParseOpMsg(d.value().first);
    (void)ParseOpQuery(d.value().first);
  }
}

std::string Mutate(const std::string& seed, std::mt19937* rng) {
  std::string m = seed;
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>((*rng)() % n); };
  switch (pick(6)) {
    case 0:  // flip a few bytes
      for (size_t k = 0, n = 1 + pick(4); k < n && !m.empty(); ++k) {
        m[pick(m.size())] ^= static_cast<char>(1 + pick(255));
      }
      break;
    case 1:  // truncate
      m.resize(pick(m.size()));
      break;
    case 2:  // append garbage
      for (size_t k = 0, n = 1 + pick(16); k < n; ++k) m.push_back(static_cast<char>((*rng)()));
      break;
    case 3: {  // boundary int32 at a random offset
      static const int32_t kValues[] = {
          -1, 0, 1, 4, 5, 16, 0x7fffffff, std::numeric_limits<int32_t>::min(), 48000000};
      if (m.size() >= 4) {
        int32_t v = kValues[pick(std::size(kValues))];
        std::memcpy(m.data() + pick(m.size() - 3), &v, 4);
      }
      break;
    }
    case 4:  // insert a byte in the middle
      m.insert(m.begin() + static_cast<std::ptrdiff_t>(pick(m.size() + 1)),
               static_cast<char>((*rng)()));
      break;
    case 5:  // delete a range
      if (!m.empty()) {
        size_t at = pick(m.size());
        m.erase(at, 1 + pick(std::min<size_t>(8, m.size() - at)));
      }
      break;
  }
  // Usually keep messageLength consistent and the checksum valid so mutations reach the
  // section and document parsers instead of stopping at the first check.
  if (pick(4) != 0) SetLength(&m);
  if (m.size() >= 24 && pick(2) == 0) {
    uint32_t flags;
    std::memcpy(&flags, m.data() + 16, 4);
    if ((flags & kChecksumPresent) != 0 && ParseHeader(m.data()).op_code == 2013) {
      uint32_t crc = Crc32c(std::string_view(m).substr(0, m.size() - 4));
      std::memcpy(m.data() + m.size() - 4, &crc, 4);
    }
  }
  return m;
}

TEST(WireRobustnessTest, SeedsParse) {
  for (const std::string& s : Seeds()) {
    const int32_t op = ParseHeader(s.data()).op_code;
    EXPECT_TRUE(CheckHeader(ParseHeader(s.data())).ok());
    switch (op) {
      case 2013:
        EXPECT_TRUE(ParseOpMsg(s).ok());
        break;
      case 2004:
        EXPECT_TRUE(ParseOpQuery(s).ok());
        break;
      case 1:
        EXPECT_TRUE(ParseOpReply(s).ok());
        break;
      case 2012:
        EXPECT_TRUE(DecompressMessage(s).ok());
        break;
      default:
        ADD_FAILURE() << "unexpected seed opcode " << op;
    }
  }
}

TEST(WireRobustnessTest, MutatedMessagesNeverCrash) {
  std::mt19937 rng(20240607);
  const std::vector<std::string> seeds = Seeds();
  int accepted = 0;
  constexpr int kIterations = 20000;
  for (int i = 0; i < kIterations; ++i) {
    std::string m = Mutate(seeds[static_cast<size_t>(i) % seeds.size()], &rng);
    // Occasionally stack a second mutation.
    if (rng() % 3 == 0) m = Mutate(m, &rng);
    ParseEverything(m);
    if (m.size() >= 16 && ParseOpMsg(m).ok()) ++accepted;
  }
  // Sanity: the mutator is not so destructive that nothing ever parses.
  EXPECT_GT(accepted, 0);
}

TEST(WireRobustnessTest, EveryTruncationOfEverySeedIsRejectedCleanly) {
  for (const std::string& s : Seeds()) {
    for (size_t n = 0; n < s.size(); ++n) {
      std::string t = s.substr(0, n);
      ParseEverything(t);
      SetLength(&t);
      ParseEverything(t);
    }
  }
}

}  // namespace
}  // namespace hourglass::wire
