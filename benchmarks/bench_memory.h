// Anonymous memory for the benchmarks that read from DRAM: huge pages where
// the kernel grants them (as the CPU backend's weight copy asks), every page
// touched up front so no fault lands in a timed loop.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tessera::bench {

class MappedBytes {
 public:
  explicit MappedBytes(std::size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    madvise(p, bytes, MADV_HUGEPAGE);
    data_ = static_cast<uint8_t*>(p);
    std::memset(data_, 0, bytes);
  }
  ~MappedBytes() {
    if (data_) munmap(data_, bytes_);
  }
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;
  uint8_t* data() const { return data_; }  // null when the memory cannot be had
  std::size_t size() const { return bytes_; }

 private:
  uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace tessera::bench
