// Vulkan memory: the Buffer the backend hands out (device memory that only
// its ops and write / read / copy reach: host_data() is null, even on
// lavapipe where the memory could be mapped) and the host-visible staging
// memory those transfers go through.
#pragma once

#include <cstddef>
#include <memory>

#include "backends/vulkan/vulkan_device.h"
#include "core/backend/buffer.h"

namespace tessera::vulkan {

// A VkBuffer with its own memory. Device memory for the Buffer interface;
// with `host_visible`, mapped memory for staging (mapped()).
class VulkanBuffer final : public Buffer {
 public:
  // `bytes` rounded up to 16 (shaders read whole 32-bit words); refuses a
  // size past the device's largest allocation with the limit in the message.
  static Result<std::unique_ptr<VulkanBuffer>> create(std::shared_ptr<const Device> device,
                                                      std::size_t bytes, BufferUsage usage,
                                                      bool host_visible);
  ~VulkanBuffer() override;
  VulkanBuffer(const VulkanBuffer&) = delete;
  VulkanBuffer& operator=(const VulkanBuffer&) = delete;

  std::size_t size() const override { return size_; }
  BufferUsage usage() const override { return usage_; }
  void* host_data() override { return nullptr; }  // device memory, whatever the driver

  VkBuffer handle() const { return buffer_; }
  // The bytes the VkBuffer has (size() rounded up): a binding may reach them.
  std::size_t capacity() const { return capacity_; }
  // The host address of a staging buffer's memory; null for device memory.
  void* mapped() const { return mapped_; }
  const Device& device() const { return *device_; }

 private:
  VulkanBuffer() = default;
  std::shared_ptr<const Device> device_;  // outlives the backend if a buffer does
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  BufferUsage usage_ = BufferUsage::kActivations;
  void* mapped_ = nullptr;
};

}  // namespace tessera::vulkan
