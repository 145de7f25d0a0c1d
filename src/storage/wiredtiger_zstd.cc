// The "zstd" block compressor for WiredTiger tables. Debian's WiredTiger ships snappy and zlib
// extensions only, so Hourglass registers its own: a local extension (looked up in the running
// program, loaded with early_load so that recovery can read zstd pages) that wraps libzstd.
//
// Block layout: an 8-byte little-endian length of the zstd frame, then the frame. WiredTiger may
// hand decompress() a source rounded up to its allocation size with zero padding, which a zstd
// frame decoder would reject; the stored length says where the frame ends (as WiredTiger's own
// zstd extension does).
#include <wiredtiger_ext.h>
#include <zstd.h>

#include "storage/wiredtiger_kv_engine.h"

namespace {

constexpr size_t kHeader = 8;

// One per connection: the compressor and the level its extension configuration named
// (compression_level, from EngineOptions::zstd_level), freed by WiredTiger's terminate call.
struct ZstdCompressor {
  WT_COMPRESSOR iface;
  int level;
};

void PutLength(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLength(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

int Compress(WT_COMPRESSOR* self, WT_SESSION*, uint8_t* src, size_t src_len, uint8_t* dst,
             size_t dst_len, size_t* result_lenp, int* compression_failed) {
  if (dst_len <= kHeader) {
    *compression_failed = 1;
    return 0;
  }
  const int level = reinterpret_cast<ZstdCompressor*>(self)->level;
  const size_t n = ZSTD_compress(dst + kHeader, dst_len - kHeader, src, src_len, level);
  // An error here is almost always "destination too small": the block does not shrink.
  if (ZSTD_isError(n) || n + kHeader >= src_len) {
    *compression_failed = 1;
    return 0;
  }
  PutLength(dst, n);
  *result_lenp = n + kHeader;
  *compression_failed = 0;
  return 0;
}

// Errors are WT_ERROR: WiredTiger reports the failed read of the page (and the checksum of the
// block has already passed, so this means a corrupt frame).
int Decompress(WT_COMPRESSOR*, WT_SESSION*, uint8_t* src, size_t src_len, uint8_t* dst,
               size_t dst_len, size_t* result_lenp) {
  if (src_len < kHeader) return WT_ERROR;
  const uint64_t frame = GetLength(src);
  if (frame > src_len - kHeader) return WT_ERROR;
  const size_t n = ZSTD_decompress(dst, dst_len, src + kHeader, frame);
  if (ZSTD_isError(n)) return WT_ERROR;
  *result_lenp = n;
  return 0;
}

int PreSize(WT_COMPRESSOR*, WT_SESSION*, uint8_t*, size_t src_len, size_t* result_lenp) {
  *result_lenp = ZSTD_compressBound(src_len) + kHeader;
  return 0;
}

int Terminate(WT_COMPRESSOR* self, WT_SESSION*) {
  delete reinterpret_cast<ZstdCompressor*>(self);
  return 0;
}

}  // namespace

// The entry point WiredTiger looks up in the program ("local" extension). Exported from the
// executable's dynamic symbol table by the link option hg_storage adds (CMakeLists.txt).
// Its configuration may name compression_level (WiredTiger's own zstd extension's key); without
// one, kDefaultZstdLevel.
extern "C" __attribute__((visibility("default"))) int hourglass_wiredtiger_zstd_init(
    WT_CONNECTION* conn, WT_CONFIG_ARG* config) {
  int level = hourglass::storage::kDefaultZstdLevel;
  WT_EXTENSION_API* api = conn->get_extension_api(conn);
  WT_CONFIG_ITEM v;
  if (api->config_get(api, nullptr, config, "compression_level", &v) == 0) {
    level = static_cast<int>(v.val);
  }
  auto* c = new ZstdCompressor{{Compress, Decompress, PreSize, Terminate}, level};
  const int ret = conn->add_compressor(conn, "zstd", &c->iface, nullptr);
  if (ret != 0) delete c;
  return ret;
}
