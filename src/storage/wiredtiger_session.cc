// Session and Cursor over a cached WtSessionHandle.
#include <wiredtiger.h>

#include <cstring>
#include <string>
#include <utility>

#include "storage/wiredtiger_error.h"
#include "storage/wiredtiger_kv_engine.h"

namespace hourglass::storage::internal {
namespace {

WT_ITEM MakeItem(std::string_view bytes) {
  WT_ITEM item;
  std::memset(&item, 0, sizeof(item));
  item.data = bytes.data();
  item.size = bytes.size();
  return item;
}

std::string_view ItemView(const WT_ITEM& item) {
  return std::string_view(static_cast<const char*>(item.data), item.size);
}

class WtSession;

class WtCursor final : public Cursor {
 public:
  WtCursor(WtSession* owner, LentCursor lent) : owner_(owner), lent_(lent) {
    std::memset(&key_, 0, sizeof(key_));
    std::memset(&value_, 0, sizeof(value_));
  }
  ~WtCursor() override;

  StatusWith<bool> Seek(std::string_view key, bool forward) override;
  StatusWith<bool> SeekAfter(std::string_view key, bool forward) override;
  StatusWith<bool> SeekFirst() override;
  StatusWith<bool> SeekLast() override;
  StatusWith<bool> Next() override;
  StatusWith<bool> Prev() override;
  bool Valid() const override;
  std::string_view key() const override {
    invariant(Valid());
    return ItemView(key_);
  }
  std::string_view value() const override {
    invariant(Valid());
    return ItemView(value_);
  }

 private:
  enum class State { kUnpositioned, kValid, kExhausted };
  // Turns the result of a WT move into our result, loading key and value on success.
  StatusWith<bool> Land(int ret, const char* what);
  // Fails a relative move whose position a transaction boundary has wiped out.
  Status CheckPositionKept() const;

  WtSession* owner_;
  LentCursor lent_;
  State state_ = State::kUnpositioned;
  uint64_t generation_ = 0;  // owner's txn_generation() when the position was taken
  WT_ITEM key_;
  WT_ITEM value_;
};

class WtSession final : public Session {
 public:
  WtSession(WtKvEngine* engine, std::unique_ptr<WtSessionHandle> handle)
      : engine_(engine), handle_(std::move(handle)) {}

  ~WtSession() override {
    invariant(lent_cursors_ == 0);
    Rollback();
    engine_->ReleaseHandle(std::move(handle_));
    engine_->OnSessionDestroyed();
  }

  Status Begin() override {
    if (in_txn_) return Status(ErrorCode::kIllegalOperation, "a transaction is already open");
    WT_SESSION* s = handle_->session();
    HG_RETURN_IF_ERROR(WtStatus(s->begin_transaction(s, "isolation=snapshot"), "begin"));
    in_txn_ = true;
    doomed_ = false;
    ++txn_generation_;
    return Status::OK();
  }

  Status Commit() override {
    if (!in_txn_) return Status(ErrorCode::kIllegalOperation, "no transaction is open");
    if (doomed_) {
      Rollback();
      return DoomedStatus();
    }
    if (Status pre = RunPreCommitHooks(); !pre.ok()) {
      Rollback();
      return pre;
    }
    WT_SESSION* s = handle_->session();
    int ret = s->commit_transaction(s, nullptr);
    // Whatever the outcome, WiredTiger has ended the transaction (and reset every cursor).
    in_txn_ = false;
    doomed_ = false;
    ++txn_generation_;
    EndTransactionHooks(ret == 0);
    return WtStatus(ret, "commit");
  }

  void Rollback() override {
    if (!in_txn_) return;
    WT_SESSION* s = handle_->session();
    int ret = s->rollback_transaction(s, nullptr);
    if (ret != 0) LogStorage("W", "rollback failed", wiredtiger_strerror(ret));
    in_txn_ = false;
    doomed_ = false;
    ++txn_generation_;
    EndTransactionHooks(false);
  }

  bool InTransaction() const override { return in_txn_; }

  StatusWith<std::optional<std::string>> Get(std::string_view ident,
                                             std::string_view key) override {
    HG_RETURN_IF_ERROR(CheckNotDoomed());
    if (key.empty()) return std::optional<std::string>();  // cannot be stored
    HG_ASSIGN_OR_RETURN(LentCursor lent, handle_->AcquireCursor(ident));
    CursorLoan loan(this, lent);
    WT_CURSOR* c = lent.cursor;
    WT_ITEM k = MakeItem(key);
    c->set_key(c, &k);
    int ret = c->search(c);
    if (IsWtNotFound(ret)) return std::optional<std::string>();
    HG_RETURN_IF_ERROR(Check(ret, "get", ident));
    WT_ITEM v;
    HG_RETURN_IF_ERROR(Check(c->get_value(c, &v), "get", ident));
    return std::optional<std::string>(std::string(ItemView(v)));
  }

  // Runs `op` (WT_CURSOR::insert or ::update) on a cursor of `ident` set to `key` and `value`;
  // returns WiredTiger's code.
  StatusWith<int> WriteValue(std::string_view ident, std::string_view key, std::string_view value,
                             int (*op)(WT_CURSOR*)) {
    HG_ASSIGN_OR_RETURN(LentCursor lent, handle_->AcquireCursor(ident));
    CursorLoan loan(this, lent);
    WT_CURSOR* c = lent.cursor;
    WT_ITEM k = MakeItem(key);
    WT_ITEM v = MakeItem(value);
    c->set_key(c, &k);
    c->set_value(c, &v);
    return op(c);
  }

  Status Insert(std::string_view ident, std::string_view key, std::string_view value) override {
    HG_RETURN_IF_ERROR(CheckNotDoomed());
    HG_RETURN_IF_ERROR(CheckKeyNotEmpty(key));
    HG_ASSIGN_OR_RETURN(int ret,
                        WriteValue(ident, key, value, [](WT_CURSOR* c) { return c->insert(c); }));
    return Check(ret, "insert", ident);
  }

  Status Put(std::string_view ident, std::string_view key, std::string_view value) override {
    HG_RETURN_IF_ERROR(CheckNotDoomed());
    HG_RETURN_IF_ERROR(CheckKeyNotEmpty(key));
    HG_ASSIGN_OR_RETURN(LentCursor lent, handle_->AcquireCursor(ident));
    CursorLoan loan(this, lent);
    WT_CURSOR* c = lent.cursor;
    WT_ITEM k = MakeItem(key);
    WT_ITEM v = MakeItem(value);
    // Cached cursors are overwrite=false, so an upsert is insert-else-update. Outside a
    // transaction a concurrent remove can slip between the two; then insert again.
    for (int attempt = 0; attempt < 100; ++attempt) {
      c->set_key(c, &k);
      c->set_value(c, &v);
      int ret = c->insert(c);
      if (ret != WT_DUPLICATE_KEY) return Check(ret, "put", ident);
      c->set_key(c, &k);
      c->set_value(c, &v);
      ret = c->update(c);
      if (!IsWtNotFound(ret)) return Check(ret, "put", ident);
    }
    return Status(ErrorCode::kWriteConflict, "put kept racing with concurrent removes");
  }

  Status Update(std::string_view ident, std::string_view key, std::string_view value) override {
    HG_RETURN_IF_ERROR(CheckNotDoomed());
    if (key.empty()) return NoSuchKey(ident);
    // Cached cursors are overwrite=false: update fails on a missing key.
    HG_ASSIGN_OR_RETURN(int ret,
                        WriteValue(ident, key, value, [](WT_CURSOR* c) { return c->update(c); }));
    if (IsWtNotFound(ret)) return NoSuchKey(ident);
    return Check(ret, "update", ident);
  }

  Status Remove(std::string_view ident, std::string_view key) override {
    HG_RETURN_IF_ERROR(CheckNotDoomed());
    if (key.empty()) return NoSuchKey(ident);
    HG_ASSIGN_OR_RETURN(LentCursor lent, handle_->AcquireCursor(ident));
    CursorLoan loan(this, lent);
    WT_CURSOR* c = lent.cursor;
    WT_ITEM k = MakeItem(key);
    c->set_key(c, &k);
    int ret = c->remove(c);
    if (IsWtNotFound(ret)) return NoSuchKey(ident);
    return Check(ret, "remove", ident);
  }

  Status Modify(std::string_view ident, std::string_view key,
                const std::vector<Modification>& mods) override {
    HG_RETURN_IF_ERROR(CheckNotDoomed());
    if (key.empty()) return NoSuchKey(ident);
    // WT_CURSOR::modify only runs inside an explicit snapshot transaction.
    const bool own_txn = !in_txn_;
    if (own_txn) HG_RETURN_IF_ERROR(Begin());
    Status st = ApplyModify(ident, key, mods);
    if (!own_txn) return st;
    if (!st.ok()) {
      Rollback();
      return st;
    }
    return Commit();
  }

  StatusWith<std::unique_ptr<Cursor>> OpenCursorOrError(std::string_view ident) override {
    HG_ASSIGN_OR_RETURN(LentCursor lent, handle_->AcquireCursor(ident));
    ++lent_cursors_;
    return std::unique_ptr<Cursor>(std::make_unique<WtCursor>(this, lent));
  }

  // For WtCursor.
  void ReturnCursor(LentCursor lent) {
    --lent_cursors_;
    handle_->ReleaseCursor(lent);
  }

  // Maps `ret`; a WriteConflict inside a transaction dooms it (WiredTiger requires a rollback).
  Status Check(int ret, const char* what, std::string_view ident) {
    if (ret == 0) return Status::OK();
    Status st = WtStatus(ret, std::string(what) + " on table '" + std::string(ident) + "'");
    if (in_txn_ && st.code() == ErrorCode::kWriteConflict) doomed_ = true;
    return st;
  }

  Status CheckNotDoomed() const { return doomed_ ? DoomedStatus() : Status::OK(); }

  // Bumped whenever a transaction begins or ends: WiredTiger resets cursor positions then.
  uint64_t txn_generation() const { return txn_generation_; }

 private:
  // Returns a point operation's cursor to the cache when the operation ends.
  class CursorLoan {
   public:
    CursorLoan(WtSession* session, LentCursor lent) : session_(session), lent_(lent) {}
    ~CursorLoan() { session_->handle_->ReleaseCursor(lent_); }
    CursorLoan(const CursorLoan&) = delete;
    CursorLoan& operator=(const CursorLoan&) = delete;

   private:
    WtSession* session_;
    LentCursor lent_;
  };

  static Status DoomedStatus() {
    return Status(ErrorCode::kWriteConflict,
                  "transaction hit a write conflict and must be rolled back and retried");
  }

  // WiredTiger rejects zero-length keys.
  static Status CheckKeyNotEmpty(std::string_view key) {
    if (!key.empty()) return Status::OK();
    return Status(ErrorCode::kBadValue, "storage keys must not be empty");
  }

  static Status NoSuchKey(std::string_view ident) {
    return Status(ErrorCode::kNoSuchKey, "key not found in table '" + std::string(ident) + "'");
  }

  Status ApplyModify(std::string_view ident, std::string_view key,
                     const std::vector<Modification>& mods) {
    HG_ASSIGN_OR_RETURN(LentCursor lent, handle_->AcquireCursor(ident));
    CursorLoan loan(this, lent);
    WT_CURSOR* c = lent.cursor;
    std::vector<WT_MODIFY> entries(mods.size());
    for (size_t i = 0; i < mods.size(); ++i) {
      std::memset(&entries[i], 0, sizeof(WT_MODIFY));
      entries[i].data = MakeItem(mods[i].data);
      entries[i].offset = mods[i].offset;
      entries[i].size = mods[i].size;
    }
    WT_ITEM k = MakeItem(key);
    c->set_key(c, &k);
    int ret = c->modify(c, entries.data(), static_cast<int>(entries.size()));
    if (IsWtNotFound(ret)) return NoSuchKey(ident);
    return Check(ret, "modify", ident);
  }

  WtKvEngine* engine_;
  std::unique_ptr<WtSessionHandle> handle_;
  bool in_txn_ = false;
  // Set when an operation in the open transaction failed with WriteConflict.
  bool doomed_ = false;
  uint64_t txn_generation_ = 0;
  int lent_cursors_ = 0;
};

WtCursor::~WtCursor() { owner_->ReturnCursor(lent_); }

bool WtCursor::Valid() const {
  return state_ == State::kValid && generation_ == owner_->txn_generation();
}

Status WtCursor::CheckPositionKept() const {
  if (state_ == State::kValid && generation_ != owner_->txn_generation()) {
    return Status(ErrorCode::kIllegalOperation,
                  "cursor position was lost when the transaction began or ended; Seek again");
  }
  return Status::OK();
}

StatusWith<bool> WtCursor::Land(int ret, const char* what) {
  WT_CURSOR* c = lent_.cursor;
  if (IsWtNotFound(ret)) {
    state_ = State::kExhausted;
    return false;
  }
  if (ret == 0) ret = c->get_key(c, &key_);
  if (ret == 0) ret = c->get_value(c, &value_);
  if (ret != 0) {
    state_ = State::kExhausted;
    return owner_->Check(ret, what, std::string_view(c->uri).substr(6));
  }
  state_ = State::kValid;
  generation_ = owner_->txn_generation();
  return true;
}

StatusWith<bool> WtCursor::Seek(std::string_view key, bool forward) {
  HG_RETURN_IF_ERROR(owner_->CheckNotDoomed());
  // WiredTiger cannot search for the empty key; every stored key is greater than it.
  if (key.empty()) {
    if (forward) return SeekFirst();
    state_ = State::kExhausted;
    return false;
  }
  WT_CURSOR* c = lent_.cursor;
  WT_ITEM k = MakeItem(key);
  c->set_key(c, &k);
  int exact = 0;
  int ret = c->search_near(c, &exact);
  // search_near lands on the key itself or a neighbour on either side; step to the right side.
  if (ret == 0 && forward && exact < 0) ret = c->next(c);
  if (ret == 0 && !forward && exact > 0) ret = c->prev(c);
  return Land(ret, "seek");
}

StatusWith<bool> WtCursor::SeekAfter(std::string_view key, bool forward) {
  HG_ASSIGN_OR_RETURN(bool found, Seek(key, forward));
  if (!found) return false;
  if (this->key() != key) return true;
  return forward ? Next() : Prev();
}

StatusWith<bool> WtCursor::SeekFirst() {
  HG_RETURN_IF_ERROR(owner_->CheckNotDoomed());
  WT_CURSOR* c = lent_.cursor;
  c->reset(c);
  return Land(c->next(c), "seek");
}

StatusWith<bool> WtCursor::SeekLast() {
  HG_RETURN_IF_ERROR(owner_->CheckNotDoomed());
  WT_CURSOR* c = lent_.cursor;
  c->reset(c);
  return Land(c->prev(c), "seek");
}

StatusWith<bool> WtCursor::Next() {
  HG_RETURN_IF_ERROR(owner_->CheckNotDoomed());
  HG_RETURN_IF_ERROR(CheckPositionKept());
  if (state_ == State::kExhausted) return false;
  WT_CURSOR* c = lent_.cursor;
  return Land(c->next(c), "next");
}

StatusWith<bool> WtCursor::Prev() {
  HG_RETURN_IF_ERROR(owner_->CheckNotDoomed());
  HG_RETURN_IF_ERROR(CheckPositionKept());
  if (state_ == State::kExhausted) return false;
  WT_CURSOR* c = lent_.cursor;
  return Land(c->prev(c), "prev");
}

}  // namespace

std::unique_ptr<Session> MakeWtSession(WtKvEngine* engine,
                                       std::unique_ptr<WtSessionHandle> handle) {
  return std::make_unique<WtSession>(engine, std::move(handle));
}

}  // namespace hourglass::storage::internal
