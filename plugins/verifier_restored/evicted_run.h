// Which positions of a sequence an evicting store dropped: a sink_window store
// keeps positions 0..begin-1 (the sinks) and end..logical-1 (the window), so
// one run [begin, end) is missing. A static or paged store drops nothing.
#pragma once

#include <cstdint>

#include "core/cache/checked_cache_store.h"

namespace tessera {

struct EvictedRun {
  int64_t begin = 0;
  int64_t end = 0;
  bool empty() const { return end == begin; }
  int64_t size() const { return end - begin; }
};

// FailedPrecondition when the stored positions leave more than one run, or
// the newest ones, missing (nothing there to restore exactly).
Result<EvictedRun> evicted_run(const CheckedCacheStore& cache, SequenceId seq);

}  // namespace tessera
