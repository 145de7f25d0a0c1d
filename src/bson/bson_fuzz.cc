// libFuzzer entry point for BSON validation and Extended JSON: the target bson_fuzz of
// fuzz/CMakeLists.txt (-DHG_BUILD_FUZZ=ON; `make fuzz` builds and runs it). Seeds:
// fuzz/corpus/bson.
//
// ValidateBson must accept or refuse every input with a Status. What it accepts must walk and
// print (ToJson); FromJson must parse or refuse the input read as text, and what it parses must
// itself be valid BSON that prints again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bson/bson.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass::bson;
  const std::string bytes(reinterpret_cast<const char*>(data), size);  // aligned, owned copy
  if (ValidateBson(bytes).ok()) {
    BsonObj doc(bytes.data());
    (void)doc.ToJson();
    for (const BsonElement& e : doc) (void)e.size();
  }
  auto parsed = FromJson(bytes);
  if (parsed.ok()) {
    const BsonObj& doc = parsed.value();
    if (!ValidateBson(doc.bytes()).ok()) std::abort();
    (void)doc.ToJson();
  }
  return 0;
}
