// Engines over the models in ../shared/models, built from inline TOML with the
// plugins of this build tree. Shared by the model tests and the benchmarks,
// so it reports errors as Status instead of test assertions.
#pragma once

#include <memory>
#include <string>

#include "core/config/config.h"
#include "core/engine/engine.h"
#include "core/plugin/builtin_plugins.h"
#include "core/plugin/registry.h"

namespace tessera::support {

inline const PluginRegistry& build_tree_registry() {
  static const PluginRegistry* registry = [] {
    auto* r = new PluginRegistry(builtin_plugins());
    r->scan({TESSERA_BUILD_PLUGIN_DIR});
    return r;
  }();
  return *registry;
}

// `extra` TOML is appended to the defaults (greedy, cpu, static cache).
// `tokenizer` names a separate tokenizer file (llama2.c checkpoints).
inline Result<std::unique_ptr<Engine>> shared_model_engine(const std::string& model,
                                                           const std::string& extra = "",
                                                           const std::string& tokenizer = "") {
  const std::string models = std::string(TESSERA_SHARED_DIR) + "/models/";
  // An absolute path is a model elsewhere (the build tree's synthetic ones).
  const std::string path = model.starts_with('/') ? model : models + model;
  std::string toml = "[model]\npath = \"" + path + "\"\n";
  if (!tokenizer.empty()) toml += "tokenizer = \"" + models + tokenizer + "\"\n";
  toml += extra;
  auto config = Config::parse(toml, "inline.toml");
  if (!config.ok()) return config.status();
  return Engine::create(*config, build_tree_registry());
}

}  // namespace tessera::support
