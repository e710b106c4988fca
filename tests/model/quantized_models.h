// Quantized copies of the shared models, written into the build tree by
// `tessera quantize`'s code path, for the model tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/gguf/gguf_quantize.h"
#include "core/gguf/synthetic_model.h"

namespace tessera::testing {

inline const std::string kSharedModels = std::string(TESSERA_SHARED_DIR) + "/models/";

inline std::string test_model_dir() {
  const std::string dir = std::string(TESSERA_BINARY_DIR) + "/test-models";
  std::filesystem::create_directories(dir);
  return dir;
}

// `source` rewritten as `target` ("q8_0", "q4_K_M", "f32", ...) at
// test-models/<tag>-<target>.gguf.
inline std::string quantized(const std::string& source, const std::string& target,
                             const std::string& tag) {
  const std::string out = test_model_dir() + "/" + tag + "-" + target + ".gguf";
  auto t = find_quantize_target(target);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  if (!t.ok()) return out;
  auto result = quantize_gguf(source, out, *t);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return out;
}

// A small llama of random f32 weights whose rows are whole 256-blocks (dim
// 256, 2 layers, 4 heads, 2 KV heads, ffn 512, the llama SPM vocabulary), for
// the k-quants none of the shared models' rows fit.
inline std::string synthetic_256() {
  const std::string out = test_model_dir() + "/synthetic-256.gguf";
  SyntheticModelSpec spec;
  spec.dim = 256, spec.layers = 2, spec.heads = 4, spec.kv_heads = 2, spec.ffn = 512;
  spec.dtype = DType::kF32;
  spec.vocab_from = kSharedModels + "ggml-vocab-llama-spm.gguf";
  const Status status = make_synthetic_model(spec, out);
  EXPECT_TRUE(status.ok()) << status.to_string();
  return out;
}

}  // namespace tessera::testing
