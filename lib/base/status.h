// Status and Result<T>: silt's one error currency.
//
// A Status is either OK (a null pointer, so returning OK costs nothing) or a code plus a message.
// Result<T> holds a T or a non-OK Status. No exceptions cross the library API; cmd/ maps a Status
// to an exit code.
//
// kTruncated and kCorruption are kept apart on purpose: a partial record at the end of a file is
// what a crash mid-append leaves behind (a torn tail, repaired by truncation), while damage before
// the end is corruption that must be reported, never silently dropped.
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace silt {

class [[nodiscard]] Status {
 public:
  enum class Code : unsigned char {
    kOk = 0,
    kNotFound,
    kCorruption,       // damaged bytes before the end of the data
    kTruncated,        // the data ends part-way through a record (torn tail)
    kInvalidArgument,  // the caller asked for something that cannot be
    kIOError,          // the operating system refused (errno in the message)
    kNoSpace,          // the disk is full: the write failed and nothing was acknowledged
    kAlreadyExists,
    kBusy,             // held by someone else, e.g. a locked data directory
    kUnsupported,      // a valid request for something not implemented (e.g. a codec)
    kOutOfRange,       // an offset outside the log
    kTooLarge,         // exceeds a configured limit
    kInternal,
    kNotLeader,  // this node does not lead the partition (or the metadata quorum)
  };

  Status() noexcept = default;
  Status(const Status& o) : state_(o.state_ ? std::make_unique<State>(*o.state_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) state_ = o.state_ ? std::make_unique<State>(*o.state_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string_view m) { return Status(Code::kNotFound, m); }
  static Status Corruption(std::string_view m) { return Status(Code::kCorruption, m); }
  static Status Truncated(std::string_view m) { return Status(Code::kTruncated, m); }
  static Status InvalidArgument(std::string_view m) { return Status(Code::kInvalidArgument, m); }
  static Status IOError(std::string_view m) { return Status(Code::kIOError, m); }
  // An IOError (or NoSpace, for ENOSPC/EDQUOT) naming `context` and strerror(err).
  static Status FromErrno(std::string_view context, int err);
  static Status NoSpace(std::string_view m) { return Status(Code::kNoSpace, m); }
  static Status AlreadyExists(std::string_view m) { return Status(Code::kAlreadyExists, m); }
  static Status Busy(std::string_view m) { return Status(Code::kBusy, m); }
  static Status Unsupported(std::string_view m) { return Status(Code::kUnsupported, m); }
  static Status OutOfRange(std::string_view m) { return Status(Code::kOutOfRange, m); }
  static Status TooLarge(std::string_view m) { return Status(Code::kTooLarge, m); }
  static Status Internal(std::string_view m) { return Status(Code::kInternal, m); }
  static Status NotLeader(std::string_view m) { return Status(Code::kNotLeader, m); }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsTruncated() const { return code() == Code::kTruncated; }
  bool IsNoSpace() const { return code() == Code::kNoSpace; }
  bool IsBusy() const { return code() == Code::kBusy; }
  bool IsTooLarge() const { return code() == Code::kTooLarge; }

  // The message alone ("" when OK).
  const std::string& message() const;
  // "Corruption: <message>", or "OK".
  std::string ToString() const;
  // A copy whose message is "<prefix>: <message>"; OK stays OK.
  Status WithContext(std::string_view prefix) const;

  static const char* CodeName(Code c);

 private:
  struct State {
    Code code;
    std::string msg;
  };
  Status(Code c, std::string_view m) : state_(std::make_unique<State>(State{c, std::string(m)})) {}
  std::unique_ptr<State> state_;
};

// A value or the Status that says why there is none. Constructing from an OK Status is a bug.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : status_(std::move(s)) {     // NOLINT: implicit by design
    assert(!status_.ok());
    if (status_.ok()) status_ = Status::Internal("Result constructed from OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace silt

#define SILT_CONCAT_INNER_(a, b) a##b
#define SILT_CONCAT_(a, b) SILT_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define SILT_TRY(expr)                          \
  do {                                          \
    ::silt::Status silt_try_status_ = (expr);   \
    if (!silt_try_status_.ok()) return silt_try_status_; \
  } while (0)

// `lhs = value of rexpr` when it is OK, else returns its Status from the enclosing function.
#define SILT_ASSIGN_OR_RETURN(lhs, rexpr) \
  SILT_ASSIGN_OR_RETURN_IMPL_(SILT_CONCAT_(silt_result_, __LINE__), lhs, rexpr)
#define SILT_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
