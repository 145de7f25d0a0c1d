// libFuzzer entry point for the query language's parsers: the target query_fuzz of
// fuzz/CMakeLists.txt (-DHG_BUILD_FUZZ=ON; `make fuzz` builds and runs it). Seeds:
// fuzz/corpus/query.
//
// An input is one BSON document {f: <filter>, p: <projection>, u: <update>, a: <arrayFilters>}
// (each optional; anything else is refused before the parsers). Each part must parse or give an
// error Status; what parses is applied to the input document itself, which must also give a
// document or a Status. Sanitizers flag anything else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bson/bson.h"
#include "query/matcher.h"
#include "query/projection.h"
#include "query/update.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass;
  const std::string bytes(reinterpret_cast<const char*>(data), size);  // aligned, owned copy
  if (!bson::ValidateBson(bytes).ok()) return 0;
  const bson::BsonObj doc(bytes.data());
  const bson::BsonObj filter = doc["f"].Obj();
  auto matcher = query::Matcher::Parse(filter);
  if (matcher.ok()) (void)matcher.value().Matches(doc);
  if (doc["p"].type() == bson::BsonType::kObject) {
    auto projection = query::Projection::Parse(doc["p"].Obj(), filter);
    if (projection.ok()) (void)projection.value().Apply(doc);
  }
  bson::BsonElement u = doc["u"];
  if (u.type() == bson::BsonType::kObject || u.type() == bson::BsonType::kArray) {
    auto update = u.type() == bson::BsonType::kObject
                      ? query::UpdateDriver::Parse(u.Obj(), doc["a"].Obj())
                      : query::UpdateDriver::ParsePipeline(u.Obj(), doc["a"].Obj());
    if (update.ok()) {
      bool modified = false;
      (void)update.value().Apply(doc, false, &modified, matcher.ok() ? &matcher.value() : nullptr);
    }
  }
  return 0;
}
