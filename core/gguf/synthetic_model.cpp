#include "core/gguf/synthetic_model.h"

#include <random>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_quantize.h"
#include "core/gguf/gguf_writer.h"
#include "core/gguf/vocabulary_writer.h"
#include "core/tensor/block_quant.h"

namespace tessera {

Result<SyntheticModelSpec> synthetic_shape(const std::string& name) {
  SyntheticModelSpec spec;
  if (name == "110m") {
    spec.dim = 768, spec.layers = 12, spec.heads = 12, spec.kv_heads = 12, spec.ffn = 2048;
  } else if (name == "1.1b") {
    spec.dim = 2048, spec.layers = 22, spec.heads = 32, spec.kv_heads = 4, spec.ffn = 5632;
  } else {
    return invalid_argument("unknown shape '" + name + "'; choose 110m or 1.1b (or give --dim, " +
                            "--layers, --heads, --kv-heads and --ffn)");
  }
  return spec;
}

Status make_synthetic_model(const SyntheticModelSpec& spec, const std::string& out,
                            const std::function<void(int, int)>& progress) {
  if (spec.dim <= 0 || spec.layers <= 0 || spec.heads <= 0 || spec.kv_heads <= 0 || spec.ffn <= 0)
    return invalid_argument("make-model: dim, layers, heads, kv heads and ffn must be positive");
  if (spec.dim % spec.heads != 0 || spec.heads % spec.kv_heads != 0)
    return invalid_argument("make-model: dim " + std::to_string(spec.dim) +
                            " must divide by heads " + std::to_string(spec.heads) +
                            ", and heads by kv heads " + std::to_string(spec.kv_heads));
  GgufWriter writer;
  writer.set_string("general.architecture", "llama");
  writer.set_string("general.name", "tessera synthetic " + std::to_string(spec.dim) + "x" +
                                        std::to_string(spec.layers));
  ASSIGN_OR_RETURN(const int64_t vocab_size, write_vocabulary_from(spec.vocab_from, writer));
  const int head_dim = spec.dim / spec.heads;
  writer.set_u32("llama.context_length", static_cast<uint32_t>(spec.context));
  writer.set_u32("llama.embedding_length", static_cast<uint32_t>(spec.dim));
  writer.set_u32("llama.block_count", static_cast<uint32_t>(spec.layers));
  writer.set_u32("llama.feed_forward_length", static_cast<uint32_t>(spec.ffn));
  writer.set_u32("llama.attention.head_count", static_cast<uint32_t>(spec.heads));
  writer.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(spec.kv_heads));
  writer.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(head_dim));
  writer.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  writer.set_f32("llama.rope.freq_base", 10000.0f);
  writer.set_u32("general.file_type", llama_file_type(std::string(dtype_name(spec.dtype))));

  // Each tensor from its own seed, so a tensor's values do not depend on
  // which tensors came before it.
  std::mt19937_64 seeds(spec.seed);
  std::vector<float> row;
  const auto add = [&](const std::string& name, int64_t rows, int64_t cols, bool norm) -> Status {
    const std::vector<int64_t> shape =
        norm ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
    const DType type = norm ? DType::kF32 : storable_type(spec.dtype, cols);
    std::mt19937_64 rng(seeds());
    std::normal_distribution<float> normal(0.0f, 0.02f);
    const std::size_t row_bytes = dtype_row_bytes(type, cols);
    std::vector<uint8_t> bytes(row_bytes * static_cast<std::size_t>(rows));
    row.resize(static_cast<std::size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = norm ? 1.0f : normal(rng);
      quantize_row(type, row.data(), cols, bytes.data() + static_cast<std::size_t>(r) * row_bytes);
    }
    return writer.add_tensor_raw(name, static_cast<uint32_t>(dtype_to_ggml_type(type)), shape,
                                 std::move(bytes));
  };
  const int64_t dim = spec.dim, ffn = spec.ffn, kv = int64_t{spec.kv_heads} * head_dim;
  const int total = 3 + 9 * spec.layers;
  int done = 0;
  const auto step = [&] {
    if (progress) progress(++done, total);
  };
  RETURN_IF_ERROR(add("token_embd.weight", vocab_size, dim, false));
  step();
  for (int l = 0; l < spec.layers; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    RETURN_IF_ERROR(add(blk + "attn_norm.weight", 1, dim, true));
    RETURN_IF_ERROR(add(blk + "attn_q.weight", dim, dim, false));
    RETURN_IF_ERROR(add(blk + "attn_k.weight", kv, dim, false));
    RETURN_IF_ERROR(add(blk + "attn_v.weight", kv, dim, false));
    RETURN_IF_ERROR(add(blk + "attn_output.weight", dim, dim, false));
    RETURN_IF_ERROR(add(blk + "ffn_norm.weight", 1, dim, true));
    RETURN_IF_ERROR(add(blk + "ffn_gate.weight", ffn, dim, false));
    RETURN_IF_ERROR(add(blk + "ffn_down.weight", dim, ffn, false));
    RETURN_IF_ERROR(add(blk + "ffn_up.weight", ffn, dim, false));
    for (int i = 0; i < 9; ++i) step();
  }
  RETURN_IF_ERROR(add("output_norm.weight", 1, dim, true));
  step();
  RETURN_IF_ERROR(add("output.weight", vocab_size, dim, false));
  step();
  return writer.write_file(out);
}

}  // namespace tessera
