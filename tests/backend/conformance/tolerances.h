// The largest NMSE each op may show against the CPU reference, in one table
// (tolerances.cpp), with the reason for each bound.
#pragma once

#include <string_view>

#include "core/backend/backend.h"
#include "core/tensor/dtype.h"

namespace tessera::conformance {

struct Tolerance {
  double max_nmse = 0.0;
  std::string_view why;
};

// The bound for `op` with `dtype` (the weight dtype for embedding and matmul,
// f32 for the rest).
Tolerance tolerance(BackendOp op, DType dtype);

}  // namespace tessera::conformance
