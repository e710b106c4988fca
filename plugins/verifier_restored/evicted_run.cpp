#include "plugins/verifier_restored/evicted_run.h"

#include <string>

namespace tessera {

Result<EvictedRun> evicted_run(const CheckedCacheStore& cache, SequenceId seq) {
  ASSIGN_OR_RETURN(const SequenceInfo info, cache.info(seq));
  ASSIGN_OR_RETURN(const std::span<const int32_t> stored, cache.positions(seq));
  std::size_t i = 0;
  while (i < stored.size() && stored[i] == static_cast<int32_t>(i)) ++i;
  EvictedRun run;
  run.begin = static_cast<int64_t>(i);
  run.end = i < stored.size() ? stored[i] : info.logical_length;
  for (std::size_t j = i; j < stored.size(); ++j)
    if (stored[j] != run.end + static_cast<int64_t>(j - i))
      return failed_precondition("sequence " + std::to_string(seq) +
                                 ": the store dropped more than one run of positions (stored "
                                 "entry " +
                                 std::to_string(j) + " is at " + std::to_string(stored[j]) +
                                 "); restoration handles the one run a sink_window store drops");
  if (run.end + static_cast<int64_t>(stored.size() - i) != info.logical_length)
    return failed_precondition("sequence " + std::to_string(seq) +
                               ": the store dropped its newest entries; only a run between the "
                               "sinks and the window can be restored");
  return run;
}

}  // namespace tessera
