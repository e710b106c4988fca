// Rewrites a GGUF model with its weights in another type, as llama.cpp's
// llama-quantize does, so the result loads in tessera and in llama.cpp:
// metadata copied (general.file_type set to the new type), 1-D tensors
// (norms) kept in f32, every matrix in the target type, except
//   - rows that are not whole blocks of the target: q8_0 when they are whole
//     blocks of 32 (a 256-block k-quant on 64-wide rows), else f16
//     (stories260K's 172-wide ffn_down);
//   - q4_0: output.weight in q6_K, as llama.cpp writes it;
//   - q4_K_M: output.weight, and attn_v and ffn_down in the first and last
//     eighth of the layers and every third between, in q6_K; the rest q4_K
//     (llama.cpp's rule for its "medium" mix).
// Source tensors of any loadable type are decoded to f32 first.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status/status.h"
#include "core/tensor/dtype.h"

namespace tessera {

// llama.cpp's general.file_type (enum llama_ftype) of a weight mix: "f32",
// "f16", "bf16", "q8_0", "q4_0", "q4_K" (its Q4_K_S), "q4_K_M", "q6_K".
uint32_t llama_file_type(const std::string& mix);

// `wanted` when rows of `row_length` are whole blocks of it, else q8_0 when
// they are whole blocks of 32, else f16.
DType storable_type(DType wanted, int64_t row_length);

// "q8_0", "q4_0", "q4_K_M", "bf16", "f16", "f32".
struct QuantizeTarget {
  std::string name;
  DType matrices = DType::kF32;  // the type of most matrices
};
// The targets `tessera quantize` accepts, for --help and messages.
const std::vector<QuantizeTarget>& quantize_targets();
Result<QuantizeTarget> find_quantize_target(const std::string& name);

struct QuantizedTensor {
  std::string name;
  DType from = DType::kF32;
  DType to = DType::kF32;
};

struct QuantizeResult {
  std::vector<QuantizedTensor> tensors;
  uint64_t bytes_in = 0;   // tensor data of the source
  uint64_t bytes_out = 0;  // tensor data written
};

// Reads `in`, writes `out`. `progress(done, total)` is called after each
// tensor (may be empty). Errors name the file and the tensor.
Result<QuantizeResult> quantize_gguf(const std::string& in, const std::string& out,
                                     const QuantizeTarget& target,
                                     const std::function<void(int, int)>& progress = {});

}  // namespace tessera
