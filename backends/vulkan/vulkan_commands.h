// Recording and submitting work, kept apart: ops record dispatches and copies
// into the open command buffer (record_*, which open it when it is not), and
// submit() runs everything recorded since, in one vkQueueSubmit, and waits
// for it. The backend submits only when the host must see a result (read,
// synchronize) or the recording grew past a limit, so a forward is one
// submission.
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
  // `retirement` is told when recorded work is pending and when it finished.
  static Result<std::unique_ptr<Commands>> create(std::shared_ptr<const Device> device,
                                                  std::shared_ptr<Retirement> retirement);
  ~Commands();
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  // Opens the command buffer (once per submission; again: nothing).
  Status begin();
  // Whether work was recorded that has not been submitted.
  bool recording() const { return recording_; }
  // Commands recorded since begin().
  uint64_t recorded() const { return recorded_; }
  // A dispatch of `kernel` over `groups`, then a barrier so the next command
  // sees what it wrote.
  Status record_dispatch(const Kernel& kernel, std::span<const Binding> bindings, const void* push,
                         uint32_t push_bytes, Groups groups);
  // dst[dst_offset, +bytes) = src[src_offset, +bytes), then a barrier.
  Status record_copy(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst, VkDeviceSize dst_offset,
                     VkDeviceSize bytes);
  // The same for many regions of one buffer pair: one command, then a
  // barrier unless `barrier` is false (copies into disjoint places that
  // nothing reads before the caller's own barrier()).
  Status record_copy_regions(VkBuffer src, VkBuffer dst, std::span<const VkBufferCopy> regions,
                             bool barrier = true);
  // A barrier alone (after copies recorded without one).
  void barrier() {
    if (recording_) record_barrier();
  }
  // Ends the command buffer, submits it, and waits for it to finish (with a
  // timeout); then the host sees what it wrote. Descriptor sets recorded
  // since begin() are freed and the retirement released, unless the wait
  // timed out (hung(): the work may still run, so nothing it uses is freed).
  Status submit();
  bool hung() const { return hung_; }
  // vkQueueSubmit calls so far.
  uint64_t submissions() const { return submissions_; }

  // `count` workgroups laid out within the device's limits.
  Groups groups_for(uint64_t count) const;

 private:
  Commands(std::shared_ptr<const Device> device, std::shared_ptr<Retirement> retirement)
      : device_(std::move(device)), retirement_(std::move(retirement)) {}
  void record_barrier();
  Result<VkDescriptorSet> allocate_set(VkDescriptorSetLayout layout);

  std::shared_ptr<const Device> device_;
  std::shared_ptr<Retirement> retirement_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer commands_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  // Descriptor pools: more are made when a submission needs more sets; all
  // are reset after it.
  std::vector<VkDescriptorPool> descriptor_pools_;
  std::size_t current_pool_ = 0;
  bool recording_ = false;
  uint64_t recorded_ = 0;
  uint64_t submissions_ = 0;
  // A submission ran past the timeout: its command buffer may still be in
  // use, so nothing more is recorded (every later begin() fails).
  bool hung_ = false;
};

}  // namespace tessera::vulkan
