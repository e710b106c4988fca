// Typed options: the schema a plugin declares in its manifest, and the checked
// values the core hands it at creation.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/status/status.h"

namespace tessera {

enum class OptionType : uint8_t { kBool, kInt, kFloat, kString };

std::string_view option_type_name(OptionType type);

// One option of a plugin (or of the core). Plain data so a plugin can declare
// its schema as a constant array. Limits apply to kInt and kFloat; choices (a
// '|'-separated list) to kString. Choices "@<kind>" (e.g. "@proposer") make
// the option the name of a plugin of that kind: the engine finds it, checks
// its options in the same config section and lets the plugin create it
// (PluginServices::create_plugin).
struct OptionSpec {
  const char* name;
  OptionType type;
  const char* default_value;  // as TOML text: "4", "0.5", "true", "\"lattice\""
  const char* description;
  double min = -1e300;
  double max = 1e300;
  const char* choices = nullptr;
};

using OptionValue = std::variant<bool, int64_t, double, std::string>;

std::string option_value_to_string(const OptionValue& value);

class OptionValues {
 public:
  void set(std::string name, OptionValue value) { values_[std::move(name)] = std::move(value); }
  bool has(std::string_view name) const { return values_.find(std::string(name)) != values_.end(); }
  // The getters abort on a missing name or wrong type: the core fills every
  // declared option (with its default) and checks types before creation.
  bool get_bool(std::string_view name) const;
  int64_t get_int(std::string_view name) const;
  double get_float(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;
  const std::map<std::string, OptionValue, std::less<>>& all() const { return values_; }

 private:
  const OptionValue& at(std::string_view name) const;
  std::map<std::string, OptionValue, std::less<>> values_;
};

}  // namespace tessera
