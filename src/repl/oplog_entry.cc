#include "repl/oplog_entry.h"

namespace hourglass::repl {

StatusWith<std::vector<storage::Session::Modification>> ParseEdits(const bson::BsonObj& list) {
  std::vector<storage::Session::Modification> edits;
  for (bson::BsonElement e : list) {
    if (e.type() != bson::BsonType::kObject || !e.Obj()["o"].IsNumber() ||
        !e.Obj()["n"].IsNumber() || e.Obj()["d"].type() != bson::BsonType::kBinData ||
        e.Obj()["o"].NumberLong() < 0 || e.Obj()["n"].NumberLong() < 0) {
      return Status(ErrorCode::kBadValue, "a malformed edit");
    }
    edits.push_back({std::string(e.Obj()["d"].BinData()),
                     static_cast<size_t>(e.Obj()["o"].NumberLong()),
                     static_cast<size_t>(e.Obj()["n"].NumberLong())});
  }
  return edits;
}

}  // namespace hourglass::repl
