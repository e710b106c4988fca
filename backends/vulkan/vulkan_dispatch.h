// VulkanBackend::dispatch, the scratch slots and the argument check, shared
// by the files that record the backend's work (vulkan_backend.cpp,
// vulkan_attention.cpp, vulkan_kv_records.cpp).
#pragma once

#include <string>

#include "backends/vulkan/vulkan_backend.h"

namespace tessera {
namespace vulkan {

// Scratch slots (VulkanBackend::bind_scratch / scratch_buffer).
constexpr int kCodesSlot = 0, kScalesSlot = 1, kSumsSlot = 2, kScoresSlot = 3, kCopySlot = 4,
              kGatherKSlot = 5, kGatherVSlot = 6, kScratchSlots = 7;

inline Status need(bool condition, const std::string& message) {
  return condition ? ok_status() : invalid_argument(message);
}

}  // namespace vulkan

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
