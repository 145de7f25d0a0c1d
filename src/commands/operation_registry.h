// The operations running now, for currentOp and killOp: the dispatcher registers each command
// for as long as it runs (OperationRegistry::Registration), with what currentOp reports of it, and
// makes its OperationControl current on the thread, where maxTimeMS's deadline and killOp's kill
// reach the loops that check for interruption (base/interrupt.h).
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "auth/user.h"
#include "base/interrupt.h"
#include "bson/bson.h"

namespace hourglass::commands {

struct RunningOperation {
  std::shared_ptr<OperationControl> control = std::make_shared<OperationControl>();
  int64_t opid = 0;  // set by Start: in [1, INT32_MAX]
  int64_t connection_id = 0;
  std::string client;  // the client's address
  bson::BsonObj client_metadata;
  std::string op;  // "command", "query", "getmore", "insert", "update" or "remove"
  std::string ns;
  bson::BsonObj command;              // the request's body (owned)
  std::vector<auth::UserName> users;  // who the connection had authenticated as
  std::string lsid;                   // the logical session's id (16 bytes), empty without one
  int client_fd = -1;  // the connection's socket (the listener watches it for a hang-up)
  OperationControl::Clock::time_point started = OperationControl::Clock::now();
};

class OperationRegistry {
 public:
  static OperationRegistry& Get();

  // Keeps an operation registered while it lives.
  class Registration {
   public:
    Registration(OperationRegistry* registry, int64_t opid) : registry_(registry), opid_(opid) {}
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;
    ~Registration();
    int64_t opid() const { return opid_; }

   private:
    OperationRegistry* registry_;
    int64_t opid_;
  };

  // Registers `op` under a new opid (positive, increasing).
  std::unique_ptr<Registration> Start(std::shared_ptr<RunningOperation> op);
  // Kills the operation `opid` (Interrupted); false when none runs under it.
  bool Kill(int64_t opid);
  // Kills (Interrupted) every operation `match` accepts (called under the registry's lock);
  // returns how many.
  int KillMatching(const std::function<bool(const RunningOperation&)>& match);
  // Calls fn for each running operation, in opid order (under the registry's lock: fn must not
  // call back into it).
  void ForEach(const std::function<void(const RunningOperation&)>& fn) const;

 private:
  mutable std::mutex mu_;
  int64_t next_opid_ = 1;
  std::map<int64_t, std::shared_ptr<RunningOperation>> ops_;
};

}  // namespace hourglass::commands
