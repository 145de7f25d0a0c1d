// Test helper: documents written as the shell writes them, bare keys and single quotes
// ({_id: 0, host: 'a'}). Test-only; not part of the library.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>
#include <string_view>

#include "bson/bson.h"

namespace hourglass::bson::testing {

inline BsonObj ShellDoc(std::string_view relaxed) {
  static const std::regex kBareKey(R"(([{,]\s*)([A-Za-z_$][A-Za-z0-9_$]*)\s*:)");
  std::string json = std::regex_replace(std::string(relaxed), kBareKey, "$1\"$2\":");
  std::replace(json.begin(), json.end(), '\'', '"');
  auto sw = FromJson(json);
  EXPECT_TRUE(sw.ok()) << sw.status().ToString() << " in " << json;
  return sw.ok() ? sw.value() : BsonObj();
}

}  // namespace hourglass::bson::testing
