// Several block-diffusion blocks in one forward batch against the dense
// block-causal mask (models README, "Block-diffusion conventions"): a token
// of block b sees every token of blocks <= b. Block ids give the
// bidirectional part; parents chained through every block give the rest
// (plugins/diffusion_common/block_batch.h). Checked with the real SDAR model.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/model/engine_test_util.h"
#include "tests/support/reference_forward.h"

namespace tessera {
namespace {

using testing::make_engine;

constexpr const char* kModel = "tok512-sdar-1m.gguf";
constexpr int kBlock = 4;
constexpr int32_t kMask = 512;

Result<LoadedModel> reference_model() {
  return load_model(std::string(TESSERA_SHARED_DIR) + "/models/" + kModel);
}

// Token i sees token j iff j's block is not after i's.
std::vector<std::vector<bool>> block_causal(std::size_t n) {
  std::vector<std::vector<bool>> sees(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) sees[i][j] = j / kBlock <= i / kBlock;
  return sees;
}

// Three blocks: BOS and text, then a block with two masks still to decode.
const std::vector<int32_t> kTokens = {1, 403, 407, 261, 80, 300, 301, 302, 290, kMask, 305, kMask};

std::vector<int32_t> positions_of(std::size_t n, int32_t first = 0) {
  std::vector<int32_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = first + static_cast<int32_t>(i);
  return positions;
}

// Adds tokens [begin, end) of kTokens, one block id per block, each token's
// parent the one before it; with `wrong_link`, the first token of a block
// hangs off the first token of the previous block instead.
void add_blocks(Batch& batch, SequenceId seq, std::size_t begin, std::size_t end, uint8_t flags,
                bool wrong_link = false) {
  int32_t previous = -1;
  for (std::size_t i = begin; i < end; ++i) {
    int32_t parent = previous;
    if (wrong_link && i % kBlock == 0 && i >= begin + kBlock)
      parent = static_cast<int32_t>(i - begin) - kBlock;
    previous = batch.add(kTokens[i], seq, static_cast<int32_t>(i), parent, flags,
                         static_cast<int16_t>(i / kBlock + 1));
  }
}

TEST(BlockVisibility, SeveralBlocksInOneBatchMatchTheDenseBlockCausalMask) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  SequenceState seq;
  ASSERT_TRUE(engine->begin_sequence(seq).ok());
  Batch batch;
  add_blocks(batch, seq.id, 0, kTokens.size(), kOutputLogits);
  auto got = engine->transformer().forward(engine->cache(), batch);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  const Result<LoadedModel> model = reference_model();
  ASSERT_TRUE(model.ok());
  const std::vector<int32_t> positions = positions_of(kTokens.size());
  const std::vector<float> want =
      support::reference_logits(*model, kTokens, positions, block_causal(kTokens.size()));
  EXPECT_LT(support::max_relative_error(*got, want), 1e-5);
  // The rule is not vacuous: causal attention inside blocks differs.
  std::vector<std::vector<bool>> causal(kTokens.size(), std::vector<bool>(kTokens.size(), false));
  for (std::size_t i = 0; i < kTokens.size(); ++i)
    for (std::size_t j = 0; j <= i; ++j) causal[i][j] = true;
  const std::vector<float> chain = support::reference_logits(*model, kTokens, positions, causal);
  EXPECT_GT(support::max_relative_error(*got, chain), 1e-3);
  ASSERT_TRUE(engine->end_sequence(seq).ok());
}

// The trap: block-mate visibility is not inherited through parents. A block
// whose first token hangs off the FIRST token of the previous block (not its
// last) no longer sees the rest of that block, and its logits leave the
// block-causal reference.
TEST(BlockVisibility, ABlockLinkedToTheWrongParentMissesItsPredecessorsBlockMates) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  SequenceState seq;
  ASSERT_TRUE(engine->begin_sequence(seq).ok());
  Batch batch;
  add_blocks(batch, seq.id, 0, kTokens.size(), kOutputLogits, /*wrong_link=*/true);
  auto got = engine->transformer().forward(engine->cache(), batch);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  const Result<LoadedModel> model = reference_model();
  ASSERT_TRUE(model.ok());
  const std::vector<float> want = support::reference_logits(
      *model, kTokens, positions_of(kTokens.size()), block_causal(kTokens.size()));
  const std::size_t vocab = 513;
  // Block 0 has no predecessor: still right. Blocks 1 and 2 are not.
  EXPECT_LT(support::max_relative_error(got->first(kBlock * vocab),
                                        std::span(want).first(kBlock * vocab)),
            1e-5);
  EXPECT_GT(support::max_relative_error(got->subspan(kBlock * vocab),
                                        std::span(want).subspan(kBlock * vocab)),
            1e-3);
  ASSERT_TRUE(engine->end_sequence(seq).ok());
}

// Decoding's split: the clean blocks written by one forward, then the masked
// block denoised against the cache without writing, equal the same rows of
// the dense reference; the denoise forward leaves the cache as it was.
TEST(BlockVisibility, ADenoiseForwardOverTheCacheMatchesTheReferenceAndWritesNothing) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  SequenceState seq;
  ASSERT_TRUE(engine->begin_sequence(seq).ok());
  Batch prefill;
  add_blocks(prefill, seq.id, 0, 2 * kBlock, kWriteKv);
  ASSERT_TRUE(engine->transformer().forward(engine->cache(), prefill).ok());
  const CacheBytes before = engine->cache().bytes();
  Batch denoise;
  add_blocks(denoise, seq.id, 2 * kBlock, kTokens.size(), kOutputLogits);
  auto got = engine->transformer().forward(engine->cache(), denoise);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  auto info = engine->cache().info(seq.id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->stored, 2 * kBlock);
  EXPECT_EQ(engine->cache().bytes().live, before.live);
  const Result<LoadedModel> model = reference_model();
  ASSERT_TRUE(model.ok());
  const std::vector<float> want = support::reference_logits(
      *model, kTokens, positions_of(kTokens.size()), block_causal(kTokens.size()));
  const std::size_t vocab = 513;
  EXPECT_LT(support::max_relative_error(*got, std::span(want).subspan(2 * kBlock * vocab)), 1e-5);
  ASSERT_TRUE(engine->end_sequence(seq).ok());
}

}  // namespace
}  // namespace tessera
