// Client cursors: the server side of find/aggregate cursors that outlive one reply. A cursor
// holds its document stream between getMore calls; it is checked out by one getMore at a time and
// killed by killCursors, by exhaustion, or after `cursorTimeoutMillis` idle (the reaper).
// Thread-safe. Batches obey MongoDB's limits: the first batch defaults to 101 documents, and no
// batch exceeds 16 MiB.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/status.h"
#include "bson/bson.h"
#include "pipeline/pipeline.h"

namespace hourglass::exec {

struct ClientCursor {
  int64_t id = 0;
  std::string ns;
  std::unique_ptr<pipeline::DocumentStream> stream;
  // A document pulled from the stream that did not fit in the previous batch.
  std::optional<bson::BsonObj> pending;
  std::chrono::steady_clock::time_point last_used;
  // find's noCursorTimeout: the reaper leaves this cursor alone.
  bool no_timeout = false;
  // What is left of the opening command's maxTimeMS: each getMore runs with it as its limit
  // and leaves it what remains (the time between them does not count), as in MongoDB.
  std::optional<std::chrono::steady_clock::duration> time_left;
  // The users ("user@db") the opening connection had authenticated as: with --auth, only a
  // connection authenticated as the same users continues or kills it, as in MongoDB.
  std::vector<std::string> owners;
  // The logical session (its id's 16 bytes) the cursor was opened in, empty without one:
  // killSessions closes a session's cursors.
  std::string lsid;
};

class CursorManager {
 public:
  // Registers `cursor` and returns its new id (positive, random).
  int64_t Register(std::unique_ptr<ClientCursor> cursor);
  // Takes a cursor for a getMore. CursorNotFound (43) if unknown or in use; Unauthorized (13) if it
  // belongs to another namespace, or (when `owners` is given) to other users.
  StatusWith<std::unique_ptr<ClientCursor>> CheckOut(
      int64_t id, const std::string& ns, const std::vector<std::string>* owners = nullptr);
  // The owners of a checked-in cursor, nullopt if there is none with that id.
  std::optional<std::vector<std::string>> OwnersOf(int64_t id) const;
  void CheckIn(std::unique_ptr<ClientCursor> cursor);
  // True if a cursor with that id existed (checked in) and was killed.
  bool Kill(int64_t id);
  // Kills cursors idle for longer than `timeout` (except noCursorTimeout ones); returns how many.
  int ReapIdle(std::chrono::milliseconds timeout);
  // Kills every checked-in cursor (shutdown).
  void KillAll();
  // Kills the checked-in cursors `match` accepts (called under the manager's lock); returns how
  // many. A checked-out cursor ends with the getMore that holds it.
  int KillMatching(const std::function<bool(const ClientCursor&)>& match);
  size_t NumOpen() const;

 private:
  mutable std::mutex mu_;
  std::map<int64_t, std::unique_ptr<ClientCursor>> cursors_;  // checked-in; guarded by mu_
  std::map<int64_t, std::string> checked_out_;                // id → ns; guarded by mu_
};

// Fills one batch from `stream` (taking `*pending` first) into `batch`: at most `max_docs`
// documents (<= 0 means no count limit) and about 16 MiB. Sets *exhausted when the stream ended.
Status FillBatch(pipeline::DocumentStream& stream, std::optional<bson::BsonObj>* pending,
                 int64_t max_docs, bson::BsonArrayBuilder& batch, bool* exhausted);

// Appends {cursor: {[firstBatch|nextBatch]: batch, id, ns}} to `reply`.
void AppendCursorReply(bson::BsonBuilder& reply, int64_t id, const std::string& ns,
                       std::string_view batch_field, const bson::BsonObj& batch);

}  // namespace hourglass::exec
