// The Vulkan functions the backend calls, loaded at run time: the loader
// (libvulkan.so.1) is opened with dlopen, so a machine without it gets a
// Status saying what to install instead of a plugin that cannot be loaded.
// One table per instance (the pointers belong to the instance they came from).
#pragma once

#include <vulkan/vulkan.h>

#include <memory>
#include <string>

#include "core/status/status.h"

namespace tessera::vulkan {

// Functions taken before an instance exists.
#define TESSERA_VK_GLOBAL_FUNCTIONS(X) \
  X(vkCreateInstance)                  \
  X(vkEnumerateInstanceVersion)        \
  X(vkEnumerateInstanceExtensionProperties)

// Functions of an instance and of its devices (through the loader's
// trampolines: one table serves every device of the instance).
#define TESSERA_VK_INSTANCE_FUNCTIONS(X)      \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceMemoryProperties2)     \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkDestroyDevice)                          \
  X(vkGetDeviceQueue)                         \
  X(vkDeviceWaitIdle)                         \
  X(vkCreateBuffer)                           \
  X(vkDestroyBuffer)                          \
  X(vkGetBufferMemoryRequirements)            \
  X(vkAllocateMemory)                         \
  X(vkFreeMemory)                             \
  X(vkBindBufferMemory)                       \
  X(vkMapMemory)                              \
  X(vkUnmapMemory)                            \
  X(vkCreateShaderModule)                     \
  X(vkDestroyShaderModule)                    \
  X(vkCreateDescriptorSetLayout)              \
  X(vkDestroyDescriptorSetLayout)             \
  X(vkCreatePipelineLayout)                   \
  X(vkDestroyPipelineLayout)                  \
  X(vkCreateComputePipelines)                 \
  X(vkDestroyPipeline)                        \
  X(vkCreateDescriptorPool)                   \
  X(vkDestroyDescriptorPool)                  \
  X(vkResetDescriptorPool)                    \
  X(vkAllocateDescriptorSets)                 \
  X(vkUpdateDescriptorSets)                   \
  X(vkCreateCommandPool)                      \
  X(vkDestroyCommandPool)                     \
  X(vkAllocateCommandBuffers)                 \
  X(vkResetCommandBuffer)                     \
  X(vkBeginCommandBuffer)                     \
  X(vkEndCommandBuffer)                       \
  X(vkCmdBindPipeline)                        \
  X(vkCmdBindDescriptorSets)                  \
  X(vkCmdPushConstants)                       \
  X(vkCmdDispatch)                            \
  X(vkCmdPipelineBarrier)                     \
  X(vkCmdCopyBuffer)                          \
  X(vkCreateFence)                            \
  X(vkDestroyFence)                           \
  X(vkResetFences)                            \
  X(vkWaitForFences)                          \
  X(vkQueueSubmit)

struct Api {
#define TESSERA_VK_DECLARE(name) PFN_##name name = nullptr;
  TESSERA_VK_GLOBAL_FUNCTIONS(TESSERA_VK_DECLARE)
  TESSERA_VK_INSTANCE_FUNCTIONS(TESSERA_VK_DECLARE)
#undef TESSERA_VK_DECLARE
};

// "VK_ERROR_DEVICE_LOST" (or the number).
std::string result_name(VkResult result);
// `what` failed with `result`, as a Status (out of memory is ResourceExhausted).
Status vk_error(const std::string& what, VkResult result);

// A Vulkan instance and its function table; every object the backend makes
// keeps it alive through a shared_ptr.
class Instance {
 public:
  // Opens the loader and creates an instance (Vulkan 1.1). Errors say what to
  // install: the loader (libvulkan1) or a driver (mesa-vulkan-drivers for
  // lavapipe, or the GPU's).
  static Result<std::shared_ptr<Instance>> create();
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const Api& api() const { return api_; }
  VkInstance handle() const { return instance_; }

 private:
  Instance() = default;
  void* library_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  Api api_;
};

}  // namespace tessera::vulkan
