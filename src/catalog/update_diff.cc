#include "catalog/update_diff.h"

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bson/little_endian.h"

namespace hourglass::catalog {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;
using bson::Int32Bytes;

namespace {

// The same type and value bytes (a changed field name never compares: fields are matched by it).
bool SameValue(const BsonElement& a, const BsonElement& b) {
  return a.type() == b.type() && a.ValueSize() == b.ValueSize() &&
         std::memcmp(a.value(), b.value(), a.ValueSize()) == 0;
}

Status BadDiff(const std::string& why) {
  return Status(ErrorCode::kBadValue, "cannot apply the update diff: " + why);
}

// The diff of one object (ComputeUpdateDiff's contract), at any depth.
std::optional<BsonObj> DiffObjects(const BsonObj& before, const BsonObj& after,
                                   SubDiffs sub_diffs) {
  std::unordered_set<std::string_view> new_names;
  for (BsonElement e : after) {
    if (!new_names.insert(e.FieldName()).second) return std::nullopt;  // a repeated name
  }
  BsonBuilder removed, updated, inserted;
  int n_removed = 0, n_updated = 0, n_inserted = 0;
  std::vector<std::pair<std::string, BsonObj>> subs;
  // The kept fields must come first in `after`, in their old order; the rest are new (an old
  // name there was removed, so is not in `after`, or would have broken the order). Built so,
  // the diff applies to `before` as `after` byte for byte.
  auto next = after.begin();
  for (BsonElement e : before) {
    if (!new_names.contains(e.FieldName())) {
      removed.AppendBool(e.FieldName(), false);
      ++n_removed;
      continue;
    }
    if (next == after.end() || (*next).FieldName() != e.FieldName()) return std::nullopt;
    if (!SameValue(e, *next)) {
      std::optional<BsonObj> sub;
      if (e.type() == BsonType::kObject && (*next).type() == BsonType::kObject) {
        sub = DiffObjects(e.Obj(), (*next).Obj(), sub_diffs);
      }
      if (sub) {
        subs.emplace_back("s" + std::string(e.FieldName()), std::move(*sub));
      } else {
        updated.AppendElement(*next);
        ++n_updated;
      }
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
  for (const auto& [name, sub] : subs) diff.AppendObject(name, sub);
  BsonObj out = diff.Obj();
  if (sub_diffs == SubDiffs::kWhenShorter && out.bytes().size() >= after.bytes().size()) {
    return std::nullopt;
  }
  return out;
}

// A diff's sections, by kind.
struct Sections {
  BsonObj removed, updated, inserted, binaries;
  std::vector<std::pair<std::string_view, BsonObj>> subs;  // field name, its diff
};

StatusWith<Sections> ReadSections(const BsonObj& diff) {
  Sections out;
  for (BsonElement section : diff) {
    const std::string_view name = section.FieldName();
    if (section.type() != BsonType::kObject) {
      return BadDiff("section '" + std::string(name) + "' is not an object");
    }
    if (name == "d") {
      out.removed = section.Obj();
    } else if (name == "u") {
      out.updated = section.Obj();
    } else if (name == "i") {
      out.inserted = section.Obj();
    } else if (name == "b") {
      out.binaries = section.Obj();
    } else if (name.starts_with("s")) {
      if (section.Obj().HasField("a")) {
        return BadDiff("array diffs are not supported ('" + std::string(name) + "')");
      }
      out.subs.emplace_back(name.substr(1), section.Obj());
    } else {
      return BadDiff("section '" + std::string(name) + "' is not supported");
    }
  }
  return out;
}

// The document after a diff, as pieces in order: runs of the document's bytes kept (ascending,
// never overlapping) and new bytes between them. Both ways of applying a diff read it.
class DiffPlan {
 public:
  struct Piece {
    bool keep = false;
    size_t old_off = 0;  // kept: where in the document before
    size_t len = 0;      // kept: how many bytes
    std::string bytes;   // new bytes
  };

  explicit DiffPlan(const BsonObj& doc) : base_(doc.data()) {}

  Status Object(size_t obj_off, const BsonObj& diff) {
    HG_ASSIGN_OR_RETURN(Sections sec, ReadSections(diff));
    const BsonObj obj(base_ + obj_off);
    const size_t start = total_;
    // The object's length, known once its fields are: a placeholder until then.
    Put(std::string(4, '\0'));
    const size_t header_piece = pieces_.size() - 1;
    const size_t header_pos = pieces_.back().bytes.size() - 4;
    std::unordered_set<std::string_view> updated_in_place;
    size_t binaries_found = 0;
    for (BsonElement e : obj) {
      const std::string_view name = e.FieldName();
      const size_t e_off = static_cast<size_t>(e.raw() - base_);
      if (sec.removed.HasField(name)) continue;
      if (BsonElement u = sec.updated.GetField(name); !u.eoo()) {
        Put(std::string_view(u.raw(), u.size()));
        updated_in_place.insert(name);
        continue;
      }
      if (sec.inserted.HasField(name)) {
        return BadDiff("field '" + std::string(name) + "' to insert exists");
      }
      if (BsonElement b = sec.binaries.GetField(name); !b.eoo()) {
        HG_RETURN_IF_ERROR(Binary(e, e_off, b));
        ++binaries_found;
        continue;
      }
      const BsonObj* sub = nullptr;
      for (const auto& [field, d] : sec.subs) {
        if (field == name) sub = &d;
      }
      if (sub != nullptr) {
        if (e.type() != BsonType::kObject) {
          return BadDiff("field '" + std::string(name) + "' has a sub-diff but is not an object");
        }
        Keep(e_off, 2 + name.size());  // type and name
        HG_RETURN_IF_ERROR(Object(static_cast<size_t>(e.value() - base_), *sub));
        continue;
      }
      Keep(e_off, e.size());
    }
    if (binaries_found != static_cast<size_t>(sec.binaries.NumFields())) {
      return BadDiff("a binary diff names a field that is missing");
    }
    // As MongoDB applies a diff: an update of a missing field adds it, before the inserts.
    for (BsonElement u : sec.updated) {
      if (!updated_in_place.contains(u.FieldName())) Put(std::string_view(u.raw(), u.size()));
    }
    for (BsonElement i : sec.inserted) Put(std::string_view(i.raw(), i.size()));
    Keep(obj_off + static_cast<size_t>(obj.size()) - 1, 1);  // the terminating byte
    const std::string len = Int32Bytes(static_cast<uint32_t>(total_ - start));
    pieces_[header_piece].bytes.replace(header_pos, 4, len);
    return Status::OK();
  }

  const std::vector<Piece>& pieces() const { return pieces_; }
  const char* base() const { return base_; }
  size_t total() const { return total_; }

 private:
  // BinData element `e` at `e_off` with binary diff `spec` ({o, d}) applied.
  Status Binary(const BsonElement& e, size_t e_off, const BsonElement& spec) {
    const std::string name(e.FieldName());
    if (e.type() != BsonType::kBinData) {
      return BadDiff("field '" + name + "' has a binary diff but is not BinData");
    }
    if (spec.type() != BsonType::kObject) {
      return BadDiff("the binary diff of '" + name + "' is not an object");
    }
    const BsonObj s = spec.Obj();
    const std::optional<int64_t> o = s["o"].IsNumber() ? s["o"].WholeNumber() : std::nullopt;
    if (!o || *o < 0 || s["d"].type() != BsonType::kBinData) {
      return BadDiff("the binary diff of '" + name + "' needs a whole offset 'o' and BinData 'd'");
    }
    const std::string_view data = s["d"].BinData();
    const size_t offset = static_cast<size_t>(*o);
    if (offset > e.BinData().size()) {
      return BadDiff("the binary diff of '" + name + "' starts past its end");
    }
    const size_t value_off = static_cast<size_t>(e.value() - base_);
    Keep(e_off, 2 + name.size());
    Put(Int32Bytes(static_cast<uint32_t>(offset + data.size())));
    Keep(value_off + 4, 1 + offset);  // subtype, then the bytes kept
    Put(data);
    return Status::OK();
  }

  void Keep(size_t off, size_t len) {
    if (len == 0) return;
    total_ += len;
    if (!pieces_.empty() && pieces_.back().keep &&
        pieces_.back().old_off + pieces_.back().len == off) {
      pieces_.back().len += len;
      return;
    }
    pieces_.push_back(Piece{true, off, len, {}});
  }
  void Put(std::string_view bytes) {
    if (bytes.empty()) return;
    total_ += bytes.size();
    if (pieces_.empty() || pieces_.back().keep) pieces_.push_back(Piece{});
    pieces_.back().bytes.append(bytes);
  }

  const char* base_;
  std::vector<Piece> pieces_;
  size_t total_ = 0;
};

}  // namespace

std::optional<BsonObj> ComputeUpdateDiff(const BsonObj& before, const BsonObj& after,
                                         SubDiffs sub_diffs) {
  return DiffObjects(before, after, sub_diffs);
}

StatusWith<BsonObj> ApplyUpdateDiff(const BsonObj& doc, const BsonObj& diff) {
  DiffPlan plan(doc);
  HG_RETURN_IF_ERROR(plan.Object(0, diff));
  auto out = std::make_shared<std::string>();
  out->reserve(plan.total());
  for (const DiffPlan::Piece& p : plan.pieces()) {
    if (p.keep) {
      out->append(plan.base() + p.old_off, p.len);
    } else {
      out->append(p.bytes);
    }
  }
  return BsonObj(std::shared_ptr<const std::string>(std::move(out)));
}

StatusWith<std::vector<storage::Session::Modification>> UpdateDiffEdits(const BsonObj& doc,
                                                                        const BsonObj& diff) {
  DiffPlan plan(doc);
  HG_RETURN_IF_ERROR(plan.Object(0, diff));
  // Each edit replaces what lies between two kept runs; applied from the start, everything before
  // an edit is already as it ends, so its offset is where it falls in the document after.
  std::vector<storage::Session::Modification> edits;
  size_t old_pos = 0, new_pos = 0, gap_start = 0;
  std::string pending;
  auto flush = [&](size_t old_end) {
    if (old_end != old_pos || !pending.empty()) {
      edits.push_back({std::move(pending), gap_start, old_end - old_pos});
      pending.clear();
    }
  };
  for (const DiffPlan::Piece& p : plan.pieces()) {
    if (!p.keep) {
      pending.append(p.bytes);
      new_pos += p.bytes.size();
      continue;
    }
    flush(p.old_off);
    old_pos = p.old_off + p.len;
    new_pos += p.len;
    gap_start = new_pos;
  }
  flush(static_cast<size_t>(doc.size()));
  return edits;
}

bool UpdateDiffMayChange(const BsonObj& diff, std::string_view path) {
  const size_t dot = path.find('.');
  const std::string_view first = path.substr(0, dot);
  const std::string_view rest = dot == std::string_view::npos ? "" : path.substr(dot + 1);
  for (BsonElement section : diff) {
    const std::string_view name = section.FieldName();
    if (section.type() != BsonType::kObject) return true;  // malformed: assume the worst
    if (name == "d" || name == "u" || name == "i" || name == "b") {
      if (section.Obj().HasField(first)) return true;
    } else if (name.starts_with("s") && name.substr(1) == first) {
      if (rest.empty() || section.Obj().HasField("a")) return true;
      if (UpdateDiffMayChange(section.Obj(), rest)) return true;
    }
  }
  return false;
}

}  // namespace hourglass::catalog
