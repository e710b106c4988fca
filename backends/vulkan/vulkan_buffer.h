// Vulkan memory: the Buffer the backend hands out (device memory that only
// its ops and write / read / copy reach: host_data() is null, even on
// lavapipe where the memory could be mapped) and the host-visible memory
// transfers and an op's host inputs go through. Work is recorded and run
// later (vulkan_commands.h), so a buffer destroyed while recorded work may
// still use it gives its memory to a Retirement, which frees it once that
// work finished.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "backends/vulkan/vulkan_device.h"
#include "core/backend/buffer.h"

namespace tessera::vulkan {

// Buffers destroyed while recorded work may still read or write them: their
// handles are kept until the work finished (release()), or until the last
// holder goes. Single-threaded, as the backend.
class Retirement {
 public:
  explicit Retirement(std::shared_ptr<const Device> device) : device_(std::move(device)) {}
  ~Retirement();
  Retirement(const Retirement&) = delete;
  Retirement& operator=(const Retirement&) = delete;

  // Whether work was recorded that has not finished.
  bool busy() const { return busy_; }
  void set_busy() { busy_ = true; }
  // That work finished (or never will run): what was kept is destroyed.
  void release();
  void keep(VkBuffer buffer, VkDeviceMemory memory, bool mapped);

 private:
  struct Kept {
    VkBuffer buffer;
    VkDeviceMemory memory;
    bool mapped;
  };
  void destroy(const Kept& kept) const;
  std::shared_ptr<const Device> device_;
  std::vector<Kept> kept_;
  bool busy_ = false;
};

// A VkBuffer with its own memory. Device memory for the Buffer interface;
// with `host_visible`, mapped memory for staging and uploads (mapped()).
// Device memory that is host-visible and coherent anyway (lavapipe, many
// integrated GPUs) is mapped too, for the backend's write and read when no
// recorded work is pending.
class VulkanBuffer final : public Buffer {
 public:
  // `bytes` rounded up to 16 (shaders read whole 32-bit words); refuses a
  // size past the device's largest allocation with the limit in the message.
  // `retirement` (may be null) keeps the memory past the destructor while
  // recorded work may use it.
  static Result<std::unique_ptr<VulkanBuffer>> create(std::shared_ptr<const Device> device,
                                                      std::size_t bytes, BufferUsage usage,
                                                      bool host_visible,
                                                      std::shared_ptr<Retirement> retirement = {});
  ~VulkanBuffer() override;
  VulkanBuffer(const VulkanBuffer&) = delete;
  VulkanBuffer& operator=(const VulkanBuffer&) = delete;

  std::size_t size() const override { return size_; }
  BufferUsage usage() const override { return usage_; }
  void* host_data() override { return nullptr; }  // device memory, whatever the driver

  VkBuffer handle() const { return buffer_; }
  // The bytes the VkBuffer has (size() rounded up): a binding may reach them.
  std::size_t capacity() const { return capacity_; }
  // The host address of the memory (coherent): always for a staging buffer;
  // for device memory only where its type is host-visible, else null.
  std::byte* mapped() const { return static_cast<std::byte*>(mapped_); }
  // Whether reading mapped() from the host is cached (fast).
  bool host_cached() const { return host_cached_; }
  const Device& device() const { return *device_; }

 private:
  VulkanBuffer() = default;
  std::shared_ptr<const Device> device_;  // outlives the backend if a buffer does
  std::shared_ptr<Retirement> retirement_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  BufferUsage usage_ = BufferUsage::kActivations;
  void* mapped_ = nullptr;
  bool host_cached_ = false;
};

}  // namespace tessera::vulkan
