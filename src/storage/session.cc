#include "storage/session.h"

namespace hourglass::storage {

std::unique_ptr<Cursor> Session::OpenCursor(std::string_view ident) {
  auto cursor = OpenCursorOrError(ident);
  if (!cursor.ok()) return nullptr;
  return std::move(cursor).value();
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

}  // namespace hourglass::storage
