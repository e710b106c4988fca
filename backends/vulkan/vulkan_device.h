// Vulkan devices: what each physical device offers (as a DeviceInfo), the
// choice backend.device makes, and the logical device with its compute queue.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/vulkan_api.h"
#include "core/backend/backend.h"

namespace tessera::vulkan {

// A physical device and what the backend needs of its limits.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  DeviceInfo info;  // kind "vulkan", name, type, memory, capabilities
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0;
  int compute_queue_family = -1;  // -1: none (the device cannot be used)
  uint64_t min_storage_offset_alignment = 16;
  uint32_t max_workgroup_count[3] = {65535, 65535, 65535};
  uint64_t max_allocation_bytes = 0;
  bool memory_budget = false;  // VK_EXT_memory_budget
};

// Every device the instance sees, in its order (backend.device counts them).
Result<std::vector<PhysicalDevice>> enumerate_devices(const Instance& instance);
// The device heap's size and, with VK_EXT_memory_budget, what is free now.
void query_memory(const Instance& instance, PhysicalDevice& device);

// "0: llvmpipe (LLVM 15.0.6, 256 bits) (cpu), 1: ..." for error messages.
std::string describe_devices(const std::vector<PhysicalDevice>& devices);

// backend.device: "auto" (the first device that is not a CPU, else the first
// CPU-type device such as lavapipe), an index N, or a substring of the
// device's name (case-insensitive). Errors list the devices found.
Result<std::size_t> choose_device(const std::vector<PhysicalDevice>& devices,
                                  const std::string& choice);

// The logical device with one compute queue.
class Device {
 public:
  static Result<std::unique_ptr<Device>> create(std::shared_ptr<Instance> instance,
                                                const PhysicalDevice& physical);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Api& api() const { return instance_->api(); }
  VkDevice handle() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const PhysicalDevice& physical() const { return physical_; }
  const VkPhysicalDeviceMemoryProperties& memory() const { return memory_; }
  // A memory type index with all of `required` (and, where one has them, all
  // of `preferred`) among those `type_bits` allows; -1 when none.
  int memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                  VkMemoryPropertyFlags preferred) const;

 private:
  Device() = default;
  std::shared_ptr<Instance> instance_;
  PhysicalDevice physical_;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
};

}  // namespace tessera::vulkan
