// Cursor: ordered iteration over one table in bytewise (memcmp) key order, forward or reverse.
// Obtained from Session::OpenCursor; reads in that session's transaction if one is open.
//
// Thread-safety: none (it belongs to its Session's thread).
// Lifetime: must be destroyed before its Session. key() and value() view memory owned by the
// storage engine and stay valid only until the next call on the cursor. A transaction beginning
// or ending on the Session (Begin/Commit/Rollback) drops the position: Valid() turns false and
// Next/Prev fail with IllegalOperation (20) until the next Seek*.
// Resuming across yields: a Cursor cannot outlive its Session, so a client cursor that spans
// several getMore calls (each with its own Session) remembers the last key it returned (a copy)
// and, in the next Session, opens a new Cursor and calls SeekAfter(last_key, forward). Writes
// committed in between are seen; keys before the resume point are never returned twice.
// Errors: WriteConflict (112) if WiredTiger must abort the surrounding transaction (the caller
// rolls back and retries), InternalError (1).
#pragma once

#include <string_view>

#include "base/status.h"

namespace hourglass::storage {

class Cursor {
 public:
  virtual ~Cursor() = default;

  // Positions at the first key >= `key` (forward) or the last key <= `key` (reverse). Returns
  // false, leaving the cursor exhausted, if there is no such key.
  virtual StatusWith<bool> Seek(std::string_view key, bool forward = true) = 0;
  // Positions at the first key > `key` (forward) or the last key < `key` (reverse): the resume
  // point after returning `key`. Returns false if there is none.
  virtual StatusWith<bool> SeekAfter(std::string_view key, bool forward = true) = 0;
  // Positions at the smallest / largest key; false if the table is empty.
  virtual StatusWith<bool> SeekFirst() = 0;
  virtual StatusWith<bool> SeekLast() = 0;
  // Moves to the next larger / smaller key; false at the end, after which the cursor is exhausted
  // and further moves keep returning false until a Seek. On a cursor never positioned, Next()
  // behaves as SeekFirst() and Prev() as SeekLast().
  virtual StatusWith<bool> Next() = 0;
  virtual StatusWith<bool> Prev() = 0;

  // True if the last move returned true.
  virtual bool Valid() const = 0;
  // The current entry; invariant: Valid().
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
};

}  // namespace hourglass::storage
