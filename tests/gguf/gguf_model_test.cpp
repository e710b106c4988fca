// The GGUF llama loader on small generated files: what a valid file gives,
// and one clear error per thing that can be wrong with the model's content.
#include <gtest/gtest.h>

#include <functional>

#include "core/gguf/gguf_file.h"
#include "core/model/gguf_model.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using testing::tiny_llama_writer;
using testing::TinyDims;

Result<LoadedModel> load(const GgufWriter& w, const std::string& name = "tiny.gguf") {
  ASSIGN_OR_RETURN(GgufFile g, GgufFile::parse(MappedFile::from_bytes(name, w.serialize())));
  return load_gguf_model(g);
}

TEST(GgufModel, LoadsTheTinyModel) {
  auto m = load(tiny_llama_writer());
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const TinyDims d;
  EXPECT_EQ(m->config.name, "tiny");
  EXPECT_EQ(m->config.dim, d.dim);
  EXPECT_EQ(m->config.n_kv_heads, 1);
  EXPECT_EQ(m->config.head_dim, 4);
  EXPECT_EQ(m->config.vocab_size, 10);
  EXPECT_EQ(m->config.context_length, 64);
  EXPECT_FLOAT_EQ(m->config.rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(m->config.rope_theta, 500000.0f);
  EXPECT_FALSE(m->vocab.add_space_prefix);
  EXPECT_EQ(m->vocab.pieces[3],
            "\xe2\x96\x81"
            "a");
  EXPECT_FLOAT_EQ(m->vocab.scores[9], -7.0f);
  EXPECT_EQ(m->tensors.size(), 3u + 9u * 2u);
  // Row-major views: token_embd row 1 starts after `dim` values.
  const std::vector<float> expected = testing::pattern(10 * 8, 0);
  EXPECT_EQ(m->weights.token_embedding.f32()[8], expected[8]);
  EXPECT_EQ(m->weights.layers[1].wk.dim(0), 4);
  EXPECT_EQ(m->weights.layers[1].wo.dim(1), 8);
}

TEST(GgufModel, F16WeightsLoadAsF16) {
  auto m = load(tiny_llama_writer(DType::kF16));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->weights.layers[0].w1.dtype, DType::kF16);
  EXPECT_EQ(m->tensors[0].dtype, DType::kF16);
  EXPECT_EQ(half_to_float(m->weights.token_embedding.f16()[8]), testing::pattern(80, 0)[8]);
}

TEST(GgufModel, MissingOutputSharesTheEmbedding) {
  auto m = load(tiny_llama_writer(DType::kF32, /*with_output=*/false));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->weights.output.data, m->weights.token_embedding.data);
}

TEST(GgufModel, DefaultsForOptionalKeys) {
  auto m = load(tiny_llama_writer(DType::kF32, true, /*minimal=*/true));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->config.n_kv_heads, m->config.n_heads);
  EXPECT_FLOAT_EQ(m->config.rms_eps, 1e-5f);
  EXPECT_FLOAT_EQ(m->config.rope_theta, 10000.0f);
  EXPECT_TRUE(m->vocab.add_space_prefix);
  EXPECT_EQ(m->vocab.bos_id, 1);
  EXPECT_EQ(m->vocab.eos_id, 2);
  EXPECT_EQ(m->vocab.unk_id, 0);
  EXPECT_EQ(m->vocab.scores, std::vector<float>(10, 0.0f));
  // Untyped tokens are normal, except what llama.cpp's load-time rules make a
  // control token by its text: "</s>" ends a generation.
  std::vector<TokenType> types(10, TokenType::kNormal);
  types[2] = TokenType::kControl;
  EXPECT_EQ(m->vocab.pieces[2], "</s>");
  EXPECT_EQ(m->vocab.types, types);
}

TEST(GgufModel, MissingRequiredKeys) {
  GgufWriter w;
  auto m = load(w, "empty.gguf");
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("missing required key 'general.architecture'"),
            std::string::npos);
  w.set_string("general.architecture", "llama");
  m = load(w, "empty.gguf");
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("missing required key 'llama.embedding_length'"),
            std::string::npos);
}

TEST(GgufModel, SpecialIdMinusOneMeansNone) {
  GgufWriter w = tiny_llama_writer();
  w.set_u32("tokenizer.ggml.unknown_token_id", 0xffffffffu);
  w.set_i32("tokenizer.ggml.eos_token_id", -1);
  auto m = load(w);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->vocab.unk_id, -1);
  EXPECT_EQ(m->vocab.eos_id, -1);
}

struct ModelCase {
  std::string name;
  std::function<void(GgufWriter&)> edit;
  StatusCode code;
  std::vector<std::string> message_parts;
};

TEST(GgufModel, ContentErrors) {
  const std::vector<ModelCase> cases = {
      {"other architecture",
       [](GgufWriter& w) { w.set_string("general.architecture", "mamba"); },
       StatusCode::kUnimplemented,
       {"mamba", "supported: llama, qwen2, qwen3, gemma3"}},
      {"architecture not a string",
       [](GgufWriter& w) { w.set_u32("general.architecture", 1); },
       StatusCode::kDataLoss,
       {"general.architecture", "expected string"}},
      {"other tokenizer",
       [](GgufWriter& w) { w.set_string("tokenizer.ggml.model", "bert"); },
       StatusCode::kUnimplemented,
       {"bert", "SentencePiece", "gpt2"}},
      {"heads do not divide dim",
       [](GgufWriter& w) { w.set_u32("llama.attention.head_count", 3); },
       StatusCode::kDataLoss,
       {"not divisible"}},
      {"kv heads do not divide heads",
       [](GgufWriter& w) { w.set_u32("llama.attention.head_count_kv", 3); },
       StatusCode::kDataLoss,
       {"head_count_kv"}},
      {"absurd block count",
       [](GgufWriter& w) { w.set_u32("llama.block_count", 1u << 31); },
       StatusCode::kDataLoss,
       {"llama.block_count"}},
      {"more blocks than tensors",
       [](GgufWriter& w) { w.set_u32("llama.block_count", 3); },
       StatusCode::kDataLoss,
       {"missing tensor 'blk.2.attn_norm.weight'"}},
      {"negative epsilon",
       [](GgufWriter& w) { w.set_f32("llama.attention.layer_norm_rms_epsilon", -1.0f); },
       StatusCode::kDataLoss,
       {"layer_norm_rms_epsilon"}},
      {"context length of the wrong type",
       [](GgufWriter& w) { w.set_string("llama.context_length", "64"); },
       StatusCode::kDataLoss,
       {"llama.context_length"}},
      {"scores of the wrong length",
       [](GgufWriter& w) { w.set_array<float>("tokenizer.ggml.scores", std::vector<float>(3)); },
       StatusCode::kDataLoss,
       {"tokenizer.ggml.scores has 3 entries for 10 tokens"}},
      {"token type out of range",
       [](GgufWriter& w) {
         w.set_array<int32_t>("tokenizer.ggml.token_type",
                              std::vector<int32_t>{2, 3, 3, 1, 1, 1, 1, 1, 1, 9});
       },
       StatusCode::kDataLoss,
       {"token 9 is 9"}},
      {"bos outside the vocabulary",
       [](GgufWriter& w) { w.set_u32("tokenizer.ggml.bos_token_id", 10); },
       StatusCode::kDataLoss,
       {"tokenizer.ggml.bos_token_id", "outside the vocabulary of 10"}},
      {"vocabulary smaller than the embedding",
       [](GgufWriter& w) {
         w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
         w.set_array<float>("tokenizer.ggml.scores", std::vector<float>(3));
         w.set_array<int32_t>("tokenizer.ggml.token_type", std::vector<int32_t>{2, 3, 3});
       },
       StatusCode::kDataLoss,
       {"3 tokens but token_embd.weight has 10 rows"}},
      {"no tokenizer",
       [](GgufWriter& w) { w.set_u32("tokenizer.ggml.model", 0); },
       StatusCode::kDataLoss,
       {"tokenizer.ggml.model"}},
  };
  for (const ModelCase& c : cases) {
    SCOPED_TRACE(c.name);
    GgufWriter w = tiny_llama_writer();
    c.edit(w);
    auto m = load(w, "content.gguf");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), c.code) << m.status().to_string();
    EXPECT_NE(m.status().message().find("content.gguf"), std::string::npos);
    for (const std::string& part : c.message_parts)
      EXPECT_NE(m.status().message().find(part), std::string::npos) << m.status().to_string();
  }
}

// Builds the tiny model with one tensor replaced (or dropped when `shape` is empty).
GgufWriter with_tensor(const std::string& name, uint32_t ggml_type, std::vector<int64_t> shape,
                       std::size_t bytes) {
  GgufWriter base = tiny_llama_writer();
  auto g = GgufFile::parse(MappedFile::from_bytes("base.gguf", base.serialize()));
  TESSERA_CHECK(g.ok(), "tiny model");
  GgufWriter w;
  for (const GgufKeyValue& kv : g->metadata()) {
    // Copy the metadata through the typed getters the tiny model uses.
    const GgufValue& v = kv.value;
    if (v.type == GgufType::kString)
      w.set_string(kv.key, std::string(v.s));
    else if (v.type == GgufType::kUint32)
      w.set_u32(kv.key, static_cast<uint32_t>(v.u));
    else if (v.type == GgufType::kFloat32)
      w.set_f32(kv.key, static_cast<float>(v.f));
    else if (v.type == GgufType::kBool)
      w.set_bool(kv.key, v.u != 0);
    else if (v.is_array_of(GgufType::kString))
      w.set_string_array(kv.key, *g->get_string_array(kv.key));
    else if (v.is_array_of(GgufType::kFloat32))
      w.set_array<float>(kv.key, *g->get_f32_array(kv.key));
    else if (v.is_array_of(GgufType::kInt32)) {
      const std::vector<int64_t> wide = *g->get_int_array(kv.key);
      std::vector<int32_t> ints(wide.begin(), wide.end());
      w.set_array<int32_t>(kv.key, ints);
    }
  }
  for (const GgufTensorInfo& t : g->tensors()) {
    if (t.name == name) {
      if (!shape.empty())
        TESSERA_CHECK(w.add_tensor_raw(name, ggml_type, shape, std::vector<uint8_t>(bytes)).ok(),
                      "replacement");
      continue;
    }
    const auto* p = g->file()->data() + t.file_offset;
    TESSERA_CHECK(
        w.add_tensor_raw(t.name, t.type, t.shape(), std::vector<uint8_t>(p, p + t.bytes)).ok(),
        "copy");
  }
  return w;
}

TEST(GgufModel, TensorErrorsNameTheTensorAndShapes) {
  const uint32_t f32 = static_cast<uint32_t>(GgmlType::kF32);
  {
    auto m = load(with_tensor("blk.1.attn_q.weight", f32, {8, 4}, 8 * 4 * 4), "shape.gguf");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(m.status().message().find(
                  "tensor 'blk.1.attn_q.weight' has shape [8, 4], expected [8, 8] = "
                  "[n_heads * head_dim, dim]"),
              std::string::npos)
        << m.status().to_string();
  }
  {
    auto m = load(with_tensor("blk.0.ffn_down.weight", f32, {}, 0), "missing.gguf");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(m.status().message().find("missing tensor 'blk.0.ffn_down.weight'"),
              std::string::npos)
        << m.status().to_string();
  }
  {
    // q8_0 in an expected slot with the wrong shape: the shape is named.
    auto m = load(with_tensor("blk.0.ffn_up.weight", static_cast<uint32_t>(GgmlType::kQ8_0),
                              {12, 32}, 12 * 34),
                  "quant.gguf");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);  // the shape [12, 32] is wrong first
  }
  {
    // Right shape, unsupported type: ffn_up is [hidden=12, dim=8]; block types
    // are 32 wide or more, so use f64, whose rows have no block constraint.
    auto m = load(with_tensor("blk.0.ffn_up.weight", static_cast<uint32_t>(GgmlType::kF64), {12, 8},
                              12 * 8 * 8),
                  "f64.gguf");
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(m.status().message().find("blk.0.ffn_up.weight"), std::string::npos);
    EXPECT_NE(m.status().message().find("f64"), std::string::npos);
  }
  {
    auto m = load(with_tensor("token_embd.weight", f32, {10, 8, 1}, 80 * 4), "embd.gguf");
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("'token_embd.weight' has shape [10, 8, 1], expected "
                                        "[vocab, 8]"),
              std::string::npos)
        << m.status().to_string();
  }
}

}  // namespace
}  // namespace tessera
