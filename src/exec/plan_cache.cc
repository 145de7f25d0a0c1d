#include "exec/plan_cache.h"

#include <chrono>

#include "catalog/catalog.h"

namespace hourglass::exec {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {
constexpr size_t kMaxEntriesPerCollection = 5000;
}  // namespace

PlanCache& PlanCache::Instance() {
  static PlanCache* cache = new PlanCache();  // never destroyed: used until exit
  return *cache;
}

std::optional<PlanCacheEntry> PlanCache::Lookup(const std::string& ns, const std::string& shape,
                                                const std::string& index_set) {
  std::lock_guard<std::mutex> lock(mu_);
  auto coll = entries_.find(ns);
  if (coll == entries_.end()) return std::nullopt;
  auto it = coll->second.find(shape);
  if (it == coll->second.end()) return std::nullopt;
  if (it->second.index_set != index_set) {
    coll->second.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void PlanCache::Store(const std::string& ns, PlanCacheEntry entry) {
  entry.created_millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::lock_guard<std::mutex> lock(mu_);
  auto& coll = entries_[ns];
  if (coll.size() >= kMaxEntriesPerCollection && !coll.contains(entry.shape)) {
    coll.erase(coll.begin());  // bounded memory: some entry makes room
  }
  std::string shape = entry.shape;
  coll[shape] = std::move(entry);
}

void PlanCache::Erase(const std::string& ns, const std::string& shape) {
  std::lock_guard<std::mutex> lock(mu_);
  auto coll = entries_.find(ns);
  if (coll != entries_.end()) coll->second.erase(shape);
}

void PlanCache::Clear(const std::string& ns) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(ns);
}

std::vector<PlanCacheEntry> PlanCache::List(const std::string& ns, const std::string& index_set) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PlanCacheEntry> out;
  auto coll = entries_.find(ns);
  if (coll == entries_.end()) return out;
  for (const auto& [shape, e] : coll->second) {
    if (e.index_set == index_set) out.push_back(e);
  }
  return out;
}

namespace {
void AppendShape(const BsonObj& obj, std::string& out, int depth) {
  out += '{';
  for (BsonElement e : obj) {
    out += e.FieldName();
    out += ':';
    if (depth < 20 && (e.type() == BsonType::kObject || e.type() == BsonType::kArray) &&
        (e.type() == BsonType::kArray || e.FieldName().starts_with("$") ||
         (!e.Obj().IsEmpty() && e.Obj().FirstElement().FieldName().starts_with("$")))) {
      // Operators and logical clauses keep their structure; $in lists become their type.
      if (e.FieldName() == "$in" || e.FieldName() == "$nin") {
        out += "array";
      } else {
        AppendShape(e.Obj(), out, depth + 1);
      }
    } else {
      out += bson::TypeName(e.type());
    }
    out += ',';
  }
  out += '}';
}
}  // namespace

std::string QueryShape(const BsonObj& filter, const BsonObj& sort, const BsonObj& projection,
                       std::string_view extra) {
  std::string out;
  AppendShape(filter, out, 0);
  out += '|';
  out += sort.ToJson();
  out += '|';
  out += projection.ToJson();
  out += '|';
  out += extra;
  return out;
}

std::string IndexSetSignature(const catalog::Collection& coll) {
  std::string out;
  for (const auto& idx : coll.entry().indexes) {
    out += idx.ident;
    out += idx.ready ? "+" : "-";
    BsonElement hidden = idx.spec["hidden"];
    out += !hidden.eoo() && hidden.Truthy() ? "h;" : ";";
  }
  return out;
}

}  // namespace hourglass::exec
