// The stores and the batch contract on a real model (stories260K): every
// store with the identity codec gives the static store's tokens; sink_window
// with a window as long as the text is the static store; its windowed
// prefill equals feeding the tokens one at a time; keys stored before RoPE
// give the same tokens; several sequences in one forward, a tree batch and
// tokens that do not write their K/V give what separate chains give; and an
// evicting store generates and scores past cache.max_tokens with flat memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "core/engine/perplexity.h"
#include "tests/model/arch_models.h"
#include "tests/model/engine_test_util.h"
#include "tests/support/reference_forward.h"

namespace tessera {
namespace {

using testing::batched_logits;
using testing::greedy_sequence;
using testing::incremental_logits;
using testing::make_engine;

constexpr const char* kModel = "stories260K.gguf";

// The model as its file holds it (f32, the file's layout), for the dense
// reference forward; an engine's backend may have repacked its own copy.
Result<LoadedModel> reference_model() {
  return load_model(std::string(TESSERA_SHARED_DIR) + "/models/" + kModel);
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The store tests below run on stories260K and on each architecture's tiny
// synthetic model ("tiny-<arch>", make-model's code path).
class KvStrategiesOnModels : public ::testing::TestWithParam<std::string> {
 protected:
  std::string model() const {
    const std::string& param = GetParam();
    if (param.rfind("tiny-", 0) == 0) return testing::arch_model(param.substr(5));
    return param;
  }
};

INSTANTIATE_TEST_SUITE_P(Models, KvStrategiesOnModels,
                         ::testing::Values(kModel, "tiny-llama", "tiny-llama3", "tiny-qwen2",
                                           "tiny-qwen3", "tiny-gemma3"),
                         [](const auto& param_info) {
                           const std::string& param = param_info.param;
                           std::string name = param.substr(0, param.find('.'));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(KvStrategiesOnModels, EveryStoreWithIdentityGivesTheStaticTokens) {
  const std::string path = model();
  auto reference = make_engine(path);
  ASSERT_NE(reference, nullptr);
  const auto want = greedy_sequence(*reference, 150);
  for (const std::string& cache :
       {std::string("[cache]\nplugin = \"paged\"\nblock_size = 16\n"),
        std::string("[cache]\nplugin = \"paged\"\nblock_size = 5\n"),
        std::string("[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 200\n"),
        std::string("[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 200\n"
                    "positions = \"reassign\"\n"),
        std::string("[cache]\ncodec_stage = \"pre_rope\"\n"),
        std::string("[cache]\nplugin = \"sink_window\"\nwindow = 300\ncodec_stage = \"pre_rope\"\n"
                    "positions = \"reassign\"\n"),
        std::string("[cache]\ncodec_span = \"token\"\n"),
        std::string("[cache]\nplugin = \"paged\"\nblock_size = 5\ncodec_span = \"token\"\n"),
        std::string("[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 200\n"
                    "codec_span = \"token\"\n")}) {
    SCOPED_TRACE(cache);
    auto engine = make_engine(path, cache);
    ASSERT_NE(engine, nullptr);
    EXPECT_EQ(greedy_sequence(*engine, 150), want);
  }
}

// A sink_window prefill sees, for every token, exactly what one-at-a-time
// decoding sees: the same logits, bit for bit, while the window slides.
TEST_P(KvStrategiesOnModels, WindowedPrefillEqualsOneTokenAtATime) {
  const std::string path = model();
  for (const std::string positions : {"keep", "reassign"}) {
    for (const std::string stage : {"post_rope", "pre_rope"}) {
      SCOPED_TRACE(positions + " " + stage);
      auto engine = make_engine(path,
                                "[cache]\nplugin = \"sink_window\"\nsink = 2\nwindow = 8\n"
                                "max_tokens = 64\npositions = \"" +
                                    positions + "\"\ncodec_stage = \"" + stage + "\"\n");
      ASSERT_NE(engine, nullptr);
      auto reference = make_engine(path);
      const auto tokens = greedy_sequence(*reference, 40);
      const auto one_by_one = incremental_logits(*engine, tokens);
      EXPECT_TRUE(bitwise_equal(batched_logits(*engine, tokens, tokens.size()), one_by_one));
      EXPECT_TRUE(bitwise_equal(batched_logits(*engine, tokens, 7), one_by_one));
    }
  }
}

// A lossy codec with one vector per token across the KV heads: decoding one
// token at a time (attention on the encoded records) gives the logits of a
// batched prefill (chunk-mates' K/V decoded) within float rounding, on every
// store; and the span changes what is stored (else it would prove nothing).
TEST_P(KvStrategiesOnModels, OneCodecVectorPerTokenDecodesAsItPrefills) {
  const std::string path = model();
  auto reference = make_engine(path);
  ASSERT_NE(reference, nullptr);
  const auto tokens = greedy_sequence(*reference, 40);
  const std::string lattice = "[cache.codec]\nplugin = \"lattice\"\nlattice = \"E8\"\nq = 37\n";
  const auto max_difference = [](const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    return worst;
  };
  std::vector<float> per_token_static;
  for (const std::string store : {"static", "paged", "sink_window"}) {
    SCOPED_TRACE(store);
    auto engine = make_engine(
        path, "[cache]\nplugin = \"" + store + "\"\ncodec_span = \"token\"\n" + lattice);
    ASSERT_NE(engine, nullptr);
    const auto one_by_one = incremental_logits(*engine, tokens);
    const auto batched = batched_logits(*engine, tokens, tokens.size());
    ASSERT_EQ(one_by_one.size(), batched.size());
    EXPECT_LT(max_difference(one_by_one, batched), 1e-3);
    if (store == "static") per_token_static = one_by_one;
  }
  auto per_head = make_engine(path, "[cache]\n" + lattice);
  ASSERT_NE(per_head, nullptr);
  EXPECT_GT(max_difference(incremental_logits(*per_head, tokens), per_token_static), 1e-2);
}

// The lossy codecs decode on every store, and the static and paged stores
// give the same tokens through them.
TEST_P(KvStrategiesOnModels, LossyCodecsDecodeOnEveryStore) {
  const std::string path = model();
  for (const std::string codec : {"int8", "int4", "f16", "bf16"}) {
    SCOPED_TRACE(codec);
    std::vector<int32_t> on_static;
    for (const std::string store : {"static", "paged", "sink_window"}) {
      SCOPED_TRACE(store);
      auto engine = make_engine(
          path, "[cache]\nplugin = \"" + store + "\"\n[cache.codec]\nplugin = \"" + codec + "\"\n");
      ASSERT_NE(engine, nullptr);
      const auto tokens = greedy_sequence(*engine, 64);
      EXPECT_EQ(tokens.size(), 64u);
      if (store == "static") on_static = tokens;
      if (store == "paged") {
        EXPECT_EQ(tokens, on_static);
      }
    }
  }
}

// Half-float K/V move a text's mean NLL by no more than their rounding (f16:
// 2^-11 relative per element, bf16: 2^-8). Fed 16 tokens per forward, so
// most keys each query sees come from the store, as half floats, read as
// stored on every store.
TEST_P(KvStrategiesOnModels, HalfFloatKvIsWithinItsRoundingOfF32) {
  const std::string path = model();
  const std::vector<int32_t> text = greedy_sequence(*make_engine(path), 160);
  const std::string chunked = "[decode]\nmax_batch = 16\n";
  auto f32 = score_tokens(*make_engine(path, chunked), text);
  ASSERT_TRUE(f32.ok()) << f32.status().to_string();
  const std::vector<int32_t> prefix(text.begin(), text.begin() + 40);
  const std::vector<float> exact = incremental_logits(*make_engine(path), prefix);
  for (const auto& [codec, tolerance] :
       {std::pair<std::string, double>{"f16", 2e-3}, {"bf16", 2e-2}})
    for (const std::string store : {"static", "paged"}) {
      SCOPED_TRACE(codec + " on " + store);
      auto engine = make_engine(path, chunked + "[cache]\nplugin = \"" + store +
                                          "\"\n[cache.codec]\nplugin = \"" + codec + "\"\n");
      ASSERT_NE(engine, nullptr);
      EXPECT_EQ(engine->cache().codec(0).record_layout(8).format,
                codec == "f16" ? KVRecordFormat::kF16 : KVRecordFormat::kBF16);
      auto half = score_tokens(*engine, text);
      ASSERT_TRUE(half.ok()) << half.status().to_string();
      EXPECT_NEAR(half->mean_nll, f32->mean_nll, tolerance * std::max(1.0, f32->mean_nll));
      // One token at a time every key but its own comes from the store, rounded.
      const std::vector<float> rounded = incremental_logits(*engine, prefix);
      ASSERT_EQ(rounded.size(), exact.size());
      EXPECT_NE(std::memcmp(rounded.data(), exact.data(), exact.size() * sizeof(float)), 0);
    }
}

// The window changes the model's view: past the window the logits differ
// from the full cache's (else the test above would prove nothing).
TEST(KvStrategies, ASmallWindowChangesWhatTheModelSees) {
  auto windowed = make_engine(kModel, "[cache]\nplugin = \"sink_window\"\nsink = 2\nwindow = 8\n");
  auto full = make_engine(kModel);
  ASSERT_NE(windowed, nullptr);
  const auto tokens = greedy_sequence(*full, 24);
  const auto a = batched_logits(*windowed, tokens, tokens.size());
  const auto b = batched_logits(*full, tokens, tokens.size());
  const std::size_t vocab = 512;
  // Identical while everything is inside the window, different after.
  EXPECT_EQ(std::memcmp(a.data(), b.data(), 9 * vocab * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(a.data() + 20 * vocab, b.data() + 20 * vocab, vocab * sizeof(float)), 0);
}

// Several sequences in one forward: each row equals its sequence fed alone.
TEST(KvStrategies, SeveralSequencesInOneForward) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> a = {1, 403, 407, 261, 300};
  const std::vector<int32_t> b = {1, 80, 90};
  const auto alone_a = batched_logits(*engine, a, a.size());
  const auto alone_b = batched_logits(*engine, b, b.size());

  SequenceState sa, sb;
  ASSERT_TRUE(engine->begin_sequence(sa).ok());
  ASSERT_TRUE(engine->begin_sequence(sb).ok());
  Batch batch;
  // Interleaved: two tokens of a, all of b, the rest of a.
  batch.add_chain(sa.id, std::span(a).first(2), 0, true);
  batch.add_chain(sb.id, b, 0, true);
  batch.add_chain(sa.id, std::span(a).subspan(2), 2, true);
  auto logits = engine->transformer().forward(engine->cache(), batch);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  const std::size_t vocab = 512;
  const auto row = [&](std::size_t r) {
    return std::vector<float>(logits->begin() + static_cast<std::ptrdiff_t>(r * vocab),
                              logits->begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab));
  };
  const auto of = [&](const std::vector<float>& all, std::size_t r) {
    return std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(r * vocab),
                              all.begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab));
  };
  EXPECT_TRUE(bitwise_equal(row(0), of(alone_a, 0)));
  EXPECT_TRUE(bitwise_equal(row(1), of(alone_a, 1)));
  for (std::size_t i = 0; i < b.size(); ++i) EXPECT_TRUE(bitwise_equal(row(2 + i), of(alone_b, i)));
  for (std::size_t i = 2; i < a.size(); ++i)
    EXPECT_TRUE(bitwise_equal(row(3 + i), of(alone_a, i))) << "a[" << i << "]";
  EXPECT_EQ(engine->cache().info(sa.id)->logical_length, 5);
  EXPECT_EQ(engine->cache().info(sb.id)->logical_length, 3);
}

// A tree batch: each node's logits equal its root-to-node path fed as a chain.
// Siblings share a position and do not see each other; nothing is written.
TEST(KvStrategies, TreeBatchEqualsItsPathsAsChains) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prefix = {1, 403, 407};
  SequenceState seq;
  ASSERT_TRUE(engine->begin_sequence(seq).ok());
  std::vector<int32_t> positions = {0, 1, 2};
  ASSERT_TRUE(engine->transformer().forward(engine->cache(), seq.id, prefix, positions).ok());
  // Tree under the prefix: 0:d (pos 3), 1:e (pos 3), 2:f child of d (pos 4), 3:g child of e (pos
  // 4).
  Batch tree;
  tree.add(261, seq.id, 3, -1, kOutputLogits);
  tree.add(300, seq.id, 3, -1, kOutputLogits);
  tree.add(80, seq.id, 4, 0, kOutputLogits);
  tree.add(90, seq.id, 4, 1, kOutputLogits);
  auto logits = engine->transformer().forward(engine->cache(), tree);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  const std::vector<float> got(logits->begin(), logits->end());
  EXPECT_EQ(engine->cache().info(seq.id)->logical_length, 3) << "tree nodes write no K/V";

  const std::vector<std::vector<int32_t>> paths = {
      {1, 403, 407, 261}, {1, 403, 407, 300}, {1, 403, 407, 261, 80}, {1, 403, 407, 300, 90}};
  const std::size_t vocab = 512;
  for (std::size_t node = 0; node < paths.size(); ++node) {
    const auto chain = batched_logits(*engine, paths[node], paths[node].size());
    const std::vector<float> want(chain.end() - static_cast<std::ptrdiff_t>(vocab), chain.end());
    const std::vector<float> have(got.begin() + static_cast<std::ptrdiff_t>(node * vocab),
                                  got.begin() + static_cast<std::ptrdiff_t>((node + 1) * vocab));
    EXPECT_TRUE(bitwise_equal(have, want)) << "node " << node;
  }
}

// A verification tree, against the dense reference: each node sees the prefix,
// its ancestors and itself (siblings at one position, never each other).
TEST(KvStrategies, TreeNodesSeeTheirAncestorsOnly) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  SequenceState seq;
  ASSERT_TRUE(engine->begin_sequence(seq).ok());
  const std::vector<int32_t> prefix = {1, 403, 407};
  std::vector<int32_t> prefix_positions = {0, 1, 2};
  ASSERT_TRUE(
      engine->transformer().forward(engine->cache(), seq.id, prefix, prefix_positions).ok());
  // Nodes: 0 (pos 3), 1 (pos 3, 0's sibling), 2 under 1 (pos 4), 3 under 2 (pos 5).
  const std::vector<int32_t> nodes = {261, 300, 80, 90};
  const std::vector<int32_t> parents = {-1, -1, 1, 2};
  const std::vector<int32_t> node_positions = {3, 3, 4, 5};
  Batch tree;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    tree.add(nodes[i], seq.id, node_positions[i], parents[i], kOutputLogits);
  auto got = engine->transformer().forward(engine->cache(), tree);
  ASSERT_TRUE(got.ok()) << got.status().to_string();

  // The reference: prefix and nodes in one dense batch.
  std::vector<int32_t> tokens = prefix, positions = prefix_positions;
  tokens.insert(tokens.end(), nodes.begin(), nodes.end());
  positions.insert(positions.end(), node_positions.begin(), node_positions.end());
  const std::size_t n = tokens.size();
  std::vector<std::vector<bool>> sees(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < std::min<std::size_t>(i + 1, 3); ++j) sees[i][j] = true;
  for (std::size_t node = 0; node < nodes.size(); ++node)
    for (int32_t a = static_cast<int32_t>(node); a >= 0; a = parents[static_cast<std::size_t>(a)])
      sees[3 + node][3 + static_cast<std::size_t>(a)] = true;
  const Result<LoadedModel> model = reference_model();
  ASSERT_TRUE(model.ok());
  const std::vector<float> all = support::reference_logits(*model, tokens, positions, sees);
  const std::span<const float> want = std::span(all).subspan(3 * 512);
  EXPECT_LT(support::max_relative_error(*got, want), 1e-5);
  // Seeing a sibling would change the logits: the reference with 1 seeing 0 differs.
  sees[4][3] = true;
  const std::vector<float> leaky = support::reference_logits(*model, tokens, positions, sees);
  EXPECT_GT(
      support::max_relative_error(got->subspan(512, 512), std::span(leaky).subspan(4 * 512, 512)),
      1e-3);
}

// A forward split at a layer: the first layers with their residual streams
// kept, then the rest from them, give the bits of the whole forward (how a
// drafter conditioned on the target's hidden states, or the target's first
// layers, use the layer range).
TEST(KvStrategies, AForwardSplitAtALayerGivesTheWholeForward) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  SequenceState seq;
  ASSERT_TRUE(engine->begin_sequence(seq).ok());
  Batch chain;
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 80};
  for (int32_t i = 0; i < 5; ++i)
    chain.add(tokens[static_cast<std::size_t>(i)], seq.id, i, i - 1, kOutputLogits);
  Transformer& t = engine->transformer();
  auto whole = t.forward(engine->cache(), chain);
  ASSERT_TRUE(whole.ok());
  const std::vector<float> want(whole->begin(), whole->end());

  ForwardOptions first;
  first.layer_end = 2;
  first.output_hidden = true;
  first.output_logits = false;
  ASSERT_TRUE(t.forward(engine->cache(), chain, first).ok());
  const std::vector<float> hidden(t.hidden_states().begin(), t.hidden_states().end());
  ASSERT_EQ(hidden.size(), 5u * 64u);
  ForwardOptions rest;
  rest.layer_begin = 2;
  rest.hidden_in = hidden;
  auto split = t.forward(engine->cache(), chain, rest);
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  EXPECT_TRUE(bitwise_equal(std::vector<float>(split->begin(), split->end()), want));
  EXPECT_EQ(engine->cache().info(seq.id)->logical_length, 0) << "a layer range writes nothing";

  // A range that stops early cannot write K/V: the cache holds every layer.
  Batch writes;
  writes.add(1, seq.id, 0, -1, kWriteKv | kOutputLogits);
  auto refused = t.forward(engine->cache(), writes, first);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cannot write K/V"), std::string::npos);
}

// A block: tokens with one block id see each other both ways, as the dense
// reference with the whole block visible to each of them computes.
TEST(KvStrategies, BlockTokensSeeEachOther) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  SequenceState seq;
  ASSERT_TRUE(engine->begin_sequence(seq).ok());
  const std::vector<int32_t> tokens = {300, 301, 302, 303};
  const std::vector<int32_t> positions = {0, 1, 2, 3};
  Batch block;
  for (int32_t i = 0; i < 4; ++i)
    block.add(tokens[static_cast<std::size_t>(i)], seq.id, i, -1, kOutputLogits, /*block=*/1);
  auto got = engine->transformer().forward(engine->cache(), block);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  const Result<LoadedModel> model = reference_model();
  ASSERT_TRUE(model.ok());
  const std::vector<std::vector<bool>> everyone(4, std::vector<bool>(4, true));
  const std::vector<float> want = support::reference_logits(*model, tokens, positions, everyone);
  EXPECT_LT(support::max_relative_error(*got, want), 1e-5);
  // A causal chain is not the block: the reference knows the difference.
  std::vector<std::vector<bool>> causal(4, std::vector<bool>(4, false));
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j <= i; ++j) causal[i][j] = true;
  const std::vector<float> chain = support::reference_logits(*model, tokens, positions, causal);
  EXPECT_GT(support::max_relative_error(std::span(*got).first(512), std::span(chain).first(512)),
            1e-3);
}

// An evicting store runs past cache.max_tokens: generation and scoring go
// on, and the cache's memory stays at its window.
TEST(KvStrategies, EvictingStoreRunsPastMaxTokensWithFlatMemory) {
  auto engine = make_engine(
      kModel, "[cache]\nplugin = \"sink_window\"\nsink = 4\nwindow = 60\nmax_tokens = 64\n");
  ASSERT_NE(engine, nullptr);
  GenerationRequest request;
  request.prompt = {1};
  request.max_new_tokens = 300;
  request.stop_at_eos = false;
  auto stats = engine->generate(request, [](int32_t, int) { return true; });
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->generated_tokens, 300);
  const std::size_t per_token =
      5 * 2 * 4 * 8 * 4 + 4;  // layers, K/V, kv heads, head dim, f32; position
  EXPECT_LE(engine->cache().bytes().peak, 64 * per_token);

  std::vector<int32_t> text = greedy_sequence(*make_engine(kModel), 200);
  for (int i = 0; i < 3; ++i) text.insert(text.end(), text.begin() + 1, text.begin() + 200);
  auto scored = score_tokens(*engine, text);
  ASSERT_TRUE(scored.ok()) << scored.status().to_string();
  EXPECT_EQ(scored->tokens, static_cast<int64_t>(text.size()) - 1);
  EXPECT_TRUE(std::isfinite(scored->mean_nll));
  EXPECT_LE(engine->cache().bytes().peak, 64 * per_token);
}

// Forward errors on the batch name what is wrong.
TEST(KvStrategies, MalformedBatchesAreRefused) {
  auto engine = make_engine(kModel);
  ASSERT_NE(engine, nullptr);
  SequenceState seq;
  ASSERT_TRUE(engine->begin_sequence(seq).ok());
  Batch bad_parent;
  bad_parent.add(5, seq.id, 0, 3, kOutputLogits);
  EXPECT_EQ(engine->transformer().forward(engine->cache(), bad_parent).status().code(),
            StatusCode::kInvalidArgument);
  Batch unknown_seq;
  unknown_seq.add(5, 99, 0, -1, kOutputLogits);
  EXPECT_EQ(engine->transformer().forward(engine->cache(), unknown_seq).status().code(),
            StatusCode::kNotFound);
  Batch long_tree;
  for (int i = 0; i < 200; ++i) long_tree.add(5, seq.id, 0, -1, 0);
  const Status st = engine->transformer().forward(engine->cache(), long_tree).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("only a chain"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace tessera
