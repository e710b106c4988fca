// Llama models of real shapes with random weights, for measuring speed and
// memory at sizes the shipped models do not reach (and for exercising weight
// types whose blocks need rows those models do not have). The files are
// ordinary GGUF: llama.cpp loads them too. Their text is noise.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status/status.h"
#include "core/tensor/dtype.h"

namespace tessera {

struct SyntheticModelSpec {
  int dim = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  int ffn = 0;
  int context = 2048;
  DType dtype = DType::kF16;  // matrices; norms stay f32; storable_type() decides per row
  uint64_t seed = 1;
  // A GGUF whose tokenizer.* keys are copied, or a tokenizer.json converted
  // to them (core/gguf/vocabulary_writer.h).
  std::string vocab_from;
};

// "110m" (dim 768, 12 layers, 12 heads, ffn 2048) and "1.1b" (dim 2048, 22
// layers, 32 heads, 4 KV heads, ffn 5632); InvalidArgument naming both otherwise.
Result<SyntheticModelSpec> synthetic_shape(const std::string& name);

// Writes the model to `out`. progress(done, total) after each tensor.
Status make_synthetic_model(const SyntheticModelSpec& spec, const std::string& out,
                            const std::function<void(int, int)>& progress = {});

}  // namespace tessera
