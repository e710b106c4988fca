// K/V restoration by another model: the restorer's shapes and vocabulary are
// checked; the linear projection's file round-trips and every way it can be
// wrong is a clear error naming the file; the least-squares fit recovers the
// identity when the restorer is the target; and decoding with the dLM
// restorer keeps the store at sink_window's bytes.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/gguf/synthetic_model.h"
#include "plugins/verifier_restored/projection_fit.h"
#include "tests/decode/spec_test_util.h"
#include "tests/gguf/gguf_test_util.h"
#include "tests/model/arch_models.h"

namespace tessera {
namespace {

using testing::make_engine;

constexpr const char* kWindowCache =
    "[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 32\nmax_tokens = 256\n"
    "codec_stage = \"pre_rope\"\n";

std::string restored_by(const std::string& restorer, const std::string& extra = "") {
  return std::string(kWindowCache) +
         "[decode]\nverifier = \"restored\"\nrestorer = \"model\"\nrestorer_model = \"" + restorer +
         "\"\n" + extra;
}

std::string create_error(const std::string& model, const std::string& extra) {
  auto config = Config::parse("[model]\npath = \"" + model + "\"\n" + extra, "restored.toml");
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  if (!config.ok()) return "";
  auto engine = Engine::create(*config, support::build_tree_registry());
  EXPECT_FALSE(engine.ok());
  return engine.ok() ? "" : engine.status().message();
}

TEST(RestorationModel, RefusesARestorerOfOtherShapes) {
  // stories260K has 5 layers, the target 6.
  const std::string error = create_error("tok512-ar-1m.gguf", restored_by("stories260K.gguf"));
  EXPECT_NE(error.find("layers"), std::string::npos) << error;
  EXPECT_NE(error.find("stories260K.gguf"), std::string::npos) << error;
}

TEST(RestorationModel, RefusesARestorerOfAnotherVocabulary) {
  // The target's shapes, llama's 32000-piece vocabulary: more tokens than the
  // target's 512, but not the target's first.
  testing::TempDir dir;
  SyntheticModelSpec spec;
  spec.dim = 128;
  spec.layers = 6;
  spec.heads = 8;
  spec.kv_heads = 4;
  spec.ffn = 384;
  spec.context = 256;
  spec.vocab_from = std::string(TESSERA_SHARED_DIR) + "/models/ggml-vocab-llama-spm.gguf";
  const std::string path = dir.file("other-vocab.gguf");
  ASSERT_TRUE(make_synthetic_model(spec, path).ok());
  const std::string error = create_error("tok512-ar-1m.gguf", restored_by(path));
  EXPECT_NE(error.find("must share the target's tokenizer"), std::string::npos) << error;
  EXPECT_NE(error.find("other-vocab.gguf"), std::string::npos) << error;
}

TEST(RestorationModel, LinearProjectionNeedsItsFile) {
  const std::string error = create_error(
      "tok512-ar-1m.gguf", restored_by("tok512-sdar-1m.gguf", "projection = \"linear\"\n"));
  EXPECT_NE(error.find("projection_file"), std::string::npos) << error;
}

LinearProjection numbered_projection(const ProjectionShape& shape) {
  LinearProjection p(shape);
  float value = 0.25f;
  for (int l = 0; l < shape.layers; ++l)
    for (int kv = 0; kv < 2; ++kv)
      for (int h = 0; h < shape.kv_heads; ++h)
        for (int64_t i = 0; i < shape.map_floats(); ++i) p.map(l, kv, h)[i] = (value += 0.5f);
  return p;
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string load_error(const std::string& path) {
  auto loaded = LinearProjection::load(path);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? "" : loaded.status().message();
}

TEST(RestorationModel, ProjectionFileRoundTripsAndRefusesBadFiles) {
  testing::TempDir dir;
  const ProjectionShape shape{3, 2, 4, StoredKeys::kBeforeRope};
  const LinearProjection written = numbered_projection(shape);
  const std::string path = dir.file("p.kvproj");
  ASSERT_TRUE(written.save(path).ok());
  auto read = LinearProjection::load(path);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  for (int l = 0; l < shape.layers; ++l)
    for (int kv = 0; kv < 2; ++kv)
      for (int h = 0; h < shape.kv_heads; ++h)
        for (int64_t i = 0; i < shape.map_floats(); ++i)
          ASSERT_EQ(read->map(l, kv, h)[i], written.map(l, kv, h)[i]);
  EXPECT_TRUE(read->check_matches(path, shape).ok());

  const std::vector<char> good = read_bytes(path);
  std::vector<char> corrupt = good;
  corrupt[good.size() / 2] ^= 0x10;
  write_bytes(dir.file("corrupt.kvproj"), corrupt);
  std::string error = load_error(dir.file("corrupt.kvproj"));
  EXPECT_NE(error.find("checksum"), std::string::npos) << error;
  EXPECT_NE(error.find("corrupt.kvproj"), std::string::npos) << error;

  write_bytes(dir.file("short.kvproj"), {good.begin(), good.end() - 40});
  error = load_error(dir.file("short.kvproj"));
  EXPECT_NE(error.find("truncated"), std::string::npos) << error;

  std::vector<char> other = good;
  other[0] = 'X';
  write_bytes(dir.file("other.kvproj"), other);
  error = load_error(dir.file("other.kvproj"));
  EXPECT_NE(error.find("not a K/V projection"), std::string::npos) << error;

  const Status wrong_shape = read->check_matches(path, {3, 4, 4, StoredKeys::kBeforeRope});
  EXPECT_NE(wrong_shape.message().find("4 KV heads"), std::string::npos) << wrong_shape.message();
  const Status wrong_stage = read->check_matches(path, {3, 2, 4, StoredKeys::kRotated});
  EXPECT_NE(wrong_stage.message().find("post_rope"), std::string::npos) << wrong_stage.message();
  EXPECT_NE(wrong_stage.message().find("p.kvproj"), std::string::npos) << wrong_stage.message();
}

TEST(RestorationModel, FitOfTheTargetOnItselfIsTheIdentity) {
  auto engine = make_engine("tok512-ar-1m.gguf", kWindowCache);
  ASSERT_NE(engine, nullptr);
  auto tokens = engine->tokenizer().encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park. One day, she saw a big, red ball.",
      true);
  ASSERT_TRUE(tokens.ok());
  SequenceState lane;
  ASSERT_TRUE(engine->begin_sequence(lane).ok());
  HistoryKV a, b;
  int64_t forwards = 0;
  const CacheGeometry geometry = engine->transformer().cache_geometry();
  a.reserve(geometry, static_cast<int64_t>(tokens->size()));
  b.reserve(geometry, static_cast<int64_t>(tokens->size()));
  ASSERT_TRUE(
      a.compute(engine->transformer(), engine->cache(), lane.id, *tokens, 16, forwards).ok());
  ASSERT_TRUE(
      b.compute(engine->transformer(), engine->cache(), lane.id, *tokens, 64, forwards).ok());
  ASSERT_TRUE(engine->end_sequence(lane).ok());
  const ProjectionShape shape{geometry.layers, geometry.kv_heads, geometry.head_dim,
                              StoredKeys::kBeforeRope};
  auto fit = fit_projection(a, b, shape, 1e-9);
  ASSERT_TRUE(fit.ok()) << fit.status().to_string();
  for (std::size_t i = 0; i < fit->relative_error.size(); ++i) {
    EXPECT_LT(fit->relative_error[i], 1e-6) << i;
    EXPECT_LT(fit->identity_error[i], 1e-9) << i;  // chunking gave the same K/V
  }
  const float* w = fit->projection.map(2, 0, 1);
  for (int r = 0; r < shape.head_dim; ++r)
    for (int c = 0; c < shape.head_dim; ++c)
      EXPECT_NEAR(w[r * shape.head_dim + c], r == c ? 1.0f : 0.0f, 1e-3) << r << "," << c;
}

TEST(RestorationModel, DiffusionRestorerKeepsSinkWindowMemory) {
  auto plain = make_engine("tok512-ar-1m.gguf", kWindowCache);
  auto restoring = make_engine("tok512-ar-1m.gguf", restored_by("tok512-sdar-1m.gguf"));
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(restoring, nullptr);
  const GenerationRequest request = testing::request_for(*plain, "", 100);
  const testing::Generated windowed = testing::run(*plain, request);
  const testing::Generated got = testing::run(*restoring, request);
  EXPECT_EQ(got.tokens.size(), windowed.tokens.size());
  EXPECT_EQ(got.stats.kv_live_bytes, windowed.stats.kv_live_bytes);
  EXPECT_EQ(got.stats.kv_peak_bytes, windowed.stats.kv_peak_bytes);
  // Every step past sink + window restored positions with the restorer.
  EXPECT_GT(got.stats.decode.restoration_steps, 100 - 4 - 32 - 2);
  EXPECT_GE(got.stats.decode.restorer_forwards, got.stats.decode.restoration_steps);
}

// On every architecture, restoring evicted K/V with the target itself gives
// the tokens of a cache that keeps everything, in sink_window's memory.
TEST(RestorationModel, TheTargetRestoringItselfIsTheFullCacheOnEveryArchitecture) {
  for (const std::string& arch : testing::kArchitectures) {
    SCOPED_TRACE(arch);
    const std::string model = testing::arch_model(arch);
    auto full = make_engine(model, "[cache]\nplugin = \"static\"\ncodec_stage = \"pre_rope\"\n");
    auto restoring = make_engine(model, restored_by(model));
    ASSERT_NE(full, nullptr);
    ASSERT_NE(restoring, nullptr);
    const GenerationRequest request = testing::request_for(*full, "", 80);
    const testing::Generated want = testing::run(*full, request);
    const testing::Generated got = testing::run(*restoring, request);
    EXPECT_EQ(got.tokens, want.tokens);
    EXPECT_GT(got.stats.decode.restoration_steps, 0);
  }
}

}  // namespace
}  // namespace tessera
