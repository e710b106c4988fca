// One compute pipeline per shader (and specialisation), created the first
// time an op needs it and kept: its descriptor set layout (storage buffers
// only), its pipeline layout (one push-constant block) and the pipeline.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "backends/vulkan/vulkan_device.h"

namespace tessera::vulkan {

// Push constants are at most this many bytes (the least every device allows).
inline constexpr uint32_t kMaxPushBytes = 128;

enum class Shader {
  kElementwise,  // add, add_bias, scale, swiglu, geglu
  kRmsNorm,
  kRope,
  kEmbedding,    // specialised by weight dtype
  kQuantizeQ8,   // activations to 8-bit blocks for the integer matmul
  kMatmulFloat,  // f32, f16, bf16 weights (specialised by dtype)
  kMatmulQuant,  // q8_0, q4_0, q4_K, q6_K weights (specialised by dtype)
  kMaskedAttention,
  kCacheUpdate,
  kKvRecords,  // K/V records: encode, round trip, decode (specialised by format and mode)
};

struct Kernel {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;  // storage buffers 0 .. bindings - 1
  const char* name = "";
};

class Pipelines {
 public:
  explicit Pipelines(std::shared_ptr<const Device> device) : device_(std::move(device)) {}
  ~Pipelines();
  Pipelines(const Pipelines&) = delete;
  Pipelines& operator=(const Pipelines&) = delete;

  // The pipeline of `shader` with specialisation constant 0 = `variant`.
  Result<const Kernel*> get(Shader shader, int32_t variant = 0);

 private:
  std::shared_ptr<const Device> device_;
  std::map<std::pair<Shader, int32_t>, std::unique_ptr<Kernel>> kernels_;
  std::map<Shader, VkShaderModule> modules_;
};

}  // namespace tessera::vulkan
