// The cpu backend plugin: the descriptor only (the backend lives in
// cpu_backend.cpp, linked from tessera_backend_cpu_kernels).
#include "backends/cpu/cpu_backend.h"
#include "core/plugin/sdk.h"

TESSERA_PLUGIN(backend, "cpu", "0.1.0",
               "reference CPU backend (f32, f16, bf16, q8_0, q4_0, q4_K and q6_K weights; "
               "threads via [backend] threads)",
               tessera::sdk::kNoOptions, tessera::CpuBackend)
