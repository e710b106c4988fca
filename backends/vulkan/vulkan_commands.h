// Recording and submitting work, kept apart: ops record dispatches and copies
// into the open command buffer (record_*), and submit() runs what was
// recorded, in one vkQueueSubmit, and waits for it. Today every op submits on
// its own (eager); a later step records a whole forward between begin_step
// and end_step and submits once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/vulkan/vulkan_buffer.h"
#include "backends/vulkan/vulkan_pipelines.h"

namespace tessera::vulkan {

// One storage buffer binding: `range` bytes at `offset` (a multiple of the
// device's minStorageBufferOffsetAlignment) of `buffer`.
struct Binding {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize range = 0;
};

// Workgroups in x and y (x within the device's limit; shaders flatten them).
struct Groups {
  uint32_t x = 1, y = 1;
};

class Commands {
 public:
  static Result<std::unique_ptr<Commands>> create(std::shared_ptr<const Device> device);
  ~Commands();
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  // Opens the command buffer (once per submission).
  Status begin();
  bool recording() const { return recording_; }
  // A dispatch of `kernel` over `groups`, then a barrier so the next command
  // sees what it wrote.
  Status record_dispatch(const Kernel& kernel, std::span<const Binding> bindings, const void* push,
                         uint32_t push_bytes, Groups groups);
  // dst[dst_offset, +bytes) = src[src_offset, +bytes), then a barrier.
  void record_copy(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst, VkDeviceSize dst_offset,
                   VkDeviceSize bytes);
  // Ends the command buffer, submits it, and waits for it to finish (with a
  // timeout); then the host sees what it wrote. Descriptor sets recorded
  // since begin() are freed.
  Status submit();
  // Drops what was recorded since begin() (an op that failed half-way).
  void discard();

  // `count` workgroups laid out within the device's limits.
  Groups groups_for(uint64_t count) const;

 private:
  explicit Commands(std::shared_ptr<const Device> device) : device_(std::move(device)) {}
  void record_barrier();
  Result<VkDescriptorSet> allocate_set(VkDescriptorSetLayout layout);

  std::shared_ptr<const Device> device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  // Descriptor pools: more are made when a submission needs more sets; all
  // are reset after it.
  std::vector<VkDescriptorPool> descriptor_pools_;
  std::size_t current_pool_ = 0;
  bool recording_ = false;
  // A submission ran past the timeout: its command buffer may still be in
  // use, so nothing more is recorded (every later begin() fails).
  bool hung_ = false;
};

}  // namespace tessera::vulkan
