#include "collation/collator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace hourglass::collation {
namespace {

using bson::BsonBuilder;
using bson::BsonObj;

std::shared_ptr<const Collator> Make(const BsonObj& spec) {
  auto c = Collator::Make(spec);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? c.value() : nullptr;
}

BsonObj Locale(std::string_view l) { return BsonBuilder().AppendString("locale", l).Obj(); }

// `words` sorted by `c`, then checked against ComparisonKey's binary order.
std::vector<std::string> Sorted(const Collator& c, std::vector<std::string> words) {
  std::vector<std::string> by_key = words;
  std::stable_sort(words.begin(), words.end(),
                   [&](const std::string& a, const std::string& b) { return c.Compare(a, b) < 0; });
  std::stable_sort(by_key.begin(), by_key.end(), [&](const std::string& a, const std::string& b) {
    return c.ComparisonKey(a) < c.ComparisonKey(b);
  });
  EXPECT_EQ(words, by_key);
  return words;
}

TEST(CollatorTest, SimpleIsNoCollator) {
  auto c = Collator::Make(Locale("simple"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value(), nullptr);
  auto bad = Collator::Make(
      BsonBuilder().AppendString("locale", "simple").AppendInt32("strength", 2).Obj());
  EXPECT_EQ(bad.status().code(), ErrorCode::kFailedToParse);
}

TEST(CollatorTest, NormalizedSpecHasEveryField) {
  auto c = Make(Locale("en_US"));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->spec().ToBson().ToJson(),
            R"({ "locale" : "en_US", "caseLevel" : false, "caseFirst" : "off", "strength" : 3, )"
            R"("numericOrdering" : false, "alternate" : "non-ignorable", "maxVariable" : "punct", )"
            R"("normalization" : false, "backwards" : false, "version" : "57.1" })");
  // A locale's own defaults show: Canadian French orders accents from the end.
  EXPECT_TRUE(Make(Locale("fr_CA"))->spec().backwards);
  EXPECT_FALSE(Make(Locale("fr"))->spec().backwards);
}

TEST(CollatorTest, ParseErrorsHaveMongoDbCodes) {
  struct Case {
    BsonObj spec;
    ErrorCode code;
  };
  auto with = [](auto&& fill) {
    BsonBuilder b;
    b.AppendString("locale", "en_US");
    fill(b);
    return b.Obj();
  };
  const std::vector<Case> cases = {
      {BsonObj(), ErrorCode::kNoSuchKey},
      {BsonBuilder().AppendInt32("locale", 3).Obj(), ErrorCode::kTypeMismatch},
      {with([](BsonBuilder& b) { b.AppendString("unknown", "x"); }), ErrorCode::kFailedToParse},
      {with([](BsonBuilder& b) { b.AppendInt32("strength", 6); }), ErrorCode::kFailedToParse},
      {with([](BsonBuilder& b) { b.AppendInt32("strength", -1); }), ErrorCode::kFailedToParse},
      {with([](BsonBuilder& b) { b.AppendDouble("strength", 0.5); }), ErrorCode::kBadValue},
      {with([](BsonBuilder& b) { b.AppendString("strength", "2"); }), ErrorCode::kTypeMismatch},
      {with([](BsonBuilder& b) { b.AppendString("caseLevel", "x"); }), ErrorCode::kTypeMismatch},
      {with([](BsonBuilder& b) { b.AppendString("caseFirst", "x"); }), ErrorCode::kFailedToParse},
      {with([](BsonBuilder& b) { b.AppendInt32("alternate", 1); }), ErrorCode::kTypeMismatch},
      {with([](BsonBuilder& b) { b.AppendString("maxVariable", "x"); }), ErrorCode::kFailedToParse},
      {with([](BsonBuilder& b) { b.AppendString("version", "1.0"); }), ErrorCode::kBadValue},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Collator::Make(c.spec).status().code(), c.code) << c.spec.ToJson();
  }
  // Locales ICU has no collation for, or spelled otherwise than ICU spells them.
  for (std::string_view bad :
       {"", "garbage", "root", "xx_US", "en_ZZ", "en_USA", "en-US", "en_us", "en_US_", "_en",
        "zh_Blah", "ZH_hant", "en_US_FOO", "@collation=phonebook", "de@collation",
        "de@collation=phonebook;", "en_US@collation=phonebook"}) {
    EXPECT_EQ(Collator::Make(Locale(bad)).status().code(), ErrorCode::kBadValue) << bad;
  }
  for (std::string_view good :
       {"en", "en_US", "en_US_POSIX", "fr_CA", "de@collation=phonebook", "zh_Hant", "ja", "sv"}) {
    EXPECT_TRUE(Collator::Make(Locale(good)).ok()) << good;
  }
}

TEST(CollatorTest, StrengthDecidesWhatDiffers) {
  auto primary = Make(BsonBuilder().AppendString("locale", "en").AppendInt32("strength", 1).Obj());
  auto secondary =
      Make(BsonBuilder().AppendString("locale", "en").AppendInt32("strength", 2).Obj());
  auto tertiary = Make(Locale("en"));
  EXPECT_EQ(primary->Compare("cafe", "Café"), 0);
  EXPECT_NE(secondary->Compare("cafe", "café"), 0);
  EXPECT_EQ(secondary->Compare("café", "CAFÉ"), 0);
  EXPECT_NE(tertiary->Compare("café", "Café"), 0);
  EXPECT_EQ(primary->ComparisonKey("cafe"), primary->ComparisonKey("CAFÉ"));
  EXPECT_NE(tertiary->ComparisonKey("cafe"), tertiary->ComparisonKey("Cafe"));
}

TEST(CollatorTest, FrenchGermanPhonebookJapaneseAndNumbers) {
  // French (Canada): the last accent decides first.
  EXPECT_EQ(Sorted(*Make(Locale("fr_CA")), {"côté", "coté", "côte", "cote"}),
            (std::vector<std::string>{"cote", "côte", "coté", "côté"}));
  // English orders the same words by their first accent.
  EXPECT_EQ(Sorted(*Make(Locale("en")), {"côté", "coté", "côte", "cote"}),
            (std::vector<std::string>{"cote", "coté", "côte", "côté"}));
  // German phonebook: ü as ue, so Müller comes after Muetze; the standard order puts it first.
  EXPECT_EQ(Sorted(*Make(Locale("de@collation=phonebook")), {"Müller", "Muetze", "Mueller"}),
            (std::vector<std::string>{"Mueller", "Müller", "Muetze"}));
  EXPECT_EQ(Sorted(*Make(Locale("de")), {"Muetze", "Müller", "Mueller"}),
            (std::vector<std::string>{"Mueller", "Muetze", "Müller"}));
  // Japanese: hiragana and katakana of one sound differ only at the tertiary level and beyond.
  auto ja1 = Make(BsonBuilder().AppendString("locale", "ja").AppendInt32("strength", 1).Obj());
  EXPECT_EQ(ja1->Compare("あ", "ア"), 0);
  EXPECT_LT(ja1->Compare("あ", "い"), 0);
  // numericOrdering: digits as numbers.
  auto num =
      Make(BsonBuilder().AppendString("locale", "en").AppendBool("numericOrdering", true).Obj());
  EXPECT_EQ(Sorted(*num, {"10", "9", "100", "2"}),
            (std::vector<std::string>{"2", "9", "10", "100"}));
  EXPECT_EQ(Sorted(*Make(Locale("en")), {"10", "9", "100", "2"}),
            (std::vector<std::string>{"10", "100", "2", "9"}));
}

TEST(CollatorTest, CaseFirstCaseLevelAndAlternate) {
  auto upper =
      Make(BsonBuilder().AppendString("locale", "en").AppendString("caseFirst", "upper").Obj());
  EXPECT_LT(upper->Compare("A", "a"), 0);
  auto lower =
      Make(BsonBuilder().AppendString("locale", "en").AppendString("caseFirst", "lower").Obj());
  EXPECT_LT(lower->Compare("a", "A"), 0);
  // Strength 1 with caseLevel: case counts, accents do not.
  auto case_level = Make(BsonBuilder()
                             .AppendString("locale", "en")
                             .AppendInt32("strength", 1)
                             .AppendBool("caseLevel", true)
                             .Obj());
  EXPECT_NE(case_level->Compare("a", "A"), 0);
  EXPECT_EQ(case_level->Compare("a", "á"), 0);
  // alternate shifted ignores spaces and punctuation (maxVariable punct).
  auto shifted = Make(BsonBuilder()
                          .AppendString("locale", "en")
                          .AppendString("alternate", "shifted")
                          .AppendInt32("strength", 3)
                          .Obj());
  EXPECT_EQ(shifted->Compare("e-mail", "email"), 0);
  EXPECT_EQ(shifted->Compare("black bird", "blackbird"), 0);
  auto space = Make(BsonBuilder()
                        .AppendString("locale", "en")
                        .AppendString("alternate", "shifted")
                        .AppendString("maxVariable", "space")
                        .Obj());
  EXPECT_EQ(space->Compare("black bird", "blackbird"), 0);
  EXPECT_NE(space->Compare("e-mail", "email"), 0);
  EXPECT_EQ(space->spec().max_variable, "space");
}

TEST(CollatorTest, ComparesValuesAtAnyDepth) {
  auto ci = Make(BsonBuilder().AppendString("locale", "en").AppendInt32("strength", 2).Obj());
  BsonObj a = BsonBuilder().AppendString("x", "ABC").Obj();
  BsonObj b = BsonBuilder().AppendString("x", "abc").Obj();
  EXPECT_NE(bson::CompareObjects(a, b), 0);
  EXPECT_EQ(bson::CompareObjects(a, b, ci.get()), 0);
  BsonBuilder form;
  bson::AppendComparisonForm(form, "v", a.FirstElement(), *ci);
  BsonBuilder form_b;
  bson::AppendComparisonForm(form_b, "v", b.FirstElement(), *ci);
  EXPECT_TRUE(form.Obj().BinaryEqual(form_b.Obj()));
  EXPECT_TRUE(SameCollation(
      ci.get(),
      Make(BsonBuilder().AppendString("locale", "en").AppendInt32("strength", 2).Obj()).get()));
  EXPECT_FALSE(SameCollation(ci.get(), nullptr));
}

}  // namespace
}  // namespace hourglass::collation
