// Block-diffusion decoding of the real SDAR model (tok512-sdar-1m) through the
// engine: the reference text and forward counts of ../shared/models/README.md,
// the mask token never emitted, the cache holding exactly the committed
// blocks' K/V (denoise forwards write nothing), every store and codec, and
// the errors for configurations that cannot work.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/decode/spec_test_util.h"

namespace tessera {
namespace {

using testing::Generated;
using testing::make_engine;
using testing::request_for;
using testing::run;

constexpr const char* kModel = "tok512-sdar-1m.gguf";
constexpr int32_t kMask = 512;
constexpr int kBlock = 4;

std::string diffusion(const std::string& decode_extra = "", const std::string& cache = "") {
  return "[decode]\nverifier = \"block_diffusion\"\n" + decode_extra + cache;
}

GenerationRequest from_bos(const Engine& engine, int64_t tokens, uint64_t seed = 0) {
  GenerationRequest request;
  request.prompt = {engine.tokenizer().bos()};
  request.max_new_tokens = tokens;
  request.stop_at_eos = false;
  request.seed = seed;
  return request;
}

// ../shared/models/README.md: greedy, threshold 0.9, 128 tokens from BOS.
TEST(BlockDiffusion, GreedyFromBosPrintsTheReferenceTextWithItsForwardCounts) {
  auto engine = make_engine(kModel, diffusion("threshold = 0.9\n"));
  ASSERT_NE(engine, nullptr);
  const auto out = run(*engine, from_bos(*engine, 128));
  ASSERT_EQ(out.tokens.size(), 128u);
  const std::string text = engine->tokenizer().decode(out.tokens);
  const std::string reference =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
      "park. One day, she saw a big, shiny box in the box. She wanted to play with it, but she "
      "didn't want to play with her toys.";
  EXPECT_EQ(text.substr(0, reference.size()), reference) << text;
  EXPECT_EQ(out.stats.decode.denoise_forwards, 123);
  EXPECT_EQ(out.stats.decode.commit_forwards, 33);
  EXPECT_EQ(out.stats.decode.target_forwards, 123 + 33);
}

// Sampling, every rule: no emitted token is the mask.
TEST(BlockDiffusion, TheMaskTokenIsNeverEmitted) {
  for (const std::string rule : {"threshold", "sequential", "low_confidence", "entropy_bounded"}) {
    auto engine = make_engine(
        kModel, diffusion("unmask = \"" + rule + "\"\n") + "[sampling]\ntemperature = 1.5\n");
    ASSERT_NE(engine, nullptr);
    for (uint64_t seed = 1; seed <= (testing::kSanitized ? 1u : 4u); ++seed) {
      const auto out = run(*engine, from_bos(*engine, 64, seed));
      ASSERT_EQ(out.tokens.size(), 64u) << rule;
      for (const int32_t token : out.tokens) EXPECT_NE(token, kMask) << rule;
    }
  }
}

// What the cache holds after decoding equals a block-causal prefill of the
// decoded text: the commit forwards wrote each block from its final tokens,
// and no denoise forward left anything behind.
TEST(BlockDiffusion, TheCacheHoldsExactlyTheCommittedBlocks) {
  auto engine = make_engine(kModel, diffusion());
  ASSERT_NE(engine, nullptr);
  const auto request = request_for(*engine, "Tom and Sue went to the park", 40);
  SequenceState lane;
  lane.tokens = request.prompt;
  ASSERT_TRUE(engine->begin_sequence(lane).ok());
  std::vector<int32_t> emitted;
  while (lane.tokens.size() < request.prompt.size() + 40) {
    ASSERT_TRUE(engine->step(lane, emitted).ok());
    ASSERT_EQ(lane.cached, static_cast<int64_t>(lane.tokens.size()));
    ASSERT_EQ(lane.cached % kBlock, 0);
  }
  const DecodeCounters& counters = engine->counters();
  EXPECT_GT(counters.denoise_forwards, counters.commit_forwards);
  auto info = engine->cache().info(lane.id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->stored, lane.cached);

  // The same tokens prefilled block by block into a fresh sequence.
  SequenceState fresh;
  fresh.tokens = lane.tokens;
  ASSERT_TRUE(engine->begin_sequence(fresh).ok());
  ASSERT_TRUE(engine->prefill(fresh).ok());
  ASSERT_EQ(fresh.cached, lane.cached);
  const CacheGeometry& g = engine->cache().geometry();
  for (int layer = 0; layer < g.layers; ++layer) {
    std::vector<float> a, b;
    for (const auto& [seq, out] : {std::pair{lane.id, &a}, std::pair{fresh.id, &b}}) {
      auto view = engine->cache().view(seq, layer);
      ASSERT_TRUE(view.ok());
      for (const KVSegment& s : view->segments)
        for (int h = 0; h < g.kv_heads; ++h)
          for (int64_t e = 0; e < s.count; ++e)
            for (int d = 0; d < g.head_dim; ++d) {
              out->push_back(s.k.f32()[h * s.k.stride[0] + e * s.k.stride[1] + d]);
              out->push_back(s.v.f32()[h * s.v.stride[0] + e * s.v.stride[1] + d]);
            }
    }
    ASSERT_EQ(a.size(), static_cast<std::size_t>(lane.cached * g.kv_heads * g.head_dim * 2));
    EXPECT_EQ(a, b) << "layer " << layer;
  }
  ASSERT_TRUE(engine->end_sequence(fresh).ok());
  ASSERT_TRUE(engine->end_sequence(lane).ok());
}

// The committed K/V go through the store and codec like any other: with an
// identity codec every store decodes the static store's tokens (the window
// larger than the text); a lossy codec still decodes (its own tokens).
TEST(BlockDiffusion, EveryStoreDecodesTheStaticTokens) {
  const auto want = run(*make_engine(kModel, diffusion()), from_bos(*make_engine(kModel), 96));
  for (const std::string cache :
       {"[cache]\nplugin = \"paged\"\n", "[cache]\nplugin = \"sink_window\"\nwindow = 200\n"}) {
    auto engine = make_engine(kModel, diffusion("", cache));
    ASSERT_NE(engine, nullptr);
    EXPECT_EQ(run(*engine, from_bos(*engine, 96)).tokens, want.tokens) << cache;
  }
  for (const std::string codec : {"int8", "lattice"}) {
    auto engine = make_engine(kModel, diffusion("", "[cache.codec]\nplugin = \"" + codec + "\"\n"));
    ASSERT_NE(engine, nullptr);
    const auto out = run(*engine, from_bos(*engine, 96));
    EXPECT_EQ(out.tokens.size(), 96u) << codec;
    EXPECT_GT(engine->cache().bytes().peak, 0u);
  }
}

// A prompt longer than a block: its whole blocks prefilled block-causally in
// one forward, the rest starting the first block; several lanes (branches)
// decode the same in one sequence (bim) and in forks (batched).
TEST(BlockDiffusion, BranchesDecodeTheSameInBothLayouts) {
  std::vector<std::vector<int32_t>> got[2];
  int layout = 0;
  for (const std::string name : {"bim", "batched"}) {
    auto engine = make_engine(kModel, diffusion("branch_layout = \"" + name + "\"\n"));
    ASSERT_NE(engine, nullptr);
    auto request = request_for(*engine, "Once upon a time", 24);
    request.branches = {*engine->tokenizer().encode(" there was", false),
                        *engine->tokenizer().encode(" a big dog", false)};
    got[layout++] = run(*engine, request).branches;
  }
  ASSERT_EQ(got[0].size(), 2u);
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(got[0][0].size(), 24u);
  EXPECT_NE(got[0][0], got[0][1]);
}

// decode.fixed_shape: every forward through the fixed-shape step gives the
// dynamic path's tokens and denoise forwards (the prompt's blocks are
// prefilled one per step, so commits differ by the prompt's blocks).
TEST(BlockDiffusion, TheFixedShapeStepDecodesTheSameTokens) {
  for (const std::string prompt : {"", "Tom went to the park with his dog. They"}) {
    Generated got[2];
    for (int fixed = 0; fixed < 2; ++fixed) {
      auto engine = make_engine(
          kModel, diffusion(fixed ? "fixed_shape = true\n" : "") + "[cache]\nmax_tokens = 256\n");
      ASSERT_NE(engine, nullptr);
      got[fixed] =
          run(*engine, prompt.empty() ? from_bos(*engine, 64) : request_for(*engine, prompt, 64));
    }
    EXPECT_EQ(got[0].tokens, got[1].tokens) << prompt;
    EXPECT_EQ(got[0].stats.decode.denoise_forwards, got[1].stats.decode.denoise_forwards);
  }
}

// decode.fuse_commit: a finished block is written by the next block's first
// denoise forward (two blocks in one batch): the same tokens, the same
// denoise forwards, no commit forwards but the prompt's.
TEST(BlockDiffusion, FusedCommitsDecodeTheSameTokensWithFewerForwards) {
  for (const std::string prompt : {"", "Tom went to the park with his dog. They"}) {
    Generated got[2];
    for (int fused = 0; fused < 2; ++fused) {
      auto engine = make_engine(kModel, diffusion(fused ? "fuse_commit = true\n" : ""));
      ASSERT_NE(engine, nullptr);
      got[fused] =
          run(*engine, prompt.empty() ? from_bos(*engine, 64) : request_for(*engine, prompt, 64));
    }
    EXPECT_EQ(got[0].tokens, got[1].tokens) << prompt;
    EXPECT_EQ(got[0].stats.decode.denoise_forwards, got[1].stats.decode.denoise_forwards);
    EXPECT_LE(got[1].stats.decode.commit_forwards, 1);
    EXPECT_GE(got[0].stats.decode.commit_forwards, 16);
  }
  auto refused =
      support::shared_model_engine(kModel, diffusion("fuse_commit = true\nfixed_shape = true\n"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("fuse_commit"), std::string::npos);
}

TEST(BlockDiffusion, AnAutoregressiveModelIsRefusedClearly) {
  auto engine = support::shared_model_engine("tok512-ar-1m.gguf", diffusion());
  ASSERT_FALSE(engine.ok());
  const std::string message = engine.status().message();
  EXPECT_NE(message.find("needs a block-diffusion model"), std::string::npos) << message;
  EXPECT_NE(message.find("tok512-ar-1m.gguf"), std::string::npos) << message;
  EXPECT_NE(message.find("decode.verifier = \"ar\""), std::string::npos) << message;
}

TEST(BlockDiffusion, AProposerIsRefusedClearly) {
  auto engine = support::shared_model_engine(kModel, diffusion("proposer = \"ngram\"\n"));
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("decode.proposer = \"none\""), std::string::npos)
      << engine.status().message();
}

TEST(BlockDiffusion, TheArVerifierOnADiffusionModelWarns) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  bool warned = false;
  for (const std::string& warning : engine->warnings())
    warned = warned || warning.find("decode.verifier = \"block_diffusion\"") != std::string::npos;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace tessera
