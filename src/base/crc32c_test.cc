#include "base/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace hourglass {
namespace {

// Check values from RFC 3720 (iSCSI) appendix B.4 and the CRC catalogue's "check" for CRC-32C.
TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  std::string descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32cTest, PortableMatchesKnownVectors) {
  EXPECT_EQ(Crc32cPortable("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32cPortable(std::string(32, '\0')), 0x8A9136AAu);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  const std::string data = "The quick brown fox jumps over the lazy dog, twice over.";
  for (size_t split = 0; split <= data.size(); ++split) {
    std::string_view v(data);
    EXPECT_EQ(Crc32c(v.substr(split), Crc32c(v.substr(0, split))), Crc32c(v)) << split;
  }
}

TEST(Crc32cTest, HardwareAndPortableAgreeOnAnyLengthAndAlignment) {
  std::mt19937 rng(42);
  std::string buf(1100, '\0');
  for (char& c : buf) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t len : {0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000}) {
      std::string_view v(buf.data() + offset, len);
      EXPECT_EQ(Crc32c(v), Crc32cPortable(v)) << offset << " " << len;
    }
  }
}

}  // namespace
}  // namespace hourglass
