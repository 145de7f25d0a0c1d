// What Hourglass adds to MongoDB's oplog entries, shared by the members that write, apply and
// roll them back (oplog.h, rollback.h): the field names and the encoding of byte-range edits.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/session.h"

namespace hourglass::repl {

// An update logged as the byte-range edits Collection::ModifyRecord made: {hgEdits: [{o: offset,
// n: bytes replaced, d: BinData}]}. Earlier versions logged bucket appends so; they log `$v: 2`
// diffs now, and a member still applies (and rolls back) such entries from its log.
inline constexpr std::string_view kEditsField = "hgEdits";

// The retryable-write records (catalog::StatementRecord) of a transaction, on its last operation:
// {hgStmts: [{lsid, txnNumber, stmtId: [ids], wall, [result]}]}.
inline constexpr std::string_view kStatementsField = "hgStmts";

// The edits of an `hgEdits` list, in order. BadValue when one is malformed.
StatusWith<std::vector<storage::Session::Modification>> ParseEdits(const bson::BsonObj& list);

}  // namespace hourglass::repl
