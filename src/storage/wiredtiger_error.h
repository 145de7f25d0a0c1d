// INTERNAL to src/storage: maps WiredTiger return codes to Status. The single place where WT error
// numbers become MongoDB error codes (see README.md "Error mapping"). Other modules must not
// include this header.
#pragma once

#include <string_view>

#include "base/status.h"

namespace hourglass::storage::internal {

// Maps a non-zero WiredTiger/errno return value to a Status:
//   WT_ROLLBACK, WT_PREPARE_CONFLICT -> WriteConflict (112)
//   WT_DUPLICATE_KEY                 -> DuplicateKey (11000)
//   ENOSPC                           -> OutOfDiskSpace (14031)
//   WT_PANIC                         -> logs and aborts the process (never returns)
//   anything else                    -> InternalError (1) with wiredtiger_strerror's text
// `ret == 0` gives OK. WT_NOTFOUND is not an error: callers test for it before calling this; if
// it does reach here it becomes InternalError. `context` names the failed operation.
Status WtStatus(int ret, std::string_view context);

// True for the codes callers handle inline rather than map.
bool IsWtNotFound(int ret);
bool IsWtBusy(int ret);

// Writes one structured log line (MongoDB's JSON log shape, component STORAGE) to stderr.
// `severity` is "I", "W", "E" or "F".
void LogStorage(std::string_view severity, std::string_view msg, std::string_view detail = {});

}  // namespace hourglass::storage::internal
