#include "backends/vulkan/vulkan_buffer.h"

#include <string>

namespace tessera::vulkan {

Result<std::unique_ptr<VulkanBuffer>> VulkanBuffer::create(std::shared_ptr<const Device> shared,
                                                           std::size_t bytes, BufferUsage usage,
                                                           bool host_visible,
                                                           std::shared_ptr<Retirement> retirement) {
  const Device& device = *shared;
  const std::size_t capacity = bytes == 0 ? 16 : (bytes + 15) / 16 * 16;
  const std::string what = std::to_string(bytes) + " bytes of " +
                           (host_visible ? "staging" : std::string(buffer_usage_name(usage))) +
                           " memory on " + device.physical().info.name;
  const uint64_t largest = device.physical().max_allocation_bytes;
  if (largest > 0 && capacity > largest)
    return resource_exhausted("backend vulkan: cannot allocate " + what +
                              ": the device's largest allocation (maxMemoryAllocationSize) is " +
                              std::to_string(largest) + " bytes");
  const Api& api = device.api();
  std::unique_ptr<VulkanBuffer> self(new VulkanBuffer());
  self->device_ = std::move(shared);
  self->retirement_ = std::move(retirement);
  self->size_ = bytes;
  self->capacity_ = capacity;
  self->usage_ = usage;
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = capacity;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkResult result = api.vkCreateBuffer(device.handle(), &info, nullptr, &self->buffer_);
  if (result != VK_SUCCESS) return vk_error("vkCreateBuffer of " + what, result);
  VkMemoryRequirements needs{};
  api.vkGetBufferMemoryRequirements(device.handle(), self->buffer_, &needs);
  const int type =
      host_visible
          ? device.memory_type(
                needs.memoryTypeBits,
                VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
          : device.memory_type(needs.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (type < 0) return internal_error("backend vulkan: no memory type for " + what);
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = needs.size;
  alloc.memoryTypeIndex = static_cast<uint32_t>(type);
  result = api.vkAllocateMemory(device.handle(), &alloc, nullptr, &self->memory_);
  if (result != VK_SUCCESS) return vk_error("vkAllocateMemory of " + what, result);
  result = api.vkBindBufferMemory(device.handle(), self->buffer_, self->memory_, 0);
  if (result != VK_SUCCESS) return vk_error("vkBindBufferMemory of " + what, result);
  const VkMemoryPropertyFlags flags =
      device.memory().memoryTypes[static_cast<uint32_t>(type)].propertyFlags;
  constexpr VkMemoryPropertyFlags kMappable =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  self->host_cached_ = (flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) != 0;
  if (host_visible || (flags & kMappable) == kMappable) {
    result = api.vkMapMemory(device.handle(), self->memory_, 0, VK_WHOLE_SIZE, 0, &self->mapped_);
    if (result != VK_SUCCESS) return vk_error("vkMapMemory of " + what, result);
  }
  return self;
}

VulkanBuffer::~VulkanBuffer() {
  if (retirement_ && retirement_->busy()) {
    retirement_->keep(buffer_, memory_, mapped_ != nullptr);
    return;
  }
  const Api& api = device_->api();
  if (mapped_ != nullptr) api.vkUnmapMemory(device_->handle(), memory_);
  if (buffer_ != VK_NULL_HANDLE) api.vkDestroyBuffer(device_->handle(), buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) api.vkFreeMemory(device_->handle(), memory_, nullptr);
}

Retirement::~Retirement() {
  for (const Kept& k : kept_) destroy(k);
}

void Retirement::release() {
  busy_ = false;
  for (const Kept& k : kept_) destroy(k);
  kept_.clear();
}

void Retirement::keep(VkBuffer buffer, VkDeviceMemory memory, bool mapped) {
  kept_.push_back({buffer, memory, mapped});
}

void Retirement::destroy(const Kept& k) const {
  const Api& api = device_->api();
  if (k.mapped) api.vkUnmapMemory(device_->handle(), k.memory);
  if (k.buffer != VK_NULL_HANDLE) api.vkDestroyBuffer(device_->handle(), k.buffer, nullptr);
  if (k.memory != VK_NULL_HANDLE) api.vkFreeMemory(device_->handle(), k.memory, nullptr);
}

}  // namespace tessera::vulkan
