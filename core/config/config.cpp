#include "core/config/config.h"

#include <system_error>

#include "core/config/config_value.h"
#include "core/config/toml_reader.h"
#include "core/io/text_file.h"
#include "core/util/path_list.h"
#include "core/util/strings.h"
#include "core/util/suggest.h"

namespace tessera {

namespace {

// "cache.codec.plugin" -> {"cache.codec", "plugin"}; {"", key} without a dot.
std::pair<std::string_view, std::string_view> split_key(std::string_view key) {
  const auto dot = key.rfind('.');
  if (dot == std::string_view::npos) return {{}, key};
  return {key.substr(0, dot), key.substr(dot + 1)};
}

std::vector<std::string> section_names() {
  return {config_sections().begin(), config_sections().end()};
}

std::vector<std::string> core_names(std::string_view section) {
  std::vector<std::string> names;
  for (const auto& key : core_config_schema())
    if (section == key.section) names.emplace_back(key.spec.name);
  return names;
}

Status unknown_section(std::string_view where, std::string_view section) {
  const auto matches = closest_matches(section, section_names(), 1);
  const std::string hint = matches.empty() ? ";" : "; did you mean [" + matches.front() + "]?";
  return invalid_argument(std::string(where) + ": unknown section [" + std::string(section) + "]" +
                          hint + " sections allowed: " + join(section_names()));
}

// `candidates` are the names allowed in the entry's section; `allowed` lists
// them for the reader (grouped by owner in plugin sections).
Status unknown_key(const ConfigEntry& entry, const std::vector<std::string>& candidates,
                   const std::string& allowed) {
  std::string hint;
  if (const auto matches = closest_matches(entry.name, candidates, 1); !matches.empty()) {
    hint = "; did you mean '" + entry.section + "." + matches.front() + "'?";
  } else {
    // A core key in the wrong section: say where it goes.
    for (const auto& key : core_config_schema())
      if (entry.name == key.spec.name && entry.section != key.section)
        hint = "; '" + entry.name + "' is a key of [" + key.section + "];";
    if (hint.empty()) hint = ";";
  }
  return invalid_argument(entry.key_where + ": unknown key '" + entry.key() + "'" + hint +
                          " keys allowed in [" + entry.section + "]: " + allowed);
}

Status top_level_key(const ConfigEntry& entry) {
  std::string hint = "put it under one of the sections: " + join(section_names());
  for (const auto& key : core_config_schema())
    if (entry.name == key.spec.name) {
      hint = "did you mean '" + key.key() + "'? put it under [" + key.section + "]";
      break;
    }
  return invalid_argument(entry.key_where + ": key '" + entry.name + "' is outside any section; " +
                          hint);
}

// Adds the owner to a plugin option's error: "... (option of cache plugin 'x')".
Status in_plugin(const Status& status, std::string_view description) {
  return Status(status.code(), status.message() + " (option of " + std::string(description) + ")");
}

}  // namespace

Result<Config> Config::load_file(const std::string& path) {
  auto text = read_text_file(path, "config file", kMaxConfigFileBytes);
  if (!text.ok()) {
    std::error_code ec;
    if (text.status().code() == StatusCode::kNotFound)
      return not_found("config file '" + path + "' not found (relative paths start at " +
                       std::filesystem::current_path(ec).string() + ")");
    return text.status();
  }
  return parse(*text, path);
}

Result<Config> Config::parse(std::string_view toml_text, std::string source_name) {
  ASSIGN_OR_RETURN(ConfigDocument doc, read_toml(toml_text, source_name));
  return Config(std::move(doc), std::move(source_name));
}

Config Config::without_section(std::string_view section) const {
  const auto inside = [&](std::string_view name) {
    return name == section ||
           (name.size() > section.size() && name.substr(0, section.size()) == section &&
            name[section.size()] == '.');
  };
  ConfigDocument doc = doc_;
  std::erase_if(doc.tables, [&](const ConfigTable& t) { return inside(t.section); });
  std::erase_if(doc.entries, [&](const ConfigEntry& e) { return inside(e.section); });
  return Config(std::move(doc), source_);
}

std::filesystem::path Config::directory() const {
  const auto parent = std::filesystem::path(source_).parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

std::filesystem::path Config::base_directory(std::string_view key) const {
  const auto [section, name] = split_key(key);
  const ConfigEntry* entry = find_entry(section, name);
  return entry != nullptr && entry->from_command_line ? std::filesystem::path(".") : directory();
}

const ConfigEntry* Config::find_entry(std::string_view section, std::string_view name) const {
  for (const auto& entry : doc_.entries)
    if (entry.section == section && entry.name == name) return &entry;
  return nullptr;
}

bool Config::has(std::string_view key) const {
  const auto [section, name] = split_key(key);
  return find_entry(section, name) != nullptr;
}

Status Config::apply_override(std::string_view assignment, SetFrom from) {
  const std::string where = "--set " + std::string(assignment);
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos)
    return invalid_argument(where + ": expected key=value, e.g. --set cache.max_tokens=1024");
  const std::string_view key = trim(assignment.substr(0, eq));
  const auto [section, name] = split_key(key);
  if (section.empty() || name.empty())
    return invalid_argument(where + ": '" + std::string(key) +
                            "' is not a section.key name such as sampling.temperature");
  if (!is_config_section(section)) return unknown_section(where, section);

  ConfigEntry entry;
  entry.section = section;
  entry.name = name;
  entry.form = ConfigEntry::Form::kText;
  entry.text = trim(assignment.substr(eq + 1));
  entry.key_where = where;
  entry.value_where = where;
  entry.from_command_line = from == SetFrom::kCommandLine;
  if (const ConfigKey* core = find_core_key(section, name)) {
    if (core->list) {
      entry.form = ConfigEntry::Form::kList;
      entry.list = split_path_list(entry.text);
    } else {
      ASSIGN_OR_RETURN(entry.value, check_entry(core->spec, core->min_exclusive, entry));
      entry.form = ConfigEntry::Form::kValue;
    }
  } else if (!is_plugin_section(section)) {
    return unknown_key(entry, core_names(section), join(core_names(section)));
  }
  // Plugin options stay text until plugin_options knows their type.
  for (auto& existing : doc_.entries)
    if (existing.section == entry.section && existing.name == entry.name) {
      existing = std::move(entry);
      return ok_status();
    }
  doc_.entries.push_back(std::move(entry));
  return ok_status();
}

Status Config::validate_core() const {
  for (const auto& table : doc_.tables) {
    if (is_config_section(table.section)) continue;
    // Report only the outermost unknown table: [foo.bar] says [foo].
    const auto [parent, name] = split_key(table.section);
    if (parent.empty() || is_config_section(parent))
      return unknown_section(table.where, table.section);
  }
  for (const auto& entry : doc_.entries) {
    if (entry.section.empty()) return top_level_key(entry);
    if (!is_config_section(entry.section)) return unknown_section(entry.key_where, entry.section);
    if (const ConfigKey* core = find_core_key(entry.section, entry.name)) {
      if (core->list) {
        RETURN_IF_ERROR(check_list_entry(entry).status());
      } else {
        RETURN_IF_ERROR(check_entry(core->spec, core->min_exclusive, entry).status());
      }
    } else if (!is_plugin_section(entry.section)) {
      return unknown_key(entry, core_names(entry.section), join(core_names(entry.section)));
    }
  }
  for (const auto& key : core_config_schema()) {
    if (!key.required || find_entry(key.section, key.spec.name)) continue;
    return invalid_argument(source_ + ": missing required key '" + key.key() + "': add " +
                            key.spec.name + " = ... under [" + key.section + "], or pass --set " +
                            key.key() + "=...");
  }
  return ok_status();
}

Result<std::vector<OptionValues>> Config::plugin_options(
    std::string_view section, std::span<const PluginSchema> plugins) const {
  TESSERA_CHECK(is_config_section(section), "plugin_options: no section " + std::string(section));
  std::vector<OptionValues> values(plugins.size());

  // What the section may hold, for messages.
  std::vector<std::string> candidates = core_names(section);
  std::string allowed = join(candidates);
  for (const auto& plugin : plugins) {
    std::vector<std::string> names;
    for (const auto& option : plugin.options) names.emplace_back(option.name);
    allowed += "; " + std::string(plugin.description) +
               (names.empty() ? " has no options" : ": " + join(names));
    candidates.insert(candidates.end(), names.begin(), names.end());
  }

  for (const auto& entry : doc_.entries) {
    if (entry.section != section) continue;
    bool claimed = find_core_key(section, entry.name) != nullptr;
    for (std::size_t p = 0; p < plugins.size(); ++p)
      for (const auto& option : plugins[p].options) {
        if (entry.name != option.name) continue;
        claimed = true;
        auto value = check_entry(option, false, entry);
        if (!value.ok()) return in_plugin(value.status(), plugins[p].description);
        values[p].set(entry.name, std::move(value).value());
      }
    if (!claimed) return unknown_key(entry, candidates, allowed);
  }

  for (std::size_t p = 0; p < plugins.size(); ++p)
    for (const auto& option : plugins[p].options) {
      if (values[p].has(option.name)) continue;
      auto value = value_from_text(option, option.default_value ? option.default_value : "");
      if (!value)
        return internal_error(std::string(plugins[p].description) + ": the default of option '" +
                              option.name + "' does not read as " +
                              std::string(option_type_name(option.type)) +
                              " (a bug in the plugin's manifest)");
      values[p].set(option.name, std::move(*value));
    }
  return values;
}

Result<OptionValues> Config::declared_options(std::string_view section,
                                              const PluginSchema& plugin) const {
  OptionValues values;
  for (const auto& option : plugin.options) {
    if (const ConfigEntry* entry = find_entry(section, option.name)) {
      auto value = check_entry(option, false, *entry);
      if (!value.ok()) return in_plugin(value.status(), plugin.description);
      values.set(option.name, std::move(value).value());
      continue;
    }
    auto value = value_from_text(option, option.default_value ? option.default_value : "");
    if (!value)
      return internal_error(std::string(plugin.description) + ": the default of option '" +
                            option.name + "' does not read as " +
                            std::string(option_type_name(option.type)) +
                            " (a bug in the plugin's manifest)");
    values.set(option.name, std::move(*value));
  }
  return values;
}

Result<OptionValues> Config::plugin_options(std::string_view section,
                                            std::span<const OptionSpec> plugin_schema,
                                            std::string_view plugin_description) const {
  const PluginSchema plugin{plugin_description, plugin_schema};
  ASSIGN_OR_RETURN(std::vector<OptionValues> values,
                   plugin_options(section, std::span<const PluginSchema>(&plugin, 1)));
  return std::move(values.front());
}

OptionValue Config::core_value(std::string_view key, OptionType type) const {
  const auto [section, name] = split_key(key);
  const ConfigKey* core = find_core_key(section, name);
  TESSERA_CHECK(core && !core->list && core->spec.type == type,
                "Config: '" + std::string(key) + "' is not a core key of type " +
                    std::string(option_type_name(type)));
  if (const ConfigEntry* entry = find_entry(section, name)) {
    auto value = check_entry(core->spec, core->min_exclusive, *entry);
    TESSERA_CHECK(value.ok(), "Config read before validate_core: " + value.status().message());
    return std::move(value).value();
  }
  auto value = value_from_text(core->spec, core->spec.default_value);
  TESSERA_CHECK(value.has_value(), "bad default for core key " + std::string(key));
  return std::move(*value);
}

std::string Config::get_string(std::string_view key) const {
  return std::get<std::string>(core_value(key, OptionType::kString));
}
int64_t Config::get_int(std::string_view key) const {
  return std::get<int64_t>(core_value(key, OptionType::kInt));
}
double Config::get_float(std::string_view key) const {
  return std::get<double>(core_value(key, OptionType::kFloat));
}
bool Config::get_bool(std::string_view key) const {
  return std::get<bool>(core_value(key, OptionType::kBool));
}

std::vector<std::string> Config::get_list(std::string_view key) const {
  const auto [section, name] = split_key(key);
  const ConfigKey* core = find_core_key(section, name);
  TESSERA_CHECK(core && core->list, "Config: '" + std::string(key) + "' is not a list key");
  const ConfigEntry* entry = find_entry(section, name);
  if (!entry) return {};  // list defaults are empty
  auto list = check_list_entry(*entry);
  TESSERA_CHECK(list.ok(), "Config read before validate_core: " + list.status().message());
  return std::move(list).value();
}

}  // namespace tessera
