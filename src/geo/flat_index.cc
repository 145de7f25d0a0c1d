#include "geo/flat_index.h"

#include <algorithm>
#include <cmath>

namespace hourglass::geo {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

std::string Num(double d) {
  std::string s = std::to_string(d);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// The cell index of `v` on one axis at `bits` bits (v within [min, max]; max is the last cell).
uint64_t AxisCell(double v, const FlatIndexParams& p) {
  const double cells = std::ldexp(1.0, p.bits);
  const double scaled = std::floor((v - p.min) / (p.max - p.min) * cells);
  return static_cast<uint64_t>(std::clamp(scaled, 0.0, cells - 1));
}

// Interleaves x and y cells of `bits` bits (x first), left-aligned in 64 bits.
uint64_t Interleave(uint64_t x, uint64_t y, int bits) {
  uint64_t h = 0;
  for (int i = bits - 1; i >= 0; --i) {
    h = (h << 1) | ((x >> i) & 1);
    h = (h << 1) | ((y >> i) & 1);
  }
  return h << (64 - 2 * bits);
}

Status AddLocation(const BsonElement& loc, const FlatIndexParams& p, std::vector<uint64_t>* out) {
  const BsonObj o = loc.Obj();
  auto it = o.begin();
  const BsonElement x = it == o.end() ? BsonElement() : *it;
  if (it != o.end()) ++it;
  const BsonElement y = it == o.end() ? BsonElement() : *it;
  if (!x.IsNumber() || !y.IsNumber()) {
    return Status(ErrorCode::kLocation13026,
                  "geo values must be 'legacy coordinate pairs' for 2d indexes");
  }
  const double xv = x.NumberDouble(), yv = y.NumberDouble();
  if (!(xv >= p.min && xv <= p.max && yv >= p.min && yv <= p.max)) {
    return Status(ErrorCode::kLocation13027,
                  "point not in interval of [ " + Num(p.min) + ", " + Num(p.max) + " ]");
  }
  out->push_back(Interleave(AxisCell(xv, p), AxisCell(yv, p), p.bits));
  return Status::OK();
}

}  // namespace

std::string FlatHashBytes(uint64_t hash) {
  std::string bytes(8, '\0');
  for (int j = 0; j < 8; ++j) bytes[j] = static_cast<char>(hash >> (56 - 8 * j));
  return bytes;
}

StatusWith<FlatIndexParams> FlatIndexParams::FromSpec(const BsonObj& spec) {
  FlatIndexParams p;
  if (BsonElement b = spec["bits"]; b.IsNumber()) {
    const double bits = b.NumberDouble();
    if (!(bits > 0 && bits <= 32)) {
      return Status(ErrorCode::kInvalidOptions, "bits for hash must be > 0 and <= 32, but " +
                                                    Num(bits) + " bits were specified");
    }
    p.bits = static_cast<int>(bits);
  }
  if (BsonElement e = spec["min"]; e.IsNumber()) p.min = e.NumberDouble();
  if (BsonElement e = spec["max"]; e.IsNumber()) p.max = e.NumberDouble();
  if (!(p.min < p.max) || std::isinf(p.min) || std::isinf(p.max)) {
    return Status(ErrorCode::kInvalidOptions,
                  "region for hash must be valid and have positive area, but [" + Num(p.min) +
                      ", " + Num(p.max) + "] was specified");
  }
  return p;
}

StatusWith<std::vector<uint64_t>> FlatIndexHashes(const BsonElement& value,
                                                  const FlatIndexParams& params) {
  std::vector<uint64_t> out;
  if (value.type() != BsonType::kArray && value.type() != BsonType::kObject) return out;
  const BsonObj o = value.Obj();
  if (o.IsEmpty()) return out;
  if (value.type() == BsonType::kObject && o["type"].type() == BsonType::kString) {
    return Status(ErrorCode::kLocation16804,
                  "location object expected, location array not in correct format");
  }
  if (o.FirstElement().IsNumber()) {
    HG_RETURN_IF_ERROR(AddLocation(value, params, &out));
  } else {
    // A list of locations: each an array or object.
    for (BsonElement loc : o) {
      if (loc.type() != BsonType::kArray && loc.type() != BsonType::kObject) {
        return Status(ErrorCode::kLocation16804,
                      "location object expected, location array not in correct format");
      }
      HG_RETURN_IF_ERROR(AddLocation(loc, params, &out));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::vector<HashRange>> FlatQueryRanges(const GeoQuery& q,
                                                      const FlatIndexParams& params) {
  const auto box = q.FlatBoundingBox();
  if (!box) return std::nullopt;
  // The box clipped to the plane; empty: nothing can match.
  const double x0 = std::max(box->first.x, params.min), x1 = std::min(box->second.x, params.max);
  const double y0 = std::max(box->first.y, params.min), y1 = std::min(box->second.y, params.max);
  std::vector<HashRange> out;
  if (!(x0 <= x1 && y0 <= y1)) return out;
  // The finest level (bits per axis) at which the box spans at most 8 x 8 cells: each cell is
  // one range of full-precision hashes.
  int level = params.bits;
  auto span = [&](int l, double lo, double hi) {
    FlatIndexParams at = params;
    at.bits = l;
    return AxisCell(hi, at) - AxisCell(lo, at) + 1;
  };
  while (level > 0 && span(level, x0, x1) * span(level, y0, y1) > 64) --level;
  FlatIndexParams at = params;
  at.bits = level;
  const int free_bits = 64 - 2 * level;
  for (uint64_t cx = AxisCell(x0, at); cx <= AxisCell(x1, at); ++cx) {
    for (uint64_t cy = AxisCell(y0, at); cy <= AxisCell(y1, at); ++cy) {
      const uint64_t lo = level == 0 ? 0 : Interleave(cx, cy, level);
      const uint64_t hi = free_bits >= 64 ? ~uint64_t{0} : lo | ((uint64_t{1} << free_bits) - 1);
      out.push_back({lo, hi});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const HashRange& a, const HashRange& b) { return a.lo < b.lo; });
  std::vector<HashRange> merged;
  for (const HashRange& r : out) {
    if (!merged.empty() && (r.lo <= merged.back().hi || r.lo == merged.back().hi + 1)) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

}  // namespace hourglass::geo
