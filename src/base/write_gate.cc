#include "base/write_gate.h"

namespace hourglass {

WriteGate& WriteGate::Get() {
  static WriteGate* gate = new WriteGate();  // never destroyed: threads may outlive statics
  return *gate;
}

WriteGate::Token::~Token() {
  if (gate_ != nullptr) gate_->Leave();
}

WriteGate::Token WriteGate::Enter() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [this] { return lock_count_ == 0; });
  ++writers_;
  return Token(this);
}

std::optional<WriteGate::Token> WriteGate::TryEnter() {
  std::lock_guard lk(mu_);
  if (lock_count_ > 0) return std::nullopt;
  ++writers_;
  return std::optional<Token>(std::in_place, this);
}

int64_t WriteGate::Lock() {
  std::unique_lock lk(mu_);
  const int64_t count = ++lock_count_;
  cv_.wait(lk, [this] { return writers_ == 0; });
  return count;
}

std::optional<int64_t> WriteGate::Unlock() {
  std::lock_guard lk(mu_);
  if (lock_count_ == 0) return std::nullopt;
  if (--lock_count_ == 0) cv_.notify_all();
  return lock_count_;
}

int64_t WriteGate::LockCount() const {
  std::lock_guard lk(mu_);
  return lock_count_;
}

void WriteGate::ReleaseAll() {
  std::lock_guard lk(mu_);
  lock_count_ = 0;
  cv_.notify_all();
}

void WriteGate::Leave() {
  std::lock_guard lk(mu_);
  if (--writers_ == 0) cv_.notify_all();
}

}  // namespace hourglass
