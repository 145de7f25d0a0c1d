// Helpers that check a command document the way MongoDB's IDL parsers do, producing the same codes
// and messages users see from MongoDB: the field checks of bson/field_check.h (WrongType,
// UnknownField, MissingField, the typed Get* getters), brought into this namespace, and the checks
// only commands make: unknown top-level fields next to the generic arguments every command accepts
// (lsid, $clusterTime, comment, ...), hint and collation, the target collection's name.
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>

#include "base/generic_arguments.h"
#include "base/status.h"
#include "bson/bson.h"
#include "bson/field_check.h"
#include "catalog/collection.h"
#include "catalog/namespace.h"
#include "collation/collator.h"
#include "commands/service_context.h"

namespace hourglass::commands {

using bson::GetArray;
using bson::GetBool;
using bson::GetInt64;
using bson::GetObject;
using bson::GetString;
using bson::MissingField;
using bson::UnknownField;
using bson::WrongType;
using bson::WrongTypeAtPath;

// Checks that every field of `cmd` after the first is generic or listed in `known`.
Status CheckKnownFields(const bson::BsonObj& cmd, std::initializer_list<std::string_view> known);
// Checks that every field of a nested document (an update statement, cursor options, ...) is in
// `known`; errors name the field as "<context>.<field>".
Status CheckKnownSubFields(std::string_view context, const bson::BsonObj& doc,
                           std::initializer_list<std::string_view> known);

// Checks the `hint` and `collation` options a read or write may carry: the hint's type (string or
// object; the planner checks that the index exists), and returns the collation `doc` asks for:
// null for none or the simple collation; the collation's own errors (collation/collator.h),
// TypeMismatch (14) for a `collation` that is not an object.
StatusWith<std::shared_ptr<const collation::Collator>> CheckHintAndGetCollation(
    std::string_view cmd, const bson::BsonObj& doc);

// The collation a command on `coll` (may be null) runs under when it names none: the default
// collation of a regular or time-series collection (null: simple). A view has its own
// (commands/aggregate.cc).
std::shared_ptr<const collation::Collator> DefaultCollation(const catalog::Collection* coll);

// CheckHintAndGetCollation for a command on `nss`: without a `collation`, DefaultCollation.
StatusWith<std::shared_ptr<const collation::Collator>> CheckHintAndGetCollation(
    std::string_view cmd, const bson::BsonObj& doc, const ServiceContext& service,
    const catalog::NamespaceString& nss);

// The collection name a command targets: the string value of its first field. InvalidNamespace
// (73) if it is not a non-empty string.
StatusWith<std::string> GetCollectionName(const bson::BsonObj& cmd, std::string_view db);

// "<hostname>:<port>", as MongoDB names a server in currentOp and $collStats.
std::string HostAndPort(const ServiceContext& service);

}  // namespace hourglass::commands
