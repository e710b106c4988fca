#include "backends/vulkan/vulkan_pipelines.h"

#include <cstring>
#include <string>

#include "backends/vulkan/vulkan_shaders.h"

namespace tessera::vulkan {
namespace {

struct ShaderSpec {
  Shader shader;
  const char* name;   // the .comp file's stem
  uint32_t bindings;  // storage buffers it declares
};

constexpr ShaderSpec kSpecs[] = {
    {Shader::kElementwise, "elementwise", 3},
    {Shader::kRmsNorm, "rms_norm", 3},
    {Shader::kRope, "rope", 2},
    {Shader::kEmbedding, "embedding", 3},
    {Shader::kQuantizeQ8, "quantize_q8", 4},
    {Shader::kMatmulFloat, "matmul_float", 3},
    {Shader::kMatmulQuant, "matmul_quant", 5},
    {Shader::kMaskedAttention, "masked_attention", 8},
    {Shader::kCacheUpdate, "cache_update", 4},
    {Shader::kKvRecords, "kv_records", 2},
};

const ShaderSpec& spec_of(Shader shader) {
  for (const auto& spec : kSpecs)
    if (spec.shader == shader) return spec;
  return kSpecs[0];  // unreachable: every Shader is listed
}

}  // namespace

Pipelines::~Pipelines() {
  const Api& api = device_->api();
  const VkDevice device = device_->handle();
  for (auto& [key, kernel] : kernels_) {
    api.vkDestroyPipeline(device, kernel->pipeline, nullptr);
    api.vkDestroyPipelineLayout(device, kernel->layout, nullptr);
    api.vkDestroyDescriptorSetLayout(device, kernel->set_layout, nullptr);
  }
  for (auto& [shader, module] : modules_) api.vkDestroyShaderModule(device, module, nullptr);
}

Result<const Kernel*> Pipelines::get(Shader shader, int32_t variant) {
  const auto key = std::make_pair(shader, variant);
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second.get();
  const ShaderSpec& spec = spec_of(shader);
  const Api& api = device_->api();
  const VkDevice device = device_->handle();
  const std::string what = std::string("the ") + spec.name + " pipeline";

  VkShaderModule module = VK_NULL_HANDLE;
  if (auto it = modules_.find(shader); it != modules_.end()) {
    module = it->second;
  } else {
    const ShaderCode* code = nullptr;
    for (const ShaderCode& c : embedded_shaders())
      if (std::strcmp(c.name, spec.name) == 0) code = &c;
    if (code == nullptr) return internal_error("backend vulkan: no SPIR-V embedded for " + what);
    VkShaderModuleCreateInfo info{};
    info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    info.codeSize = code->count * sizeof(uint32_t);
    info.pCode = code->words;
    const VkResult result = api.vkCreateShaderModule(device, &info, nullptr, &module);
    if (result != VK_SUCCESS) return vk_error("vkCreateShaderModule for " + what, result);
    modules_[shader] = module;
  }

  auto kernel = std::make_unique<Kernel>();
  kernel->bindings = spec.bindings;
  kernel->name = spec.name;
  VkDescriptorSetLayoutBinding bindings[16]{};
  for (uint32_t b = 0; b < spec.bindings; ++b) {
    bindings[b].binding = b;
    bindings[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[b].descriptorCount = 1;
    bindings[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set_info{};
  set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  set_info.bindingCount = spec.bindings;
  set_info.pBindings = bindings;
  VkResult result =
      api.vkCreateDescriptorSetLayout(device, &set_info, nullptr, &kernel->set_layout);
  if (result != VK_SUCCESS) return vk_error("vkCreateDescriptorSetLayout for " + what, result);

  VkPushConstantRange push{};
  push.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  push.size = kMaxPushBytes;
  VkPipelineLayoutCreateInfo layout_info{};
  layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &kernel->set_layout;
  layout_info.pushConstantRangeCount = 1;
  layout_info.pPushConstantRanges = &push;
  result = api.vkCreatePipelineLayout(device, &layout_info, nullptr, &kernel->layout);
  if (result != VK_SUCCESS) {
    api.vkDestroyDescriptorSetLayout(device, kernel->set_layout, nullptr);
    return vk_error("vkCreatePipelineLayout for " + what, result);
  }

  VkSpecializationMapEntry entry{};
  entry.constantID = 0;
  entry.offset = 0;
  entry.size = sizeof(int32_t);
  VkSpecializationInfo specialization{};
  specialization.mapEntryCount = 1;
  specialization.pMapEntries = &entry;
  specialization.dataSize = sizeof(int32_t);
  specialization.pData = &variant;
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = module;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &specialization;
  info.layout = kernel->layout;
  result =
      api.vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &info, nullptr, &kernel->pipeline);
  if (result != VK_SUCCESS) {
    api.vkDestroyPipelineLayout(device, kernel->layout, nullptr);
    api.vkDestroyDescriptorSetLayout(device, kernel->set_layout, nullptr);
    return vk_error(
        "vkCreateComputePipelines for " + what + " (variant " + std::to_string(variant) + ")",
        result);
  }
  const Kernel* made = kernel.get();
  kernels_[key] = std::move(kernel);
  return made;
}

}  // namespace tessera::vulkan
