#include "storage/session.h"

#include <algorithm>

namespace hourglass::storage {

std::unique_ptr<Cursor> Session::OpenCursor(std::string_view ident) {
  auto cursor = OpenCursorOrError(ident);
  if (!cursor.ok()) return nullptr;
  return std::move(cursor).value();
}

void Session::OnCommit(std::function<void()> fn) {
  if (!InTransaction()) {
    fn();
    return;
  }
  commit_hooks_.push_back(std::move(fn));
}

void Session::OnPreCommit(std::function<Status()> fn) {
  invariant(InTransaction());
  pre_commit_hooks_.push_back(std::move(fn));
}

Status Session::RunPreCommitHooks() {
  // A hook may register another (a write it makes); run until none is left.
  for (size_t i = 0; i < pre_commit_hooks_.size(); ++i) {
    std::function<Status()> fn = std::move(pre_commit_hooks_[i]);
    HG_RETURN_IF_ERROR(fn());
  }
  pre_commit_hooks_.clear();
  return Status::OK();
}

void Session::EndTransactionHooks(bool committed) {
  std::map<const void*, std::shared_ptr<void>> state;
  state.swap(transaction_state_);
  pre_commit_hooks_.clear();
  std::vector<std::function<void()>> hooks;
  hooks.swap(commit_hooks_);
  if (committed) {
    for (auto& fn : hooks) fn();
  }
}

WriteUnit::WriteUnit(Session& session) : session_(session), begin_status_(session.Begin()) {
  done_ = !begin_status_.ok();
}

WriteUnit::~WriteUnit() {
  if (!done_) session_.Rollback();
}

Status WriteUnit::Commit() {
  if (!begin_status_.ok()) return begin_status_;
  invariant(!done_);
  done_ = true;
  return session_.Commit();
}

void ApplyModifications(std::string& value, const std::vector<Session::Modification>& mods) {
  for (const Session::Modification& m : mods) {
    if (m.offset > value.size()) value.resize(m.offset, '\0');
    value.replace(m.offset, std::min(m.size, value.size() - m.offset), m.data);
  }
}

}  // namespace hourglass::storage
