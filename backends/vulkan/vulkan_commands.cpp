#include "backends/vulkan/vulkan_commands.h"

#include <algorithm>
#include <string>

namespace tessera::vulkan {
namespace {

constexpr uint32_t kSetsPerPool = 256;
constexpr uint32_t kBindingsPerSet = 8;
// How long a submission may run before the backend calls the device hung.
constexpr uint64_t kSubmitTimeoutNs = 300ull * 1000 * 1000 * 1000;

}  // namespace

Result<std::unique_ptr<Commands>> Commands::create(std::shared_ptr<const Device> device,
                                                   std::shared_ptr<Retirement> retirement) {
  std::unique_ptr<Commands> self(new Commands(std::move(device), std::move(retirement)));
  const Api& api = self->device_->api();
  const VkDevice d = self->device_->handle();
  VkCommandPoolCreateInfo pool{};
  pool.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = self->device_->queue_family();
  VkResult result = api.vkCreateCommandPool(d, &pool, nullptr, &self->pool_);
  if (result != VK_SUCCESS) return vk_error("vkCreateCommandPool", result);
  VkCommandBufferAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  alloc.commandPool = self->pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  result = api.vkAllocateCommandBuffers(d, &alloc, &self->commands_);
  if (result != VK_SUCCESS) return vk_error("vkAllocateCommandBuffers", result);
  VkFenceCreateInfo fence{};
  fence.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  result = api.vkCreateFence(d, &fence, nullptr, &self->fence_);
  if (result != VK_SUCCESS) return vk_error("vkCreateFence", result);
  return self;
}

Commands::~Commands() {
  const Api& api = device_->api();
  const VkDevice d = device_->handle();
  if (recording_) api.vkEndCommandBuffer(commands_);
  // Work never submitted never runs; after a timeout it may still.
  if (retirement_ && !hung_) retirement_->release();
  for (VkDescriptorPool p : descriptor_pools_) api.vkDestroyDescriptorPool(d, p, nullptr);
  if (fence_ != VK_NULL_HANDLE) api.vkDestroyFence(d, fence_, nullptr);
  if (pool_ != VK_NULL_HANDLE) api.vkDestroyCommandPool(d, pool_, nullptr);
}

Status Commands::begin() {
  if (recording_) return ok_status();
  if (hung_)
    return unavailable("backend vulkan: an earlier submission never finished on " +
                       device_->physical().info.name + "; recreate the backend");
  const Api& api = device_->api();
  VkResult result = api.vkResetCommandBuffer(commands_, 0);
  if (result != VK_SUCCESS) return vk_error("vkResetCommandBuffer", result);
  VkCommandBufferBeginInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  info.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  result = api.vkBeginCommandBuffer(commands_, &info);
  if (result != VK_SUCCESS) return vk_error("vkBeginCommandBuffer", result);
  recording_ = true;
  recorded_ = 0;
  if (retirement_) retirement_->set_busy();
  return ok_status();
}

Result<VkDescriptorSet> Commands::allocate_set(VkDescriptorSetLayout layout) {
  const Api& api = device_->api();
  const VkDevice d = device_->handle();
  for (;;) {
    if (current_pool_ == descriptor_pools_.size()) {
      VkDescriptorPoolSize size{};
      size.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      size.descriptorCount = kSetsPerPool * kBindingsPerSet;
      VkDescriptorPoolCreateInfo info{};
      info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      info.maxSets = kSetsPerPool;
      info.poolSizeCount = 1;
      info.pPoolSizes = &size;
      VkDescriptorPool pool = VK_NULL_HANDLE;
      const VkResult result = api.vkCreateDescriptorPool(d, &info, nullptr, &pool);
      if (result != VK_SUCCESS) return vk_error("vkCreateDescriptorPool", result);
      descriptor_pools_.push_back(pool);
    }
    VkDescriptorSetAllocateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    info.descriptorPool = descriptor_pools_[current_pool_];
    info.descriptorSetCount = 1;
    info.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    const VkResult result = api.vkAllocateDescriptorSets(d, &info, &set);
    if (result == VK_SUCCESS) return set;
    if (result != VK_ERROR_OUT_OF_POOL_MEMORY && result != VK_ERROR_FRAGMENTED_POOL)
      return vk_error("vkAllocateDescriptorSets", result);
    ++current_pool_;  // this one is full: the next (made if need be)
  }
}

Status Commands::record_dispatch(const Kernel& kernel, std::span<const Binding> bindings,
                                 const void* push, uint32_t push_bytes, Groups groups) {
  if (bindings.size() != kernel.bindings || bindings.size() > kBindingsPerSet ||
      push_bytes > kMaxPushBytes)
    return internal_error(std::string("backend vulkan: ") + kernel.name + " given " +
                          std::to_string(bindings.size()) + " bindings and " +
                          std::to_string(push_bytes) + " push bytes");
  RETURN_IF_ERROR(begin());
  auto set = allocate_set(kernel.set_layout);
  if (!set.ok()) return set.status();
  const Api& api = device_->api();
  VkDescriptorBufferInfo infos[kBindingsPerSet]{};
  VkWriteDescriptorSet writes[kBindingsPerSet]{};
  for (std::size_t b = 0; b < bindings.size(); ++b) {
    infos[b].buffer = bindings[b].buffer;
    infos[b].offset = bindings[b].offset;
    infos[b].range = bindings[b].range;
    writes[b].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[b].dstSet = set.value();
    writes[b].dstBinding = static_cast<uint32_t>(b);
    writes[b].descriptorCount = 1;
    writes[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[b].pBufferInfo = &infos[b];
  }
  api.vkUpdateDescriptorSets(device_->handle(), static_cast<uint32_t>(bindings.size()), writes, 0,
                             nullptr);
  api.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline);
  VkDescriptorSet bound = set.value();
  api.vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.layout, 0, 1,
                              &bound, 0, nullptr);
  if (push_bytes > 0)
    api.vkCmdPushConstants(commands_, kernel.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes,
                           push);
  api.vkCmdDispatch(commands_, groups.x, groups.y, 1);
  record_barrier();
  ++recorded_;
  return ok_status();
}

Status Commands::record_copy(VkBuffer src, VkDeviceSize src_offset, VkBuffer dst,
                             VkDeviceSize dst_offset, VkDeviceSize bytes) {
  if (bytes == 0) return ok_status();
  RETURN_IF_ERROR(begin());
  VkBufferCopy region{};
  region.srcOffset = src_offset;
  region.dstOffset = dst_offset;
  region.size = bytes;
  device_->api().vkCmdCopyBuffer(commands_, src, dst, 1, &region);
  record_barrier();
  ++recorded_;
  return ok_status();
}

Status Commands::record_copy_regions(VkBuffer src, VkBuffer dst,
                                     std::span<const VkBufferCopy> regions, bool barrier) {
  if (regions.empty()) return ok_status();
  RETURN_IF_ERROR(begin());
  device_->api().vkCmdCopyBuffer(commands_, src, dst, static_cast<uint32_t>(regions.size()),
                                 regions.data());
  if (barrier) record_barrier();
  ++recorded_;
  return ok_status();
}

void Commands::record_barrier() {
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                          VK_ACCESS_HOST_READ_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  device_->api().vkCmdPipelineBarrier(commands_, stages, stages | VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                      &barrier, 0, nullptr, 0, nullptr);
}

Status Commands::submit() {
  if (!recording_) return ok_status();
  recording_ = false;
  const Api& api = device_->api();
  const VkDevice d = device_->handle();
  VkResult result = api.vkEndCommandBuffer(commands_);
  // The work finished or never ran: its descriptor sets and the buffers
  // destroyed while it was recorded go.
  const auto reset_pools = [&] {
    for (VkDescriptorPool p : descriptor_pools_) api.vkResetDescriptorPool(d, p, 0);
    current_pool_ = 0;
    if (retirement_) retirement_->release();
  };
  if (result != VK_SUCCESS) {
    reset_pools();
    return vk_error("vkEndCommandBuffer", result);
  }
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  info.commandBufferCount = 1;
  info.pCommandBuffers = &commands_;
  result = api.vkQueueSubmit(device_->queue(), 1, &info, fence_);
  ++submissions_;
  if (result != VK_SUCCESS) {
    reset_pools();
    return vk_error("vkQueueSubmit", result);
  }
  result = api.vkWaitForFences(d, 1, &fence_, VK_TRUE, kSubmitTimeoutNs);
  if (result == VK_TIMEOUT) {
    // The work may still be running: keep its descriptors and fence as they are.
    hung_ = true;
    return unavailable("backend vulkan: a submission ran past " +
                       std::to_string(kSubmitTimeoutNs / 1000000000) + " s on " +
                       device_->physical().info.name + " (the device may be hung)");
  }
  api.vkResetFences(d, 1, &fence_);
  reset_pools();
  if (result != VK_SUCCESS) return vk_error("vkWaitForFences", result);
  return ok_status();
}

Groups Commands::groups_for(uint64_t count) const {
  const uint64_t limit = std::max<uint32_t>(device_->physical().max_workgroup_count[0], 1);
  Groups g;
  if (count == 0) {
    g.x = 0;  // a dispatch of nothing
    return g;
  }
  g.x = static_cast<uint32_t>(std::min(count, limit));
  g.y = static_cast<uint32_t>((count + g.x - 1) / g.x);
  return g;
}

}  // namespace tessera::vulkan
