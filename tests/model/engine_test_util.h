// Builds engines from inline TOML for the model-level tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "tests/support/shared_model_engine.h"

namespace tessera::testing {

// `extra` is appended to a base config (greedy, cpu, static cache); fails the
// test (and returns null) when the engine cannot be built.
inline std::unique_ptr<Engine> make_engine(const std::string& model, const std::string& extra = "",
                                           const std::string& tokenizer = "") {
  auto engine = support::shared_model_engine(model, extra, tokenizer);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return nullptr;
  return std::move(engine).value();
}

// An engine over the model file at `path` (any directory), with `extra`
// appended to its config; null (and a failed test) when it cannot be built.
inline std::unique_ptr<Engine> engine_for_file(const std::string& path, const std::string& extra) {
  auto config = Config::parse("[model]\npath = \"" + path + "\"\n" + extra, "typed.toml");
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  if (!config.ok()) return nullptr;
  auto engine = Engine::create(*config, support::build_tree_registry());
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return nullptr;
  return std::move(engine).value();
}

// Greedy tokens from BOS, generated through the engine.
inline std::vector<int32_t> greedy_sequence(Engine& engine, int64_t length) {
  GenerationRequest request;
  request.prompt = {engine.tokenizer().bos()};
  request.max_new_tokens = length - 1;
  request.stop_at_eos = false;
  std::vector<int32_t> tokens = request.prompt;
  auto stats = engine.generate(request, [&](int32_t t, int) {
    tokens.push_back(t);
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.status().to_string();
  return tokens;
}

// Logits at every position, one token per forward (reading the cache).
inline std::vector<float> incremental_logits(Engine& engine, const std::vector<int32_t>& tokens) {
  const std::size_t vocab = static_cast<std::size_t>(engine.model().config.vocab_size);
  SequenceState seq;
  EXPECT_TRUE(engine.begin_sequence(seq).ok());
  std::vector<float> all;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const int32_t position = static_cast<int32_t>(i);
    auto logits =
        engine.transformer().forward(engine.cache(), seq.id, {&tokens[i], 1}, {&position, 1});
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    EXPECT_EQ(logits->size(), vocab);
    all.insert(all.end(), logits->begin(), logits->end());
  }
  EXPECT_TRUE(engine.end_sequence(seq).ok());
  return all;
}

// Logits at every position from fresh sequences fed the whole prefix at once
// in chunks of `chunk` tokens (no cache from an earlier step when chunk >= n).
inline std::vector<float> batched_logits(Engine& engine, const std::vector<int32_t>& tokens,
                                         std::size_t chunk) {
  SequenceState seq;
  EXPECT_TRUE(engine.begin_sequence(seq).ok());
  std::vector<int32_t> positions(tokens.size());
  std::iota(positions.begin(), positions.end(), 0);
  std::vector<float> all;
  for (std::size_t start = 0; start < tokens.size(); start += chunk) {
    const std::size_t n = std::min(chunk, tokens.size() - start);
    auto logits = engine.transformer().forward(engine.cache(), seq.id, {&tokens[start], n},
                                               {&positions[start], n}, LogitsWanted::kAll);
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    all.insert(all.end(), logits->begin(), logits->end());
  }
  EXPECT_TRUE(engine.end_sequence(seq).ok());
  return all;
}

}  // namespace tessera::testing
