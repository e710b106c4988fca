#include "tests/backend/conformance/fixture.h"

#include "tests/backend/conformance/backends_under_test.h"
#include "tests/backend/conformance/compare.h"
#include "tests/backend/conformance/summary.h"
#include "tests/backend/conformance/tolerances.h"

namespace tessera::conformance {

void Conformance::SetUp() {
  auto found = backend_under_test(name());
  ASSERT_TRUE(found.ok()) << "backend '" << name() << "': " << found.status().to_string();
  backend_ = *found;
}

Backend& Conformance::reference() {
  return reference_backend();
}

bool Conformance::supports(BackendOp op, DType dtype) {
  if (backend_->supports_op(op, dtype)) return true;
  record_skip(name(), op, dtype, "not supported");
  return false;
}

std::string Conformance::unsupported_message(BackendOp op, DType dtype) const {
  return name() + " does not support " + std::string(backend_op_name(op)) + " at " +
         std::string(dtype_name(dtype));
}

void Conformance::expect_conforms(BackendOp op, DType dtype, const std::string& label,
                                  std::span<const float> got, std::span<const float> want) {
  const Comparison c = compare(got, want);
  const Tolerance tol = tolerance(op, dtype);
  ASSERT_EQ(c.reference_non_finite, 0) << "the reference produced NaN/Inf: the case is broken";
  const bool passed = c.size_mismatch == 0 && c.non_finite == 0 && c.nmse <= tol.max_nmse;
  record_case(name(), op, dtype, c.nmse, c.non_finite, passed);
  EXPECT_TRUE(passed) << name() << " " << backend_op_name(op) << " " << dtype_name(dtype) << " "
                      << label << ": " << c.describe() << " (tolerance " << tol.max_nmse << ": "
                      << tol.why << ")";
}

}  // namespace tessera::conformance
