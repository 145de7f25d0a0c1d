// The process's fsync lock (`fsync` with `lock: true`, released by `fsyncUnlock`): while it is
// held no write reaches the data files, so that a backup can copy them, as with mongod's
// db.fsyncLock(). Commands that write hold a Token while they run and wait for the lock to be
// released before they start; background writers (the write-back flush, TTL, periodic
// checkpoints) take a Token only when the lock is not held and skip their pass otherwise.
//
// Thread-safety: every method is thread-safe. A thread holding a Token must not call Lock (it
// would wait for itself), as a client that locks and then writes waits in MongoDB too.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>

namespace hourglass {

class WriteGate {
 public:
  static WriteGate& Get();

  // Held by a writer for as long as it writes; releases on destruction.
  class Token {
   public:
    explicit Token(WriteGate* gate) : gate_(gate) {}
    Token(Token&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Token& operator=(Token&&) = delete;
    Token(const Token&) = delete;
    ~Token();

   private:
    WriteGate* gate_;
  };

  // A command that writes: waits while the lock is held, then holds a token.
  Token Enter();
  // A background writer: a token when the lock is not held, nullopt otherwise.
  std::optional<Token> TryEnter();

  // Takes the lock once more and returns the new count; the first lock waits until no token is
  // held, so that every write that started has finished.
  int64_t Lock();
  // Releases the lock once and returns the new count; nullopt when it is not held.
  std::optional<int64_t> Unlock();
  int64_t LockCount() const;
  // Shutdown: releases every lock, so that writers waiting for one finish and their connections
  // can end.
  void ReleaseAll();

 private:
  void Leave();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t lock_count_ = 0;  // guarded by mu_
  int64_t writers_ = 0;     // tokens held, guarded by mu_
};

}  // namespace hourglass
