// The vulkan backend plugin: the descriptor and its one option (the backend
// lives in vulkan_backend.cpp, linked from tessera_backend_vulkan_impl).
#include "backends/vulkan/vulkan_backend.h"
#include "core/plugin/sdk.h"

namespace {

constexpr tessera::OptionSpec kVulkanOptions[] = {
    {"device", tessera::OptionType::kString, "\"auto\"",
     "which Vulkan device: \"auto\" (the first GPU, else a CPU device such as lavapipe), an index "
     "as `tessera plugins` lists them, or part of the device's name"}};

}  // namespace

TESSERA_PLUGIN(backend, "vulkan", "0.1.0",
               "Vulkan compute backend (f32, f16, bf16, q8_0, q4_0, q4_K and q6_K weights; "
               "ops run one submission each for now; no attention over stored K/V yet)",
               kVulkanOptions, tessera::VulkanBackend)
