// VulkanBackend::dispatch, shared by the files that record the backend's
// shaders (vulkan_backend.cpp, vulkan_kv_records.cpp).
#pragma once

#include "backends/vulkan/vulkan_backend.h"

namespace tessera {

template <typename Push>
Status VulkanBackend::dispatch(vulkan::Shader shader, int32_t variant,
                               std::initializer_list<Bound> bindings, const Push& push,
                               uint64_t groups) {
  static_assert(sizeof(Push) <= vulkan::kMaxPushBytes);
  if (groups == 0) return ok_status();
  auto kernel = pipelines_->get(shader, variant);
  if (!kernel.ok()) return kernel.status();
  vulkan::Binding list[8];
  std::size_t count = 0;
  for (const Bound& b : bindings) list[count++] = b.binding;
  return commands_->record_dispatch(*kernel.value(), std::span<const vulkan::Binding>(list, count),
                                    &push, sizeof(Push), commands_->groups_for(groups));
}

}  // namespace tessera
