// How much memory this process may still take: the smaller of the machine's
// available memory (MemAvailable in /proc/meminfo: free memory plus what the
// kernel can reclaim) and what the process's cgroup still allows
// (memory.max - memory.current, cgroup v2). For checks made before a large
// allocation, so a config asking for too much is refused instead of killed.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

struct AvailableMemory {
  uint64_t bytes = 0;
  std::string source;  // "MemAvailable", "cgroup memory.max", or "unknown"
  bool known() const { return source != "unknown"; }
};

AvailableMemory available_memory();

}  // namespace tessera
