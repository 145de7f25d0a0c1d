#include "collation/collator.h"

#include <unicode/coll.h>
#include <unicode/locid.h>
#include <unicode/strenum.h>
#include <unicode/stringpiece.h>
#include <unicode/unistr.h>

#include <cmath>
#include <set>
#include <vector>

namespace hourglass::collation {

using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

namespace {

constexpr std::string_view kVersion = "57.1";

// What ICU has collation data for: the languages, scripts and language_country_variant names of
// its collation locales, and each locale's "collation" keyword values.
struct IcuLocales {
  std::set<std::string> languages, scripts, countries, bases;
};

const IcuLocales& Available() {
  static const IcuLocales a = [] {
    IcuLocales out;
    int32_t n = 0;
    const icu::Locale* all = icu::Collator::getAvailableLocales(n);
    for (int32_t i = 0; i < n; ++i) {
      out.languages.insert(all[i].getLanguage());
      if (*all[i].getScript() != 0) out.scripts.insert(all[i].getScript());
      out.bases.insert(all[i].getBaseName());
    }
    for (const char* const* c = icu::Locale::getISOCountries(); *c != nullptr; ++c) {
      out.countries.insert(*c);
    }
    return out;
  }();
  return a;
}

// Whether `id` names a locale MongoDB accepts: spelled as ICU spells it, a language ICU collates,
// a known script and country, a variant only where ICU has that very locale, and no keyword but
// a `collation` type the language has.
bool ValidLocale(const std::string& id) {
  if (id.empty() || id.size() > 64 || id.find('\0') != std::string::npos) return false;
  // No empty component ("en_", "_en", "en__US"): ICU would read them as absent.
  const std::string_view base = std::string_view(id).substr(0, id.find('@'));
  if (base.empty() || base.front() == '_' || base.back() == '_' ||
      base.find("__") != std::string_view::npos) {
    return false;
  }
  icu::Locale loc(id.c_str());
  if (loc.isBogus() || id != loc.getName()) return false;
  const std::string language = loc.getLanguage();
  if (language.empty() || language == "root") return false;
  const IcuLocales& a = Available();
  if (!a.languages.contains(language)) return false;
  const std::string script = loc.getScript(), country = loc.getCountry(),
                    variant = loc.getVariant();
  if (!script.empty() && !a.scripts.contains(script)) return false;
  if (!country.empty() && (country.size() != 2 || !a.countries.contains(country))) return false;
  if (!variant.empty() && !a.bases.contains(loc.getBaseName())) return false;
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::StringEnumeration> keywords(loc.createKeywords(status));
  if (U_FAILURE(status)) return false;
  if (keywords == nullptr) return true;
  while (const char* k = keywords->next(nullptr, status)) {
    if (std::string_view(k) != "collation") return false;
    char value[64] = {0};
    loc.getKeywordValue("collation", value, sizeof(value), status);
    if (U_FAILURE(status)) return false;
    std::unique_ptr<icu::StringEnumeration> types(icu::Collator::getKeywordValuesForLocale(
        "collation", icu::Locale(loc.getBaseName()), /*commonlyUsed=*/true, status));
    if (U_FAILURE(status) || types == nullptr) return false;
    bool found = false;
    while (const char* t = types->next(nullptr, status)) {
      if (std::string_view(t) == value && std::string_view(t) != "standard") found = true;
    }
    if (!found) return false;
  }
  return U_SUCCESS(status);
}

// {name: value} as JSON, for messages.
std::string Json(const BsonElement& e) {
  bson::BsonBuilder b;
  b.AppendElement(e);
  return b.Obj().ToJson();
}

Status TypeMismatch(const BsonElement& e, std::string_view expected) {
  return Status(ErrorCode::kTypeMismatch, "Field '" + std::string(e.FieldName()) +
                                              "' must be of type " + std::string(expected) +
                                              " in: " + Json(e));
}

}  // namespace

BsonObj CollationSpec::ToBson() const {
  bson::BsonBuilder b;
  b.AppendString("locale", locale);
  b.AppendBool("caseLevel", case_level);
  b.AppendString("caseFirst", case_first);
  b.AppendInt32("strength", strength);
  b.AppendBool("numericOrdering", numeric_ordering);
  b.AppendString("alternate", alternate);
  b.AppendString("maxVariable", max_variable);
  b.AppendBool("normalization", normalization);
  b.AppendBool("backwards", backwards);
  b.AppendString("version", version);
  return b.Obj();
}

Collator::Collator(CollationSpec spec, std::unique_ptr<icu::Collator> icu)
    : spec_(std::move(spec)), icu_(std::move(icu)) {}

Collator::~Collator() = default;

StatusWith<std::shared_ptr<const Collator>> Collator::Make(const BsonObj& doc) {
  static const std::set<std::string_view> kFields = {
      "locale",    "caseLevel",   "caseFirst",     "strength",  "numericOrdering",
      "alternate", "maxVariable", "normalization", "backwards", "version"};
  for (BsonElement e : doc) {
    if (!kFields.contains(e.FieldName())) {
      return Status(ErrorCode::kFailedToParse,
                    "unknown collation spec field: " + std::string(e.FieldName()));
    }
  }
  BsonElement locale = doc["locale"];
  if (locale.eoo()) return Status(ErrorCode::kNoSuchKey, "Missing expected field \"locale\"");
  if (locale.type() != BsonType::kString) return TypeMismatch(locale, "string");
  if (locale.Str() == "simple") {
    if (doc.NumFields() > 1) {
      return Status(ErrorCode::kFailedToParse,
                    "If \"locale\" is \"simple\", then no other fields may be specified");
    }
    return std::shared_ptr<const Collator>();
  }
  CollationSpec spec;
  spec.locale = std::string(locale.Str());
  // The settings given: each checked for its type and values before ICU sees it.
  auto get_bool = [&](std::string_view name, std::optional<bool>* out) -> Status {
    BsonElement e = doc[name];
    if (e.eoo()) return Status::OK();
    if (e.type() != BsonType::kBool) return TypeMismatch(e, "bool");
    *out = e.Bool();
    return Status::OK();
  };
  auto get_choice = [&](std::string_view name, std::initializer_list<std::string_view> allowed,
                        std::optional<std::string>* out) -> Status {
    BsonElement e = doc[name];
    if (e.eoo()) return Status::OK();
    if (e.type() != BsonType::kString) return TypeMismatch(e, "string");
    for (std::string_view a : allowed) {
      if (e.Str() == a) {
        *out = std::string(a);
        return Status::OK();
      }
    }
    return Status(ErrorCode::kFailedToParse,
                  "Field '" + std::string(name) + "' has an invalid value: " + Json(e));
  };
  std::optional<bool> case_level, numeric, normalization, backwards;
  std::optional<std::string> case_first, alternate, max_variable;
  std::optional<int> strength;
  HG_RETURN_IF_ERROR(get_bool("caseLevel", &case_level));
  HG_RETURN_IF_ERROR(get_bool("numericOrdering", &numeric));
  HG_RETURN_IF_ERROR(get_bool("normalization", &normalization));
  HG_RETURN_IF_ERROR(get_bool("backwards", &backwards));
  HG_RETURN_IF_ERROR(get_choice("caseFirst", {"upper", "lower", "off"}, &case_first));
  HG_RETURN_IF_ERROR(get_choice("alternate", {"non-ignorable", "shifted"}, &alternate));
  HG_RETURN_IF_ERROR(get_choice("maxVariable", {"punct", "space"}, &max_variable));
  if (BsonElement e = doc["strength"]; !e.eoo()) {
    if (!e.IsNumber()) return TypeMismatch(e, "number");
    const double d = e.NumberDouble();
    if (d != std::floor(d)) {
      return Status(ErrorCode::kBadValue,
                    "Field 'strength' must be an integer 1 through 5. Got: " + Json(e));
    }
    if (d < 1 || d > 5) {
      return Status(ErrorCode::kFailedToParse,
                    "Field 'strength' must be an integer 1 through 5. Got: " + Json(e));
    }
    strength = static_cast<int>(d);
  }
  if (BsonElement e = doc["version"]; !e.eoo()) {
    if (e.type() != BsonType::kString) return TypeMismatch(e, "string");
    if (e.Str() != kVersion) {
      return Status(ErrorCode::kBadValue, "Field 'version' must be \"57.1\" in: " + doc.ToJson());
    }
  }
  if (!ValidLocale(spec.locale)) {
    return Status(ErrorCode::kBadValue, "Field 'locale' is invalid in: " + doc.ToJson());
  }
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::Collator> icu(
      icu::Collator::createInstance(icu::Locale(spec.locale.c_str()), status));
  if (U_FAILURE(status) || icu == nullptr) {
    return Status(ErrorCode::kBadValue, "Field 'locale' is invalid in: " + doc.ToJson());
  }
  auto on_off = [](bool v) { return v ? UCOL_ON : UCOL_OFF; };
  if (case_level) icu->setAttribute(UCOL_CASE_LEVEL, on_off(*case_level), status);
  if (numeric) icu->setAttribute(UCOL_NUMERIC_COLLATION, on_off(*numeric), status);
  if (normalization) icu->setAttribute(UCOL_NORMALIZATION_MODE, on_off(*normalization), status);
  if (backwards) icu->setAttribute(UCOL_FRENCH_COLLATION, on_off(*backwards), status);
  if (case_first) {
    icu->setAttribute(UCOL_CASE_FIRST,
                      *case_first == "upper"   ? UCOL_UPPER_FIRST
                      : *case_first == "lower" ? UCOL_LOWER_FIRST
                                               : UCOL_OFF,
                      status);
  }
  if (alternate) {
    icu->setAttribute(UCOL_ALTERNATE_HANDLING,
                      *alternate == "shifted" ? UCOL_SHIFTED : UCOL_NON_IGNORABLE, status);
  }
  if (max_variable) {
    icu->setMaxVariable(
        *max_variable == "space" ? UCOL_REORDER_CODE_SPACE : UCOL_REORDER_CODE_PUNCTUATION, status);
  }
  if (strength) {
    static constexpr UColAttributeValue kStrengths[] = {UCOL_PRIMARY, UCOL_SECONDARY, UCOL_TERTIARY,
                                                        UCOL_QUATERNARY, UCOL_IDENTICAL};
    icu->setAttribute(UCOL_STRENGTH, kStrengths[*strength - 1], status);
  }
  if (U_FAILURE(status)) {
    return Status(ErrorCode::kBadValue,
                  std::string("collation settings refused by ICU: ") + u_errorName(status));
  }
  // The effective settings, the locale's defaults included (fr_CA collates accents backwards).
  auto is_on = [&](UColAttribute a) { return icu->getAttribute(a, status) == UCOL_ON; };
  spec.case_level = is_on(UCOL_CASE_LEVEL);
  spec.numeric_ordering = is_on(UCOL_NUMERIC_COLLATION);
  spec.normalization = is_on(UCOL_NORMALIZATION_MODE);
  spec.backwards = is_on(UCOL_FRENCH_COLLATION);
  const UColAttributeValue cf = icu->getAttribute(UCOL_CASE_FIRST, status);
  spec.case_first = cf == UCOL_UPPER_FIRST ? "upper" : cf == UCOL_LOWER_FIRST ? "lower" : "off";
  spec.alternate = icu->getAttribute(UCOL_ALTERNATE_HANDLING, status) == UCOL_SHIFTED
                       ? "shifted"
                       : "non-ignorable";
  spec.max_variable = icu->getMaxVariable() == UCOL_REORDER_CODE_SPACE ? "space" : "punct";
  switch (icu->getAttribute(UCOL_STRENGTH, status)) {
    case UCOL_PRIMARY:
      spec.strength = 1;
      break;
    case UCOL_SECONDARY:
      spec.strength = 2;
      break;
    case UCOL_QUATERNARY:
      spec.strength = 4;
      break;
    case UCOL_IDENTICAL:
      spec.strength = 5;
      break;
    default:
      spec.strength = 3;
  }
  return std::shared_ptr<const Collator>(new Collator(std::move(spec), std::move(icu)));
}

int Collator::Compare(std::string_view a, std::string_view b) const {
  UErrorCode status = U_ZERO_ERROR;
  const UCollationResult r =
      icu_->compareUTF8(icu::StringPiece(a.data(), static_cast<int32_t>(a.size())),
                        icu::StringPiece(b.data(), static_cast<int32_t>(b.size())), status);
  if (U_FAILURE(status)) return a.compare(b) < 0 ? -1 : a.compare(b) > 0 ? 1 : 0;
  return r == UCOL_LESS ? -1 : r == UCOL_GREATER ? 1 : 0;
}

std::string Collator::ComparisonKey(std::string_view s) const {
  const icu::UnicodeString u =
      icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), static_cast<int32_t>(s.size())));
  std::string key(std::max<size_t>(32, s.size() * 4), '\0');
  int32_t n =
      icu_->getSortKey(u, reinterpret_cast<uint8_t*>(key.data()), static_cast<int32_t>(key.size()));
  if (n > static_cast<int32_t>(key.size())) {
    key.resize(static_cast<size_t>(n));
    n = icu_->getSortKey(u, reinterpret_cast<uint8_t*>(key.data()), n);
  }
  key.resize(n > 0 ? static_cast<size_t>(n - 1) : 0);  // the terminating NUL
  return key;
}

bool SameCollation(const bson::StringComparator* a, const bson::StringComparator* b) {
  if (a == b) return true;
  const auto* x = dynamic_cast<const Collator*>(a);
  const auto* y = dynamic_cast<const Collator*>(b);
  if (x == nullptr || y == nullptr) return false;
  return x->spec().ToBson().BinaryEqual(y->spec().ToBson());
}

}  // namespace hourglass::collation
