#include "repl/update_diff.h"

#include <cstring>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace hourglass::repl {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// The same type and value bytes (a changed field name never compares: fields are matched by it).
bool SameValue(const BsonElement& a, const BsonElement& b) {
  return a.type() == b.type() && a.ValueSize() == b.ValueSize() &&
         std::memcmp(a.value(), b.value(), a.ValueSize()) == 0;
}

Status BadDiff(const std::string& why) {
  return Status(ErrorCode::kBadValue, "cannot apply the update diff: " + why);
}

}  // namespace

std::optional<BsonObj> ComputeUpdateDiff(const BsonObj& before, const BsonObj& after) {
  std::unordered_set<std::string_view> new_names;
  for (BsonElement e : after) {
    if (!new_names.insert(e.FieldName()).second) return std::nullopt;  // a repeated name
  }
  BsonBuilder removed, updated, inserted;
  int n_removed = 0, n_updated = 0, n_inserted = 0;
  // The kept fields must come first in `after`, in their old order; the rest are new (an old
  // name there was removed, so is not in `after`, or would have broken the order). Built so,
  // the diff applies to `before` as `after` byte for byte (ApplyUpdateDiff).
  auto next = after.begin();
  for (BsonElement e : before) {
    if (!new_names.contains(e.FieldName())) {
      removed.AppendBool(e.FieldName(), false);
      ++n_removed;
      continue;
    }
    if (next == after.end() || (*next).FieldName() != e.FieldName()) return std::nullopt;
    if (!SameValue(e, *next)) {
      updated.AppendElement(*next);
      ++n_updated;
    }
    ++next;
  }
  for (; next != after.end(); ++next) {
    inserted.AppendElement(*next);
    ++n_inserted;
  }
  BsonBuilder diff;
  if (n_removed > 0) diff.AppendObject("d", removed.Obj());
  if (n_updated > 0) diff.AppendObject("u", updated.Obj());
  if (n_inserted > 0) diff.AppendObject("i", inserted.Obj());
  BsonObj out = diff.Obj();
  if (out.bytes().size() >= after.bytes().size()) return std::nullopt;
  return out;
}

StatusWith<BsonObj> ApplyUpdateDiff(const BsonObj& doc, const BsonObj& diff) {
  BsonObj removed, updated, inserted;
  for (BsonElement section : diff) {
    const std::string_view name = section.FieldName();
    if (section.type() != BsonType::kObject) {
      return BadDiff("section '" + std::string(name) + "' is not an object");
    }
    if (name == "d") {
      removed = section.Obj();
    } else if (name == "u") {
      updated = section.Obj();
    } else if (name == "i") {
      inserted = section.Obj();
    } else {
      return BadDiff("section '" + std::string(name) + "' is not supported");
    }
  }
  BsonBuilder out;
  for (BsonElement e : doc) {
    if (!removed.GetField(e.FieldName()).eoo()) continue;
    BsonElement changed = updated.GetField(e.FieldName());
    out.AppendElement(changed.eoo() ? e : changed);
  }
  for (BsonElement e : inserted) {
    if (!doc.GetField(e.FieldName()).eoo()) {
      return BadDiff("field '" + std::string(e.FieldName()) + "' to insert exists");
    }
    out.AppendElement(e);
  }
  return out.Obj();
}

}  // namespace hourglass::repl
