#include "commands/operation_registry.h"

#include <cstdint>
#include <utility>

namespace hourglass::commands {

OperationRegistry& OperationRegistry::Get() {
  static OperationRegistry* registry = new OperationRegistry();
  return *registry;
}

OperationRegistry::Registration::~Registration() {
  std::lock_guard lk(registry_->mu_);
  registry_->ops_.erase(opid_);
}

std::unique_ptr<OperationRegistry::Registration> OperationRegistry::Start(
    std::shared_ptr<RunningOperation> op) {
  std::lock_guard lk(mu_);
  // A 32-bit int in currentOp, as mongod's.
  const int64_t opid = next_opid_;
  next_opid_ = next_opid_ == INT32_MAX ? 1 : next_opid_ + 1;
  op->opid = opid;
  ops_.emplace(opid, std::move(op));
  return std::make_unique<Registration>(this, opid);
}

bool OperationRegistry::Kill(int64_t opid) {
  std::lock_guard lk(mu_);
  auto it = ops_.find(opid);
  if (it == ops_.end()) return false;
  it->second->control->Kill(ErrorCode::kInterrupted);
  return true;
}

int OperationRegistry::KillMatching(const std::function<bool(const RunningOperation&)>& match) {
  std::lock_guard lk(mu_);
  int killed = 0;
  for (const auto& [opid, op] : ops_) {
    if (!match(*op)) continue;
    op->control->Kill(ErrorCode::kInterrupted);
    ++killed;
  }
  return killed;
}

void OperationRegistry::ForEach(const std::function<void(const RunningOperation&)>& fn) const {
  std::lock_guard lk(mu_);
  for (const auto& [opid, op] : ops_) fn(*op);
}

}  // namespace hourglass::commands
