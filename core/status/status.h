// Errors as values. A Status is a code plus a message; an ok Status holds no
// allocation. Result<T> holds a value or a non-ok Status; reading the value of
// an error aborts (a bug in the caller, not a user error).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tessera {

// The gRPC canonical codes, so a server can map them one to one.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 3,
  kNotFound = 5,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message);

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  const std::string& message() const;
  // "NOT_FOUND: no such file" (or "OK").
  std::string to_string() const;

  // Prefixes the message with context ("loading model.gguf: ...").
  Status with_context(std::string_view context) const&;
  Status with_context(std::string_view context) &&;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;
};

inline Status ok_status() {
  return Status();
}
Status invalid_argument(std::string message);
Status not_found(std::string message);
Status resource_exhausted(std::string message);
Status failed_precondition(std::string message);
Status out_of_range(std::string message);
Status unimplemented(std::string message);
Status internal_error(std::string message);
Status data_loss(std::string message);
Status unavailable(std::string message);

[[noreturn]] void check_failed(const char* file, int line, const char* condition,
                               std::string_view message);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) {  // NOLINT
    if (std::get<Status>(state_).ok())
      check_failed(__FILE__, __LINE__, "!status.ok()", "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }

  T& value() & {
    ensure_ok();
    return std::get<T>(state_);
  }
  const T& value() const& {
    ensure_ok();
    return std::get<T>(state_);
  }
  T&& value() && {
    ensure_ok();
    return std::get<T>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void ensure_ok() const {
    if (!ok())
      check_failed(__FILE__, __LINE__, "result.ok()", std::get<Status>(state_).to_string());
  }
  std::variant<T, Status> state_;
};

}  // namespace tessera

// Aborts on a broken internal invariant (never on user input).
#define TESSERA_CHECK(cond, msg)                                          \
  do {                                                                    \
    if (!(cond)) ::tessera::check_failed(__FILE__, __LINE__, #cond, msg); \
  } while (0)

#define TESSERA_CONCAT_INNER(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)       \
  do {                              \
    ::tessera::Status _st = (expr); \
    if (!_st.ok()) return _st;      \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(TESSERA_CONCAT(_result_, __LINE__), lhs, expr)
