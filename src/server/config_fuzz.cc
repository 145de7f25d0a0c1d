// libFuzzer entry point for the YAML config file (--config): the target config_fuzz of
// fuzz/CMakeLists.txt (-DHG_BUILD_FUZZ=ON; `make fuzz` builds and runs it). Seeds:
// fuzz/corpus/config.
//
// ApplyConfigText must accept or refuse every input with a Status: no exception escapes, no
// crash, whatever the YAML (deep nesting, aliases, wrong types, huge numbers).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hourglass::server::ParsedOptions out;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)hourglass::server::ApplyConfigText(text, "fuzz.conf", &out);
  return 0;
}
