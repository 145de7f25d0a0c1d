// Update diffs: how the oplog logs a change to a document (MongoDB's `$v: 2` entries,
// `{op: "u", o: {$v: 2, diff: {...}}, o2: {_id}}`), so that tools that tail the oplog read
// updates as mongod writes them and an update costs the log what changed, not the document.
//
// A diff describes one object: `d` names the fields removed (value false), `u` the fields whose
// value changed (the new element, in place; appended when the field is missing), `i` the fields
// added at the end, in order; `s<name>` is the diff of the sub-object `name`; `b` holds binary
// diffs, `{<name>: {o: <offset>, d: <BinData>}}`: the BinData `name` becomes its first `o` bytes
// followed by `d` (its subtype kept) — how MongoDB logs an append to a compressed bucket's
// column. Applying a diff to the document it was computed from gives the document after it,
// byte for byte, whichever way it is applied (a new document, or byte-range edits in place).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/session.h"

namespace hourglass::catalog {

// The diff that turns `before` into `after`, when one can (fields kept in their order, new ones
// after them; a changed sub-object by its own diff when that is shorter) and it is smaller than
// `after`; nullopt otherwise (the entry then logs `after`). Arrays and binaries changed are
// logged whole (`u`). kAlways: every changed sub-object that a diff can say gets one, and the
// diff is given whatever its size (as mongod writes a bucket's control: the fields a member
// checks before applying a diff in place, such as a bucket's start time, are then named only
// when they change).
enum class SubDiffs { kWhenShorter, kAlways };
std::optional<bson::BsonObj> ComputeUpdateDiff(const bson::BsonObj& before,
                                               const bson::BsonObj& after,
                                               SubDiffs sub_diffs = SubDiffs::kWhenShorter);

// `doc` with `diff` applied. BadValue for a diff this server does not apply (array diffs) or a
// malformed one (a section that is not an object, a sub-diff or binary diff of a field of
// another type, an `i` of a field that exists, a binary offset past its end), naming what is
// wrong.
StatusWith<bson::BsonObj> ApplyUpdateDiff(const bson::BsonObj& doc, const bson::BsonObj& diff);

// The byte-range edits (in the order to apply: storage::Session::Modify) that turn `doc`'s bytes
// into ApplyUpdateDiff(doc, diff)'s, without building that document: the unchanged bytes stay
// where they are. Same errors as ApplyUpdateDiff.
StatusWith<std::vector<storage::Session::Modification>> UpdateDiffEdits(const bson::BsonObj& doc,
                                                                        const bson::BsonObj& diff);

// Whether applying `diff` may change the value at `path` (dotted) or any field under it.
bool UpdateDiffMayChange(const bson::BsonObj& diff, std::string_view path);

}  // namespace hourglass::catalog
