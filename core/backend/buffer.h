// Memory a backend allocated, and what it holds. On the CPU it is host memory;
// on a device it is memory only the backend's ops and Backend::write / read /
// copy reach (docs/backends.md, "Memory").
#pragma once

#include <cstddef>
#include <string_view>

namespace tessera {

// What a buffer holds, so a device backend can place it (weights in memory
// the device reads fastest, staging in memory the host maps) and the memory
// budget can count it. (ABI 8.0)
enum class BufferUsage {
  kWeights,      // written once at load, read by every step
  kActivations,  // a forward's scratch: hidden states, logits
  kKV,           // a cache store's keys and values
  kStaging,      // host-visible memory for uploads and read-backs
};

std::string_view buffer_usage_name(BufferUsage usage);

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual std::size_t size() const = 0;
  virtual BufferUsage usage() const = 0;
  // The host address of the buffer's first byte, or null when it is device
  // memory the host cannot read directly (then only the backend reaches it).
  virtual void* host_data() = 0;
  bool is_host() { return host_data() != nullptr; }
};

}  // namespace tessera
