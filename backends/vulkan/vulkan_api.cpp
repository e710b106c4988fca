#include "backends/vulkan/vulkan_api.h"

#include <dlfcn.h>

#include <cstring>

namespace tessera::vulkan {
namespace {

constexpr const char* kInstallLoader =
    "install the Vulkan loader (Debian/Ubuntu: libvulkan1) and a Vulkan driver "
    "(mesa-vulkan-drivers for lavapipe on the CPU, or your GPU's driver)";
constexpr const char* kInstallDriver =
    "install a Vulkan driver: mesa-vulkan-drivers (lavapipe, on the CPU; radv for AMD, anv for "
    "Intel) or your GPU's driver (NVIDIA's), then check with `vulkaninfo --summary`";

}  // namespace

std::string result_name(VkResult result) {
  switch (result) {
#define TESSERA_VK_CASE(name) \
  case name:                  \
    return #name;
    TESSERA_VK_CASE(VK_SUCCESS)
    TESSERA_VK_CASE(VK_NOT_READY)
    TESSERA_VK_CASE(VK_TIMEOUT)
    TESSERA_VK_CASE(VK_INCOMPLETE)
    TESSERA_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    TESSERA_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    TESSERA_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    TESSERA_VK_CASE(VK_ERROR_DEVICE_LOST)
    TESSERA_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    TESSERA_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    TESSERA_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    TESSERA_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    TESSERA_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    TESSERA_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    TESSERA_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    TESSERA_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
    TESSERA_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    TESSERA_VK_CASE(VK_ERROR_UNKNOWN)
#undef TESSERA_VK_CASE
    default:
      return "VkResult " + std::to_string(static_cast<int>(result));
  }
}

Status vk_error(const std::string& what, VkResult result) {
  std::string message = "backend vulkan: " + what + " failed: " + result_name(result);
  if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY ||
      result == VK_ERROR_OUT_OF_POOL_MEMORY)
    return resource_exhausted(std::move(message));
  if (result == VK_ERROR_DEVICE_LOST)
    return unavailable(message + " (the device was reset or its driver crashed)");
  return internal_error(std::move(message));
}

Result<std::shared_ptr<Instance>> Instance::create() {
  std::shared_ptr<Instance> self(new Instance());
  for (const char* name : {"libvulkan.so.1", "libvulkan.so"}) {
    self->library_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (self->library_ != nullptr) break;
  }
  if (self->library_ == nullptr)
    return failed_precondition(std::string("backend vulkan: no Vulkan loader (libvulkan.so.1: ") +
                               dlerror() + "); " + kInstallLoader);
  auto get_instance_proc =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(self->library_, "vkGetInstanceProcAddr"));
  if (get_instance_proc == nullptr)
    return failed_precondition("backend vulkan: the Vulkan loader has no vkGetInstanceProcAddr; " +
                               std::string(kInstallLoader));
  Api& api = self->api_;
#define TESSERA_VK_LOAD_GLOBAL(name) \
  api.name = reinterpret_cast<PFN_##name>(get_instance_proc(VK_NULL_HANDLE, #name));
  TESSERA_VK_GLOBAL_FUNCTIONS(TESSERA_VK_LOAD_GLOBAL)
#undef TESSERA_VK_LOAD_GLOBAL
  if (api.vkCreateInstance == nullptr || api.vkEnumerateInstanceVersion == nullptr)
    return failed_precondition(
        "backend vulkan: the Vulkan loader is older than Vulkan 1.1 (no "
        "vkEnumerateInstanceVersion); " +
        std::string(kInstallLoader));
  uint32_t version = 0;
  if (api.vkEnumerateInstanceVersion(&version) != VK_SUCCESS || version < VK_API_VERSION_1_1)
    return failed_precondition("backend vulkan: the Vulkan loader offers Vulkan " +
                               std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
                               std::to_string(VK_API_VERSION_MINOR(version)) +
                               "; this backend needs 1.1; " + kInstallLoader);

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "tessera";
  app.pEngineName = "tessera";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  const VkResult created = api.vkCreateInstance(&info, nullptr, &self->instance_);
  if (created == VK_ERROR_INCOMPATIBLE_DRIVER || created == VK_ERROR_INITIALIZATION_FAILED)
    return failed_precondition("backend vulkan: no Vulkan driver (vkCreateInstance: " +
                               result_name(created) + "); " + kInstallDriver);
  if (created != VK_SUCCESS) return vk_error("vkCreateInstance", created);
#define TESSERA_VK_LOAD_INSTANCE(name) \
  api.name = reinterpret_cast<PFN_##name>(get_instance_proc(self->instance_, #name));
  TESSERA_VK_INSTANCE_FUNCTIONS(TESSERA_VK_LOAD_INSTANCE)
#undef TESSERA_VK_LOAD_INSTANCE
  std::string missing;
#define TESSERA_VK_CHECK_LOADED(name) \
  if (api.name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name;
  TESSERA_VK_INSTANCE_FUNCTIONS(TESSERA_VK_CHECK_LOADED)
#undef TESSERA_VK_CHECK_LOADED
  if (!missing.empty())
    return failed_precondition("backend vulkan: the Vulkan loader lacks " + missing +
                               " (Vulkan 1.1 functions); " + kInstallLoader);
  return self;
}

Instance::~Instance() {
  if (instance_ != VK_NULL_HANDLE && api_.vkDestroyInstance != nullptr)
    api_.vkDestroyInstance(instance_, nullptr);
  // The loader stays open: drivers may keep threads or atexit handlers that
  // point into it.
}

}  // namespace tessera::vulkan
