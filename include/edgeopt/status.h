// Errors as values: Status for operations without a result, Expected<T> for those with one.
// Messages carry their context (file, subgraph, op index, tensor name) as text, outermost first,
// so that a user reading one line knows where the problem is.
//
// Public and dependency-free (standard library only): part of the edgeopt C++ API.
#pragma once

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace edgeopt {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad flag, wrong shape/dtype from the caller
  kNotFound,          // missing file, tensor name, signature
  kInvalidModel,      // corrupt, truncated or inconsistent .tflite
  kUnsupported,       // op / dtype / feature we do not implement
  kIoError,           // read/write failure
  kCancelled,         // invoke cancelled by the caller
  kInternal,          // a bug in edgeopt
};

const char* StatusCodeName(StatusCode code);

// An OK Status holds nothing (a null pointer): creating, moving, testing and destroying one costs
// a few instructions, which matters because every op of every invoke returns one. An error holds
// its code and message on the heap.
class [[nodiscard]] Status {
 public:
  Status() = default;
  // An OK code makes an OK Status (the message is dropped).
  Status(StatusCode code, std::string message)
      : rep_(code == StatusCode::kOk ? nullptr : std::make_unique<Rep>(Rep{code, std::move(message)})) {}
  Status(const Status& other) : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status Ok() { return Status(); }

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const {
    static const std::string kEmpty;
    return rep_ ? rep_->message : kEmpty;
  }

  // Prefixes context: Status(kInvalidModel, "bad shape").WithContext("tensor 'x'") gives
  // "tensor 'x': bad shape".
  Status WithContext(const std::string& context) const {
    if (ok()) return Status();
    return Status(rep_->code, context + ": " + rep_->message);
  }

  std::string ToString() const {
    if (ok()) return "OK";
    return std::string(StatusCodeName(rep_->code)) + ": " + rep_->message;
  }

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;
};

inline Status InvalidArgument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status NotFound(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status InvalidModel(std::string m) { return Status(StatusCode::kInvalidModel, std::move(m)); }
inline Status Unsupported(std::string m) { return Status(StatusCode::kUnsupported, std::move(m)); }
inline Status IoError(std::string m) { return Status(StatusCode::kIoError, std::move(m)); }
inline Status Cancelled(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }
inline Status Internal(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

inline const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kInvalidModel: return "invalid model";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

// A value or an error Status (never an OK status without a value).
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Expected constructed from an OK status");
    if (std::get<Status>(v_).ok()) v_ = Internal("Expected constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace edgeopt
