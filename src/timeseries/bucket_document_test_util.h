// Test-only helpers shared by the BucketDocument tests of both layouts.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "bson/bson.h"
#include "catalog/update_diff.h"
#include "storage/session.h"
#include "timeseries/bucket_document.h"

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

// The stored bytes after `doc`'s prepared write of a stored document (`edits`, or `full` when it
// was prepared whole), checking that its prepared diff — what the oplog logs, and what the other
// members apply as edits of their own — gives the same bytes.
inline std::string ApplyWrite(BucketDocument& doc, const std::string& stored, const Edits& edits,
                              const std::string& full = std::string()) {
  std::string after = doc.prepared_whole() ? full : ApplyEdits(stored, edits);
  const bson::BsonObj before(stored.data());
  const bson::BsonObj diff = doc.PreparedDiff();
  EXPECT_FALSE(diff.IsEmpty());
  auto applied = catalog::ApplyUpdateDiff(before, diff);
  EXPECT_TRUE(applied.ok()) << applied.status().reason() << " " << diff.ToJson();
  if (applied.ok()) {
    EXPECT_EQ(applied.value().bytes(), after) << diff.ToJson();
  }
  auto by_edits = catalog::UpdateDiffEdits(before, diff);
  EXPECT_TRUE(by_edits.ok());
  if (by_edits.ok()) {
    EXPECT_EQ(ApplyEdits(stored, by_edits.value()), after) << diff.ToJson();
  }
  return after;
}

}  // namespace hourglass::timeseries::testing
