// The fixed-shape step (core/model/fixed_shape_step.h) against the dynamic
// forward: the same logits within 1e-5 at every denoise and commit step of
// a block-diffusion decode, the same K/V in the cache, the additive mask and
// keep/insert inputs as specified, and no allocation once started.
#include "core/model/fixed_shape_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/model/engine_test_util.h"
#include "tests/support/counting_allocator.h"
#include "tests/support/reference_forward.h"

namespace tessera {
namespace {

using testing::make_engine;

constexpr const char* kModel = "tok512-sdar-1m.gguf";
constexpr int kBlock = 4;
constexpr int32_t kMask = 512;
constexpr int64_t kSlots = 64;
constexpr float kHidden = -std::numeric_limits<float>::infinity();
const std::string kStatic = "[cache]\nmax_tokens = 64\n";

// One block at `start` over `seq`, with `flags`.
Batch block_batch(SequenceId seq, const std::vector<int32_t>& tokens, int32_t start,
                  uint8_t flags) {
  Batch batch;
  int32_t parent = -1;
  for (std::size_t i = 0; i < tokens.size(); ++i)
    parent = batch.add(tokens[i], seq, start + static_cast<int32_t>(i), parent, flags,
                       static_cast<int16_t>(start / kBlock + 1));
  return batch;
}

TEST(FixedStepInputs, MaskHidesUnwrittenSlotsAndPaddingAndKeepInsertWriteTheBlock) {
  FixedStepInputs in;
  in.reserve(kBlock, 8);
  // Three real tokens of a block (a prompt's tail), the first two written.
  Batch batch;
  int32_t parent = -1;
  for (int32_t i = 0; i < 3; ++i)
    parent = batch.add(100 + i, 0, 5 + i, parent, i < 2 ? kWriteKv : 0, 2);
  ASSERT_TRUE(build_fixed_step_inputs(batch, /*stored=*/5, kMask, in).ok());
  EXPECT_EQ(in.tokens, (std::vector<int32_t>{100, 101, 102, kMask}));
  EXPECT_EQ(in.positions, (std::vector<int32_t>{5, 6, 7, 8}));
  const std::size_t width = 8 + kBlock;
  for (std::size_t i = 0; i < kBlock; ++i)
    for (std::size_t c = 0; c < width; ++c) {
      const bool real = i < 3;
      const bool seen = real && (c < 5 || (c >= 8 && c < 8 + 3));
      EXPECT_EQ(in.mask[i * width + c], seen ? 0.0f : kHidden) << "row " << i << " column " << c;
    }
  EXPECT_EQ(in.keep, (std::vector<float>{1, 1, 1, 1, 1, 0, 0, 1}));
  for (std::size_t s = 0; s < 8; ++s)
    for (std::size_t j = 0; j < kBlock; ++j)
      EXPECT_EQ(in.insert[s * kBlock + j], (s == 5 && j == 0) || (s == 6 && j == 1) ? 1.0f : 0.0f);
  EXPECT_EQ(in.written_positions, (std::vector<int32_t>{5, 6}));
  // A chain (causal) batch: a token does not see the later ones.
  Batch chain;
  chain.add_chain(0, std::vector<int32_t>{7, 8}, 5, true);
  ASSERT_TRUE(build_fixed_step_inputs(chain, 5, kMask, in).ok());
  EXPECT_EQ(in.mask[0 * width + 8 + 1], kHidden);
  EXPECT_EQ(in.mask[1 * width + 8 + 0], 0.0f);
  // More writes than slots left.
  EXPECT_EQ(build_fixed_step_inputs(batch, 7, kMask, in).code(), StatusCode::kResourceExhausted);
}

// Decodes blocks on two engines side by side, the dynamic forward on one and
// the fixed-shape step on the other, revealing the same positions (the
// dynamic logits decide), and compares every step.
TEST(FixedShapeStep, EqualsTheDynamicForwardAtEveryStep) {
  auto dynamic = make_engine(kModel, kStatic);
  auto fixed_engine = make_engine(kModel, kStatic);
  ASSERT_NE(dynamic, nullptr);
  ASSERT_NE(fixed_engine, nullptr);
  auto step = FixedShapeStep::create(fixed_engine->model(),
                                     *fixed_engine->services().backend().value(), kBlock, kSlots);
  ASSERT_TRUE(step.ok()) << step.status().to_string();
  SequenceState a, b;
  ASSERT_TRUE(dynamic->begin_sequence(a).ok());
  ASSERT_TRUE(fixed_engine->begin_sequence(b).ok());
  const std::size_t vocab = 513;
  std::vector<int32_t> text = {1, 403, 407, 261, 80};  // one whole block, then a partial one
  int forwards = 0;
  for (int32_t start = 0; start < 40; start += kBlock) {
    std::vector<int32_t> tokens(
        text.begin() + start,
        text.begin() +
            std::min<std::ptrdiff_t>(start + kBlock, static_cast<std::ptrdiff_t>(text.size())));
    tokens.resize(kBlock, kMask);
    while (std::find(tokens.begin(), tokens.end(), kMask) != tokens.end()) {
      auto want = dynamic->transformer().forward(dynamic->cache(),
                                                 block_batch(a.id, tokens, start, kOutputLogits));
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      const std::vector<float> expected(want->begin(), want->end());
      auto got =
          (*step)->run(fixed_engine->cache(), block_batch(b.id, tokens, start, kOutputLogits));
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_LT(support::max_relative_error(got->first(kBlock * vocab), expected), 1e-5)
          << "denoise at " << start;
      ++forwards;
      // Reveal the first masked position by the argmax (the mask excluded).
      const auto masked =
          static_cast<std::size_t>(std::find(tokens.begin(), tokens.end(), kMask) - tokens.begin());
      const float* row = expected.data() + masked * vocab;
      tokens[masked] = static_cast<int32_t>(std::max_element(row, row + kMask) - row);
    }
    auto want = dynamic->transformer().forward(
        dynamic->cache(), block_batch(a.id, tokens, start, kWriteKv | kOutputLogits));
    ASSERT_TRUE(want.ok());
    const std::vector<float> expected(want->begin(), want->end());
    auto got = (*step)->run(fixed_engine->cache(),
                            block_batch(b.id, tokens, start, kWriteKv | kOutputLogits));
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_LT(support::max_relative_error(*got, expected), 1e-5) << "commit at " << start;
    ++forwards;
    text.resize(static_cast<std::size_t>(start));
    text.insert(text.end(), tokens.begin(), tokens.end());
  }
  EXPECT_GT(forwards, 40);
  // The same entries, the same K/V.
  ASSERT_EQ(dynamic->cache().info(a.id)->stored, 40);
  ASSERT_EQ(fixed_engine->cache().info(b.id)->stored, 40);
  EXPECT_EQ(std::vector<int32_t>(dynamic->cache().positions(a.id)->begin(),
                                 dynamic->cache().positions(a.id)->end()),
            std::vector<int32_t>(fixed_engine->cache().positions(b.id)->begin(),
                                 fixed_engine->cache().positions(b.id)->end()));
  for (int layer = 0; layer < 6; ++layer) {
    auto va = dynamic->cache().view(a.id, layer);
    auto vb = fixed_engine->cache().view(b.id, layer);
    ASSERT_TRUE(va.ok() && vb.ok());
    const KVSegment& sa = va->segments[0];
    const KVSegment& sb = vb->segments[0];
    for (int h = 0; h < 4; ++h)
      for (int64_t e = 0; e < 40; ++e)
        for (int d = 0; d < 16; ++d) {
          const auto at = [&](const Tensor& t) {
            return t.f32()[h * t.stride[0] + e * t.stride[1] + d];
          };
          EXPECT_NEAR(at(sa.k), at(sb.k), 1e-5f);
          EXPECT_NEAR(at(sa.v), at(sb.v), 1e-5f);
        }
  }
}

TEST(FixedShapeStep, AllocatesNothingAfterStart) {
  auto engine = make_engine(kModel, kStatic);
  ASSERT_NE(engine, nullptr);
  auto step = FixedShapeStep::create(engine->model(), *engine->services().backend().value(), kBlock,
                                     kSlots);
  ASSERT_TRUE(step.ok());
  SequenceState lane;
  ASSERT_TRUE(engine->begin_sequence(lane).ok());
  const std::vector<int32_t> tokens = {1, 403, 407, 261};
  std::vector<Batch> batches;  // built before counting: the batch is the caller's
  for (int32_t start = 0; start < 32; start += kBlock) {
    batches.push_back(block_batch(lane.id, {kMask, kMask, kMask, kMask}, start, kOutputLogits));
    batches.push_back(block_batch(lane.id, tokens, start, kWriteKv));
  }
  test::CountAllocations count;
  for (const Batch& batch : batches) ASSERT_TRUE((*step)->run(engine->cache(), batch).ok());
  EXPECT_EQ(count.count(), 0);
  EXPECT_EQ(engine->cache().info(lane.id)->stored, 32);
  ASSERT_TRUE(engine->end_sequence(lane).ok());
}

TEST(FixedShapeStep, OtherStoresAndCodecsAreRefusedClearly) {
  for (const std::string extra : {"[cache]\nplugin = \"paged\"\nmax_tokens = 64\n",
                                  "[cache]\nmax_tokens = 64\n[cache.codec]\nplugin = \"int8\"\n"}) {
    auto engine = make_engine(kModel, extra);
    ASSERT_NE(engine, nullptr);
    auto step = FixedShapeStep::create(engine->model(), *engine->services().backend().value(),
                                       kBlock, kSlots);
    ASSERT_TRUE(step.ok());
    SequenceState lane;
    ASSERT_TRUE(engine->begin_sequence(lane).ok());
    auto got = (*step)->run(engine->cache(),
                            block_batch(lane.id, {1, kMask, kMask, kMask}, 0, kOutputLogits));
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().message().find("cache.plugin = \"static\""), std::string::npos)
        << got.status().message();
  }
}

}  // namespace
}  // namespace tessera
