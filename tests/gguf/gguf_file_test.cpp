// The GGUF reader on well-formed files: every value type, the printable
// forms, typed getters, tensor infos and views, and the real test models.
#include "core/gguf/gguf_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/gguf/gguf_writer.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using testing::model_path;

Result<GgufFile> parse(const GgufWriter& w, const std::string& name = "test.gguf") {
  return GgufFile::parse(MappedFile::from_bytes(name, w.serialize()));
}

TEST(GgufFile, ReadsEveryValueType) {
  GgufWriter w;
  w.set_u8("t.u8", 200);
  w.set_i8("t.i8", -100);
  w.set_u16("t.u16", 60000);
  w.set_i16("t.i16", -30000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_f32("t.f32", 1e-5f);
  w.set_bool("t.bool", true);
  w.set_string("t.string", "hello \"world\"\n");
  w.set_u64("t.u64", 18000000000000000000ull);
  w.set_i64("t.i64", -9000000000000000000ll);
  w.set_f64("t.f64", 0.1);
  const std::vector<int32_t> small = {1, -2, 3};
  w.set_array<int32_t>("t.arr_i32", small);
  const std::vector<double> dbl = {0.5, 2.25};
  w.set_array<double>("t.arr_f64", dbl);
  w.set_bool_array("t.arr_bool", {true, false});
  std::vector<std::string> many;
  for (int i = 0; i < 512; ++i) many.push_back("tok" + std::to_string(i));
  many[0] = "<unk>";
  many[1] = "<s>";
  many[2] = "</s>";
  w.set_string_array("t.arr_str", many);
  std::vector<float> floats(100, 0.25f);
  w.set_array<float>("t.arr_f32", floats);
  w.set_array<uint8_t>("t.arr_empty", std::vector<uint8_t>{});

  auto g = parse(w);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->version(), 3u);
  ASSERT_EQ(g->metadata().size(), 18u);
  EXPECT_EQ(g->metadata()[0].key, "t.u8");  // file order
  EXPECT_EQ(g->metadata()[0].offset, 24u);

  EXPECT_EQ(*g->get_u32("t.u8"), 200u);
  EXPECT_EQ(*g->get_i32("t.i8"), -100);
  EXPECT_EQ(*g->get_u32("t.u16"), 60000u);
  EXPECT_EQ(*g->get_i32("t.i16"), -30000);
  EXPECT_EQ(*g->get_u32("t.u32"), 4000000000u);
  EXPECT_EQ(*g->get_i32("t.i32"), -2000000000);
  EXPECT_FLOAT_EQ(*g->get_f32("t.f32"), 1e-5f);
  EXPECT_TRUE(*g->get_bool("t.bool"));
  EXPECT_EQ(*g->get_string("t.string"), "hello \"world\"\n");
  EXPECT_EQ(*g->get_u64("t.u64"), 18000000000000000000ull);
  EXPECT_EQ(*g->get_i64("t.i64"), -9000000000000000000ll);
  EXPECT_DOUBLE_EQ(*g->get_f64("t.f64"), 0.1);
  EXPECT_EQ(*g->get_int_array("t.arr_i32"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(*g->get_f32_array("t.arr_f64"), (std::vector<float>{0.5f, 2.25f}));
  EXPECT_EQ(*g->get_string_array("t.arr_str"), many);
  EXPECT_EQ(g->get_f32_array("t.arr_f32")->size(), 100u);

  // Printable forms for `tessera inspect`.
  auto text = [&](const char* key) { return g->find(key)->to_string(); };
  EXPECT_EQ(text("t.u8"), "200");
  EXPECT_EQ(text("t.i64"), "-9000000000000000000");
  EXPECT_EQ(text("t.f32"), "1e-05");
  EXPECT_EQ(text("t.f64"), "0.1");
  EXPECT_EQ(text("t.bool"), "true");
  EXPECT_EQ(text("t.string"), "\"hello \\\"world\\\"\\n\"");
  EXPECT_EQ(text("t.arr_i32"), "[1, -2, 3]");
  EXPECT_EQ(text("t.arr_bool"), "[true, false]");
  EXPECT_EQ(text("t.arr_str"), "[512 strings: \"<unk>\", \"<s>\", \"</s>\", ...]");
  EXPECT_EQ(text("t.arr_f32"), "[100 f32: 0.25, 0.25, 0.25, ...]");
  EXPECT_EQ(text("t.arr_empty"), "[]");
  EXPECT_EQ(g->find("t.arr_str")->type_name(), "array[string]");
  EXPECT_EQ(g->find("t.u16")->type_name(), "u16");
}

TEST(GgufFile, GettersCheckTypesAndRanges) {
  GgufWriter w;
  w.set_i32("neg", -1);
  w.set_u64("big", 1ull << 40);
  w.set_string("name", "x");
  w.set_f32("f", 1.5f);
  auto g = parse(w, "getters.gguf");
  ASSERT_TRUE(g.ok());

  auto missing = g->get_u32("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("getters.gguf"), std::string::npos);
  EXPECT_NE(missing.status().message().find("'nope'"), std::string::npos);

  EXPECT_EQ(g->get_u32("neg").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(g->get_u32("big").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(*g->get_u64("big"), 1ull << 40);
  EXPECT_EQ(*g->get_i64("neg"), -1);
  auto wrong = g->get_string("f");
  EXPECT_EQ(wrong.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(wrong.status().message().find("'f' is f32 1.5, expected string"), std::string::npos)
      << wrong.status().message();
  EXPECT_EQ(g->get_f32("name").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(g->get_string_array("name").status().code(), StatusCode::kDataLoss);

  EXPECT_EQ(*g->get_u32_or("absent", 7), 7u);
  EXPECT_EQ(*g->get_string_or("absent", "d"), "d");
  EXPECT_EQ(*g->get_string_or("name", "d"), "x");
  EXPECT_EQ(g->get_u32_or("name", 7).status().code(), StatusCode::kDataLoss);
}

TEST(GgufFile, TensorInfosAndViews) {
  GgufWriter w;
  const std::vector<float> a = testing::pattern(6 * 4, 1);
  ASSERT_TRUE(w.add_tensor("a", DType::kF32, {6, 4}, a.data()).ok());
  std::vector<uint16_t> b(3);
  for (int i = 0; i < 3; ++i) b[static_cast<std::size_t>(i)] = float_to_half(0.5f * i);
  ASSERT_TRUE(w.add_tensor("b", DType::kF16, {3}, b.data()).ok());
  ASSERT_TRUE(w.add_tensor("c", DType::kF32, {2, 1, 3, 1}, a.data()).ok());
  auto g = parse(w);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_EQ(g->tensors().size(), 3u);
  EXPECT_EQ(g->data_offset() % 32, 0u);

  const GgufTensorInfo& ia = g->tensors()[0];
  EXPECT_EQ(ia.name, "a");
  EXPECT_EQ(ia.n_dims, 2u);
  EXPECT_EQ(ia.ne[0], 4);  // innermost first in the file
  EXPECT_EQ(ia.ne[1], 6);
  EXPECT_EQ(ia.shape(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(ia.shape_string(), "[6, 4]");
  EXPECT_EQ(ia.type_name(), "f32");
  EXPECT_EQ(ia.bytes, 96u);
  EXPECT_EQ(g->tensors()[1].offset, 96u);   // 96 is already 32-aligned
  EXPECT_EQ(g->tensors()[2].offset, 128u);  // 96 + 6 bytes, aligned up

  auto ta = g->tensor("a");
  ASSERT_TRUE(ta.ok());
  EXPECT_EQ(ta->rank, 2);
  EXPECT_EQ(ta->dim(0), 6);
  EXPECT_EQ(ta->dim(1), 4);
  EXPECT_TRUE(ta->is_contiguous());
  EXPECT_EQ(std::memcmp(ta->data, a.data(), 96), 0);
  auto tb = g->tensor("b");
  ASSERT_TRUE(tb.ok());
  EXPECT_EQ(tb->dtype, DType::kF16);
  EXPECT_EQ(half_to_float(tb->f16()[2]), 1.0f);
  auto tc = g->tensor("c");
  ASSERT_TRUE(tc.ok());
  EXPECT_EQ(tc->describe(), "f32[2, 1, 3, 1]");
  EXPECT_EQ(g->tensor("zzz").status().code(), StatusCode::kNotFound);
}

TEST(GgufFile, QuantizedTensorsLoadAndUnknownTypesAreNamed) {
  GgufWriter w;
  // q8_0: blocks of 32 elements in 34 bytes; 2 rows of 64 = 4 blocks.
  ASSERT_TRUE(w.add_tensor_raw("blk.0.attn_q.weight", static_cast<uint32_t>(GgmlType::kQ8_0),
                               {2, 64}, std::vector<uint8_t>(4 * 34, 0))
                  .ok());
  ASSERT_TRUE(w.add_tensor_raw("x", static_cast<uint32_t>(GgmlType::kBF16), {5},
                               std::vector<uint8_t>(10, 0))
                  .ok());
  // q5_1 (32 elements in 24 bytes) is a ggml type tessera does not read.
  ASSERT_TRUE(w.add_tensor_raw("blk.0.attn_k.weight", static_cast<uint32_t>(GgmlType::kQ5_1),
                               {1, 32}, std::vector<uint8_t>(24, 0))
                  .ok());
  auto g = parse(w, "quant.gguf");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->tensors()[0].type_name(), "q8_0");
  EXPECT_EQ(g->tensors()[0].bytes, 136u);
  EXPECT_EQ(g->tensors()[1].type_name(), "bf16");
  auto q8 = g->tensor("blk.0.attn_q.weight");
  ASSERT_TRUE(q8.ok()) << q8.status().to_string();
  EXPECT_EQ(q8->describe(), "q8_0[2, 64]");
  EXPECT_EQ(q8->bytes(), 136u);
  auto t = g->tensor("blk.0.attn_k.weight");
  EXPECT_EQ(t.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(t.status().message().find("blk.0.attn_k.weight"), std::string::npos);
  EXPECT_NE(t.status().message().find("q5_1"), std::string::npos);
  EXPECT_NE(t.status().message().find("tessera quantize"), std::string::npos);
  EXPECT_EQ(ggml_type_name(2), "q4_0");
  EXPECT_EQ(ggml_type_name(14), "q6_K");           // ggml's spelling, as dtype_name gives it
  EXPECT_EQ(ggml_type_name(4), "unknown type 4");  // removed from ggml
}

// The two tables of block layouts (the runtime's DType, GGUF's type ids)
// name the same types with the same blocks.
TEST(GgufFile, EveryLoadableTypeHasGgmlsBlockLayout) {
  for (const DType dtype : kAllDTypes) {
    const auto id = static_cast<uint32_t>(dtype_to_ggml_type(dtype));
    ASSERT_EQ(ggml_type_to_dtype(id), dtype) << dtype_name(dtype);
    const auto traits = ggml_type_traits(id);
    ASSERT_TRUE(traits.has_value());
    EXPECT_EQ(traits->name, dtype_name(dtype));
    EXPECT_EQ(traits->block_elements, dtype_layout(dtype).block_elements) << dtype_name(dtype);
    EXPECT_EQ(traits->block_bytes, dtype_layout(dtype).block_bytes) << dtype_name(dtype);
  }
}

TEST(GgufFile, HonoursGeneralAlignment) {
  GgufWriter w;
  ASSERT_TRUE(w.set_alignment(64).ok());
  const std::vector<float> v = testing::pattern(5, 2);
  ASSERT_TRUE(w.add_tensor("a", DType::kF32, {5}, v.data()).ok());
  ASSERT_TRUE(w.add_tensor("b", DType::kF32, {5}, v.data()).ok());
  auto g = parse(w);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->alignment(), 64u);
  EXPECT_EQ(g->data_offset() % 64, 0u);
  EXPECT_EQ(g->tensors()[1].offset, 64u);
  EXPECT_EQ(std::memcmp(g->tensor("b")->data, v.data(), 20), 0);
  EXPECT_FALSE(w.set_alignment(24).ok());
}

TEST(GgufFile, MisalignedF32DataIsRejectedOnLoad) {
  // With general.alignment 1 an f32 tensor can start at an odd byte.
  GgufWriter w;
  ASSERT_TRUE(w.set_alignment(1).ok());
  const uint8_t one = 1;
  ASSERT_TRUE(w.add_tensor_raw("odd", static_cast<uint32_t>(GgmlType::kI8), {1}, {one}).ok());
  const float v[2] = {1, 2};
  ASSERT_TRUE(w.add_tensor("f", DType::kF32, {2}, v).ok());
  auto g = parse(w, "align1.gguf");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  if (g->find_tensor("f")->file_offset % 4 == 0) GTEST_SKIP() << "happened to be aligned";
  auto t = g->tensor("f");
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(t.status().message().find("not aligned"), std::string::npos);
}

TEST(GgufFile, WriterReplacesAKeySetTwice) {
  GgufWriter w;
  w.set_u32("k", 1);
  w.set_string("other", "o");
  w.set_string("k", "two");
  auto g = parse(w);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->metadata().size(), 2u);
  EXPECT_EQ(g->metadata()[0].key, "k");
  EXPECT_EQ(*g->get_string("k"), "two");
}

TEST(GgufFile, WriterRejectsBadTensors) {
  GgufWriter w;
  float x[4] = {};
  EXPECT_FALSE(w.add_tensor("a", DType::kF32, {}, x).ok());
  EXPECT_FALSE(w.add_tensor("a", DType::kF32, {1, 1, 1, 1, 1}, x).ok());
  EXPECT_FALSE(w.add_tensor("a", DType::kF32, {0}, x).ok());
  EXPECT_TRUE(w.add_tensor("a", DType::kF32, {4}, x).ok());
  EXPECT_FALSE(w.add_tensor("a", DType::kF32, {4}, x).ok());  // duplicate
  EXPECT_FALSE(w.add_tensor_raw("q", static_cast<uint32_t>(GgmlType::kQ4_0), {16},
                                std::vector<uint8_t>(18))
                   .ok());  // 16 is not a multiple of the block size 32
}

TEST(GgufFile, ReadsStories260K) {
  auto g = GgufFile::open(model_path("stories260K.gguf"));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->alignment(), 32u);
  EXPECT_EQ(g->metadata().size(), 19u);
  EXPECT_EQ(g->tensors().size(), 48u);
  EXPECT_EQ(g->metadata()[0].key, "tokenizer.ggml.tokens");
  EXPECT_EQ(g->metadata()[0].value.to_string(), "[512 strings: \"<unk>\", \"<s>\", \"</s>\", ...]");
  EXPECT_EQ(g->find("tokenizer.ggml.token_type")->to_string(), "[512 i32: 2, 3, 3, ...]");
  EXPECT_EQ(g->find("llama.attention.layer_norm_rms_epsilon")->to_string(), "1e-05");
  EXPECT_EQ(g->find("general.architecture")->to_string(), "\"llama\"");
  EXPECT_EQ(*g->get_u32("llama.context_length"), 2048u);
  const GgufTensorInfo* embd = g->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->shape(), (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(g->find_tensor("blk.0.attn_k.weight")->shape(), (std::vector<int64_t>{32, 64}));
  // The last tensor ends exactly at the end of the file.
  const GgufTensorInfo& last = g->tensors().back();
  EXPECT_EQ(last.file_offset + last.bytes, g->file()->size());
}

TEST(GgufFile, ReadsTheVocabularyOnlyFile) {
  auto g = GgufFile::open(model_path("ggml-vocab-llama-spm.gguf"));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(g->tensors().empty());
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens")->size(), 32000u);
  EXPECT_EQ(g->find("tokenizer.ggml.add_bos_token")->to_string(), "true");
}

TEST(GgufFile, MissingFileIsNotFound) {
  auto g = GgufFile::open(model_path("no-such-model.gguf"));
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera
