// Scratch as host floats, for the code that still reads and writes its
// activations on the host between ops (the fixed-shape step: docs/backends.md,
// steps 3 and 4): a backend whose activation buffers are device memory cannot
// run it yet, and this says so instead of handing it a null pointer.
#pragma once

#include "core/backend/backend.h"
#include "core/status/status.h"

namespace tessera {

Result<float*> host_floats(Buffer& buffer, const Backend& backend);

}  // namespace tessera
