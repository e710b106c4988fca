#include "core/engine/engine_plugins.h"

#include <algorithm>
#include <string>

#include "core/engine/plugin_references.h"
#include "core/plugin/plugin_kinds.h"

namespace tessera {
namespace {

Result<const PluginRecord*> find_role(const Config& config, const PluginRegistry& registry,
                                      std::string_view kind) {
  const PluginKind& role = *find_plugin_kind(kind);
  const std::string name = config.get_string(role.name_key);
  auto found = registry.find(role.name, name);
  if (!found.ok()) return found.status().with_context(std::string(role.name_key));
  return found;
}

Result<OptionValues> options_for(const Config& config, std::string_view kind,
                                 const PluginRecord* rec) {
  const PluginKind& role = *find_plugin_kind(kind);
  return config.plugin_options(role.section, rec->options(),
                               std::string(role.name) + " plugin '" + rec->name() + "'");
}

// decode.alternate_proposers: proposers a lane may draft with instead of
// decode.proposer (a tessera serve session picks one).
Result<std::vector<const PluginRecord*>> alternate_proposers(const Config& config,
                                                             const PluginRegistry& registry,
                                                             const PluginRecord* proposer) {
  std::vector<const PluginRecord*> alternates;
  for (const std::string& name : config.get_list("decode.alternate_proposers")) {
    auto found = registry.find("proposer", name);
    if (!found.ok()) return found.status().with_context("decode.alternate_proposers");
    if (*found == proposer ||
        std::find(alternates.begin(), alternates.end(), *found) != alternates.end())
      return invalid_argument(
          "decode.alternate_proposers: '" + name +
          "' is decode.proposer or listed twice; list each other proposer once");
    alternates.push_back(*found);
  }
  return alternates;
}

}  // namespace

Result<EnginePlugins> choose_engine_plugins(const Config& config, const PluginRegistry& registry) {
  EnginePlugins p;
  ASSIGN_OR_RETURN(p.backend, find_role(config, registry, "backend"));
  ASSIGN_OR_RETURN(p.cache, find_role(config, registry, "cache"));
  ASSIGN_OR_RETURN(p.codec, find_role(config, registry, "compressor"));
  ASSIGN_OR_RETURN(p.proposer, find_role(config, registry, "proposer"));
  ASSIGN_OR_RETURN(p.verifier, find_role(config, registry, "verifier"));
  ASSIGN_OR_RETURN(p.scheduler, find_role(config, registry, "scheduler"));
  ASSIGN_OR_RETURN(p.backend_options, options_for(config, "backend", p.backend));
  ASSIGN_OR_RETURN(p.cache_options, options_for(config, "cache", p.cache));
  ASSIGN_OR_RETURN(p.codec_options, options_for(config, "compressor", p.codec));
  ASSIGN_OR_RETURN(p.scheduler_options, options_for(config, "scheduler", p.scheduler));
  ASSIGN_OR_RETURN(p.alternates, alternate_proposers(config, registry, p.proposer));

  // A key in [decode] must belong to one of the plugins that read it.
  std::vector<const PluginRecord*> roots = {p.proposer, p.verifier};
  roots.insert(roots.end(), p.alternates.begin(), p.alternates.end());
  ASSIGN_OR_RETURN(p.decode_plugins, plugins_named_in(config, registry, "decode", roots));
  std::vector<std::string> descriptions;
  for (const PluginRecord* rec : p.decode_plugins)
    descriptions.push_back(rec->kind() + " plugin '" + rec->name() + "'");
  std::vector<PluginSchema> schemas;
  for (std::size_t i = 0; i < p.decode_plugins.size(); ++i)
    schemas.push_back({descriptions[i], p.decode_plugins[i]->options()});
  ASSIGN_OR_RETURN(p.decode_options, config.plugin_options("decode", schemas));
  return p;
}

}  // namespace tessera
