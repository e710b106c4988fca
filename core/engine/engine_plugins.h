// The first step of Engine::create: which plugin serves each role, with its
// checked options. Done before anything is loaded, so a typo in a plugin name
// or an option never waits for a model load.
#pragma once

#include <vector>

#include "core/config/config.h"
#include "core/plugin/options.h"
#include "core/plugin/registry.h"

namespace tessera {

struct EnginePlugins {
  const PluginRecord* backend = nullptr;
  const PluginRecord* cache = nullptr;
  const PluginRecord* codec = nullptr;
  const PluginRecord* proposer = nullptr;
  const PluginRecord* verifier = nullptr;
  const PluginRecord* scheduler = nullptr;
  // decode.alternate_proposers, in order.
  std::vector<const PluginRecord*> alternates;
  OptionValues backend_options, cache_options, codec_options, scheduler_options;
  // [decode] holds the proposer's and the verifier's options, and those of
  // every plugin they name ("@kind" options: `tree`'s drafter): the proposer
  // first, the verifier, the alternates, then the named ones.
  std::vector<const PluginRecord*> decode_plugins;
  std::vector<OptionValues> decode_options;
};

Result<EnginePlugins> choose_engine_plugins(const Config& config, const PluginRegistry& registry);

}  // namespace tessera
