#include "core/util/system_memory.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tessera {
namespace {

// The "MemAvailable:  123 kB" line of /proc/meminfo, in bytes; 0 if absent.
uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// A cgroup v2 file holding one number (or "max"); false when absent or "max".
bool read_cgroup_number(const std::string& path, uint64_t& value) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return false;
  std::istringstream number(text);
  return static_cast<bool>(number >> value);
}

// This process's cgroup v2 directory ("0::/path" in /proc/self/cgroup).
std::string cgroup_directory() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return "";
}

}  // namespace

AvailableMemory available_memory() {
  AvailableMemory result{0, "unknown"};
  if (const uint64_t bytes = mem_available(); bytes > 0) {
    result = {bytes, "MemAvailable in /proc/meminfo"};
  } else {
    const long pages = ::sysconf(_SC_AVPHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
      result = {static_cast<uint64_t>(pages) * static_cast<uint64_t>(page), "free physical pages"};
  }
  const std::string dir = cgroup_directory();
  uint64_t limit = 0;
  uint64_t used = 0;
  if (!dir.empty() && read_cgroup_number(dir + "/memory.max", limit) &&
      read_cgroup_number(dir + "/memory.current", used)) {
    const uint64_t left = limit > used ? limit - used : 0;
    if (!result.known() || left < result.bytes) result = {left, "the cgroup's memory.max"};
  }
  return result;
}

}  // namespace tessera
