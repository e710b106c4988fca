// The backend's compute shaders as SPIR-V, compiled by glslc when the plugin
// is built and embedded in it (embed_spirv.cmake writes the table).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera::vulkan {

struct ShaderCode {
  const char* name;  // the .comp file's stem: "matmul_quant"
  const uint32_t* words;
  std::size_t count;
};

std::span<const ShaderCode> embedded_shaders();

}  // namespace tessera::vulkan
