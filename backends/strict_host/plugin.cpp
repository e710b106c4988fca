// The strict_host backend plugin (tests only): the descriptor.
#include "backends/strict_host/strict_host_backend.h"
#include "core/plugin/sdk.h"

TESSERA_PLUGIN(backend, "strict_host", "0.1.0",
               "tests only: the cpu backend's kernels on memory that reports host_data() null, "
               "so whatever reads device memory on the host faults at once (docs/backends.md)",
               tessera::sdk::kNoOptions, tessera::StrictHostBackend)
