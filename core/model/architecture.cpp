#include "core/model/architecture.h"

#include <array>
#include <cmath>
#include <limits>

#include "core/gguf/gguf_file.h"
#include "core/model/model.h"

namespace tessera {
namespace {

// llama.cpp: src/llama-model.cpp (llama_model_rope_type) and src/models/*.cpp.
constexpr std::array<Architecture, 4> kArchitectures = {{
    {"llama", RopePairs::kAdjacent, false, false, GateActivation::kSilu, false, false, true, false},
    {"qwen2", RopePairs::kHalves, false, false, GateActivation::kSilu, false, false, false, false},
    {"qwen3", RopePairs::kHalves, true, false, GateActivation::kSilu, false, false, false, false},
    {"gemma3", RopePairs::kHalves, true, true, GateActivation::kGeluTanh, true, true, false, true},
}};

// gemma3's default: every sixth layer global (llama.cpp's swa_period 6).
constexpr uint32_t kGemma3SlidingPattern = 6;
// llama.cpp's rope_freq_base_train_swa when the file names none.
constexpr float kDefaultSlidingRopeBase = 10000.0f;

Result<float> positive_f32(const GgufFile& gguf, const std::string& key, float fallback) {
  ASSIGN_OR_RETURN(float value, gguf.get_f32_or(key, fallback));
  if (!(value > 0.0f) || !std::isfinite(value))
    return data_loss(gguf.path() + ": " + key + " is " + std::to_string(value) +
                     " (must be a positive number)");
  return value;
}

// The linear position scale of rope.scaling.* (1 / factor), as llama.cpp
// reads it; scalings this forward does not implement are refused.
Result<float> rope_position_scale(const GgufFile& gguf, const Architecture& arch) {
  const std::string type_key = arch_key(arch, "rope.scaling.type");
  ASSIGN_OR_RETURN(std::string type, gguf.get_string_or(type_key, "linear"));
  if (type != "linear" && type != "none")
    return unimplemented(gguf.path() + ": " + type_key + " is '" + type +
                         "'; only linear RoPE scaling (or none) is implemented");
  std::string factor_key = arch_key(arch, "rope.scaling.factor");
  if (!gguf.has(factor_key)) factor_key = arch_key(arch, "rope.scale_linear");
  if (!gguf.has(factor_key) || type == "none") return 1.0f;
  ASSIGN_OR_RETURN(float factor, gguf.get_f32(factor_key));
  if (factor == 0.0f) return 1.0f;  // llama.cpp: 0 means unscaled
  if (!(factor > 0.0f) || !std::isfinite(factor))
    return data_loss(gguf.path() + ": " + factor_key + " is " + std::to_string(factor) +
                     " (must be positive)");
  return 1.0f / factor;
}

// gemma3's layer pattern: layer l slides unless l % period == period - 1
// (llama.cpp's set_swa_pattern): period 0 makes every layer slide, 1 none.
Status apply_sliding_windows(const GgufFile& gguf, const Architecture& arch, ModelConfig& c) {
  const std::string window_key = arch_key(arch, "attention.sliding_window");
  if (!gguf.has(window_key)) return ok_status();
  ASSIGN_OR_RETURN(uint32_t window, gguf.get_u32(window_key));
  if (window == 0) return ok_status();
  if (window > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
    return data_loss(gguf.path() + ": " + window_key + " is " + std::to_string(window));
  const std::string pattern_key = arch_key(arch, "attention.sliding_window_pattern");
  ASSIGN_OR_RETURN(uint32_t period, gguf.get_u32_or(pattern_key, kGemma3SlidingPattern));
  ASSIGN_OR_RETURN(float local_base, positive_f32(gguf, arch_key(arch, "rope.freq_base_swa"),
                                                  kDefaultSlidingRopeBase));
  for (std::size_t l = 0; l < c.layers.size(); ++l) {
    const bool slides = period == 0 || l % period < period - 1;
    if (!slides) continue;
    LayerSpec& spec = c.layers[l];
    spec.sliding_window = static_cast<int>(window);
    // llama.cpp's SWA layers: their own base, no linear scaling.
    spec.rope.theta = local_base;
    spec.rope.position_scale = 1.0f;
  }
  return ok_status();
}

}  // namespace

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture& arch : kArchitectures)
    if (arch.name == name) return &arch;
  return nullptr;
}

std::string supported_architectures() {
  std::string out;
  for (const Architecture& arch : kArchitectures) {
    if (!out.empty()) out += ", ";
    out += arch.name;
  }
  return out;
}

std::string arch_key(const Architecture& arch, std::string_view suffix) {
  std::string key(arch.name);
  key += '.';
  key += suffix;
  return key;
}

Status read_layer_specs(const GgufFile& gguf, const Architecture& arch, ModelConfig& c) {
  LayerSpec spec;
  spec.qk_norm = arch.qk_norm;
  spec.post_attention_norm = arch.post_norms;
  spec.post_ffn_norm = arch.post_norms;
  spec.activation = arch.activation;
  spec.rope.theta = c.rope_theta;
  spec.rope.pairs = arch.rope_pairs;
  ASSIGN_OR_RETURN(spec.rope.position_scale, rope_position_scale(gguf, arch));
  c.layers.assign(static_cast<std::size_t>(c.n_layers), spec);

  if (arch.embedding_scaled) c.embedding_scale = std::sqrt(static_cast<float>(c.dim));
  if (arch.sliding_windows) RETURN_IF_ERROR(apply_sliding_windows(gguf, arch, c));
  if (arch.final_logit_softcap) {
    const std::string key = arch_key(arch, "final_logit_softcapping");
    ASSIGN_OR_RETURN(c.final_logit_softcap, gguf.get_f32_or(key, 0.0f));
    if (!(c.final_logit_softcap >= 0.0f) || !std::isfinite(c.final_logit_softcap))
      return data_loss(gguf.path() + ": " + key + " must not be negative");
  }
  // gemma3 27B (62 layers) scales queries by 1/sqrt(dim / heads), not
  // 1/sqrt(head_dim) (llama.cpp, after gemma_pytorch).
  if (arch.name == "gemma3" && c.n_layers == 62)
    c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.dim / c.n_heads));
  return ok_status();
}

}  // namespace tessera
