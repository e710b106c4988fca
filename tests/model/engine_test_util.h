// Builds engines from inline TOML for the model-level tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/config/config.h"
#include "core/engine/engine.h"
#include "core/plugin/builtin_plugins.h"
#include "core/plugin/registry.h"

namespace tessera::testing {

inline const PluginRegistry& test_registry() {
  static const PluginRegistry* registry = [] {
    auto* r = new PluginRegistry(builtin_plugins());
    r->scan({TESSERA_BUILD_PLUGIN_DIR});
    return r;
  }();
  return *registry;
}

// `extra` is appended to a base config (greedy, cpu, static cache).
inline std::unique_ptr<Engine> make_engine(const std::string& model, const std::string& extra = "",
                                           const std::string& tokenizer = "") {
  std::string toml =
      "[model]\npath = \"" + std::string(TESSERA_SHARED_DIR) + "/models/" + model + "\"\n";
  if (!tokenizer.empty())
    toml += "tokenizer = \"" + std::string(TESSERA_SHARED_DIR) + "/models/" + tokenizer + "\"\n";
  toml += extra;
  auto config = Config::parse(toml, "test.toml");
  EXPECT_TRUE(config.ok()) << config.status().to_string();
  if (!config.ok()) return nullptr;
  auto engine = Engine::create(*config, test_registry());
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return nullptr;
  return std::move(engine).value();
}

}  // namespace tessera::testing
