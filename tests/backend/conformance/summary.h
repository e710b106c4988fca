// What the suite ran, per backend, op and dtype: cases run, the worst NMSE
// and the tolerance, or why it was skipped; printed as one table at the end.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"
#include "core/tensor/dtype.h"

namespace tessera::conformance {

// One case compared (failed or not).
void record_case(std::string_view backend, BackendOp op, DType dtype, double nmse,
                 int64_t non_finite, bool passed);
// The op with this dtype was not run: `why` (not supported, no backend).
void record_skip(std::string_view backend, BackendOp op, DType dtype, std::string_view why);

// "backend op dtype" for every op of kAllBackendOps (x every dtype for
// embedding and matmul) of these backends that was neither run nor skipped:
// an op without cases here.
std::vector<std::string> unrecorded(const std::vector<std::string>& backends);

// backend | op | dtype | cases | failed | NaN/Inf | worst NMSE | tolerance | skipped
void print_summary(std::FILE* out);

}  // namespace tessera::conformance
