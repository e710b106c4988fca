#include "core/gguf/gguf_types.h"

#include <utility>

namespace tessera {

std::string_view gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
      return "u8";
    case GgufType::kInt8:
      return "i8";
    case GgufType::kUint16:
      return "u16";
    case GgufType::kInt16:
      return "i16";
    case GgufType::kUint32:
      return "u32";
    case GgufType::kInt32:
      return "i32";
    case GgufType::kFloat32:
      return "f32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kUint64:
      return "u64";
    case GgufType::kInt64:
      return "i64";
    case GgufType::kFloat64:
      return "f64";
  }
  return "?";
}

std::size_t gguf_type_size(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  // Block sizes of the quantized formats as ggml defines them (QK_K = 256).
  switch (static_cast<GgmlType>(type_id)) {
    case GgmlType::kF32:
      return GgmlTypeTraits{"f32", 1, 4};
    case GgmlType::kF16:
      return GgmlTypeTraits{"f16", 1, 2};
    case GgmlType::kQ4_0:
      return GgmlTypeTraits{"q4_0", 32, 18};
    case GgmlType::kQ4_1:
      return GgmlTypeTraits{"q4_1", 32, 20};
    case GgmlType::kQ5_0:
      return GgmlTypeTraits{"q5_0", 32, 22};
    case GgmlType::kQ5_1:
      return GgmlTypeTraits{"q5_1", 32, 24};
    case GgmlType::kQ8_0:
      return GgmlTypeTraits{"q8_0", 32, 34};
    case GgmlType::kQ8_1:
      return GgmlTypeTraits{"q8_1", 32, 36};
    case GgmlType::kQ2_K:
      return GgmlTypeTraits{"q2_K", 256, 84};
    case GgmlType::kQ3_K:
      return GgmlTypeTraits{"q3_K", 256, 110};
    case GgmlType::kQ4_K:
      return GgmlTypeTraits{"q4_K", 256, 144};
    case GgmlType::kQ5_K:
      return GgmlTypeTraits{"q5_K", 256, 176};
    case GgmlType::kQ6_K:
      return GgmlTypeTraits{"q6_K", 256, 210};
    case GgmlType::kQ8_K:
      return GgmlTypeTraits{"q8_K", 256, 292};
    case GgmlType::kIQ2_XXS:
      return GgmlTypeTraits{"iq2_xxs", 256, 66};
    case GgmlType::kIQ2_XS:
      return GgmlTypeTraits{"iq2_xs", 256, 74};
    case GgmlType::kIQ3_XXS:
      return GgmlTypeTraits{"iq3_xxs", 256, 98};
    case GgmlType::kIQ1_S:
      return GgmlTypeTraits{"iq1_s", 256, 50};
    case GgmlType::kIQ4_NL:
      return GgmlTypeTraits{"iq4_nl", 32, 18};
    case GgmlType::kIQ3_S:
      return GgmlTypeTraits{"iq3_s", 256, 110};
    case GgmlType::kIQ2_S:
      return GgmlTypeTraits{"iq2_s", 256, 82};
    case GgmlType::kIQ4_XS:
      return GgmlTypeTraits{"iq4_xs", 256, 136};
    case GgmlType::kI8:
      return GgmlTypeTraits{"i8", 1, 1};
    case GgmlType::kI16:
      return GgmlTypeTraits{"i16", 1, 2};
    case GgmlType::kI32:
      return GgmlTypeTraits{"i32", 1, 4};
    case GgmlType::kI64:
      return GgmlTypeTraits{"i64", 1, 8};
    case GgmlType::kF64:
      return GgmlTypeTraits{"f64", 1, 8};
    case GgmlType::kIQ1_M:
      return GgmlTypeTraits{"iq1_m", 256, 56};
    case GgmlType::kBF16:
      return GgmlTypeTraits{"bf16", 1, 2};
    case GgmlType::kTQ1_0:
      return GgmlTypeTraits{"tq1_0", 256, 54};
    case GgmlType::kTQ2_0:
      return GgmlTypeTraits{"tq2_0", 256, 66};
    case GgmlType::kMXFP4:
      return GgmlTypeTraits{"mxfp4", 32, 17};
  }
  return std::nullopt;
}

std::string ggml_type_name(uint32_t type_id) {
  if (auto traits = ggml_type_traits(type_id)) return std::string(traits->name);
  return "unknown type " + std::to_string(type_id);
}

namespace {

constexpr std::pair<GgmlType, DType> kLoadable[] = {
    {GgmlType::kF32, DType::kF32},   {GgmlType::kF16, DType::kF16},
    {GgmlType::kBF16, DType::kBF16}, {GgmlType::kQ8_0, DType::kQ8_0},
    {GgmlType::kQ4_0, DType::kQ4_0}, {GgmlType::kQ4_K, DType::kQ4_K},
    {GgmlType::kQ6_K, DType::kQ6_K},
};

}  // namespace

std::optional<DType> ggml_type_to_dtype(uint32_t type_id) {
  for (const auto& [ggml, dtype] : kLoadable)
    if (static_cast<uint32_t>(ggml) == type_id) return dtype;
  return std::nullopt;
}

GgmlType dtype_to_ggml_type(DType dtype) {
  for (const auto& [ggml, d] : kLoadable)
    if (d == dtype) return ggml;
  return GgmlType::kF32;
}

std::string loadable_ggml_type_names() {
  std::string names;
  for (const auto& [ggml, dtype] : kLoadable) {
    if (!names.empty()) names += ", ";
    names += dtype_name(dtype);
  }
  return names;
}

}  // namespace tessera
