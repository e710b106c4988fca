// The value-parameterised fixture (the parameter: the backend's name) and
// what every op case does: skip what the backend does not support, judge an
// output against the reference's, and record it for the summary.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>

#include "core/backend/backend.h"
#include "core/status/status.h"

namespace tessera::conformance {

class Conformance : public ::testing::TestWithParam<std::string> {
 public:
  void SetUp() override;

  const std::string& name() const { return GetParam(); }
  Backend& backend() { return *backend_; }
  Backend& reference();

  // Whether the backend runs `op` with `dtype`; records a skip when not.
  bool supports(BackendOp op, DType dtype);
  std::string unsupported_message(BackendOp op, DType dtype) const;

  // Records the case and fails it on NaN/Inf or an NMSE above the op's tolerance.
  void expect_conforms(BackendOp op, DType dtype, const std::string& label,
                       std::span<const float> got, std::span<const float> want);

 private:
  Backend* backend_ = nullptr;
};

}  // namespace tessera::conformance

// Skips the test, with a message naming the backend, op and dtype, unless the
// backend supports them.
#define CONFORMANCE_REQUIRE(op, dtype) \
  if (!supports(op, dtype)) GTEST_SKIP() << unsupported_message(op, dtype)

#define CONFORMANCE_ASSERT_OK(expr)                                              \
  do {                                                                           \
    const ::tessera::Status _conf_status = (expr);                               \
    ASSERT_TRUE(_conf_status.ok()) << #expr << ": " << _conf_status.to_string(); \
  } while (0)

#define CONFORMANCE_ASSIGN_IMPL(tmp, lhs, expr)                       \
  auto tmp = (expr);                                                  \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().to_string(); \
  lhs = std::move(tmp).value()

// lhs = the Result's value, or a fatal failure naming the expression.
#define CONFORMANCE_ASSIGN_OR_FAIL(lhs, expr) \
  CONFORMANCE_ASSIGN_IMPL(TESSERA_CONCAT(_conf_result_, __LINE__), lhs, expr)

// After an op of the backend under test: everything it issued finished, ok.
#define CONFORMANCE_SYNC(backend) CONFORMANCE_ASSERT_OK((backend).synchronize())
