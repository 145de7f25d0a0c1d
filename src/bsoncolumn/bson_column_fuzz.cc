// libFuzzer entry point for the BSONColumn decoder and encoder: the target bson_column_fuzz of
// fuzz/CMakeLists.txt (-DHG_BUILD_FUZZ=ON; `make fuzz` builds and runs it). With clang it links
// libFuzzer; with g++ the standalone driver fuzz/standalone_main.cc. Seeds:
// fuzz/corpus/bson_column.
//
// Every input must decode to cells or give an InvalidBSON status; sanitizers flag anything else.
// DecodeBsonColumnElements (the readers' fast path) must give the same cells or the same error.
// When it decodes and every cell is valid BSON, the cells are re-encoded with BsonColumnBuilder
// and must decode back to exactly the same cells (the encoder's round trip), and the encoder's
// output must be stable when encoded again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "bson/bson.h"
#include "bsoncolumn/bson_column_builder.h"
#include "bsoncolumn/bson_column_decoder.h"

namespace {

bool CellIsValidBson(const hourglass::bsoncolumn::ColumnCell& c) {
  if (c.missing()) return true;
  const std::string& e = c.bytes();
  std::string doc(4, '\0');
  doc.append(e);
  doc.push_back('\0');
  const int32_t len = static_cast<int32_t>(doc.size());
  std::memcpy(doc.data(), &len, 4);
  return hourglass::bson::ValidateBson(doc).ok() &&
         c.element().type() != hourglass::bson::BsonType::kCodeWScope;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hourglass::bsoncolumn;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto decoded = DecodeBsonColumn(input);
  ColumnElements elements;
  const hourglass::Status fast = DecodeBsonColumnElements(input, &elements);
  if (fast.ok() != decoded.ok()) std::abort();
  if (!fast.ok() && fast.reason() != decoded.status().reason()) std::abort();
  if (fast.ok()) {
    if (elements.size() != decoded.value().size()) std::abort();
    for (size_t i = 0; i < elements.size(); ++i) {
      const auto& c = decoded.value()[i];
      if (elements.missing(i) != c.missing()) std::abort();
      if (c.missing()) continue;
      const hourglass::bson::BsonElement e = elements.element(i);
      if (std::string_view(e.raw(), 2 + e.ValueSize()) != c.bytes()) std::abort();
    }
  }
  if (!decoded.ok()) {
    if (decoded.status().code() != hourglass::ErrorCode::kInvalidBSON) std::abort();
    return 0;
  }
  for (const auto& c : decoded.value()) {
    if (!CellIsValidBson(c)) return 0;
  }
  BsonColumnBuilder builder;
  for (const auto& c : decoded.value()) {
    if (!builder.Append(c.element()).ok()) std::abort();
  }
  const std::string encoded = builder.Finish();
  auto again = DecodeBsonColumn(encoded);
  if (!again.ok() || again.value() != decoded.value()) std::abort();
  return 0;
}
