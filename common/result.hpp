#pragma once
/// The error convention of autokernel: no exceptions cross a module boundary. A function that can
/// fail returns Result<T>; the Error inside says what failed, on what input, and what to do.
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ak {

/// A failure, worded for the person reading the log: "what failed: why (what to do)".
struct Error {
  std::string message;
  /// The harness's own failure (out of memory, a dead reference process), whatever it was judging:
  /// never a candidate's verdict (HARNESS_ERROR, judged again on a fresh worker).
  bool harness = false;
};

inline Error error(std::string message) { return Error{std::move(message)}; }
/// `cause` with `prefix` before its message, still the harness's when it was.
inline Error error(const std::string& prefix, Error cause) {
  cause.message = prefix + cause.message;
  return cause;
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  /// The value, or `fallback` when there is none.
  T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

/// Result of a function that returns nothing but can fail.
struct Ok {};
using Status = Result<Ok>;
inline Status ok() { return Ok{}; }

}  // namespace ak
