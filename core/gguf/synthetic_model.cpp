#include "core/gguf/synthetic_model.h"

#include <cmath>
#include <numbers>
#include <random>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_quantize.h"
#include "core/gguf/gguf_writer.h"
#include "core/gguf/vocabulary_writer.h"
#include "core/tensor/block_quant.h"

namespace tessera {
namespace {

constexpr const char* kArchitectures = "llama, llama3, qwen2, qwen3, gemma3";

bool known_arch(const std::string& arch) {
  return arch == "llama" || arch == "llama3" || arch == "qwen2" || arch == "qwen3" ||
         arch == "gemma3";
}

// The architecture as GGUF names it: Llama 3 is llama.
std::string gguf_arch(const std::string& arch) {
  return arch == "llama3" ? "llama" : arch;
}

float default_rope_theta(const std::string& arch) {
  if (arch == "llama") return 10000.0f;
  if (arch == "llama3") return 500000.0f;
  return 1000000.0f;  // qwen2, qwen3, gemma3 (its global layers)
}

float default_rms_eps(const std::string& arch) {
  return arch == "llama" || arch == "llama3" ? 1e-5f : 1e-6f;
}

// The converter's rope_freqs for Llama 3's rope_scaling (conversion/llama.py):
// one divisor per pair, 1 for short wavelengths, `factor` for long ones,
// smoothly between.
std::vector<float> llama3_rope_factors(const SyntheticModelSpec& spec, int head_dim, float theta) {
  const double low_wavelen = spec.llama3_original_context / spec.llama3_low_freq_factor;
  const double high_wavelen = spec.llama3_original_context / spec.llama3_high_freq_factor;
  std::vector<float> factors;
  for (int i = 0; i < head_dim; i += 2) {
    const double freq =
        1.0 / std::pow(static_cast<double>(theta), static_cast<double>(i) / head_dim);
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      factors.push_back(spec.llama3_factor);
    } else {
      const double smooth = (spec.llama3_original_context / wavelen - spec.llama3_low_freq_factor) /
                            (spec.llama3_high_freq_factor - spec.llama3_low_freq_factor);
      factors.push_back(static_cast<float>(1.0 / ((1 - smooth) / spec.llama3_factor + smooth)));
    }
  }
  return factors;
}

Status check_spec(const SyntheticModelSpec& spec) {
  if (!known_arch(spec.arch))
    return invalid_argument("make-model: unknown architecture '" + spec.arch + "'; choose " +
                            kArchitectures);
  if (spec.dim <= 0 || spec.layers <= 0 || spec.heads <= 0 || spec.kv_heads <= 0 || spec.ffn <= 0)
    return invalid_argument("make-model: dim, layers, heads, kv heads and ffn must be positive");
  if (spec.heads % spec.kv_heads != 0)
    return invalid_argument("make-model: heads " + std::to_string(spec.heads) +
                            " must divide by kv heads " + std::to_string(spec.kv_heads));
  if (spec.head_dim == 0 && spec.dim % spec.heads != 0)
    return invalid_argument("make-model: dim " + std::to_string(spec.dim) +
                            " must divide by heads " + std::to_string(spec.heads) +
                            " (or give the head size)");
  if (spec.head_dim < 0 || (spec.head_dim > 0 && spec.head_dim % 2 != 0))
    return invalid_argument("make-model: the head size must be a positive even number");
  if (spec.arch == "qwen2" && spec.head_dim != 0 && spec.head_dim * spec.heads != spec.dim)
    return invalid_argument(
        "make-model: qwen2's heads * head size must equal dim (llama.cpp "
        "loads attn_output as [dim, dim])");
  return ok_status();
}

}  // namespace

std::string synthetic_shape_names() {
  return "110m, 1.1b (llama), qwen3-0.6b, qwen2-0.5b, llama3-1b, gemma3-270m, tiny";
}

Result<SyntheticModelSpec> synthetic_shape(const std::string& name, const std::string& arch) {
  SyntheticModelSpec spec;
  spec.arch = arch;
  const auto set = [&](const char* a, int dim, int layers, int heads, int kv, int head_dim, int ffn,
                       int context) {
    spec.arch = a;
    spec.dim = dim, spec.layers = layers, spec.heads = heads, spec.kv_heads = kv;
    spec.head_dim = head_dim, spec.ffn = ffn, spec.context = context;
  };
  if (name == "110m") {
    set("llama", 768, 12, 12, 12, 0, 2048, 2048);
  } else if (name == "1.1b") {
    set("llama", 2048, 22, 32, 4, 0, 5632, 2048);
  } else if (name == "qwen3-0.6b") {  // Qwen/Qwen3-0.6B config.json
    set("qwen3", 1024, 28, 16, 8, 128, 3072, 40960);
    spec.tied_output = true;
  } else if (name == "qwen2-0.5b") {  // Qwen/Qwen2.5-0.5B
    set("qwen2", 896, 24, 14, 2, 0, 4864, 32768);
    spec.tied_output = true;
  } else if (name == "llama3-1b") {  // meta-llama/Llama-3.2-1B
    set("llama3", 2048, 16, 32, 8, 64, 8192, 131072);
    spec.tied_output = true;
  } else if (name == "gemma3-270m") {  // google/gemma-3-270m
    set("gemma3", 640, 18, 4, 1, 256, 2048, 32768);
    spec.tied_output = true;
    spec.sliding_window = 512;
  } else if (name == "tiny") {
    // Width 64, a few layers: for tests against the reference forward.
    if (!known_arch(arch))
      return invalid_argument("make-model: unknown architecture '" + arch + "'; choose " +
                              kArchitectures);
    spec.dim = 64, spec.layers = 3, spec.heads = 4, spec.kv_heads = 2, spec.ffn = 128;
    spec.context = 256;
    spec.init = SyntheticInit::kScaled;
    if (arch == "qwen3" || arch == "gemma3") spec.head_dim = 32;  // != dim / heads
    if (arch == "qwen3" || arch == "gemma3") spec.tied_output = true;
    if (arch == "llama3") spec.llama3_original_context = 64;  // factors that turn short prompts
    if (arch == "gemma3") {
      spec.layers = 4;
      spec.sliding_window = 4;
      spec.sliding_pattern = 2;  // layers 1 and 3 global
      spec.rope_linear_factor = 8.0f;
    }
  } else {
    return invalid_argument("unknown shape '" + name + "'; choose " + synthetic_shape_names() +
                            " (or give --dim, --layers, --heads, --kv-heads and --ffn)");
  }
  if (spec.arch != "llama") spec.init = SyntheticInit::kScaled;
  return spec;
}

Status make_synthetic_model(const SyntheticModelSpec& spec, const std::string& out,
                            const std::function<void(int, int)>& progress) {
  RETURN_IF_ERROR(check_spec(spec));
  const std::string arch = gguf_arch(spec.arch);
  const auto key = [&](const char* suffix) { return arch + "." + suffix; };
  GgufWriter writer;
  writer.set_string("general.architecture", arch);
  writer.set_string("general.name", "tessera synthetic " + spec.arch + " " +
                                        std::to_string(spec.dim) + "x" +
                                        std::to_string(spec.layers));
  ASSIGN_OR_RETURN(const int64_t vocab_size, write_vocabulary_from(spec.vocab_from, writer));
  const bool explicit_head = spec.head_dim != 0;
  const int head_dim = explicit_head ? spec.head_dim : spec.dim / spec.heads;
  const float theta = spec.rope_theta > 0 ? spec.rope_theta : default_rope_theta(spec.arch);
  writer.set_u32(key("context_length"), static_cast<uint32_t>(spec.context));
  writer.set_u32(key("embedding_length"), static_cast<uint32_t>(spec.dim));
  writer.set_u32(key("block_count"), static_cast<uint32_t>(spec.layers));
  writer.set_u32(key("feed_forward_length"), static_cast<uint32_t>(spec.ffn));
  writer.set_u32(key("attention.head_count"), static_cast<uint32_t>(spec.heads));
  writer.set_u32(key("attention.head_count_kv"), static_cast<uint32_t>(spec.kv_heads));
  writer.set_f32(key("rope.freq_base"), theta);
  writer.set_f32(key("attention.layer_norm_rms_epsilon"), default_rms_eps(spec.arch));
  // The converter writes key/value_length when the config names a head_dim,
  // and llama's rope.dimension_count and vocab_size always.
  if (explicit_head || head_dim * spec.heads != spec.dim) {
    writer.set_u32(key("attention.key_length"), static_cast<uint32_t>(head_dim));
    writer.set_u32(key("attention.value_length"), static_cast<uint32_t>(head_dim));
  }
  if (arch == "llama") {
    writer.set_u32(key("vocab_size"), static_cast<uint32_t>(vocab_size));
    writer.set_u32(key("rope.dimension_count"), static_cast<uint32_t>(head_dim));
  }
  if (spec.arch == "gemma3") {
    if (spec.sliding_window > 0) {
      writer.set_u32(key("attention.sliding_window"), static_cast<uint32_t>(spec.sliding_window));
      writer.set_f32(key("rope.freq_base_swa"), 10000.0f);
      if (spec.sliding_pattern != 6)
        writer.set_u32(key("attention.sliding_window_pattern"),
                       static_cast<uint32_t>(spec.sliding_pattern));
    }
    if (spec.rope_linear_factor > 0) {
      writer.set_string(key("rope.scaling.type"), "linear");
      writer.set_f32(key("rope.scaling.factor"), spec.rope_linear_factor);
    }
  }
  writer.set_u32("general.file_type", llama_file_type(std::string(dtype_name(spec.dtype))));

  // Each tensor from its own seed, so a tensor's values do not depend on
  // which tensors came before it.
  const bool scaled = spec.init == SyntheticInit::kScaled;
  std::mt19937_64 seeds(spec.seed);
  std::vector<float> row;
  enum class Kind { kMatrix, kEmbedding, kNorm, kBias };
  const auto add = [&](const std::string& name, int64_t rows, int64_t cols, Kind kind) -> Status {
    const bool vector = kind == Kind::kNorm || kind == Kind::kBias;
    const std::vector<int64_t> shape =
        vector ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
    const DType type = vector ? DType::kF32 : storable_type(spec.dtype, cols);
    std::mt19937_64 rng(seeds());
    float mean = 0.0f, sd = 0.02f;
    if (kind == Kind::kNorm) mean = 1.0f, sd = scaled ? 0.2f : 0.0f;
    if (kind == Kind::kBias) sd = 0.5f;
    if (scaled && kind == Kind::kMatrix) sd = 1.0f / std::sqrt(static_cast<float>(cols));
    if (scaled && kind == Kind::kEmbedding) sd = 1.0f;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::size_t row_bytes = dtype_row_bytes(type, cols);
    std::vector<uint8_t> bytes(row_bytes * static_cast<std::size_t>(rows));
    row.resize(static_cast<std::size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row) v = sd == 0.0f ? mean : mean + sd * normal(rng);
      quantize_row(type, row.data(), cols, bytes.data() + static_cast<std::size_t>(r) * row_bytes);
    }
    return writer.add_tensor_raw(name, static_cast<uint32_t>(dtype_to_ggml_type(type)), shape,
                                 std::move(bytes));
  };
  const bool biases = spec.arch == "qwen2";
  const bool qk_norm = spec.arch == "qwen3" || spec.arch == "gemma3";
  const bool post_norms = spec.arch == "gemma3";
  const int per_layer = 9 + (biases ? 3 : 0) + (qk_norm ? 2 : 0) + (post_norms ? 2 : 0);
  const int64_t dim = spec.dim, ffn = spec.ffn;
  const int64_t q_dim = int64_t{spec.heads} * head_dim, kv = int64_t{spec.kv_heads} * head_dim;
  const int total = 2 + (spec.tied_output ? 0 : 1) + per_layer * spec.layers;
  int done = 0;
  const auto step = [&](int count) {
    for (int i = 0; i < count && progress; ++i) progress(++done, total);
  };
  RETURN_IF_ERROR(add("token_embd.weight", vocab_size, dim, Kind::kEmbedding));
  step(1);
  for (int l = 0; l < spec.layers; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    RETURN_IF_ERROR(add(blk + "attn_norm.weight", 1, dim, Kind::kNorm));
    RETURN_IF_ERROR(add(blk + "attn_q.weight", q_dim, dim, Kind::kMatrix));
    RETURN_IF_ERROR(add(blk + "attn_k.weight", kv, dim, Kind::kMatrix));
    RETURN_IF_ERROR(add(blk + "attn_v.weight", kv, dim, Kind::kMatrix));
    if (biases) {
      RETURN_IF_ERROR(add(blk + "attn_q.bias", 1, q_dim, Kind::kBias));
      RETURN_IF_ERROR(add(blk + "attn_k.bias", 1, kv, Kind::kBias));
      RETURN_IF_ERROR(add(blk + "attn_v.bias", 1, kv, Kind::kBias));
    }
    if (qk_norm) {
      RETURN_IF_ERROR(add(blk + "attn_q_norm.weight", 1, head_dim, Kind::kNorm));
      RETURN_IF_ERROR(add(blk + "attn_k_norm.weight", 1, head_dim, Kind::kNorm));
    }
    RETURN_IF_ERROR(add(blk + "attn_output.weight", dim, q_dim, Kind::kMatrix));
    if (post_norms) RETURN_IF_ERROR(add(blk + "post_attention_norm.weight", 1, dim, Kind::kNorm));
    RETURN_IF_ERROR(add(blk + "ffn_norm.weight", 1, dim, Kind::kNorm));
    RETURN_IF_ERROR(add(blk + "ffn_gate.weight", ffn, dim, Kind::kMatrix));
    RETURN_IF_ERROR(add(blk + "ffn_down.weight", dim, ffn, Kind::kMatrix));
    RETURN_IF_ERROR(add(blk + "ffn_up.weight", ffn, dim, Kind::kMatrix));
    if (post_norms) RETURN_IF_ERROR(add(blk + "post_ffw_norm.weight", 1, dim, Kind::kNorm));
    step(per_layer);
  }
  RETURN_IF_ERROR(add("output_norm.weight", 1, dim, Kind::kNorm));
  step(1);
  if (!spec.tied_output) {
    RETURN_IF_ERROR(add("output.weight", vocab_size, dim, Kind::kMatrix));
    step(1);
  }
  if (spec.arch == "llama3") {
    const std::vector<float> factors = llama3_rope_factors(spec, head_dim, theta);
    RETURN_IF_ERROR(writer.add_tensor("rope_freqs.weight", DType::kF32,
                                      {static_cast<int64_t>(factors.size())}, factors.data()));
  }
  return writer.write_file(out);
}

}  // namespace tessera
