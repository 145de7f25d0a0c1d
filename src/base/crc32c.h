// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum OP_MSG carries when its
// checksumPresent flag is set (mongodb/specifications source/message/OP_MSG.md, "Checksum"), and
// the one storage's append logs guard their records with.
//
// Crc32c(data, crc) extends a previous CRC: Crc32c(b, Crc32c(a)) == Crc32c(a + b), and
// Crc32c("123456789") == 0xE3069283. Uses the SSE4.2 crc32 instruction when the CPU has it and a
// slicing-by-8 table otherwise; both give identical results. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace hourglass {

uint32_t Crc32c(std::string_view data, uint32_t crc = 0);

// The table-driven implementation, always available; exposed so tests can compare both paths.
uint32_t Crc32cPortable(std::string_view data, uint32_t crc = 0);

// True if Crc32c uses the hardware instruction on this machine.
bool Crc32cIsHardwareAccelerated();

}  // namespace hourglass
