// Result<T>: a value or an error message, for everything that reads untrusted input.
// Errors are values here; they become exceptions or exit codes only at the CLI/server edge.
// Tested by tests/unit/core_test.cpp.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/check.h"

namespace gufo {

// What kind of failure an Error is, for callers that react differently: a bad input is the
// caller's to fix, while running out of (device) memory or losing the device is the
// machine's state (the scheduler fails only the requests a failure touches, and a server
// answers 503 rather than 400).
enum class ErrorKind : uint8_t {
  Invalid,      // bad input or a bad request: the message says what to change
  OutOfMemory,  // host or device memory ran out
  DeviceLost,   // the accelerator failed; nothing more can run on it
  Unsupported,  // valid, but this build or device cannot do it
  Unavailable,  // not now (the engine is stopping, or too much already waits): try again later
  Io,           // the file system failed (a full disk, permissions): the machine's, not the input's
};

// A failure with a message meant for the user: it names the input, the place, and what was
// expected against what was found, e.g. "model.gguf: tensor 'x': offset 96 past end (64)".
struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::Invalid;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    GUFO_CHECK(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    GUFO_CHECK(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    GUFO_CHECK(ok());
    return std::get<0>(std::move(state_));
  }
  const Error& error() const {
    GUFO_CHECK(!ok());
    return std::get<1>(state_);
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> state_;
};

// Result<void>: success, or an error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    GUFO_CHECK(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() { return {}; }

}  // namespace gufo

// Propagates the error of a Result-returning expression; otherwise yields nothing.
#define GUFO_RETURN_IF_ERROR(expr)                       \
  do {                                                   \
    auto&& gufo_status_ = (expr);                        \
    if (!gufo_status_.ok()) return gufo_status_.error(); \
  } while (0)

// Declares `lhs` from a Result-returning expression, or returns its error.
#define GUFO_CONCAT_INNER_(a, b) a##b
#define GUFO_CONCAT_(a, b) GUFO_CONCAT_INNER_(a, b)
#define GUFO_ASSIGN_OR_RETURN(lhs, expr) GUFO_ASSIGN_OR_RETURN_IMPL_(GUFO_CONCAT_(gufo_result_, __LINE__), lhs, expr)
// NOLINTBEGIN(bugprone-macro-parentheses): `lhs` is a declaration (`auto [a, b]`, `T x`) and
// `tmp` a name; neither can be parenthesized.
#define GUFO_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.error();                \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
