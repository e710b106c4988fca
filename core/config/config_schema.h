// The core config schema: the sections a config file may have and the keys the
// core itself reads. Plugins add their own options to the section of their
// kind (see config_section_for_kind); those are checked by
// Config::plugin_options once the plugin is chosen.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/plugin/options.h"

namespace tessera {

// One core key: `spec.name` within `section`. Static storage, plain data.
struct ConfigKey {
  const char* section;  // "cache.codec"
  OptionSpec spec;      // type, default (TOML text; "[]" for lists), limits, description
  bool required = false;
  bool list = false;           // a list of strings (spec.type is kString)
  bool min_exclusive = false;  // spec.min itself is not allowed: (min, max]

  std::string key() const { return std::string(section) + "." + spec.name; }
};

// Every core key, in the order of the reference table.
std::span<const ConfigKey> core_config_schema();
// The core key `section`.`name`, or nullptr.
const ConfigKey* find_core_key(std::string_view section, std::string_view name);

// Every section a config may have, in display order.
std::span<const std::string_view> config_sections();
bool is_config_section(std::string_view section);
// Sections that also hold the options of the plugin chosen there.
bool is_plugin_section(std::string_view section);
// The section that holds the options of a plugin kind ("compressor" ->
// "cache.codec"); "" for an unknown kind.
std::string_view config_section_for_kind(std::string_view kind);

// What a value of `spec` may be, for messages and docs: ">= 1", "(0, 1]",
// "one of: a, b", or "" when anything of the type goes.
std::string allowed_values_text(const OptionSpec& spec, bool min_exclusive = false);

// The core keys as a Markdown table (key, type, default, allowed values,
// description); docs/config.md embeds it verbatim.
std::string config_reference_markdown();

}  // namespace tessera
