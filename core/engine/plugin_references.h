// Plugins named by the options of other plugins: an option whose choices are
// "@<kind>" holds the name of a plugin of that kind (core/plugin/options.h),
// which shares the section and is created by the plugin that names it
// (`tree` names the drafter it grows). The engine follows these names before
// it checks a section, so every key there belongs to a plugin that will read it.
#pragma once

#include <vector>

#include "core/config/config.h"
#include "core/plugin/registry.h"

namespace tessera {

// `roots` and, transitively, every plugin their "@kind" options name in
// `section` (the value set in the config, or the option's default), each
// once, in the order found. Errors name the option key and the missing
// plugin (with the registry's did-you-mean).
Result<std::vector<const PluginRecord*>> plugins_named_in(const Config& config,
                                                          const PluginRegistry& registry,
                                                          std::string_view section,
                                                          std::vector<const PluginRecord*> roots);

}  // namespace tessera
