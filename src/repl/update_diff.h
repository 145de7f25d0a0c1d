// Update diffs: how the oplog logs a change to a document (MongoDB's `$v: 2` entries,
// `{op: "u", o: {$v: 2, diff: {d: {...}, u: {...}, i: {...}}}, o2: {_id}}`), so that tools that
// tail the oplog read updates as mongod writes them and an update costs the log its changed
// fields, not the document. A diff here is top-level: `d` names the fields removed (value false),
// `u` the fields whose value changed (the new value, in place), `i` the fields added at the end,
// in order. Applying it to the document before gives the document after, byte for byte.
#pragma once

#include <optional>

#include "base/status.h"
#include "bson/bson.h"

namespace hourglass::repl {

// The diff that turns `before` into `after`, when one can (fields kept in their order, new ones
// after them) and it is smaller than `after`; nullopt otherwise (the entry then logs `after`).
std::optional<bson::BsonObj> ComputeUpdateDiff(const bson::BsonObj& before,
                                               const bson::BsonObj& after);

// `doc` with `diff` applied. BadValue for a diff this server does not write (sub-diffs `s...`,
// array diffs) or a malformed one, naming what is wrong.
StatusWith<bson::BsonObj> ApplyUpdateDiff(const bson::BsonObj& doc, const bson::BsonObj& diff);

}  // namespace hourglass::repl
