#include "core/status/status.h"

namespace tessera {

std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) rep_ = std::make_shared<const Rep>(Rep{code, std::move(message)});
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return rep_ ? rep_->message : kEmpty;
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code())) + ": " + message();
}

Status Status::with_context(std::string_view context) const& {
  if (ok()) return *this;
  return Status(code(), std::string(context) + ": " + message());
}

Status Status::with_context(std::string_view context) && {
  if (ok()) return std::move(*this);
  return Status(code(), std::string(context) + ": " + message());
}

Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
Status not_found(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
Status resource_exhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
Status failed_precondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
Status out_of_range(std::string m) {
  return {StatusCode::kOutOfRange, std::move(m)};
}
Status unimplemented(std::string m) {
  return {StatusCode::kUnimplemented, std::move(m)};
}
Status internal_error(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
Status data_loss(std::string m) {
  return {StatusCode::kDataLoss, std::move(m)};
}
Status unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}

void check_failed(const char* file, int line, const char* condition, std::string_view message) {
  std::fprintf(stderr, "tessera: internal check failed at %s:%d: %s: %.*s\n", file, line, condition,
               static_cast<int>(message.size()), message.data());
  std::abort();
}

}  // namespace tessera
