// Checks of a document's fields as MongoDB's IDL parsers make them, with the codes and messages
// users see from MongoDB:
//   TypeMismatch (14) "BSON field 'find.filter' is the wrong type 'string', expected type 'object'"
//   40415             "BSON field 'find.foo' is an unknown field."
//   40414             "BSON field 'update.q' is missing but a required field"
// Commands, aggregation stages and the time-series options parse their specifications with them.
//
// They live in bson/ rather than base/ because they read BsonElement and BsonObj, and hg_base
// links nothing but the standard library (bson/ depends on base/, not the other way round);
// every module that parses BSON specifications already links hg_bson.
//
// Stateless functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::bson {

// TypeMismatch (14) "BSON field '<path>' is the wrong type '<type of e>', expected type
// '<expected>'". `expected` is printed as given ("object", "[string, object]").
Status WrongTypeAtPath(std::string_view path, const BsonElement& e, std::string_view expected);
// WrongTypeAtPath for the field `e` of the document at `context`: the path is
// "<context>.<field name of e>".
Status WrongType(std::string_view context, const BsonElement& e, std::string_view expected);
// TypeMismatch (14) for a field that accepts several types, worded as MongoDB's IDL words variant
// fields: `expected` = "[a, b]" prints "expected types '[a, b']", the closing quote misplaced
// exactly as MongoDB does; a single type prints as WrongTypeAtPath does.
Status WrongVariantType(std::string_view path, const BsonElement& e, std::string_view expected);

// 40415 "BSON field '<context>.<field>' is an unknown field."
Status UnknownField(std::string_view context, std::string_view field);
// 40414 "BSON field '<context>.<field>' is missing but a required field".
Status MissingField(std::string_view context, std::string_view field);

// Typed getters for the field `field` of `doc`, whose path is "<context>.<field>". Absent fields
// return the default / nullopt; present fields of the wrong type return TypeMismatch (WrongType).
StatusWith<std::optional<BsonObj>> GetObject(std::string_view context, const BsonObj& doc,
                                             std::string_view field);
StatusWith<std::optional<BsonObj>> GetArray(std::string_view context, const BsonObj& doc,
                                            std::string_view field);
StatusWith<std::optional<std::string>> GetString(std::string_view context, const BsonObj& doc,
                                                 std::string_view field);
// bool fields accept bool and numbers (MongoDB's IDL "safeBool"); null counts as absent.
StatusWith<bool> GetBool(std::string_view context, const BsonObj& doc, std::string_view field,
                         bool default_value);
// Whole numbers given as int, long, or integral double/decimal ("safeInt64"); a fractional or
// out-of-range double fails with FailedToParse (9).
StatusWith<std::optional<int64_t>> GetInt64(std::string_view context, const BsonObj& doc,
                                            std::string_view field);

// MongoDB's bsonExtractIntegerField (util/bson_extract.h), which commands without an IDL parser
// and fail points' data use: the whole number in `field` of `doc`, given as any number type.
// NoSuchKey (4) "Missing expected field \"<field>\"", TypeMismatch (14) "Expected field
// \"<field>\" to have numeric type, but found <type>", BadValue (2) "Expected field \"<field>\" to
// have a value exactly representable as a 64-bit integer, but found <field>: <value>".
StatusWith<int64_t> ExtractIntegerField(const BsonObj& doc, std::string_view field);

}  // namespace hourglass::bson
