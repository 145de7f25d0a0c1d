// Typed requests of the write commands insert, update and delete, each parsed once, before
// anything is written, by its Parse...Request. Fields are checked as MongoDB's IDL parsers check
// them, in the order these commands have always checked them: an unknown field is 40415, a field
// of the wrong type TypeMismatch (14), a missing one 40414, a batch of 0 or more than 100,000
// statements InvalidLength (16), a collection name that is not a non-empty string
// InvalidNamespace (73), a document sequence that repeats a body field ProtocolError (17, as
// ParseOpMsg reports it).
//
// The statement array (insert's `documents`, update's `updates`, delete's `deletes`) is read in
// place, from the body or from the OP_MSG document sequence of that name; the requests borrow the
// CommandRequest they were parsed from and live for one command. Pure functions except
// ParseDeleteRequest's `check_target` hook.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/namespace.h"
#include "collation/collator.h"
#include "commands/command_request.h"
#include "query/expression_hooks.h"

namespace hourglass::commands {

// The fields every write command has.
struct WriteCommandBase {
  // The document the generic arguments (writeConcern, comment, ...) are read from: the body, plus
  // any document sequence other than the statements' merged in as an array (none from drivers).
  bson::BsonObj cmd;
  catalog::NamespaceString nss;  // $db and the command's first field
  bool ordered = true;
  DocumentArray statements;  // documents / updates / deletes
};

// Each of `statements` is checked as it is inserted: a non-document fails the command with
// TypeMismatch, a document MongoDB would refuse becomes a writeError.
struct InsertRequest : WriteCommandBase {};

struct UpdateStatement {
  bson::BsonObj q;
  bson::BsonElement u;  // an update document or pipeline, parsed when the statement runs
  bool multi = false;
  bool upsert = false;
  bson::BsonObj array_filters;
  bson::BsonElement hint;                               // EOO if none
  std::shared_ptr<const collation::Collator> collator;  // null: the simple collation
  bool has_collation = false;  // the statement names one (else: the collection's default)
};

struct UpdateRequest : WriteCommandBase {
  query::ExpressionContext expr_ctx;  // $$NOW and the command's `let`
  std::vector<UpdateStatement> updates;
};

struct DeleteStatement {
  bson::BsonObj q;
  bool multi = true;                                    // limit 0
  bson::BsonElement hint;                               // EOO if none
  std::shared_ptr<const collation::Collator> collator;  // null: the simple collation
  bool has_collation = false;  // the statement names one (else: the collection's default)
};

struct DeleteRequest : WriteCommandBase {
  query::ExpressionContext expr_ctx;
  std::vector<DeleteStatement> deletes;
};

// One statement of update's `updates` / delete's `deletes` (explain parses its one statement
// with these too). Unknown fields 40415, wrong types 14, missing q/u/limit 40414, a delete limit
// other than 0 or 1 FailedToParse (9).
StatusWith<UpdateStatement> ParseUpdateStatement(const DocumentArray::Entry& entry);
StatusWith<DeleteStatement> ParseDeleteStatement(const DocumentArray::Entry& entry);

// `db` is the request's $db.
StatusWith<InsertRequest> ParseInsertRequest(const CommandRequest& request, std::string_view db);
StatusWith<UpdateRequest> ParseUpdateRequest(const CommandRequest& request, std::string_view db);
// Also checks the collection name (catalog::ValidateCollectionName), then calls `check_target`
// (if set) before the statements are parsed: delete has always reported a target it cannot
// write (a view: CommandNotSupportedOnView 166) ahead of a malformed statement.
StatusWith<DeleteRequest> ParseDeleteRequest(
    const CommandRequest& request, std::string_view db,
    const std::function<Status(const catalog::NamespaceString&)>& check_target = nullptr);

}  // namespace hourglass::commands
