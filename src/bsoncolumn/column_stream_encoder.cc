#include "bsoncolumn/column_stream_encoder.h"

#include <cstring>

namespace hourglass::bsoncolumn {

using bson::BsonType;

namespace {

double ReadDouble(std::string_view v) {
  double d;
  std::memcpy(&d, v.data(), 8);
  return d;
}

bson::BsonElement ElementOf(const std::string& bytes) { return bson::BsonElement(bytes.data(), 0); }

// a == b, with the 8-byte values (doubles, 64-bit integers) compared as one word rather than by
// a call to memcmp: asked for every value appended.
bool SameBytes(std::string_view a, std::string_view b) {
  if (a.size() == 8 && b.size() == 8) {
    uint64_t x, y;
    std::memcpy(&x, a.data(), 8);
    std::memcpy(&y, b.data(), 8);
    return x == y;
  }
  return a == b;
}

}  // namespace

ColumnStreamEncoder::ColumnStreamEncoder() : prev_(2, '\0') {}

void ColumnStreamEncoder::StorePrevious(BsonType type, std::string_view value) {
  prev_.resize(2);
  prev_[0] = static_cast<char>(type);
  prev_.append(value);
}

size_t ColumnStreamEncoder::HeapMemory() const {
  // A short previous value lives inside the string (small-string optimization).
  size_t n = prev_.capacity() > 15 ? prev_.capacity() : 0;
  n += s64_.HeapMemory() + s128_.HeapMemory();
  for (const auto& b : spares_.builders) n += sizeof(*b) + b->HeapMemory();
  return n;
}

void ColumnStreamEncoder::SetPrevious(BsonType type, std::string_view value) {
  SettleSteady();
  StorePrevious(type, value);
  InitializeFromPrevious();
}

void ColumnStreamEncoder::InitializeFromPrevious() {
  const BsonType type = prev_type();
  store128_ = Uses128Bit(type);
  const bson::BsonElement e = ElementOf(prev_);
  switch (type) {
    case BsonType::kDouble:
      last_in_prev_block_ = e.Double();
      std::tie(prev_enc64_, scale_) = EncodeDoubleLowestScale(last_in_prev_block_, 0);
      break;
    case BsonType::kString:
    case BsonType::kCode:
      prev_enc128_ = EncodeString(e.Str());
      break;
    case BsonType::kBinData:
      prev_enc128_ = EncodeBinary(e.BinData());
      break;
    case BsonType::kDecimal128:
      prev_enc128_ = EncodeDecimal(e.Decimal());
      break;
    case BsonType::kObjectId:
      prev_enc64_ = EncodeObjectId(e.Oid());
      break;
    default:
      break;
  }
}

ptrdiff_t ColumnStreamEncoder::IncrementControlCount(ColumnSink& sink) {
  std::string& buf = *sink.buf;
  const uint8_t control = kControlForScale[scale_];
  if (control_offset_ >= 0 && (control_byte_ & 0xF0) != control) {
    // A different scale needs its own control byte.
    if (sink.blocks) sink.blocks->emplace_back(control_offset_, buf.size() - control_offset_);
    control_offset_ = -1;
  }
  if (control_offset_ < 0) {
    control_offset_ = static_cast<ptrdiff_t>(buf.size());
    buf.push_back('\0');
    control_byte_ = control;
  } else {
    control_byte_ = static_cast<uint8_t>(control | ((control_byte_ + 1) & 0x0F));
  }
  buf[control_offset_] = static_cast<char>(control_byte_);
  if ((control_byte_ & 0x0F) + 1 == kMaxWordsPerControl) {
    const ptrdiff_t full = control_offset_;
    control_offset_ = -1;
    return full;
  }
  return -1;
}

inline void ColumnStreamEncoder::AppendWordBytes(ColumnSink& sink, uint64_t word) {
  const ptrdiff_t full = IncrementControlCount(sink);
  sink.buf->append(reinterpret_cast<const char*>(&word), 8);
  if (sink.blocks && full >= 0) sink.blocks->emplace_back(full, sink.buf->size() - full);
}

void ColumnStreamEncoder::WriteWord(ColumnSink& sink, uint64_t word) {
  AppendWordBytes(sink, word);
  if (prev_type() == BsonType::kDouble) {
    // The last value of the block just written: the previous value minus the pending deltas.
    uint64_t current = static_cast<uint64_t>(prev_enc64_);
    s64_.ForEachPendingReverse([&](const std::optional<uint64_t>& v, uint64_t count) {
      if (v) current -= static_cast<uint64_t>(UnZigZag64(*v)) * count;
    });
    last_in_prev_block_ = DecodeDouble(static_cast<int64_t>(current), scale_);
  }
}

void ColumnStreamEncoder::FlushBuilders(ColumnSink& sink) {
  auto w = [this, &sink](uint64_t word) { WriteWord(sink, word); };
  s128_.Flush(w);
  s64_.Flush(w);
}

void ColumnStreamEncoder::WriteLiteralFromPrevious(ColumnSink& sink) {
  std::string& buf = *sink.buf;
  if (control_offset_ >= 0 && sink.blocks) {
    sink.blocks->emplace_back(control_offset_, buf.size() - control_offset_);
  }
  buf.append(prev_);
  if (sink.blocks) sink.blocks->emplace_back(buf.size() - prev_.size(), prev_.size());
  control_offset_ = -1;
  scale_ = kScaleMemoryAsInteger;
  prev_delta_ = 0;
  InitializeFromPrevious();
}

namespace {

// Whether a Simple-8b value shares a word with no other value whatever it is (in no layout do two
// such values fit), and fits one alone: wider than half a base word, at most a base word, and
// with at least 26 bits from its lowest set bit up (an extended slot's payload, after its
// trailing zeros, is then more than half of 56 bits). Full-precision doubles' deltas are.
bool WideAlone(uint64_t v) {
  const int width = simple8b::BitsNeeded(v);
  return width > 30 && width <= 60 && width - simple8b::TrailingZeros(v) >= 26;
}

}  // namespace

void ColumnStreamEncoder::SettleSteady() {
  if (!steady_pending_) return;
  // The state Append reaches from a new builder is the steady state's (see steady_pending_).
  s64_.Reset();
  const bool ok = s64_.Append(*steady_pending_, [](uint64_t) { invariant(false); });
  invariant(ok);
  steady_pending_.reset();
}

bool ColumnStreamEncoder::AppendDoubleFast(ColumnSink& sink, std::string_view value) {
  if (!restart_shortcut_ || scale_ != kScaleMemoryAsInteger || prev_type() != BsonType::kDouble) {
    return false;
  }
  uint64_t bits, prev_bits;
  std::memcpy(&bits, value.data(), 8);
  std::memcpy(&prev_bits, prev_.data() + 2, 8);
  if (bits == prev_bits) return false;  // a repeat: a zero delta, or a run
  // At the memory-as-integer scale a value's encoding is its bits (EncodeDoubleLowestScale
  // from that scale on).
  const int64_t encoded = static_cast<int64_t>(bits);
  const uint64_t delta = ZigZag64(WrapSub(encoded, prev_enc64_));
  const bool wide = WideAlone(delta);
  uint64_t word;
  if (steady_pending_) {
    // The pending value fits a base word alone (it entered so), the new one shares it with
    // nothing and is no repeat (which would start a run): Append writes the pending value as
    // the one-slot base word and keeps the new one pending.
    if (delta == *steady_pending_ || !wide) return false;
    word = simple8b::kSelectorForCount[simple8b::kBase][1] | (*steady_pending_ << 4);
  } else if (!s64_.AppendReplacingSingle(delta, &word)) {
    return false;
  }
  // WriteWord's bookkeeping: the block just written ends with the previous value.
  AppendWordBytes(sink, word);
  last_in_prev_block_ = DecodeDouble(prev_enc64_, scale_);
  // The delta is the one pending value now. A narrower one came by AppendReplacingSingle, which
  // left s64_ holding it.
  if (wide) steady_pending_ = delta;
  RestartAfterWord(sink, encoded);
  std::memcpy(prev_.data() + 2, value.data(), 8);  // StorePrevious, same type and size
  return true;
}

void ColumnStreamEncoder::Append(ColumnSink& sink, BsonType type, std::string_view value) {
  if (type == BsonType::kDouble && AppendDoubleFast(sink, value)) return;
  SettleSteady();
  auto w = [this, &sink](uint64_t word) { WriteWord(sink, word); };
  if (prev_type() != type) {
    StorePrevious(type, value);
    FlushBuilders(sink);
    WriteLiteralFromPrevious(sink);
    return;
  }
  bool compressed = !UsesDeltaOfDelta(type) && SameBytes(prev_value(), value);
  if (compressed) {
    if (store128_) {
      s128_.Append(0, w);
    } else {
      s64_.Append(0, w);
    }
  } else if (store128_) {
    auto append_encoded = [&](int128 encoded) {
      // After a value without an encoding, 0 would read as "repeat": only non-zero is possible.
      if (prev_enc128_ || encoded != 0) {
        compressed = s128_.Append(ZigZag128(WrapSub(encoded, prev_enc128_.value_or(0))), w);
        prev_enc128_ = encoded;
      }
    };
    const std::string elem = std::string{static_cast<char>(type), '\0'} + std::string(value);
    const bson::BsonElement e = ElementOf(elem);
    switch (type) {
      case BsonType::kString:
      case BsonType::kCode:
        if (auto enc = EncodeString(e.Str())) append_encoded(*enc);
        break;
      case BsonType::kBinData: {
        const bson::BsonElement p = ElementOf(prev_);
        // Only equal lengths and subtypes: a length change would need a count to restore
        // leading zero bytes.
        if (e.BinData().size() != p.BinData().size() || e.BinSubtype() != p.BinSubtype()) break;
        if (auto enc = EncodeBinary(e.BinData())) append_encoded(*enc);
        break;
      }
      case BsonType::kDecimal128:
        append_encoded(EncodeDecimal(e.Decimal()));
        break;
      default:
        break;
    }
  } else if (type == BsonType::kDouble) {
    compressed = AppendDouble(sink, ReadDouble(value), ReadDouble(prev_value()));
  } else {
    bool possible = true;
    int64_t delta = 0;
    const std::string_view pv = prev_value();
    switch (type) {
      case BsonType::kInt32:
        delta = static_cast<int64_t>(bson::ReadInt32(value.data())) -
                static_cast<int64_t>(bson::ReadInt32(pv.data()));
        break;
      case BsonType::kInt64:
      case BsonType::kDate:
      case BsonType::kTimestamp:
        delta = WrapSub(bson::ReadInt64(value.data()), bson::ReadInt64(pv.data()));
        break;
      case BsonType::kObjectId: {
        // Only ObjectIds from the same process (bytes 4-8 equal) are deltas.
        if (std::memcmp(value.data() + 4, pv.data() + 4, 5) != 0) {
          possible = false;
          break;
        }
        bson::ObjectId oid;
        std::memcpy(oid.bytes, value.data(), 12);
        const int64_t cur = EncodeObjectId(oid);
        delta = WrapSub(cur, prev_enc64_);
        prev_enc64_ = cur;
        break;
      }
      case BsonType::kBool:
        delta = static_cast<int64_t>(value[0] != 0) - static_cast<int64_t>(pv[0] != 0);
        break;
      case BsonType::kUndefined:
      case BsonType::kNull:
      case BsonType::kMinKey:
      case BsonType::kMaxKey:
        delta = 0;
        break;
      default:
        possible = false;  // regex, DBPointer, symbol, CodeWScope, objects, arrays
        break;
    }
    if (UsesDeltaOfDelta(type)) {
      const int64_t cur = delta;
      delta = WrapSub(cur, prev_delta_);
      prev_delta_ = cur;
    }
    if (possible) compressed = s64_.Append(ZigZag64(delta), w);
  }
  StorePrevious(type, value);
  if (!compressed) {
    FlushBuilders(sink);
    WriteLiteralFromPrevious(sink);
  }
}

void ColumnStreamEncoder::Skip(ColumnSink& sink) {
  SettleSteady();
  auto w = [this, &sink](uint64_t word) { WriteWord(sink, word); };
  const size_t before = sink.buf->size();
  if (store128_) {
    s128_.Skip(w);
  } else {
    s64_.Skip(w);
  }
  // A block was written: the next one may use a lower scale.
  if (before != sink.buf->size() && prev_type() == BsonType::kDouble) {
    std::tie(prev_enc64_, scale_) = EncodeDoubleLowestScale(last_in_prev_block_, 0);
  }
}

void ColumnStreamEncoder::Flush(ColumnSink& sink) {
  SettleSteady();
  FlushBuilders(sink);
  if (control_offset_ >= 0 && sink.blocks) {
    sink.blocks->emplace_back(control_offset_, sink.buf->size() - control_offset_);
  }
}

void ColumnStreamEncoder::FlushCopyTo(ColumnSink& sink, size_t from) const {
  // A copy of the state Flush uses; prev_ keeps only its type (the value may be large and
  // flushing does not read it).
  invariant(control_offset_ < 0 || static_cast<size_t>(control_offset_) >= from);
  // A scratch encoder per thread, assigned rather than constructed: its builders keep the
  // memory of their pending lists from one call to the next (this runs per column per write).
  thread_local ColumnStreamEncoder copy;
  copy.prev_.assign(2, '\0');
  copy.prev_[0] = prev_[0];
  copy.steady_pending_ = steady_pending_;
  if (steady_pending_) {
    copy.SettleSteady();  // its builder rebuilt from the pending delta, not copied
  } else {
    copy.s64_ = s64_;
  }
  copy.s128_ = s128_;
  copy.prev_enc128_ = prev_enc128_;
  copy.prev_enc64_ = prev_enc64_;
  copy.prev_delta_ = prev_delta_;
  copy.last_in_prev_block_ = last_in_prev_block_;
  copy.scale_ = scale_;
  copy.store128_ = store128_;
  copy.control_offset_ = control_offset_ < 0 ? -1 : control_offset_ - static_cast<ptrdiff_t>(from);
  copy.control_byte_ = control_byte_;
  copy.Flush(sink);
}

std::optional<Simple8bBuilder<uint64_t>> ColumnStreamEncoder::TryRescalePending(
    int64_t encoded, int new_scale) const {
  int64_t prev = *EncodeDouble(last_in_prev_block_, scale_);
  std::optional<int64_t> prev_rescaled = EncodeDouble(last_in_prev_block_, new_scale);
  if (!prev_rescaled) return std::nullopt;
  // Re-scaling is only better if the pending values still fit without finishing a word.
  bool possible = true;
  auto w = [&possible](uint64_t) { possible = false; };
  Simple8bBuilder<uint64_t> builder;
  bool ok = true;
  s64_.ForEachPending([&](const std::optional<uint64_t>& v, uint64_t count) {
    for (uint64_t i = 0; ok && i < count; ++i) {
      if (!v) {
        builder.Skip(w);
        continue;
      }
      prev = WrapAdd(prev, UnZigZag64(*v));
      auto rescaled = EncodeDouble(DecodeDouble(prev, scale_), new_scale);
      if (!rescaled) {
        ok = false;
        return;
      }
      if (!builder.Append(ZigZag64(WrapSub(*rescaled, *prev_rescaled)), w) || !possible) {
        ok = false;
        return;
      }
      prev_rescaled = rescaled;
    }
  });
  if (!ok) return std::nullopt;
  if (!builder.Append(ZigZag64(WrapSub(encoded, *prev_rescaled)), w) || !possible) {
    return std::nullopt;
  }
  return builder;
}

bool ColumnStreamEncoder::AppendDouble(ColumnSink& sink, double value, double previous) {
  auto w = [this, &sink](uint64_t word) { WriteWord(sink, word); };
  auto [encoded, scale] = EncodeDoubleLowestScale(value, scale_);
  if (scale != scale_) {
    // The value needs a larger scale: re-scale the pending values, or finish the block and
    // start a new one, whichever compresses better.
    if (auto rescaled = TryRescalePending(encoded, scale)) {
      s64_ = std::move(*rescaled);
      prev_enc64_ = encoded;
      scale_ = scale;
      return true;
    }
    s64_.Flush(w);
    if (sink.blocks && control_offset_ >= 0) {
      sink.blocks->emplace_back(control_offset_, sink.buf->size() - control_offset_);
    }
    control_offset_ = -1;
    int prev_scale;
    std::tie(prev_enc64_, prev_scale) = EncodeDoubleLowestScale(previous, scale);
    if (scale != prev_scale) {
      std::tie(encoded, scale) = EncodeDoubleLowestScale(value, prev_scale);
      std::tie(prev_enc64_, prev_scale) = EncodeDoubleLowestScale(previous, scale);
    }
    scale_ = scale;
  }
  const size_t before = sink.buf->size();
  if (!s64_.Append(ZigZag64(WrapSub(encoded, prev_enc64_)), w)) return false;
  if (sink.buf->size() == before) {
    prev_enc64_ = encoded;
    return true;
  }
  RestartAfterWord(sink, encoded);
  return true;
}

void ColumnStreamEncoder::RestartAfterWord(ColumnSink& sink, int64_t encoded) {
  auto w = [this, &sink](uint64_t word) { WriteWord(sink, word); };
  // A word was written: start again from the lowest scale for the values still pending.
  const int old_scale = scale_;
  const auto [restart_enc, restart_scale] = EncodeDoubleLowestScale(last_in_prev_block_, 0);
  // (A steady state's one pending delta is wide, so not 0: a new builder would rebuild it.)
  if (restart_shortcut_ && restart_scale == old_scale &&
      (steady_pending_ || s64_.RestartKeepsState())) {
    // Appending the pending values again at the same scale gives the same deltas, so the same
    // builder: skipped, since with full-precision doubles every value completes a word.
    prev_enc64_ = encoded;
    return;
  }
  SettleSteady();
  prev_enc64_ = restart_enc;
  scale_ = restart_scale;
  if (spares_.builders.size() <= spares_.depth) {
    spares_.builders.push_back(std::make_unique<Simple8bBuilder<uint64_t>>());
  }
  Simple8bBuilder<uint64_t>& old = *spares_.builders[spares_.depth++];
  std::swap(s64_, old);
  s64_.Reset();
  double prev = last_in_prev_block_;
  int64_t prev_encoded = *EncodeDouble(prev, old_scale);
  old.ForEachPending([&](const std::optional<uint64_t>& v, uint64_t count) {
    for (uint64_t i = 0; i < count; ++i) {
      if (v) {
        prev_encoded = WrapAdd(prev_encoded, UnZigZag64(*v));
        const double val = DecodeDouble(prev_encoded, old_scale);
        AppendDouble(sink, val, prev);
        prev = val;
      } else {
        s64_.Skip(w);
      }
    }
  });
  --spares_.depth;
}

}  // namespace hourglass::bsoncolumn
