// A tessera config: a TOML file plus --set overrides, checked against the core
// schema (config_schema.h) and, once the engine knows which plugins were
// chosen, against each plugin's option schema.
//
// Typical use:
//   ASSIGN_OR_RETURN(Config config, Config::load_file(path));
//   for (const auto& s : sets) RETURN_IF_ERROR(config.apply_override(s));
//   RETURN_IF_ERROR(config.validate_core());
//   ... config.get_int("cache.max_tokens") ...
//   ASSIGN_OR_RETURN(OptionValues cache_options,
//                    config.plugin_options("cache", record->options(), "cache plugin 'static'"));
//
// A plugin's options live in the section of its kind (config_section_for_kind):
// any key of that section that is not a core key is a plugin option. Keys no
// plugin claims are reported by plugin_options, so the engine must call it
// once per plugin section, with every plugin that shares the section.
//
// No toml++ in this header: it is included from code that nvcc compiles.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config_entry.h"
#include "core/config/config_schema.h"
#include "core/plugin/options.h"
#include "core/status/status.h"

namespace tessera {

// A plugin whose options live in a section. Borrowed: the spans must outlive
// the plugin_options call (they are a manifest's static arrays).
struct PluginSchema {
  std::string_view description;         // names it in messages: "cache plugin 'static'"
  std::span<const OptionSpec> options;  // the plugin's manifest
};

// A config is a page of TOML; anything past this is not a config.
inline constexpr uint64_t kMaxConfigFileBytes = 1 << 20;

class Config {
 public:
  // NotFound when the file does not exist; InvalidArgument for a directory,
  // device or FIFO, or (with line and column) a TOML syntax error;
  // ResourceExhausted past kMaxConfigFileBytes. Nothing is checked against a
  // schema yet.
  static Result<Config> load_file(const std::string& path);
  // As load_file, from text; `source_name` stands for the file in messages
  // and gives directory().
  static Result<Config> parse(std::string_view toml_text, std::string source_name);

  // A copy without the tables and keys of `section` and its sub-sections
  // (tessera sweep reads [sweep] itself and hands the rest on as a config).
  Config without_section(std::string_view section) const;

  // Where an override comes from: typed on the command line (a file it names
  // is relative to the current directory), or a value of the config file set
  // by a tool (a sweep's axis point: relative to the file's directory).
  enum class SetFrom : uint8_t { kCommandLine, kConfigFile };

  // "section.key=value" (core key or plugin option) replaces the file's value.
  // Core keys are type- and range-checked here; plugin options when
  // plugin_options runs. Messages name "--set section.key=value". A list key
  // takes a ':'-separated string.
  Status apply_override(std::string_view assignment, SetFrom from = SetFrom::kCommandLine);

  // Checks what the core owns: unknown sections, unknown keys in sections
  // without plugins, types and ranges of core keys, required keys. Keys of
  // plugin sections that are not core keys are left to plugin_options.
  Status validate_core() const;

  // The options of the plugins sharing `section` (config_section_for_kind),
  // one OptionValues per schema in order: present keys checked against the
  // schema, absent ones filled with their defaults. A key of the section that
  // is neither a core key nor an option of any of `plugins` is an error that
  // lists every allowed key. A plugin option named like a core key reads the
  // same value when one is set.
  Result<std::vector<OptionValues>> plugin_options(std::string_view section,
                                                   std::span<const PluginSchema> plugins) const;
  // The options one plugin declares, read from a section it shares with
  // plugins not known yet: present keys it declares are checked, absent ones
  // take their defaults, and keys it does not declare are left alone (a
  // strict plugin_options call over every plugin of the section must follow).
  Result<OptionValues> declared_options(std::string_view section, const PluginSchema& plugin) const;
  // The common case: one plugin alone in its section.
  Result<OptionValues> plugin_options(std::string_view section,
                                      std::span<const OptionSpec> plugin_schema,
                                      std::string_view plugin_description) const;

  // Core keys ("cache.max_tokens"): the value set in the file or by --set,
  // else the schema default. Call validate_core first: asking for a key that
  // is not a core key of that type, or reading a value that fails its check,
  // is a bug and aborts.
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  double get_float(std::string_view key) const;  // integers in the file read as floats
  bool get_bool(std::string_view key) const;
  std::vector<std::string> get_list(std::string_view key) const;
  // Whether the file or a --set gives `key` (core key or plugin option).
  bool has(std::string_view key) const;

  // The file name as given to load_file (or parse's source_name).
  const std::string& source() const { return source_; }
  // The config file's directory ("." for a bare name).
  std::filesystem::path directory() const;
  // The directory a relative file name in `key` is relative to, the first
  // place it is looked for (core/io/file_lookup.h): "." when a --set on the
  // command line gave the key, else directory().
  std::filesystem::path base_directory(std::string_view key) const;
  // Every key = value in file order, then the --set ones that added keys.
  const std::vector<ConfigEntry>& entries() const { return doc_.entries; }

 private:
  Config(ConfigDocument doc, std::string source)
      : doc_(std::move(doc)), source_(std::move(source)) {}

  const ConfigEntry* find_entry(std::string_view section, std::string_view name) const;
  OptionValue core_value(std::string_view key, OptionType type) const;

  ConfigDocument doc_;
  std::string source_;
};

}  // namespace tessera
