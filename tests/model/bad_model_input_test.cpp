// Models and token streams a user can hand the engine that used to crash it or
// give a silently wrong number: NaN or infinite weights (the sampler aborted,
// perplexity printed nll=nan), a scoring target outside the vocabulary (read
// before the logits), text a vocabulary without an unknown token cannot spell.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "core/engine/engine.h"
#include "core/engine/perplexity.h"
#include "core/gguf/gguf_file.h"
#include "core/model/weight_check.h"
#include "tests/gguf/gguf_test_util.h"
#include "tests/model/engine_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// The tiny GGUF model with `value` written at element `element` of `tensor`.
std::vector<uint8_t> tiny_gguf_with(const std::string& tensor, std::size_t element, float value,
                                    GgufWriter writer = testing::tiny_llama_writer()) {
  std::vector<uint8_t> bytes = writer.serialize();
  auto parsed = GgufFile::parse(MappedFile::from_bytes("tiny.gguf", bytes));
  EXPECT_TRUE(parsed.ok()) << parsed.status().to_string();
  const GgufTensorInfo* info = parsed->find_tensor(tensor);
  EXPECT_NE(info, nullptr) << tensor;
  std::memcpy(bytes.data() + info->file_offset + element * sizeof(float), &value, sizeof value);
  return bytes;
}

Result<std::unique_ptr<Engine>> engine_for(const std::string& model_path,
                                           const std::string& extra = "") {
  auto config = Config::parse("[model]\npath = \"" + model_path + "\"\n" + extra, "inline.toml");
  if (!config.ok()) return config.status();
  return Engine::create(*config, support::build_tree_registry());
}

Status generate(Engine& engine, int64_t tokens = 4) {
  GenerationRequest request;
  request.prompt = {engine.tokenizer().bos()};
  request.max_new_tokens = tokens;
  return engine.generate(request, [](int32_t, int) { return true; }).status();
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(NonFiniteWeights, GgufNaNIsAnErrorNamingTheTensor) {
  TempDir dir;
  const std::string path = dir.write("nan.gguf", tiny_gguf_with("blk.0.attn_q.weight", 0, kNaN));
  auto engine = engine_for(path);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const Status status = generate(**engine);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr("model " + path + " computed a non-finite logit"));
  EXPECT_THAT(status.message(),
              HasSubstr("tensor 'blk.0.attn_q.weight' holds 1 non-finite value (the first, "
                        "element 0, is nan)"));
}

TEST(NonFiniteWeights, GgufInfinityIsAnErrorToo) {
  TempDir dir;
  const std::string path = dir.write("inf.gguf", tiny_gguf_with("output.weight", 3, -kInf));
  auto engine = engine_for(path);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const Status status = generate(**engine);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("tensor 'output.weight' holds 1 non-finite value"));
  EXPECT_THAT(status.message(), HasSubstr("is -inf"));
}

TEST(NonFiniteWeights, Llama2cNaNIsAnError) {
  std::vector<uint8_t> bytes = testing::read_bytes(testing::model_path("stories260K.bin"));
  // Header (28 bytes), token embedding [512, 64], rms_att [5, 64], then wq of layer 0.
  const std::size_t wq = 28 + (512 * 64 + 5 * 64) * sizeof(float);
  std::memcpy(bytes.data() + wq + 17 * sizeof(float), &kNaN, sizeof kNaN);
  TempDir dir;
  const std::string path = dir.write("nan.bin", bytes);
  auto engine = engine_for(path, "tokenizer = \"" + testing::model_path("tok512.bin") + "\"\n");
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const Status status = generate(**engine);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("tensor 'blk.0.attn_q.weight' holds 1 non-finite value "
                                          "(the first, element 17, is nan)"));

  // Scoring stops with the same error instead of reporting nll=nan.
  const std::vector<int32_t> tokens = {1, 403, 407, 261};
  auto scored = score_tokens(**engine, tokens);
  ASSERT_FALSE(scored.ok());
  EXPECT_EQ(scored.status().code(), StatusCode::kDataLoss);
}

// A failing forward leaves the cache as it was, also when earlier chunks of
// a long prompt had already been appended.
TEST(NonFiniteWeights, AFailedForwardLeavesTheCacheUnchanged) {
  TempDir dir;
  const std::string path = dir.write("nan.gguf", tiny_gguf_with("output_norm.weight", 0, kNaN));
  auto engine = engine_for(path);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  ASSERT_TRUE(e.cache().allocate(7, 400).ok());
  const int n = e.transformer().max_batch() + 20;  // two chunks
  std::vector<int32_t> tokens(static_cast<std::size_t>(n), 4);
  std::vector<int32_t> positions(tokens.size());
  for (int i = 0; i < n; ++i) positions[static_cast<std::size_t>(i)] = i;
  auto logits = e.transformer().forward(e.cache(), 7, tokens, positions);
  ASSERT_FALSE(logits.ok());
  EXPECT_EQ(e.cache().info(7)->logical_length, 0);
}

TEST(NonFiniteWeights, WeightScanFindsEveryDamagedTensor) {
  TempDir dir;
  GgufWriter writer = testing::tiny_llama_writer();
  std::vector<uint8_t> bytes = tiny_gguf_with("blk.1.ffn_up.weight", 5, kInf, writer);
  auto parsed = GgufFile::parse(MappedFile::from_bytes("two.gguf", bytes));
  ASSERT_TRUE(parsed.ok());
  const uint64_t norm = parsed->find_tensor("token_embd.weight")->file_offset;
  std::memcpy(bytes.data() + norm + 2 * sizeof(float), &kNaN, sizeof kNaN);
  std::memcpy(bytes.data() + norm + 9 * sizeof(float), &kNaN, sizeof kNaN);
  auto model = load_model(dir.write("two.gguf", bytes));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const auto bad = find_non_finite_weights(*model);
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].name, "token_embd.weight");
  EXPECT_EQ(bad[0].count, 2u);
  EXPECT_EQ(bad[0].first_element, 2u);
  EXPECT_EQ(bad[1].name, "blk.1.ffn_up.weight");
  EXPECT_THAT(describe_non_finite(bad), HasSubstr("and 1 more tensor does"));
  auto clean = load_model(testing::model_path("stories260K.gguf"));
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(find_non_finite_weights(*clean).empty());
}

// score_tokens reads logits at each target, and the last target is never fed
// to the forward, whose own check therefore never saw it: -1 read row[-1].
TEST(ScoreTokens, TargetsOutsideTheVocabularyAreRefused) {
  auto engine = testing::make_engine("stories260K.gguf");
  ASSERT_NE(engine, nullptr);
  for (const std::vector<int32_t>& tokens :
       {std::vector<int32_t>{1, -1}, std::vector<int32_t>{1, 403, 512},
        std::vector<int32_t>{1, 403, 407, -1}}) {
    auto scored = score_tokens(*engine, tokens);
    ASSERT_FALSE(scored.ok());
    EXPECT_EQ(scored.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(scored.status().message(), HasSubstr("outside the vocabulary [0, 512)"));
  }
}

// GGUF may say there is no unknown token (0xffffffff). Text with a character
// the vocabulary cannot spell then fails to encode, naming the character;
// before, it became id -1.
TEST(NoUnknownToken, UnspellableTextIsAnErrorNotIdMinusOne) {
  GgufWriter writer = testing::tiny_llama_writer();
  writer.set_u32("tokenizer.ggml.unknown_token_id", 0xffffffffu);
  TempDir dir;
  auto engine = engine_for(dir.write("nounk.gguf", writer.serialize()));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const Tokenizer& tokenizer = (*engine)->tokenizer();
  EXPECT_TRUE(tokenizer.encode("bcd", true).ok());
  auto encoded = tokenizer.encode("bc\xc3\xa9", true);
  ASSERT_FALSE(encoded.ok());
  EXPECT_THAT(encoded.status().message(), HasSubstr("'\xc3\xa9' (U+00E9) at byte 2"));
}

}  // namespace
}  // namespace tessera
