#include "query/sort.h"

#include "bson/bson_compare.h"
#include "bson/key_string.h"
#include "query/query_errors.h"

namespace hourglass::query {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

// An undefined value, which stands for "empty array" in extracted keys: it orders before null
// and missing.
BsonElement UndefinedElement() {
  static const BsonObj* holder = new BsonObj(bson::BsonBuilder().AppendUndefined("").Obj());
  return holder->FirstElement();
}

// Undefined stands for "empty array" in extracted keys and orders before null and missing.
int CompareKeyValues(const BsonElement& a, const BsonElement& b,
                     const bson::StringComparator* strings) {
  bool ua = a.type() == BsonType::kUndefined;
  bool ub = b.type() == BsonType::kUndefined;
  if (ua || ub) {
    if (ua && ub) return 0;
    if (b.type() == BsonType::kMinKey) return 1;
    if (a.type() == BsonType::kMinKey) return -1;
    return ua ? -1 : 1;
  }
  return bson::CompareElementValues(a, b, strings);
}

// Whether `e` holds a String or Symbol at any depth.
bool HoldsStrings(const BsonElement& e) {
  if (e.type() == BsonType::kString || e.type() == BsonType::kSymbol) return true;
  if (e.type() != BsonType::kObject && e.type() != BsonType::kArray) return false;
  for (BsonElement x : e.Obj()) {
    if (HoldsStrings(x)) return true;
  }
  return false;
}

}  // namespace

StatusWith<SortPattern> SortPattern::Parse(const BsonObj& spec) {
  SortPattern p;
  for (const BsonElement& e : spec) {
    std::string_view name = e.FieldName();
    if (name.empty()) return Status(ErrorCode::kBadValue, "$sort field names must not be empty");
    if (e.type() == BsonType::kObject) {
      return Status(ErrorCode::kBadValue, "$meta sort keys are not supported yet");
    }
    double d = e.IsNumber() ? e.NumberDouble() : 0;
    if (!e.IsNumber() || (d != 1 && d != -1)) {
      return Status(kBadSortDirectionCode,
                    "$sort key ordering must be 1 (for ascending) or -1 (for descending)");
    }
    p.keys_.push_back(Key{std::string(name), SplitPath(name), d == 1});
  }
  return p;
}

BsonObj SortPattern::ExtractKey(const BsonObj& doc) const {
  bson::KeyStringBuilder ks;
  for (size_t i = 0; i < keys_.size(); ++i) {
    const Key& k = keys_[i];
    BsonElement best;
    bool any = false;
    bool saw_empty_array = false;
    WalkPath(doc, k.path, true, [&](const PathValue& v) {
      if (v.whole_array) {
        if (v.element.Obj().IsEmpty()) saw_empty_array = true;
        return false;
      }
      any = true;
      if (best.eoo() && !v.element.eoo()) {
        best = v.element;
        return false;
      }
      if (v.element.eoo()) {
        // Missing sorts as null.
        static const BsonObj* null_holder = new BsonObj(bson::BsonBuilder().AppendNull("").Obj());
        BsonElement null_elem = null_holder->FirstElement();
        if (best.eoo()) {
          best = null_elem;
        } else {
          int c = CompareKeyValues(null_elem, best, collator_.get());
          if (k.ascending ? c < 0 : c > 0) best = null_elem;
        }
        return false;
      }
      int c = CompareKeyValues(v.element, best, collator_.get());
      if (k.ascending ? c < 0 : c > 0) best = v.element;
      return false;
    });
    if (any && collator_ && HoldsStrings(best)) {
      // Strings sort by their collation keys (as in a collated index).
      bson::BsonBuilder form;
      bson::AppendComparisonForm(form, "", best, *collator_);
      ks.AppendElement(form.Obj().FirstElement(), !k.ascending);
    } else if (any) {
      ks.AppendElement(best, !k.ascending);
    } else if (saw_empty_array) {
      ks.AppendElement(UndefinedElement(), !k.ascending);
    } else {
      ks.AppendMissing(!k.ascending);
    }
  }
  bson::BsonBuilder b;
  b.AppendBinData("", 0, ks.bytes());
  return b.Obj();
}

bool SortPattern::IsKeys(std::string_view prefix, const std::vector<std::string>& names,
                         bool* ascending) const {
  if (keys_.empty() || keys_.size() != names.size()) return false;
  for (size_t i = 0; i < keys_.size(); ++i) {
    const std::string& d = keys_[i].dotted;
    if (keys_[i].ascending != keys_[0].ascending || d.size() != prefix.size() + names[i].size() ||
        !d.starts_with(prefix) || d.compare(prefix.size(), std::string::npos, names[i]) != 0) {
      return false;
    }
  }
  *ascending = keys_[0].ascending;
  return true;
}

int SortPattern::CompareKeys(const BsonObj& ka, const BsonObj& kb) const {
  // Key strings (bson/key_string.h) order as CompareElementValues orders their values, with the
  // descending components complemented: one memcmp instead of a walk of each value.
  const std::string_view a = ka.FirstElement().BinData();
  const std::string_view b = kb.FirstElement().BinData();
  const int c = a.compare(b);
  return c < 0 ? -1 : c > 0 ? 1 : 0;
}

int SortPattern::Compare(const BsonObj& a, const BsonObj& b) const {
  return CompareKeys(ExtractKey(a), ExtractKey(b));
}

}  // namespace hourglass::query
