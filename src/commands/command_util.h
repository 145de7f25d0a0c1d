// Helpers that check a command document's fields the way MongoDB's IDL parsers do, producing the
// same codes and messages users see from MongoDB:
//   TypeMismatch (14)  "BSON field 'find.filter' is the wrong type 'string', expected type
//   'object'" 40415              "BSON field 'find.foo' is an unknown field."
// and helpers for the generic arguments every command accepts (lsid, $clusterTime, comment, ...).
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>

#include "base/generic_arguments.h"
#include "base/status.h"
#include "bson/bson.h"
#include "commands/service_context.h"

namespace hourglass::commands {

// TypeMismatch naming `cmd.field`, the actual type and `expected` (e.g. "object").
Status WrongType(std::string_view cmd, const bson::BsonElement& e, std::string_view expected);
// 40415 "BSON field 'cmd.field' is an unknown field."
Status UnknownField(std::string_view cmd, std::string_view field);

// 40414 "BSON field 'cmd.field' is missing but a required field"; `cmd` may be a dotted
// context such as "update.updates".
Status MissingField(std::string_view cmd, std::string_view field);

// Checks that every field of `cmd` after the first is generic or listed in `known`.
Status CheckKnownFields(const bson::BsonObj& cmd, std::initializer_list<std::string_view> known);
// Checks that every field of a nested document (an update statement, cursor options, ...) is in
// `known`; errors name the field as "<context>.<field>".
Status CheckKnownSubFields(std::string_view context, const bson::BsonObj& doc,
                           std::initializer_list<std::string_view> known);

// Checks the `hint` and `collation` options a read or write may carry: the hint's type (string or
// object; the planner checks that the index exists) and the collation, where only the simple
// (binary) one is supported: any other fails with CommandNotSupported (115) rather than comparing
// strings wrongly.
Status CheckHintAndCollation(std::string_view cmd, const bson::BsonObj& doc);

// Typed getters. Absent fields return the default / nullopt; present fields of the wrong type
// return TypeMismatch with MongoDB's message.
StatusWith<std::optional<bson::BsonObj>> GetObject(std::string_view cmd, const bson::BsonObj& doc,
                                                   std::string_view field);
StatusWith<std::optional<bson::BsonObj>> GetArray(std::string_view cmd, const bson::BsonObj& doc,
                                                  std::string_view field);
StatusWith<std::optional<std::string>> GetString(std::string_view cmd, const bson::BsonObj& doc,
                                                 std::string_view field);
// bool fields accept bool and numbers (MongoDB's IDL "safeBool").
StatusWith<bool> GetBool(std::string_view cmd, const bson::BsonObj& doc, std::string_view field,
                         bool default_value);
// Whole numbers given as int, long, or integral double/decimal ("safeInt64").
StatusWith<std::optional<int64_t>> GetInt64(std::string_view cmd, const bson::BsonObj& doc,
                                            std::string_view field);

// The collection name a command targets: the string value of its first field. InvalidNamespace
// (73) if it is not a non-empty string.
StatusWith<std::string> GetCollectionName(const bson::BsonObj& cmd, std::string_view db);

// "<hostname>:<port>", as MongoDB names a server in currentOp and $collStats.
std::string HostAndPort(const ServiceContext& service);

}  // namespace hourglass::commands
