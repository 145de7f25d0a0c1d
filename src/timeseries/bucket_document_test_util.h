// Test-only helpers shared by the BucketDocument tests of both layouts.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "bson/bson.h"
#include "storage/session.h"

namespace hourglass::timeseries::testing {

using Edits = std::vector<storage::Session::Modification>;

inline bson::BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : bson::BsonObj();
}

// Applies edits in order, as Session::Modify does: each replaces `size` bytes at `offset`.
inline std::string ApplyEdits(std::string doc, const Edits& edits) {
  for (const auto& e : edits) {
    EXPECT_LE(e.offset + e.size, doc.size()) << "edit past the end";
    if (e.offset + e.size > doc.size()) return doc;
    doc.replace(e.offset, e.size, e.data);
  }
  return doc;
}

}  // namespace hourglass::timeseries::testing
