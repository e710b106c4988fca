// load_model / load_vocabulary on the real test models (GGUF and llama2.c),
// and the GGUF and .bin forms of the same model compared bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/io/mapped_file.h"
#include "core/model/model.h"
#include "tests/gguf/gguf_test_util.h"

namespace tessera {
namespace {

using testing::model_path;

struct Expected {
  int dim, hidden, layers, heads, kv_heads, head_dim, vocab, context;
};

void expect_config(const LoadedModel& m, const Expected& e) {
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.dim, e.dim);
  EXPECT_EQ(c.hidden_dim, e.hidden);
  EXPECT_EQ(c.n_layers, e.layers);
  EXPECT_EQ(c.n_heads, e.heads);
  EXPECT_EQ(c.n_kv_heads, e.kv_heads);
  EXPECT_EQ(c.head_dim, e.head_dim);
  EXPECT_EQ(c.vocab_size, e.vocab);
  EXPECT_EQ(c.context_length, e.context);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(m.vocab.size(), e.vocab);
  EXPECT_EQ(m.vocab.bos_id, 1);
  EXPECT_EQ(m.vocab.eos_id, 2);
  EXPECT_EQ(m.vocab.unk_id, 0);
  EXPECT_TRUE(m.vocab.add_space_prefix);
  EXPECT_NE(m.file, nullptr);

  // Every weight view has the documented shape and lies inside the mapping.
  const int64_t q = int64_t{e.heads} * e.head_dim, kv = int64_t{e.kv_heads} * e.head_dim;
  auto check = [&](const Tensor& t, std::vector<int64_t> shape, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_EQ(t.rank, static_cast<int>(shape.size()));
    for (int d = 0; d < t.rank; ++d) EXPECT_EQ(t.dim(d), shape[static_cast<std::size_t>(d)]);
    EXPECT_EQ(t.dtype, DType::kF32);
    EXPECT_TRUE(t.is_contiguous());
    const auto* begin = static_cast<const uint8_t*>(t.data);
    EXPECT_GE(begin, m.file->data());
    EXPECT_LE(begin + t.bytes(), m.file->data() + m.file->size());
  };
  const ModelWeights& w = m.weights;
  check(w.token_embedding, {e.vocab, e.dim}, "token_embedding");
  check(w.output_norm, {e.dim}, "output_norm");
  check(w.output, {e.vocab, e.dim}, "output");
  ASSERT_EQ(w.layers.size(), static_cast<std::size_t>(e.layers));
  for (const LayerWeights& L : w.layers) {
    check(L.attn_norm, {e.dim}, "attn_norm");
    check(L.wq, {q, e.dim}, "wq");
    check(L.wk, {kv, e.dim}, "wk");
    check(L.wv, {kv, e.dim}, "wv");
    check(L.wo, {e.dim, q}, "wo");
    check(L.ffn_norm, {e.dim}, "ffn_norm");
    check(L.w1, {e.hidden, e.dim}, "w1");
    check(L.w2, {e.dim, e.hidden}, "w2");
    check(L.w3, {e.hidden, e.dim}, "w3");
  }
}

const Expected kStories{64, 172, 5, 8, 4, 8, 512, 2048};
const Expected kStoriesBin{64, 172, 5, 8, 4, 8, 512, 512};
const Expected kTarget{128, 384, 6, 8, 4, 16, 512, 256};

TEST(ModelLoader, Stories260KGguf) {
  auto m = load_model(model_path("stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->format, "gguf");
  EXPECT_EQ(m->path, model_path("stories260K.gguf"));
  expect_config(*m, kStories);
  EXPECT_EQ(m->config.name, "llama");
  EXPECT_EQ(m->tensors.size(), 48u);
  EXPECT_EQ(m->tensors[0].name, "token_embd.weight");
  EXPECT_EQ(m->tensors[0].shape, (std::vector<int64_t>{512, 64}));
  ASSERT_EQ(m->metadata.size(), 19u);
  EXPECT_EQ(m->metadata[0].first, "tokenizer.ggml.tokens");
  EXPECT_EQ(m->metadata[0].second, "[512 strings: \"<unk>\", \"<s>\", \"</s>\", ...]");
  EXPECT_EQ(m->vocab.pieces[1], "<s>");
  EXPECT_EQ(m->vocab.pieces[13], "<0x0A>");
  EXPECT_EQ(m->vocab.types[0], TokenType::kUnknown);
  EXPECT_EQ(m->vocab.types[2], TokenType::kControl);
  EXPECT_EQ(m->vocab.types[3], TokenType::kByte);
  EXPECT_EQ(m->vocab.types[300], TokenType::kNormal);
  // The GGUF stores output.weight as its own copy of the embedding.
  EXPECT_NE(m->weights.output.data, m->weights.token_embedding.data);
}

TEST(ModelLoader, Tok512Ar1mGguf) {
  auto m = load_model(model_path("tok512-ar-1m.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  expect_config(*m, kTarget);
  EXPECT_EQ(m->config.name, "tok512-ar-1m");
}

TEST(ModelLoader, Stories260KBin) {
  auto m = load_model(model_path("stories260K.bin"), model_path("tok512.bin"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->format, "llama2c");
  expect_config(*m, kStoriesBin);
  EXPECT_EQ(m->config.name, "stories260K");
  // Shared classifier: the output is the embedding itself.
  EXPECT_EQ(m->weights.output.data, m->weights.token_embedding.data);
  ASSERT_NE(m->tokenizer_file, nullptr);
  EXPECT_EQ(m->tokenizer_file->size(), 6227u);
  // The weights and the two RoPE tables account for every byte after the header.
  uint64_t bytes = 28;
  for (const TensorInfo& t : m->tensors) {
    EXPECT_EQ(t.offset, bytes) << t.name;
    int64_t n = 1;
    for (int64_t s : t.shape) n *= s;
    bytes += static_cast<uint64_t>(n) * 4;
  }
  EXPECT_EQ(bytes, m->file->size());
}

TEST(ModelLoader, Tok512Ar1mBin) {
  auto m = load_model(model_path("tok512-ar-1m.bin"), model_path("tok512.bin"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  expect_config(*m, Expected{128, 384, 6, 8, 4, 16, 512, 256});
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.rank != b.rank || a.dtype != b.dtype) return false;
  for (int d = 0; d < a.rank; ++d)
    if (a.dim(d) != b.dim(d)) return false;
  return std::memcmp(a.data, b.data, a.bytes()) == 0;
}

void expect_identical(const std::string& gguf_name, const std::string& bin_name) {
  auto g = load_model(model_path(gguf_name));
  auto b = load_model(model_path(bin_name), model_path("tok512.bin"));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  const ModelWeights& wg = g->weights;
  const ModelWeights& wb = b->weights;
  EXPECT_TRUE(same_bits(wg.token_embedding, wb.token_embedding));
  EXPECT_TRUE(same_bits(wg.output, wb.output));
  EXPECT_TRUE(same_bits(wg.output_norm, wb.output_norm));
  ASSERT_EQ(wg.layers.size(), wb.layers.size());
  for (std::size_t l = 0; l < wg.layers.size(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const LayerWeights& x = wg.layers[l];
    const LayerWeights& y = wb.layers[l];
    EXPECT_TRUE(same_bits(x.attn_norm, y.attn_norm));
    EXPECT_TRUE(same_bits(x.wq, y.wq));
    EXPECT_TRUE(same_bits(x.wk, y.wk));
    EXPECT_TRUE(same_bits(x.wv, y.wv));
    EXPECT_TRUE(same_bits(x.wo, y.wo));
    EXPECT_TRUE(same_bits(x.ffn_norm, y.ffn_norm));
    EXPECT_TRUE(same_bits(x.w1, y.w1));
    EXPECT_TRUE(same_bits(x.w2, y.w2));
    EXPECT_TRUE(same_bits(x.w3, y.w3));
  }
  // The same tensors by name, too (the .bin has two RoPE tables more).
  for (const TensorInfo& t : g->tensors) {
    const auto it = std::find_if(b->tensors.begin(), b->tensors.end(),
                                 [&](const TensorInfo& u) { return u.name == t.name; });
    if (t.name == "output.weight") continue;  // shared with token_embd in the .bin
    ASSERT_NE(it, b->tensors.end()) << t.name;
    EXPECT_EQ(it->shape, t.shape) << t.name;
  }
  EXPECT_EQ(g->vocab.pieces, b->vocab.pieces);
  ASSERT_EQ(g->vocab.scores.size(), b->vocab.scores.size());
  EXPECT_EQ(std::memcmp(g->vocab.scores.data(), b->vocab.scores.data(),
                        g->vocab.scores.size() * sizeof(float)),
            0);
  EXPECT_EQ(g->vocab.types, b->vocab.types);
}

TEST(ModelLoader, Stories260KGgufAndBinAreBitwiseIdentical) {
  expect_identical("stories260K.gguf", "stories260K.bin");
}

TEST(ModelLoader, Tok512Ar1mGgufAndBinAreBitwiseIdentical) {
  expect_identical("tok512-ar-1m.gguf", "tok512-ar-1m.bin");
}

TEST(ModelLoader, SdarModelExposesDiffusionMetadata) {
  auto m = load_model(model_path("tok512-sdar-1m.gguf"));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  expect_config(*m, Expected{128, 384, 6, 8, 4, 16, 513, 256});
  EXPECT_EQ(m->vocab.pieces[512], "<mask>");
  EXPECT_EQ(m->vocab.types[512], TokenType::kControl);
  auto value_of = [&](const std::string& key) -> std::string {
    for (const auto& [k, v] : m->metadata)
      if (k == key) return v;
    return "(absent)";
  };
  EXPECT_EQ(value_of("diffusion.block_size"), "4");
  EXPECT_EQ(value_of("diffusion.mask_token_id"), "512");
}

TEST(ModelLoader, VocabularyOnlyGguf) {
  const std::string path = model_path("ggml-vocab-llama-spm.gguf");
  auto v = load_vocabulary(path);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->size(), 32000);
  EXPECT_EQ(v->pieces[1], "<s>");
  EXPECT_EQ(v->pieces[2], "</s>");
  EXPECT_EQ(v->types[0], TokenType::kUnknown);
  EXPECT_EQ(v->types[3], TokenType::kByte);
  EXPECT_EQ(v->scores.size(), 32000u);

  auto m = load_model(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find(path), std::string::npos);
  EXPECT_NE(m.status().message().find("token_embd.weight"), std::string::npos);
  EXPECT_NE(m.status().message().find("no tensors"), std::string::npos);
}

TEST(ModelLoader, VocabularyFromLlama2cTokenizerMatchesGguf) {
  auto bin = load_vocabulary(model_path("tok512.bin"));
  auto gguf = load_vocabulary(model_path("stories260K.gguf"));
  ASSERT_TRUE(bin.ok()) << bin.status().to_string();
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  EXPECT_EQ(bin->pieces, gguf->pieces);
  EXPECT_EQ(bin->types, gguf->types);
  EXPECT_EQ(bin->bos_id, 1);
}

TEST(ModelLoader, FormatIsDetectedByMagicNotExtension) {
  testing::TempDir dir;
  const std::string gguf_as_bin = dir.file("model.bin");
  const std::string bin_as_gguf = dir.file("model.gguf");
  std::filesystem::copy_file(model_path("stories260K.gguf"), gguf_as_bin);
  std::filesystem::copy_file(model_path("stories260K.bin"), bin_as_gguf);
  auto a = load_model(gguf_as_bin);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->format, "gguf");
  auto b = load_model(bin_as_gguf, model_path("tok512.bin"));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->format, "llama2c");
}

TEST(ModelLoader, MissingFilesAreNotFound) {
  EXPECT_EQ(load_model(model_path("nope.gguf")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(load_model(model_path("nope.bin"), model_path("tok512.bin")).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(load_vocabulary(model_path("nope.bin")).status().code(), StatusCode::kNotFound);
  auto tok = load_model(model_path("stories260K.bin"), model_path("no-tokenizer.bin"));
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find("no-tokenizer.bin"), std::string::npos);
}

}  // namespace
}  // namespace tessera
