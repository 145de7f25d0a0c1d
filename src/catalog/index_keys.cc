#include "catalog/index_keys.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

#include "bson/key_string.h"
#include "bsoncolumn/bson_column_decoder.h"
#include "geo/sphere_index.h"
#include "query/path.h"

namespace hourglass::catalog {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

StatusWith<IndexDescriptor> IndexDescriptor::FromSpec(const BsonObj& spec) {
  IndexDescriptor d;
  d.spec = spec.Owned();
  d.key = d.spec["key"].Obj();
  d.name = std::string(d.spec["name"].Str());
  d.unique = d.spec["unique"].Truthy();
  d.sparse = d.spec["sparse"].Truthy();
  d.hidden = d.spec["hidden"].Truthy();
  for (BsonElement f : d.key) {
    if (IsHashedKey(f)) d.hashed = true;
    if (IsSphereKey(f)) d.sphere = true;
    if (IsFlatKey(f)) {
      HG_ASSIGN_OR_RETURN(d.flat, geo::FlatIndexParams::FromSpec(d.spec));
    }
  }
  if (d.sphere) {
    HG_ASSIGN_OR_RETURN(d.sphere_params, geo::SphereIndexParams::FromSpec(d.spec));
  }
  if (BsonElement c = d.spec["collation"]; c.type() == BsonType::kObject) {
    HG_ASSIGN_OR_RETURN(d.collator, collation::Collator::Make(c.Obj()));
    if (d.collator) d.collation = d.collator->spec().ToBson();
  }
  BsonElement pfe = d.spec["partialFilterExpression"];
  if (pfe.type() == BsonType::kObject) {
    query::ExpressionContext ectx;
    ectx.collator = d.collator;  // a partial filter compares strings under the index's collation
    HG_ASSIGN_OR_RETURN(auto m, query::Matcher::Parse(pfe.Obj(), ectx));
    d.partial = std::move(m);
  }
  BsonElement ttl = d.spec["expireAfterSeconds"];
  if (ttl.IsNumber()) d.expire_after_seconds = ttl.NumberLong();
  if (d.key.NumFields() == 1 && IsWildcardFieldName(d.key.FirstElement().FieldName())) {
    HG_ASSIGN_OR_RETURN(auto w,
                        WildcardIndex::Parse(d.key.FirstElement(), d.spec["wildcardProjection"]));
    d.wildcard = std::move(w);
  }
  return d;
}

namespace {

// A value reached along a path: an element of the document, or one of the placeholders.
struct KeyValue {
  enum Kind { kElement, kMissing, kUndefined } kind = kMissing;
  BsonElement element;
};

struct WalkState {
  std::vector<KeyValue> values;
  std::vector<std::string> array_paths;  // dotted paths (without positions) that held arrays
};

void AddArrayPath(WalkState& st, const std::string& path) {
  if (std::find(st.array_paths.begin(), st.array_paths.end(), path) == st.array_paths.end()) {
    st.array_paths.push_back(path);
  }
}

void WalkLeaf(const BsonElement& e, const std::string& path, WalkState& st) {
  if (e.type() != BsonType::kArray) {
    st.values.push_back({KeyValue::kElement, e});
    return;
  }
  AddArrayPath(st, path);
  BsonObj arr = e.Obj();
  if (arr.IsEmpty()) {
    st.values.push_back({KeyValue::kUndefined, {}});
    return;
  }
  for (BsonElement item : arr) st.values.push_back({KeyValue::kElement, item});
}

void Walk(const BsonObj& obj, const query::FieldPath& comps, size_t i, const std::string& prefix,
          WalkState& st) {
  BsonElement e = obj.GetField(comps[i]);
  std::string path = prefix.empty() ? comps[i] : prefix + "." + comps[i];
  if (e.eoo()) {
    st.values.push_back({});
    return;
  }
  if (i + 1 == comps.size()) return WalkLeaf(e, path, st);
  if (e.type() == BsonType::kObject) return Walk(e.Obj(), comps, i + 1, path, st);
  if (e.type() != BsonType::kArray) {
    st.values.push_back({});
    return;
  }
  BsonObj arr = e.Obj();
  if (auto pos = query::ParseArrayIndex(comps[i + 1])) {
    // A numeric component selects that element (MongoDB's positional key path).
    BsonElement item = arr.GetField(comps[i + 1]);
    std::string item_path = path + "." + comps[i + 1];
    if (item.eoo()) {
      st.values.push_back({});
    } else if (i + 2 == comps.size()) {
      WalkLeaf(item, item_path, st);
    } else if (item.type() == BsonType::kObject) {
      Walk(item.Obj(), comps, i + 2, item_path, st);
    } else {
      st.values.push_back({});
    }
    return;
  }
  AddArrayPath(st, path);
  if (arr.IsEmpty()) {
    st.values.push_back({});
    return;
  }
  for (BsonElement item : arr) {
    if (item.type() == BsonType::kObject) {
      Walk(item.Obj(), comps, i + 1, path, st);
    } else {
      st.values.push_back({});
    }
  }
}

const BsonObj& UndefinedHolder() {
  static const BsonObj holder = [] {
    BsonBuilder b;
    b.AppendUndefined("");
    return b.Obj();
  }();
  return holder;
}

void AppendValue(bson::KeyStringBuilder& k, const KeyValue& v, bool descending,
                 const bson::StringComparator* strings) {
  switch (v.kind) {
    case KeyValue::kElement:
      k.AppendElement(v.element, descending, strings);
      break;
    case KeyValue::kMissing:
      k.AppendMissing(descending);
      break;
    case KeyValue::kUndefined:
      k.AppendElement(UndefinedHolder().FirstElement(), descending);
      break;
  }
}

// The values of `values` (a document of computed keys: cells, geohashes) as key values, which
// *holder keeps alive.
std::vector<KeyValue> HeldKeyValues(BsonObj values, BsonObj* holder) {
  *holder = std::move(values);
  std::vector<KeyValue> out;
  for (BsonElement e : *holder) out.push_back({KeyValue::kElement, e});
  return out;
}

// The geohashes of a 2d field as key values (geo::FlatHashBytes), held by *holder; empty when the
// document has no point location there.
StatusWith<std::vector<KeyValue>> FlatKeyValues(const BsonObj& doc, std::string_view path,
                                                const geo::FlatIndexParams& params,
                                                BsonObj* holder) {
  std::vector<uint64_t> hashes;
  for (const BsonElement& v : geo::GeoValuesAtPath(doc, path)) {
    auto h = geo::FlatIndexHashes(v, params);
    if (!h.ok()) {
      return Status(h.status().code(), h.status().reason() + " :: caused by :: " + doc.ToJson());
    }
    hashes.insert(hashes.end(), h.value().begin(), h.value().end());
  }
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  BsonBuilder b;
  for (size_t i = 0; i < hashes.size(); ++i) {
    b.AppendBinData(std::to_string(i), geo::kFlatHashSubtype, geo::FlatHashBytes(hashes[i]));
  }
  return HeldKeyValues(b.Obj(), holder);
}

// The cells of a bucket's measurement column (data.<f>: a compressed column, or an object of
// row values) for a 2dsphere_bucket field.
StatusWith<std::vector<int64_t>> BucketColumnCells(const BsonObj& bucket, std::string_view path,
                                                   const geo::SphereIndexParams& levels) {
  std::vector<BsonElement> values;
  std::vector<bsoncolumn::ColumnCell> cells;
  for (const BsonElement& column : geo::GeoValuesAtPath(bucket, path)) {
    if (column.type() == BsonType::kBinData && column.BinSubtype() == 7) {
      HG_ASSIGN_OR_RETURN(cells, bsoncolumn::DecodeBsonColumn(column.BinData()));
      for (const auto& c : cells) values.push_back(c.element());
      return geo::SphereBucketCells(values, levels);  // (cells stay alive until here)
    }
    if (column.type() == BsonType::kObject) {
      for (BsonElement v : column.Obj()) values.push_back(v);
    }
  }
  return geo::SphereBucketCells(values, levels);
}

// The cells of a 2dsphere field as key values (NumberLong ids; token strings before version 3),
// held by *holder; empty when the document has no geometry there.
StatusWith<std::vector<KeyValue>> SphereKeyValues(const BsonObj& doc, const BsonElement& field,
                                                  const geo::SphereIndexParams& params,
                                                  BsonObj* holder) {
  const std::string_view path = field.FieldName();
  auto cant_extract = [&](const Status& st) {
    return Status(ErrorCode::kLocation16755,
                  "Can't extract geo keys: " + doc.ToJson() + "  " + st.reason());
  };
  std::vector<int64_t> cells;
  if (IsSphereBucketKey(field)) {
    auto c = BucketColumnCells(doc, path, params);
    if (!c.ok()) return cant_extract(c.status());
    cells = std::move(c).value();
  } else {
    for (const BsonElement& v : geo::GeoValuesAtPath(doc, path)) {
      auto c = geo::SphereIndexCells(v, params);
      if (!c.ok()) return cant_extract(c.status());
      cells.insert(cells.end(), c.value().begin(), c.value().end());
    }
  }
  std::sort(cells.begin(), cells.end());
  cells.erase(std::unique(cells.begin(), cells.end()), cells.end());
  BsonBuilder b;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (params.version >= 3) {
      b.AppendInt64(std::to_string(i), cells[i]);
    } else {
      b.AppendString(std::to_string(i), geo::SphereCellToken(cells[i]));
    }
  }
  return HeldKeyValues(b.Obj(), holder);
}

}  // namespace

bool IsHashedKey(const BsonElement& f) {
  return f.type() == BsonType::kString && f.Str() == "hashed";
}
bool IsSphereKey(const BsonElement& f) {
  return f.type() == BsonType::kString && (f.Str() == "2dsphere" || f.Str() == "2dsphere_bucket");
}
bool IsSphereBucketKey(const BsonElement& f) {
  return f.type() == BsonType::kString && f.Str() == "2dsphere_bucket";
}
bool IsFlatKey(const BsonElement& f) { return f.type() == BsonType::kString && f.Str() == "2d"; }

int64_t HashIndexValue(const BsonElement& value, const bson::StringComparator* strings) {
  bson::KeyStringBuilder k;
  k.AppendElement(value, false, strings);
  // FNV-1a over the canonical encoding, so equal values hash equally.
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : k.bytes()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

StatusWith<IndexKeySet> GenerateIndexKeys(const IndexDescriptor& desc, const BsonObj& doc) {
  IndexKeySet out;
  if (desc.partial && !desc.partial->Matches(doc)) return out;
  if (desc.wildcard) {
    out.keys = GenerateWildcardKeys(*desc.wildcard, doc, &out.array_paths, desc.collator.get());
    out.multikey = !out.array_paths.empty();
    return out;
  }
  std::vector<std::vector<KeyValue>> per_field;
  std::vector<std::vector<std::string>> paths_per_field;
  std::deque<BsonObj> hash_holders;  // keep hashed values and cells alive until encoded
  bool all_missing = true;
  bool has_geometry = false;  // some 2dsphere field holds a geometry
  for (BsonElement f : desc.key) {
    if (IsFlatKey(f) && desc.flat) {
      // A document without a point location here is not in the index, as in MongoDB.
      hash_holders.emplace_back();
      HG_ASSIGN_OR_RETURN(auto hashes,
                          FlatKeyValues(doc, f.FieldName(), *desc.flat, &hash_holders.back()));
      if (hashes.empty()) return out;
      if (hashes.size() > 1) out.multikey = true;
      per_field.push_back(std::move(hashes));
      paths_per_field.emplace_back();
      all_missing = false;
      continue;
    }
    if (IsSphereKey(f)) {
      hash_holders.emplace_back();
      HG_ASSIGN_OR_RETURN(auto cells,
                          SphereKeyValues(doc, f, desc.sphere_params, &hash_holders.back()));
      if (cells.size() > 1) out.multikey = true;
      if (cells.empty()) {
        cells.push_back({});  // null, when another geo field of the index has a geometry
      } else {
        has_geometry = true;
      }
      per_field.push_back(std::move(cells));
      paths_per_field.emplace_back();
      continue;
    }
    WalkState st;
    Walk(doc, query::SplitPath(f.FieldName()), 0, "", st);
    if (IsHashedKey(f)) {
      if (!st.array_paths.empty()) {
        return Status(ErrorCode::kLocation16766,
                      "Error: hashed indexes do not currently support array values. Found array "
                      "at path: " +
                          st.array_paths.front());
      }
      const KeyValue& v = st.values.front();
      BsonBuilder b;
      b.AppendInt64("", HashIndexValue(v.kind == KeyValue::kElement ? v.element : BsonElement(),
                                       desc.collator.get()));
      hash_holders.push_back(b.Obj());
      if (v.kind != KeyValue::kMissing) all_missing = false;
      st.values = {KeyValue{KeyValue::kElement, hash_holders.back().FirstElement()}};
    } else {
      for (const auto& v : st.values) {
        if (v.kind != KeyValue::kMissing) all_missing = false;
      }
    }
    if (!st.array_paths.empty()) {
      std::string_view path = f.FieldName();
      if (desc.timeseries_buckets &&
          (path.starts_with("control.min.") || path.starts_with("control.max."))) {
        return Status(ErrorCode::kLocation5930501,
                      "Indexed measurement field contains an array value");
      }
      out.multikey = true;
    }
    per_field.push_back(std::move(st.values));
    paths_per_field.push_back(std::move(st.array_paths));
  }
  for (size_t i = 0; i < paths_per_field.size(); ++i) {
    for (size_t j = i + 1; j < paths_per_field.size(); ++j) {
      for (const auto& p : paths_per_field[i]) {
        for (const auto& q : paths_per_field[j]) {
          if (!query::PathStartsWith(q, p) && !query::PathStartsWith(p, q)) {
            return Status(ErrorCode::kCannotIndexParallelArrays,
                          "cannot index parallel arrays [" + q + "] [" + p + "]");
          }
        }
      }
    }
  }
  if (desc.sparse && !desc.sphere && all_missing) return out;  // (2dsphere ignores sparse)
  // 2dsphere indexes of versions 2 and 3 leave out documents without a geometry (version 1 keys
  // them as null).
  if (desc.sphere && !has_geometry && desc.sphere_params.version >= 2) return out;
  // The cross product of the fields' values (only one field can be an array outside a shared
  // path prefix, so this is small).
  std::vector<BsonElement> pattern;
  for (BsonElement f : desc.key) pattern.push_back(f);
  std::set<std::string> keys;
  std::vector<size_t> pos(per_field.size(), 0);
  while (true) {
    bson::KeyStringBuilder k;
    for (size_t f = 0; f < per_field.size(); ++f) {
      AppendValue(k, per_field[f][pos[f]], bson::IsDescending(pattern[f]), desc.collator.get());
    }
    keys.insert(k.Release());
    bool done = true;
    for (size_t f = per_field.size(); f-- > 0;) {
      if (++pos[f] < per_field[f].size()) {
        done = false;
        break;
      }
      pos[f] = 0;
    }
    if (done) break;
  }
  out.keys.assign(keys.begin(), keys.end());
  return out;
}

BsonObj IndexKeyValue(const BsonObj& pattern, std::string_view key_bytes) {
  BsonBuilder b;
  auto decoded = bson::DecodeIndexKey(key_bytes, pattern);
  if (!decoded.ok()) return b.Obj();
  auto it = decoded.value().begin();
  for (BsonElement f : pattern) {
    if (it == decoded.value().end()) break;
    b.AppendElementAs(*it, f.FieldName());
    ++it;
  }
  return b.Obj();
}

bool SameKeyPattern(const BsonObj& a, const BsonObj& b) {
  if (a.NumFields() != b.NumFields()) return false;
  auto ia = a.begin();
  for (BsonElement fb : b) {
    BsonElement fa = *ia;
    ++ia;
    if (fa.FieldName() != fb.FieldName()) return false;
    if (fa.IsNumber() && fb.IsNumber()) {
      if (bson::IsDescending(fa) != bson::IsDescending(fb)) return false;
    } else if (fa.type() == BsonType::kString && fb.type() == BsonType::kString) {
      if (fa.Str() != fb.Str()) return false;
    } else {
      return false;
    }
  }
  return true;
}

std::optional<std::string> PrefixSuccessor(std::string prefix) {
  while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) prefix.pop_back();
  if (prefix.empty()) return std::nullopt;
  prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
  return prefix;
}

std::string DefaultIndexName(const BsonObj& pattern) {
  std::string name;
  for (BsonElement f : pattern) {
    if (!name.empty()) name += "_";
    name += std::string(f.FieldName()) + "_";
    if (f.type() == BsonType::kString) {
      name += std::string(f.Str());
    } else if (f.IsNumber()) {
      double d = f.NumberDouble();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) {
        name += std::to_string(static_cast<int64_t>(d));
      } else {
        std::string s = std::to_string(d);
        s.erase(s.find_last_not_of('0') + 1);
        if (!s.empty() && s.back() == '.') s.pop_back();
        name += s;
      }
    }
  }
  return name;
}

}  // namespace hourglass::catalog
