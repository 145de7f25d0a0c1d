// libFuzzer entry point for the wire parsers: the target op_msg_fuzz of fuzz/CMakeLists.txt
// (-DHG_BUILD_FUZZ=ON; `make fuzz` builds and runs it). With clang it links libFuzzer; with g++
// it links the standalone driver fuzz/standalone_main.cc. Seeds are in fuzz/corpus/op_msg.
// Every input must produce OK or an error Status; sanitizers flag anything else.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wire/message.h"
#include "wire/op_compressed.h"
#include "wire/op_msg.h"
#include "wire/op_query.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass::wire;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (size >= static_cast<size_t>(kHeaderSize)) (void)CheckHeader(ParseHeader(input.data()));

  auto msg = ParseOpMsg(input);
  if (msg.ok()) (void)msg.value().MergedBody();
  (void)ParseOpQuery(input);
  (void)ParseOpReply(input);

  auto decompressed = DecompressMessage(input);
  if (decompressed.ok()) {
    auto inner = ParseOpMsg(decompressed.value().first);
    if (inner.ok()) (void)inner.value().MergedBody();
    (void)ParseOpQuery(decompressed.value().first);
  }
  return 0;
}
