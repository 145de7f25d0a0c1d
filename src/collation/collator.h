// Collations as MongoDB has them (the `collation` option of commands, collections and indexes):
// a spec document parsed and normalized as MongoDB normalizes it, and the ICU collator that
// orders strings under it. MongoDB uses ICU too, so the order is ICU's (Debian's ICU 72 here;
// the spec reports MongoDB's "57.1" version string, as a 7.0 server does).
//
// Collator is immutable; Compare and ComparisonKey are thread-safe (ICU collators are for
// their const operations).
#pragma once

#include <unicode/uversion.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"
#include "bson/bson_compare.h"

U_NAMESPACE_BEGIN
class Collator;
U_NAMESPACE_END

namespace hourglass::collation {

// A collation's settings with every field set (MongoDB's CollationSpec).
struct CollationSpec {
  std::string locale;
  bool case_level = false;
  std::string case_first = "off";  // "upper", "lower" or "off"
  int strength = 3;                // 1 (primary) to 5 (identical)
  bool numeric_ordering = false;
  std::string alternate = "non-ignorable";  // or "shifted"
  std::string max_variable = "punct";       // or "space"
  bool normalization = false;
  bool backwards = false;
  std::string version = "57.1";

  // The normalized document listCollections and listIndexes show: every field, in MongoDB's
  // order (locale, caseLevel, caseFirst, strength, numericOrdering, alternate, maxVariable,
  // normalization, backwards, version).
  bson::BsonObj ToBson() const;
};

class Collator final : public bson::StringComparator {
 public:
  // The collator of the collation document `spec` as a command takes it. nullptr for the simple
  // collation ({locale: "simple"}). Errors, as MongoDB's: NoSuchKey (4) without `locale`;
  // TypeMismatch (14) for a field of the wrong type; FailedToParse (9) for an unknown field,
  // other fields next to locale "simple", a strength outside 1-5 or an unknown caseFirst,
  // alternate or maxVariable; BadValue (2) for a fractional strength, a locale ICU has no
  // collation for or does not spell canonically ("en-US", "en_us", "root", "xx"), or a version
  // other than "57.1".
  static StatusWith<std::shared_ptr<const Collator>> Make(const bson::BsonObj& spec);

  ~Collator() override;
  const CollationSpec& spec() const { return spec_; }

  int Compare(std::string_view a, std::string_view b) const override;
  // ICU's sort key (without its terminating NUL).
  std::string ComparisonKey(std::string_view s) const override;

 private:
  Collator(CollationSpec spec, std::unique_ptr<icu::Collator> icu);
  CollationSpec spec_;
  std::unique_ptr<icu::Collator> icu_;
};

// Whether two collators order strings the same way (both null: the simple collation). Any
// comparator other than a Collator is the same only as itself.
bool SameCollation(const bson::StringComparator* a, const bson::StringComparator* b);

}  // namespace hourglass::collation
