// Builds engines from inline TOML for the model-level tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

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

}  // namespace tessera::testing
