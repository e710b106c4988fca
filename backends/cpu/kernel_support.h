// What the CPU ops (cpu_kernels.cpp, attention.cpp) share: debug-only shape
// checks, the scratch guard and the chunk size of a parallel loop.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/thread_pool.h"
#include "core/status/status.h"
#include "core/tensor/tensor.h"

// Shape checks cost nothing in release builds; callers validate user input.
#ifndef NDEBUG
#define TESSERA_DCHECK(cond, msg) TESSERA_CHECK(cond, msg)
#else
#define TESSERA_DCHECK(cond, msg) \
  do {                            \
  } while (0)
#endif

namespace tessera::cpu {

// Kernels return nothing, so they cannot report a failed allocation. The
// backend sizes the scratch for the longest context at init (refusing one it
// cannot have), so growing here only happens for a row longer than that, a
// few KiB at most.
inline void reserve_or_die(ThreadPool& pool, std::size_t floats) {
  TESSERA_CHECK(pool.reserve_scratch(floats), "cpu kernels: out of memory growing scratch");
}

// Enough work per chunk that waking a thread pays off.
inline int64_t min_chunk_for(int64_t work_per_index, int64_t target = 32768) {
  return std::max<int64_t>(1, target / std::max<int64_t>(work_per_index, 1));
}

inline bool inner_contiguous(const Tensor& t) {
  return t.rank == 0 || t.stride[t.rank - 1] == 1;
}

}  // namespace tessera::cpu
