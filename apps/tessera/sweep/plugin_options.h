// Which plugin options of a config section the chosen plugins read, and a
// config without the ones that belong to plugins it does not choose. A sweep
// whose axis picks the proposer (or the bench's speculative cases) starts
// from one config holding every candidate's options: decode.draft_model
// means something to ar_draft and a tree over it, and the engine refuses it
// beside ngram.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/config/config.h"
#include "core/plugin/registry.h"
#include "core/status/status.h"

namespace tessera::sweep {

// The options read in `section` by the plugin each kind of that section
// chooses there and by the plugins their "@kind" options name (a tree's
// drafter). NotFound for a chosen plugin the registry does not have.
Result<std::vector<std::string>> options_read(const Config& config, const PluginRegistry& registry,
                                              std::string_view section);

// `config` without the keys of `section` that are options of a known plugin
// of its kinds but read by none of the chosen ones. A key no plugin declares
// stays, so a misspelled key still gets the engine's message.
Result<Config> without_other_plugins_options(const Config& config, const PluginRegistry& registry,
                                             std::string_view section);

}  // namespace tessera::sweep
