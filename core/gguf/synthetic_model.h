// Models of real shapes with random weights, for measuring speed and memory
// at sizes the shipped models do not reach, for exercising weight types whose
// blocks need rows those models do not have, and for testing each
// architecture's forward against a reference. The files are laid out the way
// llama.cpp's converter writes the architecture (keys, tensor names, f32
// norms): llama.cpp loads them too. Their text is noise.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status/status.h"
#include "core/tensor/dtype.h"

namespace tessera {

// How the weights are drawn.
enum class SyntheticInit : uint8_t {
  // N(0, 0.02) matrices, norms 1: today's llama files (speed and memory only).
  kSmall,
  // N(0, 1/fan_in) matrices, N(0, 1) embedding, norms N(1, 0.2), biases
  // N(0, 0.5): outputs far from uniform, every layer changes them.
  kScaled,
};

struct SyntheticModelSpec {
  // "llama", "llama3" (llama with Llama 3's rope_freqs), "qwen2", "qwen3", "gemma3".
  std::string arch = "llama";
  int dim = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  int ffn = 0;
  int head_dim = 0;  // 0: dim / heads (written as key_length when it differs)
  int context = 2048;
  float rope_theta = 0.0f;   // 0: the architecture's usual base
  bool tied_output = false;  // no output.weight: the embedding is the classifier
  // gemma3: the window of its sliding layers and the layer pattern (every
  // pattern-th layer global; 6 is llama.cpp's default, not written).
  int sliding_window = 0;
  int sliding_pattern = 6;
  // gemma3's global layers: linear RoPE scaling factor (0: none).
  float rope_linear_factor = 0.0f;
  // llama3: the rope_scaling the converter turns into rope_freqs.
  float llama3_factor = 32.0f;
  float llama3_low_freq_factor = 1.0f;
  float llama3_high_freq_factor = 4.0f;
  int llama3_original_context = 8192;
  SyntheticInit init = SyntheticInit::kSmall;
  DType dtype = DType::kF16;  // matrices; norms stay f32; storable_type() decides per row
  uint64_t seed = 1;
  // A GGUF whose tokenizer.* keys are copied, or a tokenizer.json converted
  // to them (core/gguf/vocabulary_writer.h).
  std::string vocab_from;
};

// Named shapes: "110m", "1.1b" (llama); "qwen3-0.6b", "qwen2-0.5b",
// "llama3-1b", "gemma3-270m" (the real models' dimensions); "tiny" (a test
// shape for `arch`, a few layers of width 64). Sets the architecture too,
// except for "tiny". InvalidArgument naming them otherwise.
Result<SyntheticModelSpec> synthetic_shape(const std::string& name, const std::string& arch);

// The names synthetic_shape() knows, for help text.
std::string synthetic_shape_names();

// Writes the model to `out`. progress(done, total) after each tensor.
Status make_synthetic_model(const SyntheticModelSpec& spec, const std::string& out,
                            const std::function<void(int, int)>& progress = {});

}  // namespace tessera
