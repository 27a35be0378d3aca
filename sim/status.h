// Status and Result<T>: how library code reports errors a user can cause.
//
// Modelled on LevelDB's Status. Library code never calls exit() or throws for bad input: it
// returns a Status (or a Result<T> holding either a value or a non-OK Status), and the command
// turns it into one message and exit code 2. A Status message is written for the user: it names
// the field or file position and says what would be valid.
//
// Invariants: an OK Status has an empty message; a Result<T> holds exactly one of a value or a
// non-OK Status (constructing a Result from an OK Status is a programming error and asserts).
#ifndef TRAINSIM_SIM_STATUS_H_
#define TRAINSIM_SIM_STATUS_H_

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace trainsim {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,     // the user's input is wrong (bad file, bad flag, impossible layout)
    kNotFound,            // a named thing (file, catalogue entry) does not exist
    kOutOfRange,          // a value overflows a supported range
    kFailedPrecondition,  // valid input that this configuration cannot run (e.g. does not fit)
    kUnavailable,         // an optional backend (GPU, NCCL, MPI) is not present
    kInternal,            // a bug: an invariant did not hold
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status OutOfRange(std::string msg) { return Status(Code::kOutOfRange, std::move(msg)); }
  static Status FailedPrecondition(std::string msg) {
    return Status(Code::kFailedPrecondition, std::move(msg));
  }
  static Status Unavailable(std::string msg) { return Status(Code::kUnavailable, std::move(msg)); }
  static Status Internal(std::string msg) { return Status(Code::kInternal, std::move(msg)); }
  // An error of `code` (one carried apart from its Status: a FieldError, a byte from another
  // rank). kOk or a value that is no Code is taken as kInvalidArgument: a message is an error.
  static Status FromCode(Code code, std::string msg) {
    switch (code) {
      case Code::kNotFound:
      case Code::kOutOfRange:
      case Code::kFailedPrecondition:
      case Code::kUnavailable:
      case Code::kInternal:
        return Status(code, std::move(msg));
      default:
        return Status(Code::kInvalidArgument, std::move(msg));
    }
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "prefix: message" (for adding a file name or field path).
  Status WithPrefix(const std::string& prefix) const {
    if (ok()) return *this;
    return Status(code_, prefix + ": " + message_);
  }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result built from an OK Status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  // REQUIRES: ok().
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace trainsim

// Propagates a non-OK Status from an expression returning Status.
#define TRAINSIM_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::trainsim::Status _st = (expr);   \
    if (!_st.ok()) return _st;         \
  } while (0)

#endif  // TRAINSIM_SIM_STATUS_H_
