#include "storage/record_id.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace hourglass::storage {
namespace {

TEST(RecordIdTest, RoundTripsEdgeValues) {
  for (int64_t id : {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0}, int64_t{1},
                     int64_t{255}, int64_t{256}, std::numeric_limits<int64_t>::max()}) {
    std::string enc = EncodeRecordId(id);
    ASSERT_EQ(enc.size(), kRecordIdSize);
    EXPECT_EQ(DecodeRecordId(enc), id);
  }
}

TEST(RecordIdTest, KnownEncodings) {
  EXPECT_EQ(EncodeRecordId(0), std::string("\x80\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(EncodeRecordId(-1), std::string("\x7f\xff\xff\xff\xff\xff\xff\xff", 8));
  EXPECT_EQ(EncodeRecordId(std::numeric_limits<int64_t>::min()), std::string(8, '\0'));
  EXPECT_EQ(EncodeRecordId(1), std::string("\x80\0\0\0\0\0\0\x01", 8));
}

TEST(RecordIdTest, ByteOrderMatchesNumericOrder) {
  std::vector<int64_t> ids = {std::numeric_limits<int64_t>::min(),
                              -1000000000000,
                              -65536,
                              -256,
                              -255,
                              -2,
                              -1,
                              0,
                              1,
                              2,
                              255,
                              256,
                              65536,
                              1000000000000,
                              std::numeric_limits<int64_t>::max()};
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    EXPECT_LT(EncodeRecordId(ids[i]), EncodeRecordId(ids[i + 1])) << ids[i];
  }
}

TEST(RecordIdTest, AppendBuildsCompositeKeys) {
  std::string key = "ab";
  AppendRecordId(7, &key);
  ASSERT_EQ(key.size(), 10u);
  EXPECT_EQ(DecodeRecordId(std::string_view(key).substr(2)), 7);
}

TEST(RecordIdTest, ClusteredRecordIdEncodesAsTheObjectIdBytes) {
  const uint8_t oid[12] = {0x65, 0x10, 0x20, 0x30, 0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4};
  int64_t id = ClusteredRecordId(oid);
  EXPECT_EQ(EncodeRecordId(id), std::string(reinterpret_cast<const char*>(oid), 8));
  EXPECT_EQ(ClusteredRecordIdSeconds(id), 0x65102030u);
  EXPECT_LE(ClusteredRecordIdLow(0x65102030u), id);
  EXPECT_GE(ClusteredRecordIdHigh(0x65102030u), id);
  EXPECT_GT(ClusteredRecordIdLow(0x65102031u), id);
  EXPECT_LT(ClusteredRecordIdHigh(0x6510202fu), id);
  // Timestamps from 2^31 on (dates before 1970 wrap there) sort after every earlier timestamp.
  EXPECT_LT(ClusteredRecordIdHigh(0x7fffffffu), ClusteredRecordIdLow(0x80000000u));
  EXPECT_EQ(ClusteredRecordIdSeconds(ClusteredRecordIdHigh(0xffffffffu)), 0xffffffffu);
  EXPECT_EQ(EncodeRecordId(ClusteredRecordIdLow(0)), std::string(8, '\0'));
}

}  // namespace
}  // namespace hourglass::storage
