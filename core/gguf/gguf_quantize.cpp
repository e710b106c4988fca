#include "core/gguf/gguf_quantize.h"

#include <charconv>
#include <cstring>

#include "core/gguf/gguf_file.h"
#include "core/gguf/gguf_writer.h"
#include "core/tensor/block_quant.h"

namespace tessera {
namespace {

// The layer of "blk.N.something", or -1.
int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  int layer = -1;
  const char* begin = name.data() + 4;
  std::from_chars(begin, name.data() + name.size(), layer);
  return layer;
}

// The type a matrix gets under `target`; `layers` is the model's block count.
DType matrix_type(const QuantizeTarget& target, const std::string& name, int layers) {
  if (target.name == "q4_0" && name == "output.weight") return DType::kQ6_K;
  if (target.name == "q4_K_M") {
    if (name == "output.weight") return DType::kQ6_K;
    if (name.ends_with("attn_v.weight") || name.ends_with("ffn_down.weight")) {
      // More bits where errors hurt most: the first and last eighth of the
      // layers, and every third layer between.
      const int i = layer_of(name);
      const bool more_bits =
          i >= 0 && (i < layers / 8 || i >= 7 * layers / 8 || (i - layers / 8) % 3 == 2);
      if (more_bits) return DType::kQ6_K;
    }
  }
  return target.matrices;
}

}  // namespace

DType storable_type(DType wanted, int64_t row_length) {
  for (const DType d : {wanted, DType::kQ8_0, DType::kF16})
    if (row_length % dtype_layout(d).block_elements == 0) return d;
  return DType::kF16;
}

uint32_t llama_file_type(const std::string& mix) {
  static const std::pair<const char*, uint32_t> kTypes[] = {
      {"f32", 0},   {"f16", 1},     {"q4_0", 2},  {"q8_0", 7},
      {"q4_K", 14}, {"q4_K_M", 15}, {"q6_K", 18}, {"bf16", 32},
  };
  for (const auto& [name, id] : kTypes)
    if (mix == name) return id;
  return 0;
}

const std::vector<QuantizeTarget>& quantize_targets() {
  static const std::vector<QuantizeTarget> targets = {
      {"q8_0", DType::kQ8_0}, {"q4_0", DType::kQ4_0}, {"q4_K_M", DType::kQ4_K},
      {"bf16", DType::kBF16}, {"f16", DType::kF16},   {"f32", DType::kF32},
  };
  return targets;
}

Result<QuantizeTarget> find_quantize_target(const std::string& name) {
  std::string known;
  for (const QuantizeTarget& t : quantize_targets()) {
    if (t.name == name) return t;
    known += (known.empty() ? "" : ", ") + t.name;
  }
  return invalid_argument("unknown target type '" + name + "'; choose one of " + known);
}

Result<QuantizeResult> quantize_gguf(const std::string& in, const std::string& out,
                                     const QuantizeTarget& target,
                                     const std::function<void(int, int)>& progress) {
  ASSIGN_OR_RETURN(GgufFile source, GgufFile::open(in));
  GgufWriter writer;
  RETURN_IF_ERROR(writer.set_alignment(source.alignment()));
  for (const GgufKeyValue& kv : source.metadata()) {
    if (kv.key == "general.alignment") continue;
    RETURN_IF_ERROR(writer.set_value(kv.key, kv.value).with_context(in));
  }
  writer.set_u32("general.file_type", llama_file_type(target.name));
  int layers = 0;
  for (const GgufTensorInfo& t : source.tensors()) layers = std::max(layers, layer_of(t.name) + 1);

  QuantizeResult result;
  std::vector<float> row;
  const int total = static_cast<int>(source.tensors().size());
  int done = 0;
  for (const GgufTensorInfo& info : source.tensors()) {
    const auto from = ggml_type_to_dtype(info.type);
    if (!from) {
      return unimplemented(in + ": tensor '" + info.name + "' has type " + info.type_name() +
                           "; tessera converts from " + loadable_ggml_type_names());
    }
    const std::vector<int64_t> shape = info.shape();
    const int64_t row_length = info.ne[0];
    int64_t rows = 1;
    for (std::size_t d = 1; d < info.n_dims; ++d) rows *= info.ne[d];
    // Norms and other vectors stay f32; matrices take the target's type,
    // or f16 when their rows are not whole blocks of it.
    const DType to = info.n_dims < 2
                         ? DType::kF32
                         : storable_type(matrix_type(target, info.name, layers), row_length);

    const std::size_t in_row = dtype_row_bytes(*from, row_length);
    const std::size_t out_row = dtype_row_bytes(to, row_length);
    std::vector<uint8_t> bytes(out_row * static_cast<std::size_t>(rows));
    row.resize(static_cast<std::size_t>(row_length));
    const uint8_t* src = source.file()->data() + info.file_offset;
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(*from, src + static_cast<std::size_t>(r) * in_row, row_length, row.data());
      quantize_row(to, row.data(), row_length,
                   bytes.data() + static_cast<std::size_t>(r) * out_row);
    }
    result.bytes_in += in_row * static_cast<std::size_t>(rows);
    result.bytes_out += bytes.size();
    RETURN_IF_ERROR(writer
                        .add_tensor_raw(info.name, static_cast<uint32_t>(dtype_to_ggml_type(to)),
                                        shape, std::move(bytes))
                        .with_context(out));
    result.tensors.push_back({info.name, *from, to});
    if (progress) progress(++done, total);
  }
  RETURN_IF_ERROR(writer.write_file(out));
  return result;
}

}  // namespace tessera
