// The raw content of a config: every key = value as read from a TOML file or a
// --set, with where it came from, before it is checked against a schema. No
// toml++ types here (this header reaches nvcc through config.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/plugin/options.h"

namespace tessera {

struct ConfigEntry {
  enum class Form : uint8_t {
    kValue,  // a TOML scalar: `value`
    kList,   // a TOML array of strings: `list`
    kText,   // a --set value whose type is not known yet: `text`
    kOther,  // anything else (mixed array, date, ...): `text` shows it for messages
  };

  std::string section;  // "cache.codec"; "" for a key outside any section
  std::string name;     // "plugin"
  Form form = Form::kValue;
  OptionValue value;
  std::vector<std::string> list;
  std::string text;
  // A TOML array's elements when they are scalars (`items`, any mix of types)
  // or inline tables of scalars (`item_tables`, each a list of key = value),
  // for readers that take arrays of numbers or of settings (tessera sweep).
  std::vector<OptionValue> items;
  std::vector<std::vector<std::pair<std::string, OptionValue>>> item_tables;
  // For messages: "configs/x.toml:7:1" (the key) and "configs/x.toml:7:14"
  // (the value); both are "--set key=value" for an override.
  std::string key_where;
  std::string value_where;
  // A --set typed on the command line: a relative file name in it is relative
  // to the current directory, not to the config's (Config::base_directory).
  bool from_command_line = false;

  std::string key() const { return section.empty() ? name : section + "." + name; }
  // The value as the user wrote it, for "got ..." in messages.
  std::string display() const;
};

// A table of the file: `[cache.codec]`, an implicit `cache`, or an inline table.
struct ConfigTable {
  std::string section;
  std::string where;  // "configs/x.toml:5:1"
};

// A parsed file, tables and entries in file order.
struct ConfigDocument {
  std::vector<ConfigTable> tables;
  std::vector<ConfigEntry> entries;
};

}  // namespace tessera
