#include "bsoncolumn/bson_column_builder.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <queue>

#include "bsoncolumn/bson_column_decoder.h"
#include "bsoncolumn/bson_column_values.h"

namespace hourglass::bsoncolumn {

using bson::BsonType;
using bson::FieldCursor;
using bson::FieldView;

namespace {

constexpr char kEmptyDoc[] = {5, 0, 0, 0, 0};

bool IsObjOrArray(BsonType t) { return t == BsonType::kObject || t == BsonType::kArray; }
bool IsEmptyDoc(const char* doc) { return bson::ReadInt32(doc) <= 5; }
std::string_view DocBytes(const char* doc) {
  return std::string_view(doc, static_cast<size_t>(bson::ReadInt32(doc)));
}
std::string_view RawElement(const FieldView& f) {
  return std::string_view(f.raw, static_cast<size_t>(f.value - f.raw) + f.value_size);
}

// Scalar fields of `doc`, descending into objects and arrays.
uint32_t CountLeaves(const char* doc) {
  uint32_t n = 0;
  for (FieldCursor c(doc); c.Next();) {
    const FieldView& f = c.field();
    n += IsObjOrArray(f.type) ? CountLeaves(f.value) : 1;
  }
  return n;
}

bool ContainsCodeWScope(const char* doc) {
  for (FieldCursor c(doc); c.Next();) {
    const FieldView& f = c.field();
    if (f.type == BsonType::kCodeWScope) return true;
    if (IsObjOrArray(f.type) && ContainsCodeWScope(f.value)) return true;
  }
  return false;
}

// Calls f(ref_leaf, nullptr) for the leaves of `doc` until an empty sub-document is found;
// returns true if one was (or `doc` itself is empty).
template <class F>
bool TraverseUntilEmptyObj(const char* doc, F& f) {
  for (FieldCursor c(doc); c.Next();) {
    const FieldView field = c.field();
    if (IsObjOrArray(field.type)) {
      if (TraverseUntilEmptyObj(field.value, f)) return true;
    } else {
      f(&field, nullptr);
    }
  }
  return IsEmptyDoc(doc);
}

bool HasEmptyObj(const char* doc) {
  auto noop = [](const FieldView*, const FieldView*) {};
  return TraverseUntilEmptyObj(doc, noop);
}

// Walks `ref` and `obj` together: f(ref_leaf, obj_leaf or nullptr) for every scalar of `ref`.
// False if `obj` does not fit `ref` (order, types, empty sub-documents, extra fields).
template <class F>
bool LockStepImpl(const char* ref, const char* obj, F& f, bool* obj_exhausted) {
  FieldCursor it(obj);
  bool has = it.Next();
  for (FieldCursor rc(ref); rc.Next();) {
    const FieldView r = rc.field();
    if (IsObjOrArray(r.type)) {
      if (has && r.name == it.field().name) {
        if (it.field().type != r.type) return false;
        if (IsEmptyDoc(r.value) != IsEmptyDoc(it.field().value)) return false;
        const char* sub = it.field().value;
        has = it.Next();
        bool inner_exhausted = false;
        if (!LockStepImpl(r.value, sub, f, &inner_exhausted) || !inner_exhausted) return false;
      } else if (TraverseUntilEmptyObj(r.value, f)) {
        return false;
      }
    } else {
      const bool same = has && r.name == it.field().name;
      if (same && IsObjOrArray(it.field().type)) return false;
      if (same) {
        const FieldView cur = it.field();
        has = it.Next();
        f(&r, &cur);
      } else {
        f(&r, nullptr);
      }
    }
  }
  *obj_exhausted = !has;
  return true;
}

template <class F>
bool LockStep(const char* ref, const char* obj, F&& f) {
  bool exhausted = false;
  return LockStepImpl(ref, obj, f, &exhausted) && exhausted;
}

std::vector<FieldView> Fields(const char* doc) {
  std::vector<FieldView> out;
  for (FieldCursor c(doc); c.Next();) out.push_back(c.field());
  return out;
}

// Merges the fields of `obj` into `ref` (fields both have keep ref's order), writing the merged
// document's fields to `out`. False if they cannot be merged.
bool MergeFields(const char* ref, const char* obj, std::string& out) {
  const std::vector<FieldView> r = Fields(ref), o = Fields(obj);
  std::vector<std::string_view> names;
  auto has = [&](std::string_view n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  auto append = [&](const FieldView& f) {
    if ((IsObjOrArray(f.type) && HasEmptyObj(f.value)) || has(f.name)) return false;
    out.append(RawElement(f));
    names.push_back(f.name);
    return true;
  };
  size_t i = 0, j = 0;
  while (i < r.size() && j < o.size()) {
    const FieldView& a = r[i];
    const FieldView& b = o[j];
    if (a.name == b.name) {
      const bool a_doc = IsObjOrArray(a.type), b_doc = IsObjOrArray(b.type);
      if (a_doc && b_doc && a.type == b.type) {
        if (IsEmptyDoc(a.value) != IsEmptyDoc(b.value)) return false;
        if (has(a.name)) return false;
        out.push_back(static_cast<char>(a.type));
        out.append(a.name);
        out.push_back('\0');
        const size_t size_pos = out.size();
        out.append(4, '\0');
        if (!MergeFields(a.value, b.value, out)) return false;
        out.push_back('\0');
        const int32_t len = static_cast<int32_t>(out.size() - size_pos);
        std::memcpy(out.data() + size_pos, &len, 4);
        names.push_back(a.name);
      } else if (a_doc || b_doc) {
        return false;
      } else {
        if (has(a.name)) return false;
        out.append(RawElement(a));
        names.push_back(a.name);
      }
      ++i;
      ++j;
      continue;
    }
    const bool later = std::any_of(o.begin() + j + 1, o.end(),
                                   [&](const FieldView& f) { return f.name == a.name; });
    if (!later) {
      if (!append(a)) return false;
      ++i;
    } else {
      if (!append(b)) return false;
      ++j;
    }
  }
  for (; i < r.size(); ++i) {
    if (!append(r[i])) return false;
  }
  for (; j < o.size(); ++j) {
    if (!append(o[j])) return false;
  }
  return true;
}

// Cells a decoder reads from one block: 1 for a literal, else the Simple-8b words' counts.
uint64_t BlockCells(const char* block) {
  if (IsLiteralControl(static_cast<uint8_t>(block[0]))) return 1;
  uint64_t cells = 0;
  const int words = (static_cast<uint8_t>(block[0]) & 0x0F) + 1;
  for (int w = 0; w < words; ++w) {
    uint64_t word;
    std::memcpy(&word, block + 1 + 8 * w, 8);
    cells += static_cast<uint64_t>(Simple8bWordCount(word));
  }
  return cells;
}

// A finished leaf's blocks: its buffer and the (offset, size) of each block in it.
struct LeafBlocks {
  const std::string* buf;
  std::deque<std::pair<size_t, size_t>>* blocks;
};

// Appends every block of `leaves` to `out` in decoding order (see MergeReadyBlocks); every leaf is
// finished, so a leaf without blocks left has ended.
template <class Heap>
void AppendAllBlocks(Heap& heap, const std::vector<LeafBlocks>& leaves, std::string& out) {
  while (!heap.empty()) {
    const auto [cells, index] = heap.top();
    heap.pop();
    const LeafBlocks& leaf = leaves[index];
    if (leaf.blocks->empty()) continue;
    const auto [offset, size] = leaf.blocks->front();
    leaf.blocks->pop_front();
    const char* block = leaf.buf->data() + offset;
    out.append(block, size);
    heap.emplace(cells + BlockCells(block), index);
  }
}

std::optional<std::string> MergeObj(const char* ref, const char* obj) {
  std::string out(4, '\0');
  if (!MergeFields(ref, obj, out)) return std::nullopt;
  out.push_back('\0');
  const int32_t len = static_cast<int32_t>(out.size());
  std::memcpy(out.data(), &len, 4);
  return out;
}

}  // namespace

bool BsonColumnBuilder::CanHold(BsonType type, const char* value) {
  return type != BsonType::kCodeWScope && !(IsObjOrArray(type) && ContainsCodeWScope(value));
}

Status BsonColumnBuilder::Append(const bson::BsonElement& e) {
  if (e.eoo()) {
    Skip();
    return Status::OK();
  }
  const BsonType type = e.type();
  if (!CanHold(type, e.value())) {
    return Status(ErrorCode::kBadValue, "a BSONColumn cannot hold CodeWScope values");
  }
  if (!IsObjOrArray(type) || IsEmptyDoc(e.value())) {
    AppendScalar(type, std::string_view(e.value(), e.ValueSize()));
    return Status::OK();
  }
  ++cells_;
  AppendObject(e);
  return Status::OK();
}

Status BsonColumnBuilder::Append(const bson::FieldView& f) {
  // Scalars other than CodeWScope, the common case, without re-deriving the element's parts.
  if (IsObjOrArray(f.type) || f.type == BsonType::kCodeWScope) return Append(f.Element());
  AppendScalar(f.type, std::string_view(f.value, f.value_size));
  return Status::OK();
}

void BsonColumnBuilder::AppendScalar(BsonType type, std::string_view value) {
  ++cells_;
  if (mode_ != Mode::kRegular) FlushInterleaved();
  AppendRegular(type, value);
}

void BsonColumnBuilder::AppendRegular(BsonType type, std::string_view value) {
  ColumnSink sink{&buf_};
  regular_.Append(sink, type, value);
}

void BsonColumnBuilder::AppendObject(const bson::BsonElement& e) {
  const BsonType type = e.type();
  const char* obj = e.value();
  const std::string_view obj_bytes = DocBytes(obj);
  const uint32_t leaves = CountLeaves(obj);

  if (mode_ == Mode::kRegular) {
    if (leaves == 0) {
      AppendRegular(type, obj_bytes);
    } else {
      StartDeterminingReference(obj_bytes, type);
    }
    return;
  }
  if (type != reference_type_) {
    FlushInterleaved();
    // An object without scalars cannot be a reference object (it would have no streams).
    if (leaves == 0) {
      AppendRegular(type, obj_bytes);
      return;
    }
    ++interleave_restarts_;
    StartDeterminingReference(obj_bytes, type);
    return;
  }
  if (mode_ == Mode::kDeterminingReference) {
    uint32_t ref_leaves = 0;
    auto count = [&ref_leaves](const FieldView*, const FieldView*) { ++ref_leaves; };
    if (!LockStep(reference_.data(), obj, count)) {
      auto merged = MergeObj(reference_.data(), obj);
      if (!merged) {
        FlushInterleaved();
        if (leaves == 0) {
          AppendRegular(type, obj_bytes);
          return;
        }
        ++interleave_restarts_;
        reference_.assign(obj_bytes);
        buffered_.emplace_back(obj_bytes);
        mode_ = Mode::kDeterminingReference;
        return;
      }
      reference_ = std::move(*merged);
    }
    // Keep buffering until there are more than twice as many objects as scalar fields.
    if (ref_leaves * 2 >= buffered_.size()) {
      buffered_.emplace_back(obj_bytes);
      return;
    }
    FinishDeterminingReference();
  }
  if (!AppendSubElements(obj_bytes)) {
    if (leaves == 0) {
      AppendRegular(type, obj_bytes);
    } else {
      ++interleave_restarts_;
      StartDeterminingReference(obj_bytes, type);
    }
  }
}

void BsonColumnBuilder::Skip() {
  ++cells_;
  if (mode_ == Mode::kRegular) {
    ColumnSink sink{&buf_};
    regular_.Skip(sink);
    return;
  }
  // Skipping every leaf would not read back as a missing row if the reference has empty
  // sub-documents: leave interleaved mode first.
  if (HasEmptyObj(reference_.data())) {
    FlushInterleaved();
    --cells_;
    Skip();
    return;
  }
  if (mode_ == Mode::kDeterminingReference) {
    buffered_.emplace_back(kEmptyDoc, sizeof(kEmptyDoc));
  } else {
    for (auto& s : streams_) {
      ColumnSink sink{&s.buf, &s.blocks};
      s.encoder.Skip(sink);
    }
    MergeReadyBlocks();
  }
}

void BsonColumnBuilder::StartDeterminingReference(std::string_view obj, BsonType type) {
  ColumnSink sink{&buf_};
  regular_.Flush(sink);
  regular_ = ColumnStreamEncoder();
  reference_.assign(obj);
  reference_type_ = type;
  buffered_.emplace_back(obj);
  mode_ = Mode::kDeterminingReference;
}

void BsonColumnBuilder::FinishDeterminingReference() {
  buf_.push_back(static_cast<char>(reference_type_ == BsonType::kObject ? kInterleavedStartObject
                                                                        : kInterleavedStartArray));
  buf_.append(reference_);
  // Each leaf starts from its value in the reference object, so the first value is a delta.
  auto init = [this](const FieldView* ref, const FieldView* elem) {
    streams_.emplace_back();
    SubStream& s = streams_.back();
    s.encoder.SetPrevious(ref->type, std::string_view(ref->value, ref->value_size));
    ColumnSink sink{&s.buf, &s.blocks};
    if (elem != nullptr) {
      s.encoder.Append(sink, elem->type, std::string_view(elem->value, elem->value_size));
    } else {
      s.encoder.Skip(sink);
    }
  };
  const bool fits = LockStep(reference_.data(), buffered_.front().data(), init);
  invariant(fits);
  merge_ = MergeHeap();
  for (size_t i = 0; i < streams_.size(); ++i) merge_.emplace(0, i);
  mode_ = Mode::kAppending;
  MergeReadyBlocks();
  for (size_t i = 1; i < buffered_.size(); ++i) {
    const bool ok = AppendSubElements(buffered_[i]);
    invariant(ok);
  }
  buffered_.clear();
}

bool BsonColumnBuilder::AppendSubElements(std::string_view obj) {
  std::vector<std::optional<FieldView>> flat;
  flat.reserve(streams_.size());
  auto collect = [&flat](const FieldView*, const FieldView* elem) {
    flat.push_back(elem != nullptr ? std::optional<FieldView>(*elem) : std::nullopt);
  };
  if (!LockStep(reference_.data(), obj.data(), collect) || flat.size() != streams_.size()) {
    FlushInterleaved();
    return false;
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    SubStream& s = streams_[i];
    ColumnSink sink{&s.buf, &s.blocks};
    if (flat[i]) {
      s.encoder.Append(sink, flat[i]->type, std::string_view(flat[i]->value, flat[i]->value_size));
    } else {
      s.encoder.Skip(sink);
    }
  }
  MergeReadyBlocks();
  return true;
}

// The leaves' blocks go to the column in the order a decoder reads them: the leaf that has
// produced the fewest cells reads next (ties: the earliest leaf). A finished block can be placed
// as soon as its leaf is the one that reads next; a leaf whose next block is not finished yet
// holds back every block after it.
void BsonColumnBuilder::MergeReadyBlocks() {
  while (!merge_.empty()) {
    const auto [cells, index] = merge_.top();
    SubStream& s = streams_[index];
    if (s.blocks.empty()) break;
    merge_.pop();
    const auto [offset, size] = s.blocks.front();
    s.blocks.pop_front();
    const char* block = s.buf.data() + offset;
    buf_.append(block, size);
    merge_.emplace(cells + BlockCells(block), index);
    // Drop the moved bytes from the leaf's buffer once they are at least half of it.
    s.consumed = offset + size;
    if (s.consumed * 2 >= s.buf.size()) {
      s.buf.erase(0, s.consumed);
      s.encoder.ShiftOffsets(s.consumed);
      for (auto& b : s.blocks) b.first -= s.consumed;
      s.consumed = 0;
    }
  }
}

void BsonColumnBuilder::FlushInterleaved() {
  if (mode_ == Mode::kDeterminingReference) FinishDeterminingReference();
  for (auto& s : streams_) {
    ColumnSink sink{&s.buf, &s.blocks};
    s.encoder.Flush(sink);
  }
  std::vector<LeafBlocks> leaves;
  leaves.reserve(streams_.size());
  for (auto& s : streams_) leaves.push_back({&s.buf, &s.blocks});
  AppendAllBlocks(merge_, leaves, buf_);
  buf_.push_back('\0');
  streams_.clear();
  mode_ = Mode::kRegular;
}

void BsonColumnBuilder::Finalize() {
  if (mode_ == Mode::kRegular) {
    ColumnSink sink{&buf_};
    regular_.Flush(sink);
  } else {
    FlushInterleaved();
  }
  buf_.push_back('\0');
}

std::pair<size_t, std::string> BsonColumnBuilder::StableTail() const {
  std::string tail;
  switch (mode_) {
    case Mode::kRegular: {
      // Everything before the open control block is final; the block's words too, but its count
      // byte is not, so the tail starts there.
      const ptrdiff_t open = regular_.open_control_offset();
      const size_t stable = open >= 0 ? static_cast<size_t>(open) : buf_.size();
      // Room for what flushing adds (the pending values' words, a few at most): one allocation.
      tail.reserve(buf_.size() - stable + 64);
      tail.assign(buf_, stable, std::string::npos);
      ColumnSink sink{&tail};
      regular_.FlushCopyTo(sink, stable);
      tail.push_back('\0');
      return {stable, std::move(tail)};
    }
    case Mode::kDeterminingReference: {
      // Nothing of the section is written yet: finish a copy of the buffered objects (at most
      // about twice as many as the reference has scalars).
      BsonColumnBuilder copy;
      copy.mode_ = mode_;
      copy.reference_ = reference_;
      copy.reference_type_ = reference_type_;
      copy.buffered_ = buffered_;
      copy.FlushInterleaved();
      copy.buf_.push_back('\0');
      return {buf_.size(), std::move(copy.buf_)};
    }
    case Mode::kAppending: {
      // Finish scratch copies of the leaves' unplaced blocks and pending values, and place them.
      struct Scratch {
        std::string buf;
        std::deque<std::pair<size_t, size_t>> blocks;
      };
      std::vector<Scratch> scratch(streams_.size());
      std::vector<LeafBlocks> leaves;
      leaves.reserve(streams_.size());
      for (size_t i = 0; i < streams_.size(); ++i) {
        const SubStream& s = streams_[i];
        Scratch& c = scratch[i];
        c.buf.assign(s.buf, s.consumed, std::string::npos);
        for (const auto& [offset, size] : s.blocks)
          c.blocks.emplace_back(offset - s.consumed, size);
        ColumnSink sink{&c.buf, &c.blocks};
        s.encoder.FlushCopyTo(sink, s.consumed);
        leaves.push_back({&c.buf, &c.blocks});
      }
      MergeHeap heap = merge_;
      AppendAllBlocks(heap, leaves, tail);
      tail.push_back('\0');  // end of the section
      tail.push_back('\0');  // end of the column
      return {buf_.size(), std::move(tail)};
    }
  }
  return {buf_.size(), tail};
}

std::string BsonColumnBuilder::Finish() const {
  auto [stable, tail] = StableTail();
  std::string out;
  out.reserve(stable + tail.size());
  out.append(buf_, 0, stable);
  out.append(tail);
  return out;
}

BsonColumnBuilder::Proposal BsonColumnBuilder::ProposeIntermediate() const {
  // Named variables, not a structured binding: the lambdas below capture `tail`, which clang
  // before 16 refuses for a binding (the fuzz build uses clang).
  std::pair<size_t, std::string> stable_tail = StableTail();
  const size_t stable = stable_tail.first;
  const std::string& tail = stable_tail.second;
  Proposal p;
  if (!intermediate_called_) {
    p.diff.data.reserve(stable + tail.size());
    p.diff.data.append(buf_, 0, stable);
    p.diff.data.append(tail);
  } else {
    // The previous binary was buf_[0, last_stable_) + last_tail_, and buf_ only grew since: the
    // edit starts where the bytes from last_stable_ on first differ from last_tail_.
    // The bytes now from last_stable_ on are buf_[last_stable_, stable) then tail, compared
    // piece by piece rather than copied together first (this runs per column per write).
    invariant(stable >= last_stable_);
    const std::string_view grown(buf_.data() + last_stable_, stable - last_stable_);
    const std::string_view last(last_tail_);
    auto common = [](std::string_view a, std::string_view b) {
      const auto end = a.begin() + static_cast<ptrdiff_t>(std::min(a.size(), b.size()));
      return static_cast<size_t>(std::mismatch(a.begin(), end, b.begin()).first - a.begin());
    };
    // How many bytes from position `i` on (both binaries counted from last_stable_) are equal.
    auto common_from = [&](size_t i) {
      if (i > last.size()) return size_t{0};
      size_t n = 0;
      if (i < grown.size()) {
        n = common(grown.substr(i), last.substr(i));
        if (i + n < grown.size()) return n;
      }
      const size_t j = i + n;  // at or past grown's end
      if (j > last.size() || j - grown.size() > tail.size()) return n;
      return n + common(std::string_view(tail).substr(j - grown.size()), last.substr(j));
    };
    // The new bytes from position `i` on.
    auto bytes_from = [&](size_t i, std::string* out) {
      if (i < grown.size()) {
        out->reserve(grown.size() - i + tail.size());
        out->append(grown.substr(i));
        out->append(tail);
      } else {
        out->assign(tail, i - grown.size(), std::string::npos);
      }
    };
    size_t same = common_from(0);
    // One differing byte followed by a run of equal ones (a block's count byte before the words
    // it counted already): that byte alone, then the edit from the run's end.
    constexpr size_t kWorthSkipping = 24;
    const size_t now = grown.size() + tail.size();
    if (same + 1 < last.size() && same + 1 < now) {
      const size_t run = common_from(same + 1);
      if (run >= kWorthSkipping) {
        p.diff.head = same < grown.size() ? grown[same] : tail[same - grown.size()];
        p.diff.head_offset = last_stable_ + same;
        same += 1 + run;
      }
    }
    p.diff.offset = last_stable_ + same;
    bytes_from(same, &p.diff.data);
  }
  p.stable = stable;
  p.tail = std::move(tail);
  return p;
}

std::string BsonColumnBuilder::BytesFrom(const Proposal& proposal, size_t from) const {
  invariant(from <= proposal.stable + proposal.tail.size());
  if (from >= proposal.stable) return proposal.tail.substr(from - proposal.stable);
  std::string out(buf_, from, proposal.stable - from);
  out.append(proposal.tail);
  return out;
}

void BsonColumnBuilder::AcceptIntermediate(Proposal proposal) {
  intermediate_called_ = true;
  last_stable_ = proposal.stable;
  last_tail_ = std::move(proposal.tail);
}

BsonColumnBuilder::Diff BsonColumnBuilder::Intermediate() {
  Proposal p = ProposeIntermediate();
  Diff diff = std::move(p.diff);
  AcceptIntermediate(std::move(p));
  return diff;
}

size_t BsonColumnBuilder::ApproxMemory() const {
  size_t n = sizeof(*this) + buf_.capacity() + last_tail_.capacity() + reference_.capacity() +
             regular_.HeapMemory();
  for (const std::string& o : buffered_) n += sizeof(o) + o.capacity();
  for (const SubStream& st : streams_) {
    n += sizeof(st) + st.buf.capacity() + st.encoder.HeapMemory() +
         st.blocks.size() * sizeof(st.blocks.front());
  }
  return n;
}

StatusWith<BsonColumnBuilder> BsonColumnBuilder::FromBinary(std::string_view binary) {
  auto cells = DecodeBsonColumn(binary);
  if (!cells.ok()) return cells.status();
  BsonColumnBuilder builder;
  for (const ColumnCell& cell : cells.value()) {
    Status st = builder.Append(cell.element());
    if (!st.ok()) return st;
  }
  // As if the stored binary had been returned by Intermediate(): when it is what this encoder
  // writes, only the pending part is compared next time; otherwise all of it.
  const Diff all = builder.Intermediate();
  if (all.data != binary) {
    builder.last_stable_ = 0;
    builder.last_tail_.assign(binary);
  }
  return builder;
}

std::string BsonColumnBuilder::Release() {
  Finalize();
  std::string out = std::move(buf_);
  *this = BsonColumnBuilder();
  return out;
}

}  // namespace hourglass::bsoncolumn
