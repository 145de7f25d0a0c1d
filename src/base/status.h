// Status and StatusWith<T>: the only way errors cross module boundaries. A Status carries one of
// MongoDB's error codes, a reason for the user, and an optional extra-info document (e.g. a
// DuplicateKey's keyPattern/keyValue) as raw BSON bytes. An OK status allocates nothing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/error_codes.h"

namespace hourglass {

class [[nodiscard]] Status {
 public:
  static Status OK() { return Status(); }

  Status(ErrorCode code, std::string reason, std::string extra_info_bson = {})
      : rep_(code == ErrorCode::kOK
                 ? nullptr
                 : std::make_shared<Rep>(Rep{code, std::move(reason), std::move(extra_info_bson)})) {}

  bool ok() const { return rep_ == nullptr; }
  ErrorCode code() const { return rep_ ? rep_->code : ErrorCode::kOK; }
  int code_number() const { return static_cast<int>(code()); }
  std::string_view code_name() const { return ErrorCodeName(code()); }
  const std::string& reason() const {
    static const std::string kEmpty;
    return rep_ ? rep_->reason : kEmpty;
  }
  // Raw BSON bytes of a document whose fields are merged into the error reply; empty if none.
  const std::string& extra_info() const {
    static const std::string kEmpty;
    return rep_ ? rep_->extra : kEmpty;
  }
  // "BadValue: reason" — for logs and test failure messages.
  std::string ToString() const;

  // Returns a copy with `prefix` prepended to the reason.
  Status WithContext(std::string_view prefix) const;

 private:
  Status() = default;
  struct Rep {
    ErrorCode code;
    std::string reason;
    std::string extra;
  };
  std::shared_ptr<const Rep> rep_;
};

template <typename T>
class [[nodiscard]] StatusWith {
 public:
  StatusWith(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  StatusWith(T value) : status_(Status::OK()), value_(std::move(value)) {}  // NOLINT
  StatusWith(ErrorCode code, std::string reason) : status_(code, std::move(reason)) {}

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }

 private:
  Status status_;
  std::optional<T> value_;
};

// Early-return helpers; `expr` is evaluated once.
#define HG_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::hourglass::Status _hg_st = (expr);    \
    if (!_hg_st.ok()) return _hg_st;        \
  } while (0)

#define HG_CONCAT_INNER(a, b) a##b
#define HG_CONCAT(a, b) HG_CONCAT_INNER(a, b)
#define HG_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
// HG_ASSIGN_OR_RETURN(auto x, Foo()) declares x from a StatusWith or returns its error.
#define HG_ASSIGN_OR_RETURN(lhs, expr) \
  HG_ASSIGN_OR_RETURN_IMPL(HG_CONCAT(_hg_sw_, __LINE__), lhs, expr)

// Aborts the process: for broken internal invariants only, never for bad user input.
[[noreturn]] void InvariantFailed(const char* expr, const char* file, int line);
#define invariant(expr) \
  ((expr) ? (void)0 : ::hourglass::InvariantFailed(#expr, __FILE__, __LINE__))

}  // namespace hourglass
