// The forward's scratch as host floats. The transformer still reads and writes
// its activations on the host between ops (docs/backends.md, steps 3 and 4),
// so a backend whose activation buffers are device memory cannot run it yet:
// this says so, instead of handing the forward a null pointer.
#pragma once

#include "core/backend/backend.h"
#include "core/status/status.h"

namespace tessera {

Result<float*> host_floats(Buffer& buffer, const Backend& backend);

}  // namespace tessera
