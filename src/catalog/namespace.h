// Namespaces ("db.collection") and MongoDB's naming rules for databases and collections.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace hourglass::catalog {

struct NamespaceString {
  std::string db;
  std::string coll;
  std::string ns() const { return db + "." + coll; }
  bool IsSystem() const { return coll.rfind("system.", 0) == 0; }
  // "db.system.buckets.X" → true.
  bool IsTimeseriesBuckets() const { return coll.rfind("system.buckets.", 0) == 0; }
};

// Splits "db.coll" at the first dot. InvalidNamespace (73) if there is no dot.
StatusWith<NamespaceString> ParseNamespace(std::string_view full);

// MongoDB's rules: non-empty, < 64 characters, none of  /\. "$*<>:|?  nor NUL.
// InvalidNamespace (73) naming the database otherwise.
Status ValidateDbName(std::string_view db);

// Non-empty, no NUL, not starting with '.', no '$' (except the oplog-style names MongoDB allows),
// and db.coll at most 255 bytes. InvalidNamespace (73) otherwise.
Status ValidateCollectionName(const NamespaceString& nss);

}  // namespace hourglass::catalog
