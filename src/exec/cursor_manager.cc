#include "exec/cursor_manager.h"

#include <random>

#include "base/interrupt.h"

namespace hourglass::exec {

using bson::BsonObj;

int64_t CursorManager::Register(std::unique_ptr<ClientCursor> cursor) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lk(mu_);
  int64_t id;
  do {
    id = static_cast<int64_t>(rng() >> 2) + 1;  // positive, non-zero
  } while (cursors_.count(id) || checked_out_.count(id));
  cursor->id = id;
  cursor->last_used = std::chrono::steady_clock::now();
  cursors_[id] = std::move(cursor);
  return id;
}

StatusWith<std::unique_ptr<ClientCursor>> CursorManager::CheckOut(
    int64_t id, const std::string& ns, const std::vector<std::string>* owners) {
  std::lock_guard lk(mu_);
  auto it = cursors_.find(id);
  if (it == cursors_.end()) {
    return Status(ErrorCode::kCursorNotFound, "cursor id " + std::to_string(id) + " not found");
  }
  if (it->second->ns != ns) {
    return Status(ErrorCode::kUnauthorized, "Requested getMore on namespace '" + ns +
                                                "', but cursor belongs to a different namespace " +
                                                it->second->ns);
  }
  if (owners != nullptr && it->second->owners != *owners) {
    return Status(ErrorCode::kUnauthorized,
                  "cursor id " + std::to_string(id) + " was not created by the authenticated user");
  }
  std::unique_ptr<ClientCursor> c = std::move(it->second);
  cursors_.erase(it);
  checked_out_[id] = c->ns;
  return c;
}

void CursorManager::CheckIn(std::unique_ptr<ClientCursor> cursor) {
  std::lock_guard lk(mu_);
  checked_out_.erase(cursor->id);
  cursor->last_used = std::chrono::steady_clock::now();
  cursors_[cursor->id] = std::move(cursor);
}

std::optional<std::vector<std::string>> CursorManager::OwnersOf(int64_t id) const {
  std::lock_guard lk(mu_);
  auto it = cursors_.find(id);
  if (it == cursors_.end()) return std::nullopt;
  return it->second->owners;
}

bool CursorManager::Kill(int64_t id) {
  std::unique_ptr<ClientCursor> victim;
  std::lock_guard lk(mu_);
  auto it = cursors_.find(id);
  if (it == cursors_.end()) return false;
  victim = std::move(it->second);
  cursors_.erase(it);
  return true;
}

int CursorManager::ReapIdle(std::chrono::milliseconds timeout) {
  std::vector<std::unique_ptr<ClientCursor>> victims;
  {
    std::lock_guard lk(mu_);
    auto now = std::chrono::steady_clock::now();
    for (auto it = cursors_.begin(); it != cursors_.end();) {
      if (!it->second->no_timeout && now - it->second->last_used > timeout) {
        victims.push_back(std::move(it->second));
        it = cursors_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return static_cast<int>(victims.size());  // destroyed outside the lock
}

void CursorManager::KillAll() {
  std::map<int64_t, std::unique_ptr<ClientCursor>> victims;
  {
    std::lock_guard lk(mu_);
    victims.swap(cursors_);
  }
}

int CursorManager::KillMatching(const std::function<bool(const ClientCursor&)>& match) {
  std::vector<std::unique_ptr<ClientCursor>> victims;  // destroyed outside the lock
  {
    std::lock_guard lk(mu_);
    for (auto it = cursors_.begin(); it != cursors_.end();) {
      if (match(*it->second)) {
        victims.push_back(std::move(it->second));
        it = cursors_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return static_cast<int>(victims.size());
}

size_t CursorManager::NumOpen() const {
  std::lock_guard lk(mu_);
  return cursors_.size() + checked_out_.size();
}

Status FillBatch(pipeline::DocumentStream& stream, std::optional<BsonObj>* pending,
                 int64_t max_docs, bson::BsonArrayBuilder& batch, bool* exhausted) {
  constexpr size_t kMaxBatchBytes = 16 * 1024 * 1024;
  *exhausted = false;
  while (max_docs <= 0 || batch.count() < max_docs) {
    HG_RETURN_IF_ERROR(CheckForInterrupt());  // killOp, maxTimeMS
    BsonObj doc;
    if (pending->has_value()) {
      doc = std::move(**pending);
      pending->reset();
    } else {
      auto next = stream.Next();
      if (!next.ok()) return next.status();
      if (!next.value().has_value()) {
        *exhausted = true;
        return Status::OK();
      }
      doc = std::move(*next.value());
    }
    if (batch.count() > 0 && batch.builder().Length() + doc.size() > kMaxBatchBytes) {
      *pending = std::move(doc);
      return Status::OK();
    }
    batch.AppendObject(doc);
  }
  return Status::OK();
}

void AppendCursorReply(bson::BsonBuilder& reply, int64_t id, const std::string& ns,
                       std::string_view batch_field, const BsonObj& batch) {
  size_t c = reply.OpenObject("cursor");
  reply.AppendArray(batch_field, batch);
  reply.AppendInt64("id", id);
  reply.AppendString("ns", ns);
  reply.Close(c);
}

}  // namespace hourglass::exec
