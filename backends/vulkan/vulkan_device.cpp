#include "backends/vulkan/vulkan_device.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

namespace tessera::vulkan {
namespace {

std::string type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

bool has_extension(const std::vector<VkExtensionProperties>& extensions, const char* name) {
  for (const auto& e : extensions)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string mib(uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

void query_memory(const Instance& instance, PhysicalDevice& device) {
  const Api& api = instance.api();
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{};
  budget.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
  VkPhysicalDeviceMemoryProperties2 memory{};
  memory.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
  if (device.memory_budget) memory.pNext = &budget;
  api.vkGetPhysicalDeviceMemoryProperties2(device.handle, &memory);
  uint64_t total = 0, free = 0;
  const auto& props = memory.memoryProperties;
  for (uint32_t h = 0; h < props.memoryHeapCount; ++h) {
    if (!(props.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
    total += props.memoryHeaps[h].size;
    if (device.memory_budget) {
      const uint64_t limit = budget.heapBudget[h], used = budget.heapUsage[h];
      free += limit > used ? limit - used : 0;
    } else {
      free += props.memoryHeaps[h].size;
    }
  }
  device.info.memory_bytes = total;
  device.info.memory_free_bytes = free;
}

Result<std::vector<PhysicalDevice>> enumerate_devices(const Instance& instance) {
  const Api& api = instance.api();
  uint32_t count = 0;
  VkResult result = api.vkEnumeratePhysicalDevices(instance.handle(), &count, nullptr);
  if (result != VK_SUCCESS) return vk_error("vkEnumeratePhysicalDevices", result);
  std::vector<VkPhysicalDevice> handles(count);
  result = api.vkEnumeratePhysicalDevices(instance.handle(), &count, handles.data());
  if (result != VK_SUCCESS && result != VK_INCOMPLETE)
    return vk_error("vkEnumeratePhysicalDevices", result);
  handles.resize(count);

  std::vector<PhysicalDevice> devices;
  for (VkPhysicalDevice handle : handles) {
    PhysicalDevice d;
    d.handle = handle;
    uint32_t extension_count = 0;
    api.vkEnumerateDeviceExtensionProperties(handle, nullptr, &extension_count, nullptr);
    std::vector<VkExtensionProperties> extensions(extension_count);
    api.vkEnumerateDeviceExtensionProperties(handle, nullptr, &extension_count, extensions.data());
    extensions.resize(extension_count);

    VkPhysicalDeviceProperties basic{};
    api.vkGetPhysicalDeviceProperties(handle, &basic);
    d.api_version = basic.apiVersion;
    // Structs chained only where the device knows them (its version or extension).
    const bool has_12 = basic.apiVersion >= VK_API_VERSION_1_2;
    const bool has_13 = basic.apiVersion >= VK_API_VERSION_1_3;
    const bool float16_int8 = has_12 || has_extension(extensions, "VK_KHR_shader_float16_int8");
    const bool integer_dot =
        has_13 || has_extension(extensions, "VK_KHR_shader_integer_dot_product");
    d.memory_budget = has_extension(extensions, "VK_EXT_memory_budget");

    VkPhysicalDeviceSubgroupProperties subgroup{};
    subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceProperties2 props{};
    props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    props.pNext = &subgroup;
    api.vkGetPhysicalDeviceProperties2(handle, &props);

    VkPhysicalDeviceShaderFloat16Int8Features f16{};
    f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{};
    dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    VkPhysicalDeviceFeatures2 features{};
    features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    void** next = &features.pNext;
    if (float16_int8) {
      *next = &f16;
      next = &f16.pNext;
    }
    if (integer_dot) *next = &dot;
    api.vkGetPhysicalDeviceFeatures2(handle, &features);

    uint32_t family_count = 0;
    api.vkGetPhysicalDeviceQueueFamilyProperties(handle, &family_count, nullptr);
    std::vector<VkQueueFamilyProperties> families(family_count);
    api.vkGetPhysicalDeviceQueueFamilyProperties(handle, &family_count, families.data());
    // A compute queue, preferring one without graphics (a dedicated one).
    for (uint32_t f = 0; f < family_count; ++f) {
      if (!(families[f].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
      const bool dedicated = !(families[f].queueFlags & VK_QUEUE_GRAPHICS_BIT);
      if (d.compute_queue_family < 0 || dedicated) d.compute_queue_family = static_cast<int>(f);
      if (dedicated) break;
    }

    const VkPhysicalDeviceLimits& limits = props.properties.limits;
    d.type = props.properties.deviceType;
    d.min_storage_offset_alignment = std::max<uint64_t>(limits.minStorageBufferOffsetAlignment, 4);
    for (int i = 0; i < 3; ++i) d.max_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
    d.max_allocation_bytes = 0;  // from VkPhysicalDeviceMaintenance3Properties below

    VkPhysicalDeviceMaintenance3Properties maintenance3{};
    maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    VkPhysicalDeviceProperties2 props3{};
    props3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    props3.pNext = &maintenance3;
    api.vkGetPhysicalDeviceProperties2(handle, &props3);
    d.max_allocation_bytes = maintenance3.maxMemoryAllocationSize;

    DeviceInfo& info = d.info;
    info.kind = "vulkan";
    info.name = props.properties.deviceName;
    info.type = type_name(d.type);
    info.host_memory = false;
    info.threads = 1;
    info.fp16 = float16_int8 && f16.shaderFloat16 == VK_TRUE;
    info.int8_dot = integer_dot && dot.shaderIntegerDotProduct == VK_TRUE;
    info.subgroup_size = static_cast<int>(subgroup.subgroupSize);
    info.max_binding_bytes = limits.maxStorageBufferRange;
    devices.push_back(std::move(d));
    query_memory(instance, devices.back());
    PhysicalDevice& added = devices.back();
    added.info.description = "Vulkan " + std::to_string(VK_API_VERSION_MAJOR(added.api_version)) +
                             "." + std::to_string(VK_API_VERSION_MINOR(added.api_version)) + "." +
                             std::to_string(VK_API_VERSION_PATCH(added.api_version)) + ", " +
                             added.info.type + ", " + mib(added.info.memory_bytes) + ", subgroup " +
                             std::to_string(added.info.subgroup_size) + ", largest binding " +
                             mib(added.info.max_binding_bytes) + (added.info.fp16 ? ", fp16" : "") +
                             (added.info.int8_dot ? ", int8 dot" : "") +
                             "; ops run one submission each (eager), accumulating in f32";
  }
  return devices;
}

std::string describe_devices(const std::vector<PhysicalDevice>& devices) {
  if (devices.empty()) return "none";
  std::string text;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(i) + ": " + devices[i].info.name + " (" + devices[i].info.type + ")";
  }
  return text;
}

Result<std::size_t> choose_device(const std::vector<PhysicalDevice>& devices,
                                  const std::string& choice) {
  std::vector<std::size_t> usable;
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (devices[i].compute_queue_family >= 0) usable.push_back(i);
  if (usable.empty())
    return failed_precondition(
        "backend vulkan: no Vulkan device with a compute queue (devices found: " +
        describe_devices(devices) +
        "); install a Vulkan driver: mesa-vulkan-drivers (lavapipe, on the CPU) or your GPU's "
        "driver, then check with `vulkaninfo --summary`");
  if (choice.empty() || choice == "auto") {
    for (std::size_t i : usable)
      if (devices[i].type != VK_PHYSICAL_DEVICE_TYPE_CPU) return i;
    return usable.front();
  }
  std::size_t index = 0;
  const char* end = choice.data() + choice.size();
  if (auto [ptr, ec] = std::from_chars(choice.data(), end, index);
      ec == std::errc() && ptr == end) {
    if (index < devices.size() && devices[index].compute_queue_family >= 0) return index;
    return not_found("backend vulkan: device = \"" + choice + "\" is not the index of a device " +
                     "with a compute queue; devices found: " + describe_devices(devices));
  }
  const std::string wanted = lower(choice);
  for (std::size_t i : usable)
    if (lower(devices[i].info.name).find(wanted) != std::string::npos) return i;
  return not_found("backend vulkan: device = \"" + choice +
                   "\" matches no device name; devices found: " + describe_devices(devices) +
                   " (set backend.device to \"auto\", an index or part of a name)");
}

Result<std::unique_ptr<Device>> Device::create(std::shared_ptr<Instance> instance,
                                               const PhysicalDevice& physical) {
  std::unique_ptr<Device> self(new Device());
  self->instance_ = std::move(instance);
  self->physical_ = physical;
  self->queue_family_ = static_cast<uint32_t>(physical.compute_queue_family);
  const Api& api = self->api();
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{};
  queue.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue.queueFamilyIndex = self->queue_family_;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  std::vector<const char*> extensions;
  if (physical.memory_budget) extensions.push_back("VK_EXT_memory_budget");
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  const VkResult result = api.vkCreateDevice(physical.handle, &info, nullptr, &self->device_);
  if (result != VK_SUCCESS) return vk_error("vkCreateDevice on " + physical.info.name, result);
  api.vkGetDeviceQueue(self->device_, self->queue_family_, 0, &self->queue_);
  api.vkGetPhysicalDeviceMemoryProperties(physical.handle, &self->memory_);
  return self;
}

Device::~Device() {
  if (device_ != VK_NULL_HANDLE) {
    api().vkDeviceWaitIdle(device_);
    api().vkDestroyDevice(device_, nullptr);
  }
}

int Device::memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                        VkMemoryPropertyFlags preferred) const {
  int fallback = -1;
  for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    const VkMemoryPropertyFlags flags = memory_.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace tessera::vulkan
