#include "base/uuid.h"

#include <random>

namespace hourglass {

std::string NewUuid() {
  static thread_local std::mt19937_64 rng{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                          std::random_device{}()};
  std::string u(16, '\0');
  for (int i = 0; i < 16; i += 8) {
    uint64_t v = rng();
    for (int j = 0; j < 8; ++j) u[i + j] = static_cast<char>(v >> (8 * j));
  }
  u[6] = static_cast<char>((u[6] & 0x0f) | 0x40);
  u[8] = static_cast<char>((u[8] & 0x3f) | 0x80);
  return u;
}

std::string UuidString(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    const auto b = static_cast<unsigned char>(bytes[i]);
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

}  // namespace hourglass
