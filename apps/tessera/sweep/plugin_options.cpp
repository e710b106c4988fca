#include "apps/tessera/sweep/plugin_options.h"

#include <algorithm>

#include "core/config/config_schema.h"
#include "core/engine/plugin_references.h"
#include "core/plugin/plugin_kinds.h"
#include "core/util/strings.h"

namespace tessera::sweep {
namespace {

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool in_section(std::string_view entry_section, std::string_view section) {
  return entry_section == section ||
         (entry_section.size() > section.size() && entry_section.starts_with(section) &&
          entry_section[section.size()] == '.');
}

// Whether any plugin whose options live in `section` declares `name`.
bool declared_by_any_plugin(const PluginRegistry& registry, std::string_view section,
                            std::string_view name) {
  for (const PluginRecord& record : registry.plugins()) {
    const PluginKind* kind = find_plugin_kind(record.kind());
    if (kind == nullptr || kind->section != section) continue;
    for (const OptionSpec& option : record.options())
      if (name == option.name) return true;
  }
  return false;
}

// The entry's value as --set text.
std::string override_text(const ConfigEntry& entry) {
  switch (entry.form) {
    case ConfigEntry::Form::kValue:
      return option_value_to_string(entry.value);
    case ConfigEntry::Form::kList:
      return join(entry.list, ":");
    default:
      return entry.text;
  }
}

// `config` without the keys `names` of `section` (its sub-sections kept): the
// section is rebuilt from the entries that stay.
Result<Config> without_keys(const Config& config, std::string_view section,
                            const std::vector<std::string>& names) {
  Config out = config.without_section(section);
  for (const ConfigEntry& entry : config.entries()) {
    if (!in_section(entry.section, section)) continue;
    if (entry.section == section && contains(names, entry.name)) continue;
    RETURN_IF_ERROR(out.apply_override(
        entry.key() + "=" + override_text(entry),
        entry.from_command_line ? Config::SetFrom::kCommandLine : Config::SetFrom::kConfigFile));
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> options_read(const Config& config, const PluginRegistry& registry,
                                              std::string_view section) {
  std::vector<const PluginRecord*> chosen;
  for (const PluginKind& kind : kPluginKinds) {
    if (kind.section != section) continue;
    ASSIGN_OR_RETURN(const PluginRecord* record,
                     registry.find(kind.name, config.get_string(kind.name_key)));
    chosen.push_back(record);
  }
  ASSIGN_OR_RETURN(const std::vector<const PluginRecord*> plugins,
                   plugins_named_in(config, registry, section, std::move(chosen)));
  std::vector<std::string> names;
  for (const PluginRecord* plugin : plugins)
    for (const OptionSpec& option : plugin->options()) names.emplace_back(option.name);
  return names;
}

Result<Config> without_other_plugins_options(const Config& config, const PluginRegistry& registry,
                                             std::string_view section) {
  ASSIGN_OR_RETURN(const std::vector<std::string> read, options_read(config, registry, section));
  std::vector<std::string> unread;
  for (const ConfigEntry& entry : config.entries()) {
    if (entry.section != section || find_core_key(section, entry.name) != nullptr ||
        contains(read, entry.name))
      continue;
    if (declared_by_any_plugin(registry, section, entry.name)) unread.push_back(entry.name);
  }
  if (unread.empty()) return config;
  return without_keys(config, section, unread);
}

}  // namespace tessera::sweep
