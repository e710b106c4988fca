// The architectures the one forward runs, as llama.cpp reads them from a GGUF:
// which keys each one has and what its layers do differently (LayerSpec).
// llama (with Llama 3's rope_freqs), qwen2, qwen3 and gemma3.
#pragma once

#include <string>
#include <string_view>

#include "core/model/layer_spec.h"
#include "core/status/status.h"

namespace tessera {

class GgufFile;
struct ModelConfig;

struct Architecture {
  std::string_view name;  // general.architecture
  RopePairs rope_pairs;   // llama.cpp's rope type: NORM (adjacent) or NEOX (halves)
  bool qk_norm;           // attn_q_norm / attn_k_norm required
  bool post_norms;        // post_attention_norm / post_ffw_norm required
  GateActivation activation;
  bool embedding_scaled;     // x = embedding * sqrt(dim)
  bool sliding_windows;      // reads attention.sliding_window and its layer pattern
  bool rope_freqs;           // may carry rope_freqs.weight (Llama 3)
  bool final_logit_softcap;  // reads final_logit_softcapping
};

// The architecture named `name`, or null.
const Architecture* find_architecture(std::string_view name);

// "llama, qwen2, qwen3, gemma3"
std::string supported_architectures();

// `<arch>.<suffix>`, the way llama.cpp spells an architecture's keys.
std::string arch_key(const Architecture& arch, std::string_view suffix);

// Fills config.layers (one LayerSpec per layer, config.n_layers known) and the
// model-wide differences (embedding scale, attention scale, logit soft cap)
// from the file's keys, as llama.cpp reads them for this architecture.
// Whether the layers have q/k/v biases or RoPE factors is told by the tensors
// (the loader sets qkv_bias and rope_freq_factors).
Status read_layer_specs(const GgufFile& gguf, const Architecture& arch, ModelConfig& config);

}  // namespace tessera
