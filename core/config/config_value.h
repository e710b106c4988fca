// Checks single config values against an OptionSpec: type (integers are
// accepted for floats), range and choices, with messages that say where the
// value came from.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/config_entry.h"
#include "core/plugin/options.h"
#include "core/status/status.h"

namespace tessera {

// Reads `text` (a default from a schema, or a --set value) as the spec's type:
// 3, 0.5, true, "x" or bare x. nullopt when it does not read as that type.
std::optional<OptionValue> value_from_text(const OptionSpec& spec, std::string_view text);

// The checked value of `entry` for `spec`; a kFloat spec always yields a
// double. InvalidArgument for a wrong type or choice, OutOfRange for a number
// outside the limits; the message starts with entry.value_where and the key.
Result<OptionValue> check_entry(const OptionSpec& spec, bool min_exclusive,
                                const ConfigEntry& entry);

// A list-of-strings key: a TOML array of strings, or a ':'-separated --set
// text (empty parts are dropped).
Result<std::vector<std::string>> check_list_entry(const ConfigEntry& entry);

}  // namespace tessera
