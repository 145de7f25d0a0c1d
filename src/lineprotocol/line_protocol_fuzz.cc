// libFuzzer entry point for the line protocol: the target lineprotocol_fuzz of
// fuzz/CMakeLists.txt (-DHG_BUILD_FUZZ=ON; `make fuzz` builds and runs it). Seeds:
// fuzz/corpus/lineprotocol.
//
// Parse must read any body into points and per-line errors, never crash or hang; every point
// must have a measurement and fields; what ToDocument accepts must be valid BSON whose time is a
// Date and whose tags, if any, are an object.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lineprotocol/line_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass::lineprotocol;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  ParseResult r = Parse(body);
  for (const Point& p : r.points) {
    if (p.measurement.empty() || p.fields.empty()) std::abort();
    for (Precision precision : {Precision::kNanoseconds, Precision::kHours}) {
      auto doc = ToDocument(p, precision, 0);
      if (!doc.ok()) continue;
      if (!hourglass::bson::ValidateBson(doc.value().bytes()).ok()) std::abort();
      if (doc.value()["time"].type() != hourglass::bson::BsonType::kDate) std::abort();
      auto tags = doc.value()["tags"];
      if (!tags.eoo() && tags.type() != hourglass::bson::BsonType::kObject) std::abort();
    }
  }
  for (const std::string& e : r.errors) {
    if (e.rfind("unable to parse '", 0) != 0) std::abort();
  }
  return 0;
}
